"""The engine switch on a real two-node Ray cluster (loopback): same passages, same vectors,
same dense runs as one machine; shards with a manifest; resume after a lost shard or a
killed worker. One cluster per module, one CPU and a 100 MB object store per node."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness import topics
from harness.cli import main
from harness.corpus import Corpus
from harness.corpus.readers import open_corpus
from harness.corpus.segment import segment_corpus
from harness.retrieve import SearchQuery, build
from harness.paths import file_sha256
from harness.scale.shards import MANIFEST, outputs
from harness.trec import write_run
from tests.conftest import (child_env, clueweb22_txt_with_a_repeated_id, clueweb22_txt_with_an_id_in_two_files, extra,
                            ikat_passages, interruptible, write_clueweb22_txt)

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ray = extra("ray", "scale")
REPO = Path(__file__).resolve().parents[1]
NODE = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024}
# (benchmark corpus, splitter, documents per shard): the reference splitter on iKAT, the fast
# one on PragmatiCQA's cited spans to keep the module short
CORPORA = [("benchmark:ikat2023:test", "spacy", 100), ("benchmark:pragmaticqa:val", "fast", 100)]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    started = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    cluster.wait_for_nodes(timeout=60)
    assert time.monotonic() - started < 120
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def local_passages(tmp_path_factory) -> dict[str, Path]:
    """Each corpus segmented the one-machine way (one process, no shards)."""
    folder = tmp_path_factory.mktemp("local")
    outputs = {}
    for spec, splitter, _ in CORPORA:
        outputs[spec] = folder / f"{spec.replace(':', '_')}.jsonl"
        segment_corpus(open_corpus(spec), outputs[spec], splitter=splitter, processes=1)
    return outputs


def ray_segment(cluster, spec: str, out: Path, splitter: str, shard_docs: int) -> list[str]:
    return ["segment", spec, "--out", str(out), "--splitter", splitter, "--engine", "ray", "--address",
            cluster.address, "--workers", "2", "--shard-docs", str(shard_docs)]


def assert_manifest_matches(out: Path) -> dict:
    """Every shard listed with its count and the sha256 of its file; counts add up to OUT."""
    folder = out.parent / f"{out.name}.shards"
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["complete"] and [entry["index"] for entry in manifest["shards"]] == list(
        range(len(manifest["shards"])))
    for entry in manifest["shards"]:
        assert all(file_sha256(folder / name) == sha for name, sha in entry["files"].items())
        (name,) = outputs(entry)
        assert sum(1 for _ in open(folder / name, encoding="utf-8")) == entry["count"]
    lines = out.read_text(encoding="utf-8").count("\n")
    assert manifest["count"] == lines
    return manifest


@pytest.mark.parametrize("spec, splitter, shard_docs", CORPORA)
def test_ray_segmentation_is_byte_identical_to_local(cluster, local_passages, tmp_path, spec, splitter, shard_docs):
    out = tmp_path / "passages.jsonl"
    assert main(ray_segment(cluster, spec, out, splitter, shard_docs)) == 0
    assert out.read_bytes() == local_passages[spec].read_bytes()
    manifest = assert_manifest_matches(out)
    assert len(manifest["shards"]) > 2


def test_clueweb22_folder_is_split_one_shard_per_file(cluster, tmp_path):
    from harness.ikat.passages import rebuilt_documents
    from harness.corpus import Document

    documents = [Document(r.document.id.split(":")[0], r.document.contents)
                 for r in rebuilt_documents() if r.document.id.split(":")[1].startswith("0-")]
    folder = write_clueweb22_txt(tmp_path / "clueweb22", documents)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    local, sharded = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert main(["segment", str(folder), "--out", str(local), "--splitter", "fast", "--processes", "1"]) == 0
    assert main(ray_segment(cluster, str(folder), sharded, "fast", 1000)) == 0
    assert sharded.read_bytes() == local.read_bytes()
    manifest = assert_manifest_matches(sharded)
    assert [entry["source"] for entry in manifest["shards"]] == [f"clueweb22:{path}" for path in files]


def test_a_users_mistake_a_task_finds_is_its_one_line_without_the_remote_traceback(cluster, tmp_path, capsys):
    folder, message = clueweb22_txt_with_a_repeated_id(tmp_path)
    assert main(ray_segment(cluster, str(folder), tmp_path / "p.jsonl", "fast", 4)) == 2
    err = capsys.readouterr().err
    assert f": error: {message}; " in err and "Traceback" not in err and "shard task failed" not in err


def test_an_id_in_two_files_read_by_different_workers_is_caught(cluster, tmp_path, capsys):
    """The ids' hashes each worker keeps are the same in every process (Python's hash() is not)."""
    folder, message = clueweb22_txt_with_an_id_in_two_files(tmp_path)
    assert main(ray_segment(cluster, str(folder), tmp_path / "p.jsonl", "fast", 4)) == 2
    assert f": error: {message}; " in capsys.readouterr().err


def test_rerun_redoes_only_the_missing_shard(cluster, local_passages, tmp_path, capsys):
    spec, splitter, shard_docs = CORPORA[1]
    out = tmp_path / "passages.jsonl"
    assert main(ray_segment(cluster, spec, out, splitter, shard_docs)) == 0
    folder = out.parent / f"{out.name}.shards"
    kept = {p.name: p.stat().st_mtime_ns for p in folder.glob("shard-*.jsonl") if p.name != "shard-00002.jsonl"}
    (folder / "shard-00002.jsonl").unlink()
    out.unlink()
    capsys.readouterr()
    assert main(ray_segment(cluster, spec, out, splitter, shard_docs)) == 0
    assert f"{len(kept) + 1} shards, 1 run, {len(kept)} already done" in capsys.readouterr().err
    assert {p: (folder / p).stat().st_mtime_ns for p in kept} == kept
    assert out.read_bytes() == local_passages[spec].read_bytes()


def _task_workers(cluster, name: str) -> list[int]:
    """Processes of this cluster's raylets running a task called `name` (Ray titles them ray::NAME)."""
    import psutil  # bundled with Ray (ray/thirdparty_files, on the path once ray is imported)
    from ray._private import ray_constants

    raylets = [node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
               for node in [cluster.head_node, *cluster.worker_nodes]]
    found = []
    for raylet in raylets:
        for child in psutil.Process(raylet).children(recursive=True):
            try:
                if name in " ".join(child.cmdline()):
                    found.append(child.pid)
            except psutil.Error:
                pass
    return found


