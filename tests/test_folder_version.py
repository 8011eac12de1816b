"""A folder's fingerprint in resume keys (harness.paths.folder_version): an index's or a
model's, stable while the folder is unchanged, new once it is rebuilt."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from harness.corpus import Corpus
from harness.paths import commit_key, folder_version
from tests.conftest import ikat_passages


@pytest.fixture
def settled_at_once(monkeypatch):
    """Files taken as settled at once (a real one must be unchanged for 2 s)."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)


def test_an_unchanged_folder_keeps_its_key_and_a_rewritten_file_changes_it(tmp_path, settled_at_once):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights.bin").write_bytes(b"1234")
    (tmp_path / "model" / "sub").mkdir()
    (tmp_path / "model" / "sub" / "vocab.txt").write_text("a\nb\n")
    key = folder_version(tmp_path / "model")
    assert folder_version(tmp_path / "model") == key
    (tmp_path / "model" / "weights.bin").write_bytes(b"5678")
    os.utime(tmp_path / "model" / "weights.bin", ns=(1, 1))  # same size, an old mtime
    assert folder_version(tmp_path / "model") != key


def test_a_plain_folder_keeps_the_key_it_had(tmp_path, settled_at_once):
    """Names, sizes and mtimes, in path order, as before: runs over it are not made again."""
    for name in ("a-b", "a/b", "a/c/d", ".hidden"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    digest = hashlib.sha256()
    for file in sorted(found for found in tmp_path.rglob("*") if found.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(tmp_path).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    assert folder_version(tmp_path) == digest.hexdigest()


def test_a_folder_changed_this_instant_is_waited_for_until_it_settles(tmp_path, monkeypatch):
    """A file written this instant may be written again within its mtime's resolution, the
    same size: its stat does not vouch for its bytes yet (as for shards.source_key)."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 300_000_000)
    (tmp_path / "index.bin").write_bytes(b"1234")
    started = time.monotonic()
    key = folder_version(tmp_path)
    assert time.monotonic() - started >= 0.25
    assert folder_version(tmp_path) == key


def test_a_folder_still_changing_after_one_wait_gets_a_key_no_later_call_matches(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.paths.SETTLED_NS", 10**9)
    (tmp_path / "index.bin").write_bytes(b"1234")
    later = time.time_ns() + 3600 * 10**9
    os.utime(tmp_path / "index.bin", ns=(later, later))  # stamped in the future: never settled
    waits: list[float] = []
    monkeypatch.setattr("harness.paths.time.sleep", waits.append)
    key = folder_version(tmp_path)
    assert waits == [1.0]  # waited once, not again before giving up
    assert folder_version(tmp_path) != key


def test_a_symlinked_subfolder_is_followed_and_a_link_back_up_is_not(tmp_path, settled_at_once):
    """A model folder linking into a download cache changes with the cache's files."""
    cache = tmp_path / "cache" / "snapshot"
    cache.mkdir(parents=True)
    (cache / "weights.bin").write_bytes(b"1234")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "weights").symlink_to(cache, target_is_directory=True)
    (model / "loop").symlink_to(model, target_is_directory=True)  # a cycle: not walked again
    (model / "dangling").symlink_to(tmp_path / "nothing")
    key = folder_version(model)
    assert folder_version(model) == key
    (cache / "weights.bin").write_bytes(b"12345")
    assert folder_version(model) != key


def test_a_link_to_the_folder_or_a_folder_above_it_is_not_walked(tmp_path, settled_at_once):
    """Its parent's other files are no part of it (and a link to / would walk the disk),
    nor is what lies above a download cache it links into."""
    cache = tmp_path / "home" / ".cache" / "snapshot"
    cache.mkdir(parents=True)
    (cache / "weights.bin").write_bytes(b"1234")
    (cache / "all").symlink_to("..", target_is_directory=True)  # up from the cache, not from the model
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "weights").symlink_to(cache, target_is_directory=True)
    (model / "up").symlink_to("..", target_is_directory=True)
    (model / "self").symlink_to(".", target_is_directory=True)
    key = folder_version(model)
    (tmp_path / "beside.txt").write_text("a file beside the model folder")
    (cache.parent / "other.bin").write_text("another model in the cache")
    assert folder_version(model) == key
    (cache / "weights.bin").write_bytes(b"12345")
    assert folder_version(model) != key


def test_a_subfolder_that_cannot_be_listed_is_left_out(tmp_path, settled_at_once):
    """As pathlib's rglob leaves it out: the key a run over the folder had before."""
    (tmp_path / "model" / "locked").mkdir(parents=True)
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "model" / "locked" / "weights.bin").write_bytes(b"1234")
    (tmp_path / "model" / "locked").chmod(0)
    try:
        try:
            os.listdir(tmp_path / "model" / "locked")
        except PermissionError:
            pass
        else:
            pytest.skip("a folder's mode stops no listing here (running as root)")
        stat = (tmp_path / "model" / "config.json").stat()
        assert folder_version(tmp_path / "model") == hashlib.sha256(
            f"config.json\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()).hexdigest()
    finally:
        (tmp_path / "model" / "locked").chmod(0o755)


@pytest.mark.java
@pytest.mark.slow
def test_a_lucene_index_is_keyed_by_its_commit_until_it_is_rebuilt(tmp_path, monkeypatch):
    """Its segments_N names every file a search reads: one small file read, no walk, no wait
    (its bytes vouch for it at once), a file beside it ignored; a rebuild writes a new commit."""
    from harness.retrieve.lucene import build_index

    documents = list(ikat_passages(10))
    corpus = Corpus("ikat-10", lambda: iter(documents))
    index = build_index(corpus, tmp_path / "index", threads=1)
    monkeypatch.setattr("harness.paths.SETTLED_NS", 3600 * 10**9)  # a walk would wait, or mint a new key
    key = folder_version(index)
    assert key == commit_key(index) and folder_version(index) == key
    (index / "notes.txt").write_text("beside the index")
    assert folder_version(index) == key
    build_index(corpus, index, threads=1, force=True)
    assert folder_version(index) != key
    assert folder_version(index) == commit_key(index)
