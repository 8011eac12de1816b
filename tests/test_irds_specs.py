"""`irds:` ids where the harness reads datasets: a corpus that is not downloaded and cannot be
fetched (offline, or its source gone) is one line, at the dry run too; qrels read through
ir_datasets; topics, which are benchmark names, say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import harness  # noqa: F401  (installs the ir_datasets hook: the harness/... ids)
from harness.cli import main
from harness.corpus.readers import open_corpus
from harness.paths import qrels_root

UNREACHABLE = "harness-test/unreachable"
SHIPPED_QRELS = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"


@pytest.fixture
def unreachable(tmp_path, monkeypatch) -> Path:
    """A dataset whose two sources refuse the connection at once, as ir_datasets meets a public
    id offline (`irds:vaswani`: its host does not resolve), without the network's timing; and an
    empty IR_DATASETS_HOME, which the error names."""
    import ir_datasets
    from ir_datasets.formats import TrecQrels, TsvDocs
    from ir_datasets.util import Download, RequestsDownload

    home = tmp_path / "ir_datasets_home"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    monkeypatch.setenv("IR_DATASETS_TMP", str(tmp_path / "ir_datasets_tmp"))
    if UNREACHABLE not in ir_datasets.registry:
        def source(name: str) -> Download:
            return Download([RequestsDownload(f"http://127.0.0.1:9/{name}"),
                             RequestsDownload(f"http://127.0.0.1:9/mirror/{name}")])

        ir_datasets.registry.register(UNREACHABLE, ir_datasets.Dataset(
            TsvDocs(source("docs.tsv")), TrecQrels(source("qrels.txt"), {1: "relevant"})))
    return home


def _config(tmp_path: Path, **experiment) -> str:
    path = tmp_path / "x.yaml"
    experiment = {"topics": "ikat2023:test", "strategies": ["manual"], "retrievers": ["bm25"],
                  "measures": ["nDCG@3"], **experiment}
    path.write_text(yaml.safe_dump({"output": str(tmp_path / "runs"), "experiments": [experiment]}), encoding="utf-8")
    return str(path)


def _not_fetched(what: str, home: Path) -> str:
    return (f"irds:{UNREACHABLE}: ir_datasets has not downloaded its {what} and could not fetch them (127.0.0.1:9: "
            f"NewConnectionError, 127.0.0.1:9: NewConnectionError); fetch them once online (any command reading "
            f"irds:{UNREACHABLE} does) into ir_datasets' folder, IR_DATASETS_HOME ({home})")


@pytest.mark.parametrize("command", ["index", "segment", "run", "run --dry-run"])
def test_a_corpus_not_downloaded_that_cannot_be_fetched_is_one_line_naming_the_spec_and_the_cause(
        command, tmp_path, unreachable, capsys):
    words = command.split()
    if words[0] == "run":
        args = [*words[:1], _config(tmp_path, corpus=f"irds:{UNREACHABLE}"), *words[1:]]
        key = f"{tmp_path / 'x.yaml'}: experiments[0].corpus: "
    else:
        args = [words[0], f"irds:{UNREACHABLE}", "--output", str(tmp_path / "out"),
                *(["--splitter", "fast"] if words[0] == "segment" else [])]
        key = ""
    assert main(args) == 2
    # the whole of stderr: ir_datasets' line on each failed try, which the error sums up, is held back
    assert capsys.readouterr().err == (f"harness {words[0]}: error: {key}{_not_fetched('documents', unreachable)}, "
                                       "or give a local copy (jsonl:FILE, trec:FILE)\n")


def test_qrels_not_downloaded_that_cannot_be_fetched_are_one_line_in_eval(tmp_path, unreachable, capsys):
    """ir_datasets' line on each failed try came first, as it did for a corpus."""
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d1 1 1.0 r\n", encoding="utf-8")
    assert main(["eval", "--qrels", f"irds:{UNREACHABLE}", str(run), "--measures", "P@1"]) == 2
    assert capsys.readouterr().err == f"harness eval: error: {_not_fetched('qrels', unreachable)}\n"


