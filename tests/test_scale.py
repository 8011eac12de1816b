"""The scale-out pieces that need no cluster: shape-independent exact scores, engine specs,
and sharded, resumable segmentation on the local engine."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re

import numpy as np
import pytest

from harness import paths
from harness.cli import main
from harness.compute.engines import EngineSpec, start_engine
from harness.compute.exact import exact_search, longest_norm, rank
from harness.corpus import Document
from harness.corpus.readers import open_corpus
from harness.corpus.segment import segment_corpus
from harness.errors import HarnessError
from harness.paths import file_version
from harness.retrieve.dense import SEARCH_BACKENDS
from harness.scale.segment import segment_sharded, shards_folder
from harness.scale.shards import ID_HASHES, MANIFEST
from tests.conftest import (clueweb22_txt_with_a_repeated_id, clueweb22_txt_with_an_id_in_two_files,
                            write_clueweb22_txt)


@pytest.fixture(scope="module")
def matrix() -> np.ndarray:
    """Unit vectors with exact duplicates and near-ties (the cases BLAS blocking reorders)."""
    rng = np.random.default_rng(7)
    base = rng.normal(size=(400, 48)).astype(np.float32)
    base[200:260] = base[100:160]  # duplicates: equal exact scores, ranked by row
    base[300:340] = base[0:40] + np.float32(1e-6)  # near-ties
    return base / np.linalg.norm(base, axis=1, keepdims=True)


def search(matrix: np.ndarray, queries: np.ndarray, k: int, backend: str = "numpy"):
    return exact_search(matrix, queries, k, SEARCH_BACKENDS.get(backend)(matrix), longest=longest_norm(matrix))


@pytest.mark.model  # the torch backend imports torch (5 s)
@pytest.mark.slow
def test_exact_scores_do_not_depend_on_sharding_or_backend(matrix):
    queries = matrix[[5, 105, 305]] + np.float32(1e-3)
    whole_scores, whole_rows = search(matrix, queries, 50)
    for backend in ("faiss", "torch"):
        scores, rows = search(matrix, queries, 50, backend)
        assert all(np.array_equal(a, b) for a, b in zip(rows, whole_rows))
        assert all(np.array_equal(a, b) for a, b in zip(scores, whole_scores))
    cuts = [0, 37, 150, 151, 290, 400]
    parts = [search(matrix[a:b], queries, 50) for a, b in zip(cuts, cuts[1:])]
    for query in range(len(queries)):
        scores = np.concatenate([part[0][query] for part in parts])
        rows = np.concatenate([part[1][query] + start for part, start in zip(parts, cuts)])
        merged_scores, merged_rows = rank(scores, rows, 50)
        assert np.array_equal(merged_rows, whole_rows[query])
        assert merged_scores.tobytes() == whole_scores[query].tobytes()


def test_equal_exact_scores_rank_by_corpus_row(matrix):
    scores, rows = search(matrix, matrix[[110]], 4)
    assert rows[0].tolist()[:2] == [110, 210]  # row 210 duplicates row 110
    assert scores[0][0] == scores[0][1]


@pytest.mark.parametrize("value, message", [
    ({"name": "spark"}, "unknown engine 'spark'"),
    ({"name": "ray", "adress": "auto"}, "unknown key\\(s\\) adress"),
    (3, "must be an engine name or a mapping"),
])
def test_a_bad_engine_spec_is_a_clear_error(value, message):
    with pytest.raises(HarnessError, match=message):
        EngineSpec.from_mapping(value)


@pytest.mark.parametrize("command", ["encode", "segment"])
def test_workers_beyond_the_cores_this_process_may_use_are_refused_naming_the_option(tmp_path, capsys, command):
    """10000 gave a Ray instance started here 10000 CPUs (a worker process per task); a cluster
    joined at an address counts its own CPUs, so there any count is taken."""
    cores = len(os.sched_getaffinity(0))
    out = tmp_path / "out"
    for engine in (["--engine", "local"], ["--engine", "ray"]):
        assert main([command, "benchmark:pragmaticqa:val", "--output", str(out), "--workers", str(cores + 1),
                     *engine]) == 2
        assert capsys.readouterr().err == (
            f"harness {command}: error: --workers must be a whole number from 1 to {cores} (the cores this process "
            f"may use; a Ray cluster joined with an address may take more), not {cores + 1} "
            f"(`harness {command} --help` lists the options)\n")
    assert not out.exists()
    assert EngineSpec.from_mapping({"name": "ray", "address": "auto", "workers": 10000}).workers == 10000
    with pytest.raises(HarnessError, match=rf"^dense retriever engine.workers: must be a whole number from 1 to {cores} "):
        EngineSpec.from_mapping({"name": "ray", "workers": 10000}, "dense retriever engine")


def test_local_shards_give_the_same_passages_and_resume(tmp_path, capsys):
    spec = "benchmark:pragmaticqa:val"
    reference = tmp_path / "one.jsonl"
    segment_corpus(open_corpus(spec), reference, splitter="fast", processes=1)
    out = tmp_path / "sharded.jsonl"
    command = ["segment", spec, "--out", str(out), "--splitter", "fast", "--shard-docs", "150", "--processes", "1"]
    assert main(command) == 0
    assert out.read_bytes() == reference.read_bytes()
    folder = tmp_path / "sharded.jsonl.shards"
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["complete"] and manifest["count"] == out.read_text().count("\n")
    (folder / "shard-00001.jsonl").write_text("changed\n")  # a shard whose checksum no longer matches
    capsys.readouterr()
    assert main(command) == 0
    assert f"{len(manifest['shards'])} shards, 1 run" in capsys.readouterr().err
    assert out.read_bytes() == reference.read_bytes()


@pytest.mark.slow  # the sentencizer is spaCy's: imports spaCy (5 s)
def test_changing_the_splitter_redoes_every_shard(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    base = ["segment", "benchmark:ikat2023:test", "--out", str(out), "--shard-docs", "400", "--processes", "1"]
    assert main([*base, "--splitter", "fast"]) == 0
    capsys.readouterr()
    assert main([*base, "--splitter", "sentencizer"]) == 0
    assert "2 shards, 2 run, 0 already done" in capsys.readouterr().err


@pytest.fixture
def passages_file(tmp_path, monkeypatch):
    """The iKAT 2023 test passages as a JSONL file: a file corpus, identified by its file
    versions (taken as settled at once: a real file must be unchanged for 2 s)."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)
    path = tmp_path / "ikat-passages.jsonl"
    segment_corpus(open_corpus("benchmark:ikat2023:test"), path, splitter="fast", processes=1)
    return path


