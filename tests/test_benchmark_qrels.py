"""`benchmark:NAME[:SPLIT]` wherever qrels are named (`--qrels`, a run config's and a hosted task's
`qrels:`, the Python API): the qrels the benchmark ships or derives. OpenDialKG's are derived from
the dialogues, and no file held them until `harness run` wrote one, so a hosted recommendation
task could not name them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.errors import InputError
from harness.runner.config import Node, load_config
from harness.topics import load
from harness.trec import qrels_text
from tests.conftest import extra

DERIVED = "benchmark:opendialkg:test"


@pytest.fixture(scope="module")
def derived():
    return load("opendialkg:test").qrels()


def _judged_run(tmp_path: Path, derived) -> str:
    """A run ranking, for each judged turn, its recommended items, then two items judged elsewhere."""
    others = sorted({docid for judged in derived.judgments.values() for docid in judged})[:2]
    path = tmp_path / "items.run"
    path.write_text("".join(f"{qid} Q0 {docid} {n} {-n} r\n" for qid, judged in derived.judgments.items()
                            for n, docid in enumerate([*others, *judged], start=1)), encoding="utf-8")
    return str(path)


def test_eval_scores_on_a_benchmarks_derived_qrels_as_on_the_file_harness_run_writes(tmp_path, capsys, derived):
    written = tmp_path / "opendialkg-test-derived.qrels"
    written.write_text(qrels_text(derived), encoding="utf-8")
    run, scores = _judged_run(tmp_path, derived), []
    for qrels in (DERIVED, str(written)):
        assert main(["eval", "--qrels", qrels, run, "--preset", "recommendation", "--format", "json"]) == 0
        scores.append(json.loads(capsys.readouterr().out))
    assert scores[0] == scores[1]


def test_a_run_configs_qrels_may_name_a_benchmark(tmp_path, derived):
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump({"experiments": [{"topics": "opendialkg:test", "strategies": ["raw"],
                                                     "retrievers": ["bm25"], "qrels": DERIVED,
                                                     "preset": "recommendation"}]}), encoding="utf-8")
    experiment = load_config(path).experiments[0]
    assert experiment.given_qrels.judgments == derived.judgments
    assert experiment.qrels == DERIVED  # the run's JSON says which qrels scored it


def test_the_python_api_takes_a_benchmarks_qrels(derived):
    from harness.evaluate.frames import as_qrels

    assert as_qrels(DERIVED).judgments == derived.judgments


def _board(tmp_path: Path, qrels: str) -> Path:
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump({
        "database": f"sqlite:///{tmp_path / 'board.db'}", "storage": str(tmp_path / "files"),
        "tasks": [{"name": "odkg", "topics": "opendialkg:test", "qrels": qrels, "preset": "recommendation",
                   "main_measure": "R@10", "formats": ["trec"]}],
        "teams": [{"name": "demo", "token_sha256": "0" * 64}]}), encoding="utf-8")
    return path


def test_a_hosted_task_may_name_a_benchmarks_own_qrels(tmp_path, derived):
    extra("fastapi", "serve")
    from harness.serve.config import load_serve_config
    from harness.serve.tasks import TaskRuntime

    path = _board(tmp_path, DERIVED)
    runtime = TaskRuntime(load_serve_config(path).tasks["odkg"])
    runtime.prepare(Node(path, "tasks[0]", None))
    assert runtime.evaluator.qrels.judgments == derived.judgments


def test_a_hosted_task_naming_a_benchmark_without_qrels_is_an_error_at_its_key(tmp_path):
    extra("fastapi", "serve")
    from harness.serve.config import load_serve_config

    path = _board(tmp_path, "benchmark:cosrec-crowd")
    with pytest.raises(InputError) as error:
        load_serve_config(path)
    assert str(error.value) == (f"{path}: tasks[0].qrels: benchmark:cosrec-crowd: benchmark 'cosrec-crowd:test' "
                                "ships no qrels")


def test_a_benchmark_named_as_topics_name_it_where_qrels_are_expected_is_told_the_qrels_name(tmp_path, capsys,
                                                                                               derived):
    """`qrels: opendialkg:test` was 'no such file: opendialkg:test', and nothing said how a
    benchmark's own qrels are named."""
    assert main(["eval", "--qrels", "opendialkg:test", _judged_run(tmp_path, derived)]) == 2
    assert capsys.readouterr().err == ("harness eval: error: opendialkg:test: no such file (a benchmark's own qrels "
                                       "are named benchmark:opendialkg:test)\n")
    path = _board(tmp_path, "opendialkg:test")
    extra("fastapi", "serve")
    assert main(["serve", str(path)]) == 2
    assert capsys.readouterr().err == (f"harness serve: error: {path}: tasks[0].qrels: no such file: opendialkg:test "
                                       "(a benchmark's own qrels are named benchmark:opendialkg:test)\n")
