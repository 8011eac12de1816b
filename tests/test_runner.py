"""`harness run`: run files and their JSON, resuming, determinism, the leaderboard.

One small config (PragmatiCQA val, raw queries, BM25; iKAT 2023 PTKB ranking with BM25) is
run once per session; the other tests run it again in other ways against that result.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.runner import provenance
from harness.runner.config import load_config
from harness.corpus import unique_ids
from harness.corpus.readers import open_corpus
from harness.errors import HarnessError, InputError
from harness.ikat.ptkb import METHODS
from harness.runner.runner import concatenate, restrict_to_corpus
from harness.topics import load
from harness.trec import Run, read_qrels, read_run
from tests.conftest import child_env

PQA_TAG = "pragmaticqa-val.raw.bm25"
PTKB_TAG = "ikat2023-test.ptkb.bm25"
NOTE = "derived qrels: the spans each answer cites"


def _config(folder: Path, k: int = 20, measures: tuple[str, ...] = ("nDCG@10", "R@20")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "small.yaml"
    path.write_text(yaml.safe_dump({"k": k, "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"],
         "measures": list(measures), "note": NOTE},
        {"name": "ptkb", "task": "ptkb", "topics": "ikat2023:test", "retrievers": ["bm25"]},
    ]}), encoding="utf-8")
    return path


def _copy_finished(finished: Path, folder: Path, tags: tuple[str, ...] = (PQA_TAG,)) -> Path:
    """A runs folder holding copies of the finished runs' files (run and JSON) of `tags`."""
    out = folder / "runs"
    out.mkdir()
    for tag in tags:
        for suffix in (".run", ".json"):
            (out / f"{tag}{suffix}").write_bytes((finished / f"{tag}{suffix}").read_bytes())
    return out


@pytest.fixture(scope="session")
def finished(tmp_path_factory) -> Path:
    """The output folder of one uninterrupted run of the small config."""
    root = tmp_path_factory.mktemp("runner")
    out = root / "runs"
    assert main(["run", str(_config(root)), "--output", str(out)]) == 0
    return out


@pytest.mark.java
@pytest.mark.slow
def test_each_run_has_a_run_file_and_a_json_written_after_it(finished):
    for tag in (PQA_TAG, PTKB_TAG):
        run_file, meta_file = finished / f"{tag}.run", finished / f"{tag}.json"
        assert read_run(run_file).scores
        assert meta_file.stat().st_mtime_ns >= run_file.stat().st_mtime_ns
    meta = json.loads((finished / f"{PQA_TAG}.json").read_text())
    assert meta["config"]["strategy"] == "raw" and meta["config"]["retriever"]["name"] == "bm25"
    assert len(meta["hash"]) == 64 and set(meta["hashes"]) == {"queries", "corpus"}
    assert len(meta["scores"]["for"]["qrels"]) == 64  # the scores', not the run's, input
    assert {"harness", "pyserini", "ir-measures"} <= set(meta["versions"])
    assert meta["queries"] == 1526 and meta["timings"]["rank_and_write_s"] > 0
    assert not list(finished.glob(".*.tmp"))


@pytest.mark.java
@pytest.mark.slow
def test_run_files_are_trec_runs_with_k_results_and_decreasing_scores(finished):
    run = read_run(finished / f"{PQA_TAG}.run", strict=True)
    assert max(len(ranking) for ranking in run.scores.values()) == 20
    lines = (finished / f"{PQA_TAG}.run").read_text().splitlines()
    for previous, line in zip(lines, lines[1:]):
        a, b = previous.split(), line.split()
        if a[0] == b[0]:
            assert float(a[4]) > float(b[4]) and int(b[3]) == int(a[3]) + 1


@pytest.mark.java
@pytest.mark.slow
def test_leaderboard_has_a_section_per_benchmark_and_task(finished):
    board = (finished / "leaderboard.md").read_text()
    assert "## pragmaticqa:val — retrieval" in board and "## ikat2023:test — ptkb" in board
    assert f"> {NOTE}" in board
    assert f"| {PQA_TAG} | raw | bm25 |" in board
    assert "nDCG@3 | P@3 | R@3 | RR" in board  # the PTKB task's measures


@pytest.mark.java
@pytest.mark.slow
def test_second_invocation_skips_finished_runs(finished, capsys):
    before = {path.name: path.stat().st_mtime_ns for path in finished.glob("*.run")}
    assert main(["run", str(_config(finished.parent)), "--output", str(finished)]) == 0
    captured = capsys.readouterr()
    assert f"{PQA_TAG}: finished with the same inputs, skipped" in captured.err
    assert f"{PTKB_TAG}: finished with the same inputs, skipped" in captured.err
    assert before == {path.name: path.stat().st_mtime_ns for path in finished.glob("*.run")}
    assert f"| {PQA_TAG} |" in captured.out  # the leaderboard is printed again


@pytest.mark.java
@pytest.mark.slow
def test_a_skipped_run_reuses_the_scores_its_json_records(finished, tmp_path, monkeypatch, capsys):
    out = _copy_finished(finished, tmp_path)
    recorded = json.loads((finished / f"{PQA_TAG}.json").read_text())["scores"]
    assert recorded["for"] == {"measures": ["nDCG@10", "R@20"], "depth": 20, "passage_separator": None,
                               "judged": "Judged@10", "qrels": recorded["for"]["qrels"]}
    assert 0 <= recorded["judged"] <= 1  # the report's Judged@10, from the same reading
    assert len(recorded["evaluation"]["per_query"]["nDCG@10"]) == 1480

    def no_scoring(*args, **kwargs):
        raise AssertionError("a skipped run was scored again")

    monkeypatch.setattr("harness.runner.runner.evaluate_file", no_scoring)
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    board = capsys.readouterr().out
    ndcg = recorded["evaluation"]["means"]["nDCG@10"]
    assert f"| {PQA_TAG} | raw | bm25 | {ndcg:.4f} |" in board


@pytest.mark.java
@pytest.mark.slow
def test_a_skipped_run_s_json_is_read_once(finished, tmp_path, monkeypatch, capsys):
    """Whether it is finished, what its line says, its scores and the code that made it come from one reading."""
    out = _copy_finished(finished, tmp_path, (PQA_TAG, PTKB_TAG))
    reads: list[str] = []
    read_text = Path.read_text

    def counted(path: Path, *args, **kwargs) -> str:
        reads.append(path.name)
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    assert f"{PQA_TAG}: finished with the same inputs, skipped" in capsys.readouterr().err
    assert reads.count(f"{PQA_TAG}.json") == 1 and reads.count(f"{PTKB_TAG}.json") == 1  # (the other, not selected)


@pytest.mark.java
@pytest.mark.slow
def test_only_rewrites_the_whole_leaderboard_from_every_finished_run(finished, tmp_path, capsys):
    out = tmp_path / "runs"
    out.mkdir()
    for path in finished.glob("*.*"):
        if path.suffix in {".run", ".json"}:
            (out / path.name).write_bytes(path.read_bytes())
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa", "--report"]) == 0
    board = (out / "leaderboard.md").read_text()
    assert board == (finished / "leaderboard.md").read_text().replace(str(finished.parent), str(tmp_path))
    assert f"| {PQA_TAG} |" in board and f"| {PTKB_TAG} |" in board
    report = (out / "report.html").read_text()
    assert PQA_TAG in report and PTKB_TAG in report
    # a run whose files record other inputs is left out, in one line
    stale = json.loads((out / f"{PTKB_TAG}.json").read_text()) | {"hash": "0" * 64}
    (out / f"{PTKB_TAG}.json").write_text(json.dumps(stale))
    capsys.readouterr()
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    assert f"| {PTKB_TAG} |" not in (out / "leaderboard.md").read_text()
    assert f"{PTKB_TAG}: left out of the leaderboard: its files were made from other inputs" in capsys.readouterr().err


@pytest.mark.java
@pytest.mark.slow
def test_changed_measures_rescore_a_finished_run_without_ranking_again(finished, tmp_path, capsys):
    out = _copy_finished(finished, tmp_path)
    config = _config(tmp_path, measures=("P@5", "Judged@10"))  # the report's Judged@10 may be listed too
    assert main(["run", str(config), "--output", str(out), "--only", "pqa"]) == 0
    assert f"{PQA_TAG}: finished with the same inputs, rescored: the measures changed" in capsys.readouterr().err
    assert (out / f"{PQA_TAG}.run").read_bytes() == (finished / f"{PQA_TAG}.run").read_bytes()
    recorded = json.loads((out / f"{PQA_TAG}.json").read_text())["scores"]
    assert recorded["for"]["measures"] == ["P@5", "Judged@10"]
    assert list(recorded["evaluation"]["means"]) == ["P@5", "Judged@10"]
    assert recorded["judged"] == recorded["evaluation"]["means"]["Judged@10"]