def _counting(corpus, calls: list[str]):
    def documents():
        calls.append("documents")
        return corpus.documents()
    return dataclasses.replace(corpus, documents=documents)


def test_a_finished_shard_folder_is_reused_without_reading_the_corpus_or_the_shards(passages_file, tmp_path,
                                                                                   monkeypatch, capsys):
    out, engine = tmp_path / "again.jsonl", start_engine(EngineSpec())
    calls: list[str] = []
    segment_sharded(_counting(open_corpus(str(passages_file)), calls), out, engine, splitter="fast", shard_docs=300)
    first = out.read_bytes()
    assert calls
    monkeypatch.setattr("harness.paths.feed_file", lambda *args: calls.append("hashed"))
    calls.clear()
    capsys.readouterr()
    segment_sharded(_counting(open_corpus(str(passages_file)), calls), out, engine, splitter="fast", shard_docs=300)
    assert calls == [] and out.read_bytes() == first
    shards = len(json.loads((shards_folder(out) / MANIFEST).read_text())["shards"])
    assert f"segment: {shards} shards, 0 run, {shards} already done" in capsys.readouterr().err


def test_a_shard_file_touched_but_unchanged_is_hashed_once_then_kept(passages_file, tmp_path, capsys):
    out, engine = tmp_path / "again.jsonl", start_engine(EngineSpec())
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    shard = shards_folder(out) / "shard-00000.jsonl"
    os.utime(shard, ns=(shard.stat().st_atime_ns, shard.stat().st_mtime_ns + 10**9))  # e.g. copied, same bytes
    capsys.readouterr()
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    assert ", 0 run," in capsys.readouterr().err
    entry = json.loads((shards_folder(out) / MANIFEST).read_text())["shards"][0]
    assert entry["versions"]["shard-00000.jsonl"] == file_version(shard)


