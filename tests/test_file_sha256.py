"""A file's sha256 (harness.paths.file_sha256), read once per process per version of the file,
for every caller (runner, judge, provenance, shards): never a stale digest for a changed file."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from harness import paths
from tests.conftest import shared_path


@pytest.fixture
def reads(monkeypatch) -> list[Path]:
    """Each read of a file's bytes for its digest, in a process that has hashed nothing yet."""
    paths._settled_sha256.cache_clear()
    read: list[Path] = []
    feed = paths.feed_file
    monkeypatch.setattr(paths, "feed_file", lambda digest, path: read.append(Path(path)) or feed(digest, path))
    return read


def test_an_unchanged_file_is_read_once_per_process(reads):
    """The CAsT 2021 qrels, as a config's runs each name and record it: one read, however many asks."""
    qrels = shared_path("data/cast/2021/trec-cast-qrels-docs.2021.qrel")
    expected = hashlib.sha256(qrels.read_bytes()).hexdigest()
    assert [paths.file_sha256(qrels) for _ in range(3)] == [expected] * 3
    assert paths.file_sha256(str(qrels.parent / ".." / "2021" / qrels.name)) == expected  # another spelling
    assert reads == [qrels.resolve()]


def test_a_file_rewritten_at_the_same_size_with_a_new_mtime_is_read_again(tmp_path, reads, monkeypatch):
    monkeypatch.setattr(paths, "SETTLED_NS", 0)  # a file just written is trusted by its version at once
    path = tmp_path / "a.qrels"
    path.write_text("q1 0 d1 1\n")
    before = path.stat()
    assert paths.file_sha256(path) == paths.file_sha256(path) == hashlib.sha256(b"q1 0 d1 1\n").hexdigest()
    path.write_text("q1 0 d2 1\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns - 1_000_000_000))  # another mtime
    assert path.stat().st_size == before.st_size
    assert paths.file_sha256(path) == hashlib.sha256(b"q1 0 d2 1\n").hexdigest()
    assert reads == [path, path]


def test_a_file_rewritten_within_its_timestamps_resolution_is_read_again(tmp_path, reads, monkeypatch):
    """Rewritten at the same size within the same tick, its stat is what it was (a filesystem with
    coarse timestamps leaves size, mtime, inode and ctime as they were): until it has settled
    (paths.settled), its version cannot vouch for its bytes, and it is read on each call."""
    path = tmp_path / "a.qrels"
    path.write_text("q1 0 d1 1\n")
    version = paths.file_version(path)
    monkeypatch.setattr(paths, "file_version", lambda _: list(version))  # the rewrite leaves it as it was
    assert paths.file_sha256(path) == hashlib.sha256(b"q1 0 d1 1\n").hexdigest()
    path.write_text("q1 0 d2 1\n")
    assert paths.file_sha256(path) == hashlib.sha256(b"q1 0 d2 1\n").hexdigest()
    assert reads == [path, path]