@pytest.mark.java
@pytest.mark.slow
def test_a_configs_measures_are_reported_under_the_names_it_gives(finished, tmp_path, capsys):
    out = _copy_finished(finished, tmp_path)
    means = json.loads((finished / f"{PQA_TAG}.json").read_text())["scores"]["evaluation"]["means"]
    config = _config(tmp_path, measures=("ndcg_cut_10", "recall_20", "judged@10"))
    assert main(["run", str(config), "--output", str(out), "--only", "pqa"]) == 0
    board = capsys.readouterr().out
    assert "| run | strategy | retriever | ndcg_cut_10 | recall_20 | judged@10 |" in board
    recorded = json.loads((out / f"{PQA_TAG}.json").read_text())["scores"]
    assert recorded["evaluation"]["means"]["ndcg_cut_10"] == means["nDCG@10"]
    assert recorded["evaluation"]["means"]["recall_20"] == means["R@20"]
    assert recorded["judged"] == recorded["evaluation"]["means"]["judged@10"]


@pytest.mark.java
@pytest.mark.slow
def test_changed_config_redoes_the_run_saying_what_changed(finished, tmp_path, capsys):
    out = _copy_finished(finished, tmp_path)
    assert main(["run", str(_config(tmp_path, k=5)), "--output", str(out), "--only", "pqa", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("\tto run (the config's k changed since it was made)")
    older = json.loads((out / f"{PQA_TAG}.json").read_text())
    del older["key_parts"]  # a JSON written before the key's parts were recorded cannot say
    (out / f"{PQA_TAG}.json").write_text(json.dumps(older))
    assert main(["run", str(_config(tmp_path, k=5)), "--output", str(out), "--only", "pqa", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("\tto run")
    (out / f"{PQA_TAG}.json").write_bytes((finished / f"{PQA_TAG}.json").read_bytes())
    assert main(["run", str(_config(tmp_path, k=5)), "--output", str(out), "--only", "pqa"]) == 0
    err = capsys.readouterr().err
    assert "skipped" not in err
    assert f"{PQA_TAG}: the config's k changed since it was made, so its recorded scores are not its: ranked again" in (
        err)
    assert max(len(ranking) for ranking in read_run(out / f"{PQA_TAG}.run").scores.values()) == 5


@pytest.mark.java
@pytest.mark.slow
def test_a_run_made_by_other_harness_code_is_skipped_saying_so_and_the_board_notes_it(finished, tmp_path, capsys):
    """The resume key leaves the harness's code out (a harness update keeps finished runs); the JSON records it."""
    recorded = json.loads((finished / f"{PQA_TAG}.json").read_text())["code"]
    assert len(recorded["sha256"]) == 64 and len(recorded["commit"]) == 40 and isinstance(recorded["dirty"], bool)
    out = _copy_finished(finished, tmp_path, (PQA_TAG, PTKB_TAG))
    older = json.loads((out / f"{PQA_TAG}.json").read_text())
    older["code"] = {"sha256": "0" * 64, "commit": "abcdef0123456789" * 2, "dirty": False}
    (out / f"{PQA_TAG}.json").write_text(json.dumps(older))
    assert main(["run", str(_config(tmp_path)), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert (f"{PQA_TAG}: finished with the same inputs, skipped ({out / PQA_TAG}.run; made by other harness code: "
            "abcdef012345; --force remakes it)") in captured.err
    assert f"{PTKB_TAG}: finished with the same inputs, skipped ({out / PTKB_TAG}.run)" in captured.err
    assert f"Note: these runs were made by different harness code ({PQA_TAG} by abcdef012345; " in captured.out
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa", "--force"]) == 0
    assert "different harness code" not in capsys.readouterr().out
    same = json.loads((out / f"{PQA_TAG}.json").read_text())
    same["code"]["commit"] = "fedcba9876543210" * 2  # a later commit that touched no code: the same code
    (out / f"{PQA_TAG}.json").write_text(json.dumps(same))
    assert main(["run", str(_config(tmp_path)), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "different harness code" not in captured.out and "other harness code" not in captured.err


@pytest.mark.java
@pytest.mark.slow
def test_runs_recording_no_code_are_noted_apart_from_runs_of_different_code(finished, tmp_path, capsys):
    """A run made before runs recorded their code is older code than the others', not known to be one code."""
    out = _copy_finished(finished, tmp_path, (PQA_TAG, PTKB_TAG))
    code = provenance.code_name(json.loads((out / f"{PTKB_TAG}.json").read_text())["code"])
    older = json.loads((out / f"{PQA_TAG}.json").read_text())
    del older["code"]
    (out / f"{PQA_TAG}.json").write_text(json.dumps(older))
    assert main(["run", str(_config(tmp_path)), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"{PQA_TAG}: finished with the same inputs, skipped ({out / PQA_TAG}.run)" in captured.err
    assert (f"Note: 1 run records no harness code ({PQA_TAG}): made before runs recorded it, by older code than the "
            f"others' ({code}); `harness run --force` remakes them.") in captured.out
    assert "different harness code" not in captured.out
    newer = json.loads((out / f"{PTKB_TAG}.json").read_text())
    del newer["code"]
    (out / f"{PTKB_TAG}.json").write_text(json.dumps(newer))
    assert main(["run", str(_config(tmp_path)), "--output", str(out)]) == 0
    assert "Note: " not in capsys.readouterr().out  # runs of one time, none recording its code: nothing to compare


@pytest.mark.java
@pytest.mark.slow
def test_a_finished_run_whose_run_file_was_cut_afterwards_is_ranked_again_not_skipped(finished, tmp_path, capsys):
    """Its JSON's scores are the written file's: a rerun taking the cut file as finished kept them on the board."""
    out = _copy_finished(finished, tmp_path)
    lines = (out / f"{PQA_TAG}.run").read_text().splitlines(keepends=True)
    (out / f"{PQA_TAG}.run").write_text("".join(lines[:1000]))
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(
        f"\tto run ({out / PQA_TAG}.run was edited or replaced since it was written: it has 1000 lines, "
        f"{len(lines)} were written)")
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    captured = capsys.readouterr()
    assert (f"{PQA_TAG}: {out / PQA_TAG}.run was edited or replaced since it was written: it has 1000 lines, "
            f"{len(lines)} were written, so its recorded scores are not its: ranked again") in captured.err
    assert "skipped" not in captured.err
    assert (out / f"{PQA_TAG}.run").read_bytes() == (finished / f"{PQA_TAG}.run").read_bytes()


@pytest.mark.java
@pytest.mark.slow
def test_a_run_file_edited_in_place_is_told_by_its_sha256_and_left_off_the_board(finished, tmp_path, capsys):
    """Same line count, another score: the sha256 its JSON records tells it; a JSON written
    before the sha256 was recorded is trusted as long as the line count holds."""
    out = _copy_finished(finished, tmp_path, (PQA_TAG, PTKB_TAG))
    run = out / f"{PTKB_TAG}.run"
    first, rest = run.read_text().split("\n", 1)
    fields = first.split()
    run.write_text(" ".join(fields[:4] + ["99", fields[5]]) + "\n" + rest)
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    captured = capsys.readouterr()
    assert (f"{PTKB_TAG}: left out of the leaderboard: {run} was edited or replaced since it was written: its "
            f"sha256 is not the one its JSON records (run it with --only {PTKB_TAG})") in captured.err
    assert f"| {PTKB_TAG} |" not in captured.out
    older = json.loads((out / f"{PTKB_TAG}.json").read_text())
    del older["run_sha256"]
    (out / f"{PTKB_TAG}.json").write_text(json.dumps(older))
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--only", "pqa"]) == 0
    assert f"| {PTKB_TAG} |" in capsys.readouterr().out


@pytest.mark.java
@pytest.mark.slow
def test_force_redoes_finished_runs_byte_for_byte(finished, tmp_path, capsys):
    """A second execution (forced over the first's files) writes the very same bytes."""
    out = _copy_finished(finished, tmp_path, (PQA_TAG, PTKB_TAG))
    assert main(["run", str(_config(tmp_path)), "--output", str(out), "--force"]) == 0
    assert "skipped" not in capsys.readouterr().err
    for tag in (PQA_TAG, PTKB_TAG):
        assert (out / f"{tag}.run").read_bytes() == (finished / f"{tag}.run").read_bytes()
        assert json.loads((out / f"{tag}.json").read_text())["finished_at"]


@pytest.mark.java
@pytest.mark.slow
def test_a_killed_run_leaves_no_final_file_and_restarts_to_the_same_file(finished, tmp_path):
    """SIGKILL the CLI once it is writing the run, then run again: same bytes as uninterrupted."""
    config, out = _config(tmp_path), tmp_path / "runs"
    command = [sys.executable, "-m", "harness.cli", "run", str(config), "--output", str(out), "--only", "pqa"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while not any(path.stat().st_size > 0 for path in out.glob(f".{PQA_TAG}.run.*.tmp")):
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run never started writing"
            time.sleep(0.01)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert not (out / f"{PQA_TAG}.run").exists() and not (out / f"{PQA_TAG}.json").exists()
    assert list(out.glob(f".{PQA_TAG}.run.*.tmp"))  # the half-written file never had the final name

    assert main(["run", str(config), "--output", str(out), "--only", "pqa"]) == 0
    assert (out / f"{PQA_TAG}.run").read_bytes() == (finished / f"{PQA_TAG}.run").read_bytes()
    assert not list(out.glob(".*.tmp"))


def test_qrels_restricted_to_the_corpus_keep_judged_pool_documents_only():
    """iKAT 2023 qrels over the shipped provenance passages: what the small-scale run scores on."""
    benchmark = load("ikat2023:test")
    pool = {document.id for document in benchmark.corpus.documents()}
    restricted = restrict_to_corpus(benchmark.qrels(), benchmark.corpus)
    assert all(docid in pool for judged in restricted.judgments.values() for docid in judged)
    assert all(any(grade > 0 for grade in judged.values()) for judged in restricted.judgments.values())
    full = read_qrels(Path(benchmark.qrels().path))
    assert 0 < len(restricted.judgments) < len(full.judgments)


@pytest.mark.java
@pytest.mark.slow
def test_dry_run_lists_runs_and_whether_they_are_finished(finished, capsys):
    assert main(["run", str(_config(finished.parent)), "--output", str(finished), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"runs go to {finished}"
    assert lines[1].startswith(f"{PQA_TAG}\t1526 queries") and lines[1].endswith("finished")
    assert len(lines) == 1 + len(load_config(_config(finished.parent)).runs())


def test_a_dry_run_loads_no_model_and_no_library_only_running_needs(tmp_path):
    """It checks the config and lists the runs: no JVM, no bi-encoder, and not the leaderboard's
    statistics (scipy took 1 of its 1.5 s). ptkb_topk forms its queries by ranking PTKB
    statements, so a dry run of it starts the JVM: how else would it know a run is finished."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["bm25", "dense"], "preset": "ikat2023"}]}))
    code = (f"import sys; from harness.cli import main; assert main(['run', {str(config)!r}, '--output', "
            f"{str(tmp_path / 'runs')!r}, '--dry-run']) == 0; print(sorted(m for m in ('scipy', 'jnius', 'torch', "
            "'sentence_transformers', 'pyserini', 'harness.runner.leaderboard') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == [f"runs go to {tmp_path / 'runs'}",
                                        "ikat2023-test.raw.bm25\t332 queries\t176 judged\tto run",
                                        "ikat2023-test.raw.dense\t332 queries\t176 judged\tto run", "[]"], done.stderr


def test_a_dry_run_says_first_where_the_runs_go_read_from_the_folder_harness_runs_in(tmp_path, monkeypatch, capsys):
    """A relative output is the working folder's, not the config's: run from another folder, a
    dry run listed finished runs as 'to run' and never said where it looked."""
    config = tmp_path / "configs" / "quick.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump({"k": 10, "output": "runs/quick", "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["bm25"]}]}),
        encoding="utf-8")
    monkeypatch.chdir(config.parent)
    assert main(["run", "quick.yaml", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (f"runs go to {config.parent / 'runs' / 'quick'} (output: "
                                                       "runs/quick, relative to the folder harness runs in)")


def test_a_dry_run_of_a_read_only_runs_folder_reads_only_and_says_a_run_would_stop(tmp_path):
    """A colleague's config checked on a shared runs folder this user may not write (W15 #7): the
    check of where the runs go made a folder in it, so the dry run stopped; it writes nothing."""
    shared = tmp_path / "shared"
    shared.mkdir()
    config = _raw_pragmaticqa(shared, ["bm25"])
    (shared / "runs").mkdir()
    for folder in (shared / "runs", shared):
        folder.chmod(0o555)
    as_user = []
    if os.geteuid() == 0:  # root writes any folder: run without the capability that lets it
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to run as root without writing every folder")
        as_user = ["setpriv", "--bounding-set=-dac_override"]
    try:
        done = subprocess.run([*as_user, sys.executable, "-m", "harness.cli", "run", config.name, "--dry-run"],
                              cwd=shared, env=child_env(HARNESS_CACHE=str(shared / "cache")), capture_output=True,
                              text=True, timeout=120)
    finally:
        for folder in (shared, shared / "runs"):
            folder.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"runs go to {shared / 'runs'} ({shared / 'runs'} is not writable: a run would stop, a dry run only reads)",
        f"{PQA_TAG}\t1526 queries\t1480 judged\tto run"]
    assert sorted(path.name for path in shared.rglob("*")) == ["preload.yaml", "runs"]


def test_a_dry_run_counts_the_judged_queries_among_the_run_s_own(tmp_path, capsys):
    """Not the qrels' queries: a judged query of other topics is no judged query of the run."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1_1 0 d1 1\n1_2 0 d1 1\nnot-a-turn 0 d1 1\n", encoding="utf-8")
    config = tmp_path / "q.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["bm25"],
         "qrels": str(qrels)}]}), encoding="utf-8")
    assert main(["run", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"{PQA_TAG}\t1526 queries\t2 judged\tto run"


def test_a_dry_run_with_force_lists_the_finished_runs_force_would_redo(tmp_path, capsys):
    """What the command would do: --force redoes the selected runs, finished or not."""
    from harness.retrieve import RETRIEVERS

    config = _raw_pragmaticqa(tmp_path, ["ranked", "other"])
    answer = lambda query, k: [("d1", 2.0)]  # noqa: E731
    with RETRIEVERS.using({"ranked": answer, "other": answer}):
        assert main(["run", str(config)]) == 0
        capsys.readouterr()
        for only, runs in (([], 2), (["--only", "pragmaticqa-val.raw.ranked"], 1)):
            assert main(["run", str(config), "--dry-run", "--force", *only]) == 0
            states = [line.rsplit("\t", 1)[1] for line in capsys.readouterr().out.splitlines()[1:]]
            assert states == ["finished, forced: to run"] * runs
        assert main(["run", str(config), "--dry-run"]) == 0
    assert [line.rsplit("\t", 1)[1] for line in capsys.readouterr().out.splitlines()[1:]] == ["finished"] * 2


def test_a_dry_run_selects_the_runs_once(tmp_path, monkeypatch, capsys):
    """Its errors said before where the runs go, the runs it lists are the ones that selection took."""
    from harness.retrieve import RETRIEVERS
    from harness.runner.config import Config

    selections, select = [], Config.selected
    monkeypatch.setattr(Config, "selected", lambda config, only=(): selections.append(list(only)) or
                        select(config, only))
    answer = lambda query, k: [("d1", 2.0)]  # noqa: E731
    with RETRIEVERS.using({"ranked": answer, "other": answer}):
        config = _raw_pragmaticqa(tmp_path, ["ranked", "other"])
        assert main(["run", str(config), "--dry-run", "--only", "pragmaticqa-val.raw.other"]) == 0
    assert selections == [["pragmaticqa-val.raw.other"]]
    assert capsys.readouterr().out.splitlines()[1:] == ["pragmaticqa-val.raw.other\t1526 queries\t1480 judged\tto run"]


def test_default_ikat_pool_is_the_894_shipped_provenance_passages():
    """The small-scale iKAT 2023 experiment searches both topic splits' provenance passages."""
    from harness.paths import REPO_ROOT
    from harness.runner.runner import Workspace

    config = load_config(REPO_ROOT / "configs" / "default.yaml")
    experiment = next(e for e in config.experiments if e.name == "ikat2023")
    assert experiment.qrels_restrict_to_corpus and "894" in experiment.note
    assert sum(1 for _ in Workspace().corpus(experiment).documents()) == 894


def _raw_pragmaticqa(folder: Path, retrievers: list) -> Path:
    """A config of PragmatiCQA val's raw queries, scored by RR, with these retrievers."""
    config = folder / "preload.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(folder / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": retrievers},
    ]}), encoding="utf-8")
    return config


def test_a_strategy_forms_its_queries_once_for_all_the_retrievers_of_an_experiment(tmp_path, capsys):
    """They search the same queries (hqe on these 1,526 turns took 0.3 s a retriever)."""
    from harness.queries import STRATEGIES

    asked = []

    def mine(conversation, turn_index):
        asked.append(conversation.turns[turn_index].qid)
        return conversation.turns[turn_index].utterance

    config = tmp_path / "twice.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["mine"], "measures": ["RR"],
         "retrievers": ["bm25", "dense"]}]}), encoding="utf-8")
    with STRATEGIES.using({"mine": mine}):
        assert main(["run", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().out.count("1526 queries") == 2
    assert len(asked) == len(set(asked)) == 1526

def test_run_starts_the_declared_preloads_of_the_runs_it_will_make_in_the_background(tmp_path):
    """A retriever's `preload` (torch's import, for dense) runs once, on a thread of its own,
    for runs whose files are not there yet, a retriever nested in fusion's included; a second
    `harness run`, which has nothing to make, loads nothing."""
    from harness import declare
    from harness.retrieve import RETRIEVERS

    threads = []

    @declare("one hit for every query", preload=lambda: threads.append(threading.current_thread().name))
    def one(query, k):
        return [("d1", 1.0)]

    config = _raw_pragmaticqa(tmp_path, [{"name": "rrf", "params": {"retrievers": [
        {"name": "one"}, {"name": "one", "label": "one-again"}]}}])
    with RETRIEVERS.using({"one": one}):
        assert main(["run", str(config)]) == 0
        assert threads == ["preload"]
        assert main(["run", str(config)]) == 0
    assert threads == ["preload"]


def test_a_preload_that_fails_leaves_the_error_to_the_build(tmp_path):
    """What a failing preload would have loaded is loaded again by the build, which reports
    any error itself; the preload's own failure is not an error of the run."""
    from harness import declare
    from harness.retrieve import RETRIEVERS

    @declare("one hit for every query", preload=lambda: 1 / 0)
    def one(query, k):
        return [("d1", 1.0)]

    config = _raw_pragmaticqa(tmp_path, ["one"])
    with RETRIEVERS.using({"one": one}):
        assert main(["run", str(config)]) == 0
    assert (tmp_path / "runs" / "pragmaticqa-val.raw.one.run").is_file()


@pytest.mark.java
@pytest.mark.slow
def test_a_run_in_which_no_query_retrieves_a_document_is_an_error_and_leaves_no_run_file(tmp_path, capsys):
    corpus = tmp_path / "other.jsonl"  # a corpus sharing no word with PragmatiCQA's questions
    corpus.write_text('{"id": "zzzqqq", "contents": "zzzqqq"}\n', encoding="utf-8")
    out = tmp_path / "runs"
    config = tmp_path / "wrong_corpus.yaml"
    config.write_text(yaml.safe_dump({"output": str(out), "k": 10, "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"],
         "measures": ["nDCG@3"], "corpus": str(corpus)}]}), encoding="utf-8")
    assert main(["run", str(config)]) == 2
    assert (f"harness run: error: run {PQA_TAG}: none of its 1526 queries retrieved a document from {corpus} "
            "(retriever bm25); no run file is written" in capsys.readouterr().err)
    assert not list(out.glob("*.run")) and not list(out.glob("*.json"))