def test_an_error_inside_ir_datasets_that_is_no_failed_download_is_not_called_one():
    import ir_datasets
    from ir_datasets.formats import BaseDocs

    class Broken(BaseDocs):
        def docs_iter(self):
            raise RuntimeError("a bug")

    name = "harness-test/broken"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, ir_datasets.Dataset(Broken()))
    with pytest.raises(RuntimeError, match="a bug"):
        next(iter(open_corpus(f"irds:{name}").documents()))


def test_a_shipped_irds_corpus_passes_the_dry_run(tmp_path):
    assert main(["run", _config(tmp_path, corpus="irds:harness/ikat2023/test"), "--dry-run"]) == 0


def _run_file(tmp_path: Path) -> str:
    """A run ranking, for each judged query, its judged documents by their line in the qrels."""
    lines = [line.split() for line in SHIPPED_QRELS.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "judged.run"
    path.write_text("".join(f"{qid} Q0 {docid} {n} {-n} r\n" for n, (qid, _, docid, _) in enumerate(lines)),
                    encoding="utf-8")
    return str(path)


def test_eval_qrels_irds_reads_the_datasets_qrels(tmp_path, capsys):
    run, scores = _run_file(tmp_path), []
    for qrels in ("irds:harness/ikat2023/test", str(SHIPPED_QRELS)):
        assert main(["eval", "--qrels", qrels, run, "--measures", "map", "nDCG@3", "--format", "json"]) == 0
        scores.append(json.loads(capsys.readouterr().out))
    assert scores[0] == scores[1]


def test_eval_qrels_irds_not_downloaded_is_one_line(tmp_path, unreachable, capsys):
    assert main(["eval", "--qrels", f"irds:{UNREACHABLE}", _run_file(tmp_path), "--measures", "map"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"harness eval: error: {_not_fetched('qrels', unreachable)}"


def test_config_qrels_irds_reads_the_datasets_qrels(tmp_path):
    from harness.runner.config import load_config
    from harness.trec import read_qrels

    experiment = load_config(Path(_config(tmp_path, qrels="irds:harness/ikat2023/test"))).experiments[0]
    assert experiment.given_qrels.judgments == read_qrels(SHIPPED_QRELS).judgments
    assert experiment.qrels == "irds:harness/ikat2023/test"  # the run's JSON says which qrels scored it


def test_config_qrels_irds_not_downloaded_is_one_line(tmp_path, unreachable, capsys):
    assert main(["run", _config(tmp_path, qrels=f"irds:{UNREACHABLE}"), "--dry-run"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"harness run: error: {tmp_path / 'x.yaml'}: experiments[0].qrels: {_not_fetched('qrels', unreachable)}")


def test_topics_irds_says_topics_are_benchmark_names(tmp_path, capsys):
    assert main(["run", _config(tmp_path, topics="irds:harness/ikat2023/test"), "--dry-run"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        f"harness run: error: {tmp_path / 'x.yaml'}: experiments[0].topics: irds:harness/ikat2023/test: topics are a "
        "benchmark name (`harness topics list` lists them), not an ir_datasets id; the ids "
        "irds:harness/<benchmark>[/<split>] are those benchmarks: write ikat2023:test")


def test_the_python_api_takes_irds_qrels_as_eval_does():
    from harness.evaluate.frames import as_qrels
    from harness.trec import read_qrels

    assert as_qrels("irds:harness/ikat2023/test").judgments == read_qrels(SHIPPED_QRELS).judgments


@pytest.mark.parametrize("second, problem", [
    ("d1 2", "document 'd1' judged twice for query 'q1'"),
    ("d2 2147483648", "grade 2147483648 is out of range (-2147483648 to 2147483647): pytrec_eval would wrap it around"),
])
def test_an_irds_datasets_qrels_are_held_to_a_qrels_files_rules(second, problem, tmp_path, capsys):
    import ir_datasets
    from ir_datasets.formats import BaseQrels, TrecQrel

    docid, grade = second.split()

    class Judged(BaseQrels):
        def qrels_iter(self):
            yield from (TrecQrel("q1", "d1", 1, "0"), TrecQrel("q1", docid, int(grade), "0"))

    name = f"harness-test/judged-{docid}"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, ir_datasets.Dataset(Judged()))
    assert main(["eval", "--qrels", f"irds:{name}", _run_file(tmp_path), "--measures", "map"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        f"harness eval: error: irds:{name} (record q1 0 {second}): {problem}")