def test_worker_killed_mid_run_then_rerun_gives_identical_output(cluster, local_passages, tmp_path):
    spec, splitter, _ = CORPORA[0]
    out = tmp_path / "passages.jsonl"
    folder = out.parent / f"{out.name}.shards"
    command = [sys.executable, "-m", "harness.cli", *ray_segment(cluster, spec, out, splitter, 50)]
    env = child_env()
    driver = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    try:
        while killed is None and driver.poll() is None and time.monotonic() < deadline:
            manifest = json.loads((folder / MANIFEST).read_text()) if (folder / MANIFEST).is_file() else None
            busy = _task_workers(cluster, "segment_shard")
            if manifest and manifest["shards"] and busy:  # mid-run: some shards done, one running
                killed = busy[0]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.2)
        driver.communicate(timeout=180)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert killed is not None, "no shard task was running to kill"
    rerun = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert out.read_bytes() == local_passages[spec].read_bytes()
    assert_manifest_matches(out)


@pytest.fixture(scope="module")
def dense_corpus() -> Corpus:
    passages = list(ikat_passages(limit=96))
    digest = hashlib.sha256("".join(p.id + p.contents for p in passages).encode()).hexdigest()
    return Corpus("ikat23-96", lambda: iter(passages), known_fingerprint=digest)


def dense_queries() -> list[SearchQuery]:
    turns = itertools.chain.from_iterable(c.turns for c in topics.load("ikat2023:test").conversations)
    return [SearchQuery(turn.qid, turn.manual_rewrite or turn.utterance) for turn in itertools.islice(turns, 8)]