def test_a_corpus_file_changed_behind_its_old_mtime_is_segmented_again(passages_file, tmp_path):
    out, engine = tmp_path / "again.jsonl", start_engine(EngineSpec())
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    stat = passages_file.stat()
    passages_file.write_text(passages_file.read_text().replace("the", "THE"))  # same size, new text
    os.utime(passages_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the mtime put back, as `cp -p` does
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    expected = tmp_path / "expected.jsonl"
    segment_corpus(open_corpus(str(passages_file)), expected, splitter="fast", processes=1)
    assert out.read_bytes() == expected.read_bytes()


def test_a_manifest_without_file_versions_is_checked_by_sha256_once(passages_file, tmp_path, monkeypatch, capsys):
    """As an older harness wrote it: every file hashed on the next run, then recorded."""
    out, engine = tmp_path / "again.jsonl", start_engine(EngineSpec())
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    manifest_file = shards_folder(out) / MANIFEST
    manifest = json.loads(manifest_file.read_text())
    del manifest["source"]
    for entry in manifest["shards"]:
        del entry["versions"]
    manifest_file.write_text(json.dumps(manifest))
    hashed = []
    feed = paths.feed_file
    monkeypatch.setattr("harness.paths.feed_file", lambda digest, path: hashed.append(path) or feed(digest, path))
    capsys.readouterr()
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    assert ", 0 run," in capsys.readouterr().err and len(hashed) == len(manifest["shards"])
    assert all("versions" in entry for entry in json.loads(manifest_file.read_text())["shards"])
    hashed.clear()
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    assert hashed == []


def test_a_document_id_given_twice_is_said_by_the_driver_before_a_shard_holding_it_runs(tmp_path, capsys):
    """Checked as the driver cuts shards from its one pass over the corpus (harness.corpus.unique_ids)."""
    corpus, out = tmp_path / "docs.jsonl", tmp_path / "p.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{number % 7}" if number < 8 else f"d{number}",
                                          "contents": f"Text {number}."}) + "\n" for number in range(12)))
    command = ["segment", str(corpus), "--output", str(out), "--splitter", "fast", "--shard-docs", "4"]
    assert main(command) == 2
    assert f": error: {corpus}:8: document id 'd0' again (first at line 1); " in capsys.readouterr().err
    assert not out.exists() and not list(shards_folder(out).glob("shard-*"))


def test_a_document_id_given_twice_in_a_file_shard_names_the_file_and_lines(tmp_path, capsys):
    """A ClueWeb22 folder is sharded a file a shard, read by its task alone: there its ids are checked."""
    folder, message = clueweb22_txt_with_a_repeated_id(tmp_path)
    out = tmp_path / "p.jsonl"
    assert main(["segment", str(folder), "--output", str(out), "--splitter", "fast", "--shard-docs", "4"]) == 2
    assert f": error: {message}; " in capsys.readouterr().err
    assert not out.exists()


@pytest.fixture(scope="module")
def clueweb22_documents() -> list[Document]:
    """iKAT 2023 documents rebuilt from their official passages 0 on, under their ClueWeb22 ids."""
    from harness.ikat.passages import rebuilt_documents

    return [Document(rebuilt.document.id.split(":")[0], rebuilt.document.contents) for rebuilt in rebuilt_documents()
            if rebuilt.document.id.split(":")[1].startswith("0-")]


@pytest.fixture
def checked(monkeypatch) -> list[int]:
    """How many ids each check of repeated ids was given (harness.corpus.HashSet.add)."""
    from harness.corpus import HashSet

    sizes: list[int] = []
    add = HashSet.add
    monkeypatch.setattr(HashSet, "add", lambda self, hashes: sizes.append(len(hashes)) or add(self, hashes))
    return sizes


