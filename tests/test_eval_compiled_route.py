"""`harness eval`'s compiled route (harness/evaluate/lean.py, harness/evaluate/_lean.c) prints
what the numpy route prints, byte for byte, on stdout and stderr: each case is a rule of what it
scores itself and what it leaves to the numpy route. Its values are held to the trec_eval binary
in tests/test_trec_eval_differential.py."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import lean
from harness.evaluate.presets import DEFAULT_MEASURES
from harness.trec import read_qrels
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, child_env, qrels_root

pytestmark = pytest.mark.skipif(lean.compiled() is None, reason="harness eval's compiled route is not built here "
                                "(`pip install -e .` builds harness/evaluate/_lean.c)")

CAST2019 = read_qrels(qrels_root() / "cast" / "2019qrels.txt").judgments
QUERIES = ["31_1", "31_2", "32_1", "33_1"]
EVERY_FAMILY = ["nDCG", "ndcg_cut_3", "P(rel=2)@5", "P_5", "R@10", "AP", "map_cut_10", "RR@5", "Rprec(rel=2)",
                "Success@5", "Judged@10", "NumQ", "NumRel", "NumRet", "NumRet(rel=2)"]


def qrels_lines() -> list[str]:
    """The real CAsT 2019 judgments of four queries (grades 0-3), one judgment made -1 (in the pool, unjudged)."""
    lines = [f"{qid} 0 {docid} {grade}\n" for qid in QUERIES for docid, grade in CAST2019[qid].items()]
    lines[3] = lines[3].rsplit(" ", 1)[0] + " -1\n"
    return lines


def run_lines(seed: int = 7, queries: list[str] = QUERIES[:3]) -> list[str]:
    """A run over them: judged and unjudged documents, scores of one decimal (many ties, in no
    order), a repeated document lower down, three of the four queries and one the qrels lack."""
    rng = random.Random(seed)
    lines = []
    for qid in [*queries, "99_1"]:
        judged = sorted(CAST2019.get(qid, {}))
        docids = rng.sample(judged, min(len(judged), 25)) + [f"MARCO_{rng.randrange(10**6)}" for _ in range(25)]
        rng.shuffle(docids)
        lines += [f"{qid} Q0 {docid} {rank} {rng.randrange(40) / 10:.1f} r\n" for rank, docid in enumerate(docids, 1)]
        lines.append(f"{qid} Q0 {docids[0]} 51 -1.0 r\n")
    return lines


def written(folder: Path, name: str, lines: list[str] | bytes) -> str:
    path = folder / name
    path.write_bytes(lines if isinstance(lines, bytes) else "".join(lines).encode())
    return str(path)


def interleaved(lines: list[str]) -> list[str]:
    """The same lines, each query written in two places."""
    return lines[::2] + lines[1::2]


def with_tab(lines: list[str]) -> list[str]:
    return [lines[0].replace(" ", "\t", 1), *lines[1:]]


def with_line(lines: list[str], index: int, line: str) -> list[str]:
    return [*lines[:index], line, *lines[index:]]


def other_case(lines: list[str], every: int = 1) -> list[str]:
    """Every `every`-th line's id written in lower case (CAsT's are 'CAR_<hex>' and 'MARCO_<n>')."""
    return [line.replace("CAR_", "car_").replace("MARCO_", "marco_") if number % every == 0 else line
            for number, line in enumerate(lines)]


def other_collection(lines: list[str]) -> list[str]:
    """The run's ids made another collection's ('CAR_1a2b' -> 'CW22_1a2b')."""
    return [line.replace(" CAR_", " CW22_").replace(" MARCO_", " CW22_") for line in lines]


# rule -> (qrels lines, run lines, further arguments, route): "compiled" where lean_scores scores, "numpy" where not
CASES = {
    "ties by docid descending, a repeated document's highest score kept and counted, unjudged and missing "
    "queries counted: compiled": (qrels_lines(), run_lines(), [], "compiled"),
    "a query written in two places is read whole: compiled": (qrels_lines(), interleaved(run_lines()), [], "compiled"),
    "--depth cuts each ranking: compiled": (qrels_lines(), run_lines(), ["--depth", "5"], "compiled"),
    "every family it computes, rel= and cutoffs, trec_eval names said as translated: compiled": (
        qrels_lines(), run_lines(), ["--measures", *EVERY_FAMILY], "compiled"),
    "a rel= no grade reaches is warned of: compiled": (
        qrels_lines(), run_lines(), ["--measures", "P(rel=4)@5", "AP"], "compiled"),
    "a family it does not compute (Bpref): numpy": (qrels_lines(), run_lines(), ["--measures", "Bpref"], "numpy"),
    "a comment line: numpy": (qrels_lines(), with_line(run_lines(), 0, "# a run\n"), [], "numpy"),
    "a tab between fields: numpy": (qrels_lines(), with_tab(run_lines()), [], "numpy"),
    "CRLF line ends: numpy": (qrels_lines(), [line.replace("\n", "\r\n") for line in run_lines()], [], "numpy"),
    "an id outside ASCII: numpy": (qrels_lines(), with_line(run_lines(), 3, "31_1 Q0 CAR_é 4 3.0 r\n"), [], "numpy"),
    "text after the sixth field: numpy": (qrels_lines(), with_line(run_lines(), 3, "31_1 Q0 X 4 3.0 r x\n"), [],
                                          "numpy"),
    "a score written as inf: numpy": (qrels_lines(), with_line(run_lines(), 3, "31_1 Q0 X 4 inf r\n"), [], "numpy"),
    "a malformed line, the numpy route's error naming it: numpy": (
        qrels_lines(), with_line(run_lines(), 3, "31_1 Q0 X 4\n"), [], "numpy"),
    "an empty run: numpy": (qrels_lines(), [], [], "numpy"),
    "--strict with a repeated document, the numpy route's error: numpy": (qrels_lines(), run_lines(), ["--strict"],
                                                                          "numpy"),
    "a qrels judging a document twice, the numpy route's error: numpy": (
        [*qrels_lines(), qrels_lines()[0]], run_lines(), [], "numpy"),
    "qrels with a comment: numpy": (["# judged by NIST\n", *qrels_lines()], run_lines(), [], "numpy"),
    "another collection's ids, the docid warning: compiled": (qrels_lines(), other_collection(run_lines()), [],
                                                              "compiled"),
    "every id in another case, the docid warning: compiled": (qrels_lines(), other_case(run_lines()), [],
                                                              "compiled"),
    "some top ids judged only in another case, which the numpy route's warning looks for in every query's top "
    "rows: numpy": (qrels_lines(), other_case(run_lines(), every=3), [], "numpy"),
    "queries written out of qid order, the docid warning's examples the run's first query's: compiled": (
        qrels_lines(), other_collection(run_lines(queries=QUERIES[::-1])), [], "compiled"),
}


def outputs(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_the_compiled_route_prints_what_the_numpy_route_prints(case, fmt, tmp_path, capsys, monkeypatch):
    qrels, run, extra, route = CASES[case]
    argv = ["eval", "--qrels", written(tmp_path, "q.txt", qrels), "--run", written(tmp_path, "r.txt", run),
            "--format", fmt, "--per-query", *extra]
    measures = extra[extra.index("--measures") + 1:] if "--measures" in extra else DEFAULT_MEASURES
    depth = int(extra[extra.index("--depth") + 1]) if "--depth" in extra else None
    scored = lean.lean_scores(argv[2], [argv[4]], measures, depth, "--strict" in extra)
    assert (scored is not None) == (route == "compiled")
    compiled = outputs(argv, capsys)
    monkeypatch.setattr(lean, "compiled", lambda: None)
    assert compiled == outputs(argv, capsys)


def test_real_runs_of_cast_2021_are_scored_by_the_compiled_route_as_by_the_numpy_route(capsys, monkeypatch):
    """The organisers' document runs on their qrels: 239 turns answered, 158 judged."""
    argv = ["eval", "--qrels", str(CAST2021_QRELS), "--run", *map(str, CAST2021_DOC_RUNS), "--per-query",
            "--format", "json", "--measures", *DEFAULT_MEASURES, "Judged@10", "NumRet"]
    assert lean.lean_scores(str(CAST2021_QRELS), CAST2021_DOC_RUNS, argv[-7:], None, False) is not None
    compiled = outputs(argv, capsys)
    monkeypatch.setattr(lean, "compiled", lambda: None)
    assert compiled == outputs(argv, capsys)