def run_bytes(retriever, path: Path, k: int = 100) -> bytes:
    hits = retriever.search(dense_queries(), k)
    write_run(path, ((qid, [(h.docid, h.score) for h in ranking]) for qid, ranking in hits.items()), "dense")
    return path.read_bytes()


def test_dense_ray_run_is_byte_identical_to_local(cluster, dense_corpus, tmp_path):
    local = build("dense", corpus=dense_corpus, batch_size=8, cache_dir=str(tmp_path / "local"))
    engine = {"name": "ray", "address": cluster.address, "workers": 2}
    sharded = build("dense", corpus=dense_corpus, batch_size=8, cache_dir=str(tmp_path / "ray"), engine=engine,
                    shard_docs=64)
    expected = run_bytes(local, tmp_path / "local.run")
    assert run_bytes(sharded, tmp_path / "ray.run") == expected
    # the shards hold the local cache's vectors (cut at the encoder's 64-passage chunks)
    manifest = json.loads((sharded.folder / MANIFEST).read_text())
    assert [entry["count"] for entry in manifest["shards"]] == [64, 32]
    vectors = np.concatenate([np.load(sharded.folder / f"shard-{i:05d}.npy") for i in range(2)])
    np.testing.assert_allclose(vectors, local.passages.vectors, rtol=0, atol=1e-6)
    # approximate search on the workers: HNSW candidates re-scored there, exact scores
    approx = build("dense", corpus=dense_corpus, batch_size=8, cache_dir=str(tmp_path / "ray"), engine=engine,
                   shard_docs=64, approx="hnsw")
    exact_hits = local.search(dense_queries(), 100)
    approx_hits = approx.search(dense_queries(), 100)
    found = [len({h.docid for h in approx_hits[q]} & {h.docid for h in exact_hits[q]}) / len(exact_hits[q])
             for q in exact_hits]
    assert np.mean(found) >= 0.95
    exact_score = {(q, h.docid): h.score for q in exact_hits for h in exact_hits[q]}
    assert all(exact_score.get((q, h.docid), h.score) == h.score for q in approx_hits for h in approx_hits[q])


def test_ctrl_c_while_ray_starts_here_is_exit_130_and_leaves_none_of_its_processes(tmp_path):
    """A terminal's Ctrl-C (to the process group) landing while the driver starts a Ray
    instance here: exit 130 with the one line, and every process Ray started gone with it (the
    raylet's agents of a half-started instance outlived the command by a minute)."""
    import psutil

    command = [sys.executable, "-m", "harness.cli", "segment", "benchmark:pragmaticqa:val", "--out",
               str(tmp_path / "p.jsonl"), "--splitter", "fast", "--engine", "ray", "--workers", "1"]
    with open(tmp_path / "err", "w+") as err:
        driver = subprocess.Popen(command, cwd=REPO, env=child_env(), stderr=err, start_new_session=True,
                                  preexec_fn=interruptible)
        started: dict[int, psutil.Process] = {}
        interrupted_at = None
        deadline = time.monotonic() + 120
        try:
            while driver.poll() is None and time.monotonic() < deadline:
                try:
                    started.update((p.pid, p) for p in psutil.Process(driver.pid).children(recursive=True))
                    if interrupted_at is None and any("raylet" in p.name() for p in started.values()):
                        os.killpg(driver.pid, signal.SIGINT)  # ray.init waits for the raylet to register
                        interrupted_at = time.monotonic()
                except psutil.Error:
                    pass
                time.sleep(0.05)
            driver.wait(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
        err.seek(0)
        said = err.read()
    assert interrupted_at is not None, "the raylet never started"
    assert driver.returncode == 130 and said.splitlines()[-1].endswith("interrupted; finished outputs are kept"), said
    assert "Traceback" not in said
    _, alive = psutil.wait_procs(list(started.values()), timeout=10)
    assert not [p for p in alive if _running(p)], [p.name() for p in alive]


def _running(process) -> bool:
    """Not ended (a zombie, which no parent reaps in a container without init, has ended)."""
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