def test_each_id_of_a_corpus_cut_into_ranges_is_checked_once(tmp_path, checked):
    """By the driver as it cuts the ranges; their tasks do not check them again."""
    corpus = open_corpus("benchmark:ikat2023:test")
    documents = sum(1 for _ in corpus.documents())
    segment_sharded(corpus, tmp_path / "p.jsonl", start_engine(EngineSpec()), splitter="fast", shard_docs=100)
    assert sum(checked) == documents


def test_an_id_in_two_files_of_a_clueweb22_folder_names_both_files_on_every_run(tmp_path, capsys):
    """Each file's task keeps its ids' hashes; the driver checks them across files, and the
    manifest never says complete."""
    folder, message = clueweb22_txt_with_an_id_in_two_files(tmp_path)
    out = tmp_path / "p.jsonl"
    for _ in range(2):
        assert main(["segment", str(folder), "--output", str(out), "--splitter", "fast", "--shard-docs", "4"]) == 2
        assert f": error: {message}; " in capsys.readouterr().err
        assert not out.exists()
    assert not json.loads((shards_folder(out) / MANIFEST).read_text())["complete"]


def test_a_clueweb22_folder_with_an_empty_file_is_segmented_on_every_run(tmp_path, capsys):
    """Its shard holds no ids: nothing to check across files, and no error."""
    folder = write_clueweb22_txt(tmp_path / "cw", [Document("clueweb22-en0000-32-00001", "One sentence. Another."),
                                                   Document("clueweb22-en0000-33-00001", "Emptied below."),
                                                   Document("clueweb22-en0000-34-00001", "Three.")])
    with gzip.open(folder / "en" / "en00" / "en0000" / "en0000-33.json.gz", "wt", encoding="utf-8"):
        pass
    out = tmp_path / "p.jsonl"
    for _ in range(2):
        assert main(["segment", str(folder), "--output", str(out), "--splitter", "fast", "--shard-docs", "4"]) == 0
        assert "segment: 3 shards, " in capsys.readouterr().err
        assert [json.loads(line)["id"].split(":")[0] for line in out.read_text().splitlines()] == [
            "clueweb22-en0000-32-00001", "clueweb22-en0000-34-00001"]


def test_a_shard_s_id_hashes_the_driver_cannot_read_are_an_error_naming_the_file(tmp_path, monkeypatch,
                                                                                  clueweb22_documents):
    """As on Ray when a worker's file is not yet seen by the driver's node (NFS); a rerun then runs."""
    from harness.scale import segment

    folder = write_clueweb22_txt(tmp_path / "cw", clueweb22_documents)
    out, engine = tmp_path / "p.jsonl", start_engine(EngineSpec())
    ran = segment.segment_shard

    def unseen(task):
        result = ran(task)
        (shards_folder(out) / f"{task.stem}{ID_HASHES}").unlink()
        return result

    monkeypatch.setattr(segment, "segment_shard", unseen)
    message = f"cannot read {shards_folder(out) / f'shard-00000{ID_HASHES}'} (its shard's ids' hashes"
    with pytest.raises(HarnessError, match=re.escape(message)):
        segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    monkeypatch.undo()
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    assert json.loads((shards_folder(out) / MANIFEST).read_text())["complete"]