def test_linear_fusion_over_scores_spanning_more_than_a_float_holds_runs(tmp_path, monkeypatch):
    """A plug-in scoring 1e308 down to -1e308: their min-max span overflowed to inf, and the
    run stopped on the nan it made; the run file holds the normalised scores, 1 and 0."""
    (tmp_path / "wide.py").write_text("def scores(query, k):\n    return [('d1', 1e308), ('d2', -1e308)]\n",
                                      encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "wide.yaml"
    config.write_text(yaml.safe_dump({"output": "runs", "k": 10, "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["nDCG@3"], "retrievers": [
            {"name": "linear", "params": {"retrievers": ["python:wide:scores", {"name": "python:wide:scores",
                                                                     "label": "again"}]}}]}]}),
        encoding="utf-8")
    assert main(["run", str(config)]) == 0
    lines = (tmp_path / "runs" / "pragmaticqa-val.raw.linear.run").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["1_1 Q0 d1 1 1.000000 pragmaticqa-val.raw.linear",
                         "1_1 Q0 d2 2 0.000000 pragmaticqa-val.raw.linear"]


def _nan_method(conversations=()):
    """A PTKB ranking method that scores every turn's statement nan."""
    class Ranker:
        def rank(self, turns):
            return Run.of({conversation.turns[index].qid: [("1", math.nan)] for conversation, index in turns})

    return Ranker()