def test_a_compressed_run_is_left_to_the_numpy_route(tmp_path):
    path = tmp_path / "r.txt.gz"
    path.write_bytes(gzip.compress("".join(run_lines()).encode()))
    assert lean.lean_scores(written(tmp_path, "q.txt", qrels_lines()), [str(path)], DEFAULT_MEASURES, None,
                            False) is None


def test_plain_text_named_as_compressed_is_left_to_the_numpy_route_which_refuses_it(tmp_path, capsys, monkeypatch):
    argv = ["eval", "--qrels", written(tmp_path, "q.txt", qrels_lines()), "--run",
            written(tmp_path, "r.txt.gz", run_lines())]
    assert lean.lean_scores(argv[2], [argv[4]], DEFAULT_MEASURES, None, False) is None
    compiled = outputs(argv, capsys)
    monkeypatch.setattr(lean, "compiled", lambda: None)
    assert compiled == outputs(argv, capsys) and compiled[0] == 2


def test_a_depth_no_c_long_holds_is_one_line_before_either_route(tmp_path, capsys, monkeypatch):
    argv = ["eval", "--qrels", written(tmp_path, "q.txt", qrels_lines()), "--run",
            written(tmp_path, "r.txt", run_lines()), "--depth", str(2**63)]
    compiled = outputs(argv, capsys)
    monkeypatch.setattr(lean, "compiled", lambda: None)
    assert compiled == outputs(argv, capsys)
    assert compiled[0] == 2 and compiled[2].startswith(
        f"harness eval: error: --depth must be at most {2**63 - 1} documents (trec_eval reads -M as a C long), "
        f"not {2**63} ")


def test_a_run_from_a_pipe_is_left_to_the_numpy_route(tmp_path):
    """A pipe is read once: a run writing a query in two places could not be read again, whole."""
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    assert lean.lean_scores(written(tmp_path, "q.txt", qrels_lines()), [str(fifo)], DEFAULT_MEASURES, None,
                            False) is None


def test_harness_eval_on_files_in_the_common_form_loads_neither_numpy_nor_pyarrow_nor_openssl(tmp_path):
    """What the route is for: the libraries' code is most of the numpy route's memory (numpy
    15 MB, pyarrow 30 MB, OpenSSL 5 MB, which hashlib loads)."""
    qrels, run = written(tmp_path, "q.txt", qrels_lines()), written(tmp_path, "r.txt", run_lines())
    code = ("import sys; from harness.cli import main; main(sys.argv[1:]); "
            "print([m for m in ('numpy', 'pyarrow', 'pytrec_eval', '_hashlib') if m in sys.modules], file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, "eval", "--qrels", qrels, "--run", run], capture_output=True,
                          text=True, env=child_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "[]"