def test_an_id_in_two_files_of_a_moved_clueweb22_folder_names_the_files_where_they_are_now(tmp_path, capsys,
                                                                                           monkeypatch):
    """Its shards are kept (keyed by each file's path in the folder); the error reads the files again."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)  # the files taken as settled at once: shards kept
    folder, message = clueweb22_txt_with_an_id_in_two_files(tmp_path / "before")
    options = ["--output", str(tmp_path / "p.jsonl"), "--splitter", "fast", "--shard-docs", "4"]
    assert main(["segment", str(folder), *options]) == 2
    (tmp_path / "before").rename(tmp_path / "after")
    capsys.readouterr()
    assert main(["segment", str(tmp_path / "after" / "txt"), *options]) == 2
    assert f": error: {message.replace(str(tmp_path / 'before'), str(tmp_path / 'after'))}; " in capsys.readouterr().err


def test_ids_of_a_clueweb22_folder_checked_across_files_leave_the_output_unchanged(tmp_path, clueweb22_documents):
    """The hashes lie beside the shards, listed in the manifest, but are no part of OUT."""
    folder = write_clueweb22_txt(tmp_path / "cw", clueweb22_documents)
    out, one = tmp_path / "sharded.jsonl", tmp_path / "one.jsonl"
    segment_sharded(open_corpus(str(folder)), out, start_engine(EngineSpec()), splitter="fast")
    segment_corpus(open_corpus(str(folder)), one, splitter="fast", processes=1)
    assert out.read_bytes() == one.read_bytes()
    manifest = json.loads((shards_folder(out) / MANIFEST).read_text())
    assert all(f"shard-{entry['index']:05d}{ID_HASHES}" in entry["files"] for entry in manifest["shards"])


def test_a_clueweb22_file_changed_too_recently_is_cut_again_next_time(tmp_path, capsys, monkeypatch,
                                                                      clueweb22_documents):
    """Its size and mtime do not vouch for its bytes yet (as for a corpus file, shards.source_key)."""
    folder = write_clueweb22_txt(tmp_path / "cw", clueweb22_documents)
    out, engine = tmp_path / "p.jsonl", start_engine(EngineSpec())
    files = len(open_corpus(str(folder)).paths)
    monkeypatch.setattr("harness.paths.SETTLED_NS", 3600 * 10**9)
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    assert [line.split(";")[0] for line in capsys.readouterr().err.splitlines()] == [
        f"segment: {files} shards, {files} run, 0 already done"] * 2 + [
        f"segment: {files} shards, 0 run, {files} already done"]


def test_ids_of_two_files_sharing_a_hash_are_told_apart_by_reading_the_files(tmp_path, monkeypatch,
                                                                             clueweb22_documents):
    """Within a file as across files: a task checks its file by the hashes it keeps."""
    monkeypatch.setattr("harness.scale.shards.id_hash", lambda document_id: 7)  # every id one hash
    folder = write_clueweb22_txt(tmp_path / "cw", clueweb22_documents)
    out = tmp_path / "p.jsonl"
    segment_sharded(open_corpus(str(folder)), out, start_engine(EngineSpec()), splitter="fast")
    assert json.loads((shards_folder(out) / MANIFEST).read_text())["complete"]


def test_a_manifest_older_than_the_check_across_files_cuts_a_folder_s_file_shards_again(tmp_path, capsys, monkeypatch,
                                                                                        clueweb22_documents):
    """Its file shards lack their ids' hashes: cut again, once."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)  # the files taken as settled at once
    folder = write_clueweb22_txt(tmp_path / "cw", clueweb22_documents)
    out, engine = tmp_path / "p.jsonl", start_engine(EngineSpec())
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    _as_written_before_the_check(shards_folder(out) / MANIFEST)
    capsys.readouterr()
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    segment_sharded(open_corpus(str(folder)), out, engine, splitter="fast")
    files = len(open_corpus(str(folder)).paths)
    assert [line.split(";")[0] for line in capsys.readouterr().err.splitlines()] == [
        f"segment: {files} shards, {files} run, 0 already done",
        f"segment: {files} shards, 0 run, {files} already done"]


def test_a_manifest_older_than_the_check_across_files_has_its_ranges_ids_checked_once_and_kept(
        passages_file, tmp_path, capsys, checked):
    """The driver's pass over the corpus checks their ids again; no range is cut again."""
    out, engine = tmp_path / "p.jsonl", start_engine(EngineSpec())
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    _as_written_before_the_check(shards_folder(out) / MANIFEST)
    checked.clear()
    capsys.readouterr()
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    assert sum(checked) == sum(1 for _ in open_corpus(str(passages_file)).documents())
    assert ", 0 run," in capsys.readouterr().err
    checked.clear()
    segment_sharded(open_corpus(str(passages_file)), out, engine, splitter="fast", shard_docs=300)
    assert checked == []  # taken whole now