def test_a_score_that_is_not_finite_is_one_line_naming_the_ranker_and_leaves_no_run_file(tmp_path, capsys):
    """Neither inf nor nan is a run file's score (the harness's own reader refuses them): a
    ranker no plug-in check saw (a built-in retriever or PTKB method) stops the run before
    its run file and JSON are written."""
    config = tmp_path / "nan.yaml"
    config.write_text(yaml.safe_dump({"output": str(tmp_path / "runs"), "experiments": [
        {"name": "ptkb", "task": "ptkb", "topics": "ikat2023:test", "retrievers": ["nan"]}]}), encoding="utf-8")
    with METHODS.using({"nan": _nan_method}):
        assert main(["run", str(config)]) == 2
    assert capsys.readouterr().err == (
        "harness run: error: run ikat2023-test.ptkb.nan: PTKB ranking method nan gave query 9-1_1, document 1, "
        "the score nan, which is not finite; no run file is written\n")
    assert not list((tmp_path / "runs").glob("*.run")) and not list((tmp_path / "runs").glob("*.json"))


def _jsonl_corpus(path: Path, ids: list[str]):
    path.write_text("".join(json.dumps({"id": docid, "contents": f"text of {docid}"}) + "\n" for docid in ids))
    return open_corpus(str(path))


def test_a_document_id_in_two_corpora_of_a_list_names_both(tmp_path):
    corpus = concatenate([_jsonl_corpus(tmp_path / "a.jsonl", ["x", "y"]),
                          _jsonl_corpus(tmp_path / "b.jsonl", ["z", "y"])])
    with pytest.raises(HarnessError, match=r"document 'y' is in both corpora a\.jsonl and b\.jsonl"):
        list(corpus.documents())


def test_a_document_id_given_twice_in_one_corpus_of_a_list_names_its_file_and_lines(tmp_path):
    corpus = concatenate([_jsonl_corpus(tmp_path / "a.jsonl", ["x"]),
                          _jsonl_corpus(tmp_path / "b.jsonl", ["z", "w", "z"])])
    with pytest.raises(InputError, match=r"b\.jsonl:3: document id 'z' again \(first at line 1\)"):
        list(unique_ids(corpus, corpus.documents()))
def _declared_one():
    from harness import declare

    @declare("one hit for every query", preload=lambda: None)
    def one(query, k):
        return [("d1", 1.0)]

    return one


def test_on_a_log_or_a_pipe_a_run_shows_no_progress_bar_but_one_line_when_it_is_written(tmp_path, capsys):
    """A progress bar redrawn on a stream that is not a terminal (`make demo > log`, CI) is a
    line per refresh; the run says once that it is done instead."""
    from harness.retrieve import RETRIEVERS

    with RETRIEVERS.using({"one": _declared_one()}):
        assert main(["run", str(_raw_pragmaticqa(tmp_path, ["one"]))]) == 0
    err = capsys.readouterr().err
    assert "%|" not in err and "\r" not in err
    assert re.search(r"^pragmaticqa-val\.raw\.one: 1526 turns ranked in \d+\.\d s( after \d+\.\d s of set-up)? "
                     r"\(.*pragmaticqa-val\.raw\.one\.run\)$", err, re.M)


