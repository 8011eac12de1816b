"""`harness compare` scores its runs as `harness eval` does, all at once and by the compiled route
(harness/evaluate/lean.py) where that gives what the numpy route gives: on the CAsT 2021 organiser
runs, every format, breakdown, test and warning is the numpy route's, byte for byte; --fill and
--passage-separator are the numpy route's alone, as in `harness eval`."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.evaluate import lean, tables
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS, CAST2021_QRELS, cast2021_holes
from tests.test_eval_compiled_route import outputs

pytestmark = pytest.mark.skipif(lean.compiled() is None, reason="harness eval's compiled route is not built here "
                                "(`pip install -e .` builds harness/evaluate/_lean.c)")


def cut_run(folder: Path) -> list[str]:
    """org_convdr_bert without its first judged query: compare's note on a run missing judged queries."""
    lines = CAST2021_DOC_RUNS[1].read_text().splitlines()
    path = folder / "cut.run"
    path.write_text("".join(line + "\n" for line in lines if line.split()[0] != lines[0].split()[0]))
    return [str(path)]


def groups(folder: Path) -> list[str]:
    path = folder / "intent.tsv"
    path.write_text("106_1 search\n106_2 recommendation\n106_3 recommendation\n999_1 other\n")
    return ["--groups", str(path)]


def fill(folder: Path) -> list[str]:
    return ["--fill", str(cast2021_holes(folder))]


def nothing(folder: Path) -> list[str]:
    return []


DOC_RUNS = [str(path) for path in CAST2021_DOC_RUNS]
# rule -> (runs, further arguments, arguments made in tmp_path, route)
CASES = {
    "md, the default measures, turn depth and conversation breakdowns read from --topics: compiled": (
        DOC_RUNS, ["--topics", "cast2021"], nothing, "compiled"),
    "html, the cast2021 preset's measures at its depth, another baseline, bootstrap tests: compiled": (
        DOC_RUNS, ["--measures", "nDCG@3", "nDCG@500", "AP(rel=2)@500", "RR(rel=2)", "R(rel=2)@500", "--depth", "500",
                   "--format", "html", "--baseline", "org_manual_bm25", "--test", "bootstrap", "--resamples", "200"],
        nothing, "compiled"),
    "csv, --groups with a group of no compared query, trec_eval names said as translated: compiled": (
        DOC_RUNS, ["--format", "csv", "--measures", "ndcg_cut_3", "P_5", "recip_rank"], groups, "compiled"),
    "json, --depth, Judged@10 asked for, a rel= no grade reaches, a run missing a judged query: compiled": (
        DOC_RUNS[:3], ["--format", "json", "--depth", "20", "--measures", "nDCG@3", "Judged@10", "P(rel=9)@5",
                       "NumRet"], cut_run, "compiled"),
    "--fill, the holes filled and the cells it moved: numpy": (
        DOC_RUNS, ["--format", "json", "--measures", "nDCG@3", "P@3"], fill, "numpy"),
    "--passage-separator, passages judged by document: numpy": (
        [str(path) for path in CAST2021_PASSAGE_RUNS[:3]], ["--passage-separator", "-", "--measures", "nDCG@3"],
        nothing, "numpy"),
}


@pytest.mark.parametrize("case", CASES)
def test_compare_prints_on_the_compiled_route_what_the_numpy_route_prints(case, tmp_path, capsys, monkeypatch):
    runs, extra, made, route = CASES[case]
    argv = ["compare", "--qrels", str(CAST2021_QRELS), *runs, *made(tmp_path), *extra]
    read: list[str] = []  # the runs read by the numpy route's reader of the common form
    reader = tables.read_run_table
    monkeypatch.setattr(tables, "read_run_table", lambda path, **options: read.append(path) or reader(path, **options))
    compiled = outputs(argv, capsys)
    assert compiled[0] == 0, compiled[2]
    assert read == [] or route == "numpy"
    monkeypatch.setattr(lean, "compiled", lambda: None)
    assert compiled == outputs(argv, capsys)