def _as_written_before_the_check(manifest_file) -> None:
    """A manifest as a harness without the check across files wrote it."""
    manifest = json.loads(manifest_file.read_text())
    del manifest["version"]
    for entry in manifest["shards"]:
        for name in [name for name in entry["files"] if name.endswith(ID_HASHES)]:
            del entry["files"][name], entry["versions"][name]
            (manifest_file.parent / name).unlink()
    manifest_file.write_text(json.dumps(manifest))


def test_a_corpus_without_documents_fails_on_every_run(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for _ in range(2):
        with pytest.raises(HarnessError, match="the corpus has no documents"):
            segment_sharded(open_corpus(f"jsonl:{empty}"), tmp_path / "out.jsonl", start_engine(EngineSpec()),
                            splitter="fast")


def test_a_cluster_address_nothing_answers_on_is_one_line_at_once(tmp_path, capsys):
    """ray.init retried for minutes there, deaf to SIGTERM."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["segment", "benchmark:pragmaticqa:val", "--output", str(tmp_path / "out"), "--engine", "ray",
                 "--address", f"127.0.0.1:{port}"]) == 2
    assert capsys.readouterr().err.startswith(
        f"harness segment: error: cannot join the Ray cluster 127.0.0.1:{port}: nothing answers there (")
    assert not (tmp_path / "out").exists()


# What Ray 2.60's ray.init raised where a cluster with token authentication (`ray start --head`
# once ~/.ray/auth_token exists) refused a driver without RAY_AUTH_MODE=token: its own
# exceptions and words, the traceback shortened.
REFUSED = ("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
           '  File "python/ray/includes/common.pxi", line 119, in ray._raylet.check_status\n'
           "ray.exceptions.AuthenticationError: RPC error: InvalidAuthToken: Authentication token is missing or "
           "incorrect. Note: RAY_AUTH_MODE is currently 'disabled' (not 'token').")


def ray_init_failure(cause: str) -> ConnectionError:
    try:
        try:
            raise RuntimeError(cause)
        except RuntimeError as error:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379") from error
    except ConnectionError as error:
        return error


def test_a_cluster_that_refuses_the_driver_s_token_is_said_with_what_to_set():
    from harness.compute.engines import _cannot_start

    said = _cannot_start("10.0.0.1:6379", ray_init_failure(REFUSED))
    assert said.startswith("cannot start or join the Ray cluster 10.0.0.1:6379: Failed to connect to Ray cluster "
                           "at 10.0.0.1:6379: the cluster uses Ray's token authentication and refused this driver; "
                           "run it with RAY_AUTH_MODE=token") and "\n" not in said
    # another failure to connect is said as Ray says it, with no guess at its cause
    other = ray_init_failure("Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
                             "grpc: failed to connect to all addresses; Connection refused")
    assert _cannot_start("10.0.0.1:6379", other) == ("cannot start or join the Ray cluster 10.0.0.1:6379: "
                                                     "Failed to connect to Ray cluster at 10.0.0.1:6379")


@pytest.mark.slow
def test_a_driver_told_to_send_a_token_it_does_not_have_is_ray_s_one_line(tmp_path):
    """RAY_AUTH_MODE=token, as README's cluster recipe sets it, with no token file: Ray's own
    words, where it was a traceback."""
    import socket
    import subprocess
    import sys

    from tests.conftest import child_env, extra

    extra("ray", "scale")
    env = {name: value for name, value in child_env(RAY_AUTH_MODE="token", HOME=str(tmp_path)).items()
           if name not in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}  # no token but in ~/.ray, here empty
    with socket.socket() as listening:  # answers, so the driver gets as far as ray.init
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = "127.0.0.1:%d" % listening.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "harness.cli", "segment", "benchmark:pragmaticqa:val", "--output",
                               str(tmp_path / "out"), "--engine", "ray", "--address", address], capture_output=True,
                              text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(
        f"harness segment: error: cannot start or join the Ray cluster {address}: Token authentication is enabled "
        "but no authentication token was found."), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