def test_on_a_log_a_run_s_line_times_its_ranking_apart_from_its_set_up(tmp_path, capsys):
    """A corpus's index built on first use (31.9 s) is no ranking time (0.3 s): the line says both, apart."""
    from harness import declare
    from harness.retrieve import RETRIEVERS

    @declare("one hit for every query, after a slow set-up", preload=lambda: None)
    class SlowToBuild:
        def __init__(self) -> None:
            time.sleep(0.5)  # as an index or a model is built or loaded

        def search(self, queries, k):
            return {query.qid: [("d1", 1.0)] for query in queries}

    with RETRIEVERS.using({"slow": SlowToBuild}):
        assert main(["run", str(_raw_pragmaticqa(tmp_path, ["slow"]))]) == 0
    said = re.search(r"^pragmaticqa-val\.raw\.slow: 1526 turns ranked in (\d+\.\d) s after (\d+\.\d) s of set-up \(",
                     capsys.readouterr().err, re.M)
    assert said and float(said[2]) >= 0.5 and float(said[1]) < 0.5, said


def test_on_a_terminal_a_run_shows_its_progress_bar(tmp_path):
    from harness.retrieve import RETRIEVERS
    from harness.runner.runner import run_config

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    with RETRIEVERS.using({"one": _declared_one()}):
        run_config(load_config(_raw_pragmaticqa(tmp_path, ["one"])), log=shown)
    assert "pragmaticqa-val.raw.one: 100%|" in shown.getvalue()
    assert "turns ranked in" not in shown.getvalue()


def test_what_the_preloads_loaded_is_left_out_of_the_garbage_collectors_passes(tmp_path):
    """torch's and transformers' 470,000 objects live as long as the process; each full
    collection walked them (0.2 s) until they were frozen after the preloads."""
    import gc

    from harness.retrieve import RETRIEVERS

    gc.unfreeze()
    try:
        with RETRIEVERS.using({"one": _declared_one()}):
            assert main(["run", str(_raw_pragmaticqa(tmp_path, ["one"]))]) == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_harness_run_leaves_its_objects_to_the_system_at_exit(tmp_path):
    """Python's last full collection at exit walked every object for 2-4 s after the report
    was written: `harness run` freezes them first (the check below runs after it, at exit)."""
    config = _raw_pragmaticqa(tmp_path, ["bm25"])
    script = ("import atexit, gc, sys; atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0)); "
              "from harness.cli import main; main(['run', sys.argv[1], '--dry-run'])")
    result = subprocess.run([sys.executable, "-c", script, str(config)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("frozen True")


def test_a_run_interrupted_between_its_run_file_and_its_json_is_not_taken_for_the_old_inputs(tmp_path, monkeypatch,
                                                                                              capsys):
    """Interrupted after the new run file replaced the old one and before its JSON was written,
    the old JSON (the old inputs' hash) is gone too: the old config runs again instead of taking
    the other config's file, and the old scores, for its own."""
    from harness.retrieve import RETRIEVERS
    from harness.runner import runner

    def ranked(query, k):
        return [(f"d{rank}", float(k - rank)) for rank in range(k)]

    def config(k: int) -> Path:
        path = tmp_path / f"k{k}.yaml"
        path.write_text(yaml.safe_dump({"k": k, "output": str(tmp_path / "runs"), "experiments": [
            {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"],
             "retrievers": ["ranked"]}]}), encoding="utf-8")
        return path

    def interrupted(*args):
        raise KeyboardInterrupt

    run_file = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run"
    with RETRIEVERS.using({"ranked": ranked}):
        assert main(["run", str(config(5))]) == 0
        with monkeypatch.context() as patched:
            patched.setattr(runner, "_write_metadata", interrupted)
            assert main(["run", str(config(3))]) == 130
        assert max(map(len, read_run(run_file).scores.values())) == 3
        capsys.readouterr()
        assert main(["run", str(config(5))]) == 0
    assert "skipped" not in capsys.readouterr().err
    assert max(map(len, read_run(run_file).scores.values())) == 5


def test_a_rerun_that_fails_while_ranking_leaves_the_finished_run_and_its_json_as_they_were(tmp_path, capsys):
    """An edited plug-in that raises half-way: the finished run and its JSON stay as they were, so the edit
    reverted finds the run finished, not hours of ranking lost to one typo."""
    from harness.retrieve import RETRIEVERS

    def edited(typo: bool):
        def ranked(query, k):
            if typo:
                raise ValueError("oops")
            return [(f"d{rank}", float(k - rank)) for rank in range(k)]

        return ranked

    config = tmp_path / "x.yaml"
    config.write_text(yaml.safe_dump({"k": 5, "output": str(tmp_path / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"],
         "retrievers": ["ranked"]}]}), encoding="utf-8")
    files = [tmp_path / "runs" / f"pragmaticqa-val.raw.ranked.{suffix}" for suffix in ("run", "json")]
    with RETRIEVERS.using({"ranked": edited(False)}):
        assert main(["run", str(config)]) == 0
    finished = [path.read_bytes() for path in files]
    # raised as it is, or reported as a plug-in's (rc 2) where this process loaded a python: plug-in from
    # tests/, whose folder then holds that plug-in's code (harness.registry.plugins._plugin_owner)
    with RETRIEVERS.using({"ranked": edited(True)}), contextlib.suppress(ValueError):
        assert main(["run", str(config)]) != 0
    assert [path.read_bytes() for path in files] == finished
    capsys.readouterr()
    with RETRIEVERS.using({"ranked": edited(False)}):
        assert main(["run", str(config)]) == 0
    assert "pragmaticqa-val.raw.ranked: finished with the same inputs, skipped" in capsys.readouterr().err


def test_the_leaderboard_prints_counts_as_whole_numbers_as_trec_eval_does(tmp_path, capsys):
    """NumRet and the other counts are summed over the judged queries: 1480, not 1480.0000."""
    from harness.retrieve import RETRIEVERS

    config = tmp_path / "counts.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["NumRet", "num_q", "RR"],
         "retrievers": ["one"]}]}), encoding="utf-8")
    with RETRIEVERS.using({"one": _declared_one()}):
        assert main(["run", str(config)]) == 0
        assert "| pragmaticqa-val.raw.one | raw | one | 1480 | 1480 | 0.0000 |" in capsys.readouterr().out
        # the run's JSON records them so too, and a rerun reads them back to the same leaderboard
        record = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.one.json").read_text())["scores"]["evaluation"]
        assert [record["means"][name] for name in ("NumRet", "num_q")] == [1480, 1480]
        assert all(type(v) is int for name in ("NumRet", "num_q") for v in [record["means"][name],
                                                                              *record["per_query"][name].values()])
        assert main(["run", str(config)]) == 0
        assert "| pragmaticqa-val.raw.one | raw | one | 1480 | 1480 | 0.0000 |" in capsys.readouterr().out


def test_a_parameter_yaml_reads_as_a_date_is_recorded_as_its_text_in_the_runs_json(tmp_path):
    """`since: 2024-01-01` is a date to YAML: json.dump stopped on it with a traceback after the
    run file was written, leaving it without its JSON (so never finished)."""
    from harness.retrieve import RETRIEVERS

    def dated(query: str, k: int, since=None):
        return [("d1", 1.0)]

    config = tmp_path / "dated.yaml"
    config.write_text(f"k: 10\noutput: {tmp_path / 'runs'}\nexperiments:\n  - topics: pragmaticqa:val\n"
                      "    strategies: [raw]\n    measures: [RR]\n"
                      "    retrievers: [{name: dated, params: {since: 2024-01-01}}]\n", encoding="utf-8")
    with RETRIEVERS.using({"dated": dated}):
        assert main(["run", str(config)]) == 0
    record = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.dated.json").read_text(encoding="utf-8"))
    assert record["config"]["retriever"]["params"] == {"since": "2024-01-01"}


def test_measures_reading_deeper_than_the_runs_go_draw_a_warning_naming_the_experiment(tmp_path, capsys):
    """R@100 over runs of k: 10 is R@10 under R@100's name; a preset's depth 1000 over k: 100
    scores the top 100 (the leaderboard said 'evaluated to depth 1000')."""
    config = tmp_path / "shallow.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "tag": "{name}", "output": str(tmp_path / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"],
         "measures": ["RR", "nDCG@10", "R@100", "AP@1000"]},
        {"name": "deep", "topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"],
         "measures": ["RR", "nDCG@10"]},
        {"name": "ikat", "topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["bm25"], "k": 100,
         "preset": "ikat2023"}]}), encoding="utf-8")
    assert main(["run", str(config), "--dry-run"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "hits per turn" in line]
    assert warnings == [
        f"warning: {config}: experiments[0]: its runs hold 10 hits per turn (k), fewer than R@100 (100), AP@1000 "
        "(1000) reads: scored on the top 10 alone; ask for R@10 and AP@10, which read no deeper, or give k: 1000 for "
        "what the names say",
        f"warning: {config}: experiments[2]: its runs hold 100 hits per turn (k), fewer than nDCG@1000 (1000), "
        "AP(rel=2)@1000 (1000), R(rel=2)@1000 (1000), the preset's depth (1000) reads: scored on the top 100 alone; "
        "ask for nDCG@100, AP(rel=2)@100 and R(rel=2)@100, which read no deeper, or give k: 1000 for what the "
        "names say"]


def test_changed_qrels_rescore_a_finished_run_without_ranking_its_turns_again(tmp_path, capsys):
    """The run file does not depend on the qrels (judgments filled in by `harness judge`, a
    fixed grade): they are in the scores' record, not in the run's resume key."""
    from harness.retrieve import RETRIEVERS

    asked = []

    def ranked(query: str, k: int):
        asked.append(query)
        return [("d1", 2.0), ("d2", 1.0)]

    qrels = tmp_path / "qrels.txt"
    config = tmp_path / "q.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"],
         "qrels": str(qrels)}]}), encoding="utf-8")
    with RETRIEVERS.using({"ranked": ranked}):
        qrels.write_text("1_1 0 d2 1\n", encoding="utf-8")
        assert main(["run", str(config)]) == 0
        assert len(asked) == 1526
        qrels.write_text("1_1 0 d1 1\n", encoding="utf-8")
        capsys.readouterr()
        assert main(["run", str(config)]) == 0
    captured = capsys.readouterr()
    assert len(asked) == 1526
    assert "pragmaticqa-val.raw.ranked: finished with the same inputs, rescored: the qrels changed (" in captured.err
    assert "| pragmaticqa-val.raw.ranked | raw | ranked | 1.0000 |" in captured.out  # d1 at rank 1: RR 1, was 0.5


@pytest.mark.parametrize("key", ["per_query", "means"])
def test_a_finished_runs_json_whose_scores_are_not_mappings_is_scored_again_not_a_traceback(tmp_path, capsys, key):
    """An edited JSON (by hand, a merge) with `per_query: 'x'` was an AttributeError on every later run of
    the config."""
    from harness.retrieve import RETRIEVERS

    asked = []

    def ranked(query: str, k: int):
        asked.append(query)
        return [("d1", 2.0)]

    qrels, config = tmp_path / "qrels.txt", tmp_path / "q.yaml"
    qrels.write_text("1_1 0 d1 1\n", encoding="utf-8")
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"],
         "qrels": str(qrels)}]}), encoding="utf-8")
    record = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json"
    with RETRIEVERS.using({"ranked": ranked}):
        assert main(["run", str(config)]) == 0
        made = json.loads(record.read_text())
        edited = json.loads(record.read_text())
        edited["scores"]["evaluation"][key] = "x"
        record.write_text(json.dumps(edited))
        asked.clear()
        assert main(["run", str(config)]) == 0
    assert asked == []  # not ranked again
    assert json.loads(record.read_text())["scores"] == made["scores"]
    assert "| pragmaticqa-val.raw.ranked | raw | ranked | 1.0000 |" in capsys.readouterr().out


def test_a_run_replacing_one_another_config_made_is_a_warning_naming_both(tmp_path, capsys):
    """Two configs writing one output folder under one tag replace each other's runs in turn, and
    the other config's leaderboard keeps the replaced run's scores; the same config rerunning its
    run with other inputs (or --force) is normal and draws no warning."""
    from harness.retrieve import RETRIEVERS

    out = tmp_path / "runs"
    configs = []
    for name, k in (("a", 10), ("b", 5)):
        configs.append(tmp_path / f"{name}.yaml")
        configs[-1].write_text(yaml.safe_dump({"k": k, "output": str(out), "experiments": [
            {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"]}]}),
            encoding="utf-8")
    with RETRIEVERS.using({"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}):
        assert main(["run", str(configs[0])]) == 0
        assert main(["run", str(configs[0]), "--force"]) == 0
        assert " was made by " not in capsys.readouterr().err
        assert main(["run", str(configs[1])]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if " was made by " in line]
    assert warnings == [f"warning: {out / 'pragmaticqa-val.raw.ranked.run'} was made by {configs[0]}; {configs[1]} now "
                        "replaces it (its scores on that config's leaderboard are stale): give the two configs other "
                        "outputs or tags"]


def _ranked_config(path: Path, output: Path) -> Path:
    """A config at `path` running the `ranked` plug-in on pragmaticqa:val into `output`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"k": 10, "output": str(output), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"]}]}),
        encoding="utf-8")
    return path


def test_one_config_run_by_other_paths_from_other_folders_replaces_its_own_run_without_a_warning(
        tmp_path, capsys, monkeypatch):
    """`configs/a.yaml` from the project, `a.yaml` from configs/ and a symlink to it are one
    config: the path as typed named another file when read from another folder."""
    from harness.retrieve import RETRIEVERS

    (tmp_path / "link.yaml").symlink_to(_ranked_config(tmp_path / "configs" / "a.yaml", tmp_path / "runs"))
    with RETRIEVERS.using({"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}):
        for folder, path in ((tmp_path, "configs/a.yaml"), (tmp_path / "configs", "a.yaml"), (tmp_path, "link.yaml")):
            monkeypatch.chdir(folder)
            assert main(["run", path, "--force"]) == 0
    assert " was made by " not in capsys.readouterr().err


@pytest.mark.parametrize("move", [False, True])
def test_a_config_copied_or_moved_with_its_output_folder_replaces_its_own_run_without_a_warning(
        tmp_path, capsys, monkeypatch, move):
    """A lab's folder holding my/x.yaml and its runs/, copied or moved elsewhere, holds the same
    config: its first redo named my/x.yaml twice as two configs, by the old place's real path."""
    import shutil

    from harness.retrieve import RETRIEVERS

    _ranked_config(tmp_path / "lab" / "my" / "x.yaml", Path("runs"))
    with RETRIEVERS.using({"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}):
        monkeypatch.chdir(tmp_path / "lab")
        assert main(["run", "my/x.yaml"]) == 0
        (shutil.move if move else shutil.copytree)(tmp_path / "lab", tmp_path / "copy")
        monkeypatch.chdir(tmp_path / "copy")
        assert main(["run", "my/x.yaml", "--force"]) == 0
    assert " was made by " not in capsys.readouterr().err


def test_two_configs_typed_alike_in_other_folders_are_two_configs(tmp_path, capsys, monkeypatch):
    """`x.yaml` in one project and `x.yaml` in another, writing one output folder: the second
    replacing the first's run is warned about, as two configs named apart are."""
    from harness.retrieve import RETRIEVERS

    for project in ("p1", "p2"):
        _ranked_config(tmp_path / project / "x.yaml", tmp_path / "runs")
    with RETRIEVERS.using({"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}):
        for project in ("p1", "p2"):
            monkeypatch.chdir(tmp_path / project)
            assert main(["run", "x.yaml", "--force"]) == 0
    run = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run"
    assert f"warning: {run} was made by x.yaml; x.yaml now replaces it" in capsys.readouterr().err


def test_a_run_file_edited_since_it_was_written_is_replaced_saying_so_from_python_too(tmp_path):
    """harness.run(..., quiet=True) took the command's note for progress: the edited file was
    ranked again and replaced without a word. It is a warning, once, in the command's words."""
    import harness

    config = {"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"]}]}
    ranked = {"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}
    harness.run(config, retrievers=ranked, quiet=True)
    run = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run"
    run.write_text("".join(run.read_text().splitlines(keepends=True)[:1000]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        harness.run(config, retrievers=ranked, quiet=True)
    assert [str(w.message) for w in caught if "edited" in str(w.message)] == [
        f"pragmaticqa-val.raw.ranked: {run} was edited or replaced since it was written: it has 1000 lines, 3052 were "
        "written, so its recorded scores are not its: ranked again"]
    assert len(run.read_text().splitlines()) == 3052


def _dict_config(tmp_path: Path, k: int) -> dict:
    return {"k": k, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["ranked"]}]}


_RANKED = {"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}


def _made_by(*configs: dict) -> list[str]:
    """What harness.run says of a run another config made, each config run in turn (with force:
    a run of the same inputs is made again)."""
    import harness

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for config in configs:
            harness.run(config, retrievers=_RANKED, quiet=True, force=True)
    return [str(w.message) for w in caught if " was made " in str(w.message)]


_FROM_A_DICT = ("{run} was made from other content of a config dict (this one before an edit, or another dict): "
                "replaced; if by another dict, give the two dicts other outputs or tags")


def test_two_dict_configs_writing_one_output_under_one_tag_replacing_a_run_are_noted(tmp_path):
    """The Python API's dicts are all named <config>: their content tells them apart, not whether
    the second is another dict or the first edited; the same dict again is not noted."""
    run = tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run"
    assert _made_by(_dict_config(tmp_path, 10), _dict_config(tmp_path, 10)) == []
    assert _made_by(_dict_config(tmp_path, 5)) == [_FROM_A_DICT.format(run=run)]


def test_a_dict_config_edited_in_place_between_two_runs_is_not_told_to_be_two_configs(tmp_path):
    """The notebook's loop: one dict, `config["k"] = 5`, run again. It was warned 'give the two
    configs other outputs or tags'; an edited config file is said nothing."""
    config = _dict_config(tmp_path, 10)
    _made_by(config)
    config["k"] = 5
    said = _made_by(config)
    assert said == [_FROM_A_DICT.format(run=tmp_path / "runs" / "pragmaticqa-val.raw.ranked.run")]
    assert "the two configs" not in said[0] and not said[0].startswith("warning")


def test_documents_a_retriever_answers_twice_for_a_query_are_counted_in_a_warning_and_the_run_s_json(tmp_path, capsys):
    """Each is kept once, at its best score; the run file then holds no repeat, so its scoring
    counted none, and a plug-in's bug looked like a clean run. The count is of repeats: a
    document answered three times for a query counts two."""
    from harness.retrieve import RETRIEVERS

    config = _raw_pragmaticqa(tmp_path, ["twice"])
    with RETRIEVERS.using({"twice": lambda query, k: [("d1", 2.0), ("d2", 1.5), ("d1", 1.0), ("d1", 0.5)]}):
        assert main(["run", str(config)]) == 0
    assert ("warning: run pragmaticqa-val.raw.twice: retriever twice answered a document again for the same query "
            "3052 times (the first: document d1 for query 1_1); each document is kept once, at its best score"
            in capsys.readouterr().err.splitlines())
    record = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.twice.json").read_text(encoding="utf-8"))
    assert record["duplicates"] == 2 * 1526 and record["lines"] == 2 * 1526


def test_documents_answered_twice_are_counted_in_a_run_answered_from_a_shared_retriever_s_memory(tmp_path):
    """Two strategies forming the same queries: the second run's batches are the first's answers,
    repeats included."""
    from harness.queries import STRATEGIES
    from harness.retrieve import RETRIEVERS

    config = tmp_path / "same.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw", "same"], "measures": ["RR"],
         "retrievers": ["twice"]}]}), encoding="utf-8")
    asked = []
    with RETRIEVERS.using({"twice": lambda query, k: asked.append(query) or [("d1", 2.0), ("d1", 1.0)]}), \
            STRATEGIES.using({"same": lambda conversation, turn_index: conversation.turns[turn_index].utterance}):
        assert main(["run", str(config)]) == 0
    assert len(asked) == 1526  # the second run was answered from memory
    for strategy in ("raw", "same"):
        record = json.loads((tmp_path / "runs" / f"pragmaticqa-val.{strategy}.twice.json").read_text(encoding="utf-8"))
        assert record["duplicates"] == 1526


def test_a_passage_separator_given_later_rescores_a_finished_run_without_ranking_again(tmp_path, capsys):
    """`passage_separator:` is part of what its scores were scored with: added to the config, the
    passage run is judged by document, not left with the scores read without it."""
    from harness.retrieve import RETRIEVERS

    asked = []

    def passages(query: str, k: int):
        asked.append(query)
        return [("d1-2", 2.0), ("d2-1", 1.0)]

    qrels, config = tmp_path / "qrels.txt", tmp_path / "p.yaml"
    qrels.write_text("1_1 0 d1 1\n", encoding="utf-8")
    experiment = {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["passages"],
                  "qrels": str(qrels)}
    with RETRIEVERS.using({"passages": passages}):
        for given in ({}, {"passage_separator": "-"}):
            config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"),
                                              "experiments": [experiment | given]}), encoding="utf-8")
            capsys.readouterr()
            assert main(["run", str(config)]) == 0
    captured = capsys.readouterr()
    assert len(asked) == 1526
    assert ("pragmaticqa-val.raw.passages: finished with the same inputs, rescored: the passage separator changed ("
            in captured.err)
    assert "| pragmaticqa-val.raw.passages | raw | passages | 1.0000 |" in captured.out  # d1 at rank 1: RR 1, was 0


def test_a_run_rescored_on_other_qrels_records_them_in_its_json(tmp_path):
    """The JSON beside a rescored run names the qrels and measures its scores are for, not those of the
    config that ranked it."""
    from harness.retrieve import RETRIEVERS

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("1_1 0 d2 1\n", encoding="utf-8")
    second.write_text("1_1 0 d1 1\n", encoding="utf-8")
    config = tmp_path / "q.yaml"
    for qrels, measures in ((first, ["RR"]), (second, ["RR", "nDCG@10"])):
        config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
            {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": measures, "retrievers": ["ranked"],
             "qrels": str(qrels)}]}), encoding="utf-8")
        with RETRIEVERS.using({"ranked": lambda query, k: [("d1", 2.0), ("d2", 1.0)]}):
            assert main(["run", str(config)]) == 0
    meta = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json").read_text())
    assert meta["config"]["qrels"] == str(second) and meta["config"]["measures"] == ["RR", "nDCG@10"]
    assert meta["scores"]["evaluation"]["means"]["RR"] == 1.0


def test_a_run_interrupted_while_it_is_scored_is_scored_not_ranked_again(tmp_path, monkeypatch, capsys):
    """Its run file and JSON (without scores) are written before it is scored."""
    from harness.retrieve import RETRIEVERS
    from harness.runner import runner

    asked = []

    def ranked(query: str, k: int):
        asked.append(query)
        return [("d1", 1.0)]

    def interrupted(*args):
        raise KeyboardInterrupt

    config = _raw_pragmaticqa(tmp_path, ["ranked"])
    with RETRIEVERS.using({"ranked": ranked}):
        with monkeypatch.context() as patched:
            patched.setattr(runner, "score", interrupted)
            assert main(["run", str(config)]) == 130
        assert len(asked) == 1526
        capsys.readouterr()
        assert main(["run", str(config)]) == 0
    assert len(asked) == 1526 and "finished with the same inputs, skipped" in capsys.readouterr().err
    record = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.ranked.json").read_text(encoding="utf-8"))
    assert record["scores"]["evaluation"]["means"] == {"RR": 0.0}


def test_qrels_restricted_to_a_corpus_holding_no_relevant_document_is_an_error_at_its_key(tmp_path, capsys):
    """Scoring on no judged query ended in a ZeroDivisionError traceback, after the run."""
    corpus = tmp_path / "other.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "contents": "hello world"}) + "\n", encoding="utf-8")
    config = tmp_path / "restricted.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"], "measures": ["RR"],
         "corpus": str(corpus), "qrels_restrict_to_corpus": True}]}), encoding="utf-8")
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {config}: experiments[0].qrels_restrict_to_corpus: no judged turn of pragmaticqa:val "
        "has a relevant document in the corpus other.jsonl: is it the collection these topics are judged on?\n")


def test_the_topics_own_qrels_are_read_once_for_every_experiment_on_them(tmp_path, monkeypatch):
    """Two experiments on iKAT 2023 test, one restricted to its corpus: one read of the qrels file."""
    from harness.retrieve import RETRIEVERS
    from harness.trec import read_qrels

    read = []
    monkeypatch.setattr("harness.topics._common.read_qrels", lambda path: read.append(path) or read_qrels(path))
    config = tmp_path / "twice.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": name, "topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["one"], "measures": ["RR"],
         "tag": f"{name}.{{retriever}}", "qrels_restrict_to_corpus": restrict}
        for name, restrict in (("all", False), ("pool", True))]}), encoding="utf-8")
    with RETRIEVERS.using({"one": _passages}):
        assert main(["run", str(config)]) == 0
    assert len(read) == 1


def test_a_corpus_is_fingerprinted_once_for_every_run_that_searches_it(tmp_path, monkeypatch):
    """Two experiments, two retrievers each, on one corpus file: one hash of its bytes (the
    Corpus, loaded once per invocation, keeps its fingerprint)."""
    from harness import paths
    from harness.retrieve import RETRIEVERS

    corpus = tmp_path / "pool.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d1-{n}", "contents": f"Text {n}."}) + "\n" for n in (1, 2)))
    hashed = []
    feed = paths.feed_file
    monkeypatch.setattr(paths, "feed_file", lambda digest, path: hashed.append(Path(path)) or feed(digest, path))
    config = tmp_path / "twice.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"name": name, "topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["one", "two"],
         "measures": ["RR"], "corpus": str(corpus), "tag": f"{name}.{{retriever}}"} for name in ("a", "b")]}),
        encoding="utf-8")
    with RETRIEVERS.using({"one": _passages, "two": _passages}):
        assert main(["run", str(config)]) == 0
    assert hashed.count(corpus.resolve()) == 1


def _passages(query: str, k: int):
    """A plug-in ranking two passages of one document."""
    return [("d1-1", 2.0), ("d1-2", 1.0)]


def test_runs_scored_as_documents_maxp_and_runs_scored_as_passages_are_not_tested_together(tmp_path):
    """Equal topics, qrels, measures and depth, but one experiment judges its passages as their
    documents (a preset's passage_separator): their scores are not of the same thing."""
    from harness.evaluate.presets import PRESETS
    from harness.retrieve import RETRIEVERS
    from harness.runner.report import families
    from harness.runner.runner import run_config

    same = {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["passages"]}
    config = tmp_path / "maxp.yaml"
    config.write_text(yaml.safe_dump({"k": 500, "output": str(tmp_path / "runs"), "experiments": [
        {**same, "name": "maxp", "preset": "cast2021", "tag": "{benchmark}.maxp"},
        {**same, "name": "passages", "measures": list(PRESETS.get("cast2021").measures),
         "tag": "{benchmark}.passages"}]}), encoding="utf-8")
    with RETRIEVERS.using({"passages": _passages}):
        outcomes = run_config(load_config(config), log=io.StringIO())
    assert [outcome.evaluation.depth for outcome in outcomes] == [500, 500]
    assert [[outcome.run.experiment.name for outcome in family] for family in families(outcomes)] == [
        ["maxp"], ["passages"]]


def _some(query: str, k: int):
    """A plug-in that retrieves nothing for the queries of an odd length."""
    return [] if len(query) % 2 else [("d1", 1.0)]


def _ikat_run(tmp_path: Path, strategy: str, retriever: str, search) -> None:
    """`harness run` of iKAT 2023 test, `strategy` x the search function `search` under the name
    `retriever`, into tmp_path/runs."""
    from harness.retrieve import RETRIEVERS

    config = tmp_path / "ikat.yaml"
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "ikat2023:test", "strategies": [strategy], "retrievers": [retriever], "measures": ["RR"]}]}),
        encoding="utf-8")
    with RETRIEVERS.using({retriever: search}):
        assert main(["run", str(config)]) == 0


def test_judged_turns_missing_from_a_run_are_counted_as_harness_eval_counts_them(tmp_path, capsys):
    """They score 0 (empty rankings): said, not left for the means to hide."""
    _ikat_run(tmp_path, "raw", "some", _some)
    judged = load("ikat2023:test").qrels().judgments
    ranked = read_run(tmp_path / "runs" / "ikat2023-test.raw.some.run")
    missing = sorted(set(judged) - set(ranked))
    assert 0 < len(missing) < len(judged)
    assert (f"ikat2023-test.raw.some: {len(judged)} judged queries; {len(missing)} missing from the run "
            "(scored as empty rankings)") in capsys.readouterr().err
    recorded = json.loads((tmp_path / "runs" / "ikat2023-test.raw.some.json").read_text(encoding="utf-8"))
    assert recorded["scores"]["evaluation"]["missing_queries"] == missing


def test_an_empty_query_is_not_searched_and_ranks_nothing_as_its_warning_says(tmp_path, capsys):
    """iKAT 2023 12-1_12's manual rewrite is empty: a retriever answering anything to "" (a
    plug-in's first documents, a dense model's nearest) would rank documents for it."""
    asked = []

    def anything(query: str, k: int):
        asked.append(query)
        return [("d1", 1.0)]

    _ikat_run(tmp_path, "manual", "any", anything)
    assert "warning: turn 12-1_12: the benchmark's manual rewrite is empty" in capsys.readouterr().err
    assert "" not in asked and len(asked) == len(load("ikat2023:test").turns) - 1
    ranked = read_run(tmp_path / "runs" / "ikat2023-test.manual.any.run")
    assert "12-1_12" not in ranked and len(ranked) == len(asked)


@pytest.mark.slow
def test_topics_without_qrels_are_run_and_written_not_scored_and_said_so(tmp_path, capsys):
    """iKAT 2025 ships no qrels: its runs are made for `ikat from-trec`, and no score (no 0)
    stands anywhere for them: not in the leaderboard, the JSON or the Python API's frames."""
    import harness

    out = tmp_path / "runs"
    config = tmp_path / "unscored.yaml"
    config.write_text(yaml.safe_dump({"output": str(out), "experiments": [
        {"task": "ptkb", "topics": "ikat2025", "retrievers": ["bm25"]},  # the task's own measures: not named
        {"task": "ptkb", "topics": "ikat2023:test", "retrievers": ["bm25"]}]}), encoding="utf-8")
    assert main(["run", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "ikat2025.ptkb.bm25\t188 queries\tnot scored\tto run"
    assert main(["run", str(config)]) == 0
    said = capsys.readouterr()
    assert f"{config}: experiments[0]: ikat2025:test ships no qrels: its runs are written to {out}, not scored" \
        in said.err.splitlines()
    assert said.out.endswith(f"| {PTKB_TAG} | – | bm25 | 0.5287 | 0.3673 | 0.5415 | 0.6214 |\n\n"
                             "Not scored (ikat2025:test ships no qrels): ikat2025.ptkb.bm25.\n")
    assert len(list(read_run(out / "ikat2025.ptkb.bm25.run"))) == 186  # of 188 turns: two rank no statement
    recorded = json.loads((out / "ikat2025.ptkb.bm25.json").read_text(encoding="utf-8"))
    assert recorded["not_scored"] == "ikat2025:test ships no qrels" and "scores" not in recorded
    per_query, aggregate = harness.run(config, quiet=True)  # resumed: nothing is run again
    assert list(aggregate["run"]) == [PTKB_TAG]


@pytest.mark.java  # its BM25 starts the JVM
@pytest.mark.slow
def test_a_finished_run_scored_or_not_by_another_config_has_a_json_saying_which_this_config_made_of_it(
        tmp_path, capsys):
    """Qrels and measures are not in the resume key: the run is not ranked again when they
    change, and its JSON holds `scores` (no `not_scored`) or `not_scored` (no `scores`) as the
    config run last says, not both, nor an earlier config's scores under "Not scored"."""
    out, tag = tmp_path / "runs", "ikat2025.ptkb.bm25"
    experiment = {"task": "ptkb", "topics": "ikat2025", "retrievers": ["bm25"]}
    unscored, scored = tmp_path / "unscored.yaml", tmp_path / "scored.yaml"
    unscored.write_text(yaml.safe_dump({"output": str(out), "experiments": [{**experiment, "measures": []}]}),
                        encoding="utf-8")
    assert main(["run", str(unscored)]) == 0
    qrels = tmp_path / "q.txt"  # each turn's top statement judged relevant
    run = read_run(out / f"{tag}.run")
    qrels.write_text("".join(f"{qid} 0 {next(iter(docs))} 1\n" for qid, docs in run.scores.items()), encoding="utf-8")
    scored.write_text(yaml.safe_dump({"output": str(out), "experiments": [
        {**experiment, "qrels": str(qrels), "measures": ["RR", "NumRet"]}]}), encoding="utf-8")
    ranked = (out / f"{tag}.run").stat().st_mtime_ns
    assert main(["run", str(scored)]) == 0
    assert (f"{tag}: finished with the same inputs, scored (not scored before: ikat2025:test ships no qrels) ("
            in capsys.readouterr().err)
    recorded = json.loads((out / f"{tag}.json").read_text(encoding="utf-8"))
    assert "not_scored" not in recorded and recorded["scores"]["evaluation"]["means"]["RR"] == 1
    assert recorded["config"]["qrels"] == str(qrels)
    assert main(["run", str(unscored)]) == 0
    assert capsys.readouterr().out.endswith(f"Not scored (ikat2025:test ships no qrels): {tag}.\n")
    recorded = json.loads((out / f"{tag}.json").read_text(encoding="utf-8"))
    assert recorded["not_scored"] == "ikat2025:test ships no qrels" and "scores" not in recorded
    assert (out / f"{tag}.run").stat().st_mtime_ns == ranked
