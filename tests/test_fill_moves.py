"""What `--fill` moved: `harness eval` and `harness compare` with --fill list the cells (run x
measure) the filled labels changed, before -> after, and whether the runs' order changed, on
the CAsT 2021 organiser runs and qrels (harness.evaluate.moved)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from harness.cli import main
from harness.trec import read_qrels
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, cast2021_holes

MEASURES = ["nDCG@3", "P@3", "map"]


@pytest.fixture
def holes(tmp_path) -> Path:
    """cast2021_holes: they move org_convdr's scores and break a tie."""
    return cast2021_holes(tmp_path)


def scores(capsys, *extra: str) -> dict:
    assert main(["eval", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", *MEASURES,
                 *extra, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_fill_lists_the_cells_it_moved_as_two_evals_give_them(holes, capsys):
    """The largest move is the cell two runs of `harness eval` (without and with --fill) differ
    most on, with those two values; the count is of every cell they differ on."""
    before, after = scores(capsys), scores(capsys, "--fill", str(holes))
    runs = [path.stem for path in CAST2021_DOC_RUNS]
    differ = sorted(((run, m) for run in runs for m in MEASURES if before[run][m] != after[run][m]),
                    key=lambda cell: -abs(after[cell[0]][cell[1]] - before[cell[0]][cell[1]]))
    run, measure = differ[0]
    assert main(["eval", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", *MEASURES,
                 "--fill", str(holes)]) == 0
    table = capsys.readouterr().out.splitlines()
    report = table[table.index(next(line for line in table if line.startswith("# the fill moved"))):]
    cells = len(runs) * len(MEASURES)
    assert report[0] == f"# the fill moved {len(differ)} of {cells} cells (run x measure); the largest:"
    assert report[1].split() == ["#", run, measure, f"{before[run][measure]:.4f}", "->", f"{after[run][measure]:.4f}",
                                 f"{after[run][measure] - before[run][measure]:+.4f}"]
    assert report[6] == f"#   and {len(differ) - 5} more"
    assert report[7] == "# the order of the 5 runs changed by P@3 (Kendall's tau 0.80); unchanged by the others"


def test_a_fill_that_fills_nothing_says_no_cell_moved(tmp_path, capsys):
    """Labels only for pairs people judged (their labels kept) change no score: eval and compare say so."""
    human = read_qrels(CAST2021_QRELS).judgments
    judged = tmp_path / "judged.qrels"
    judged.write_text("".join(f"{qid} 0 {docid} 4\n" for qid, docs in list(human.items())[:5] for docid in docs))
    assert main(["eval", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", *MEASURES,
                 "--fill", str(judged)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["# the fill moved no cell (of 15 cells, run x measure)",
                                                         "# the order of the 5 runs: unchanged by every measure"]
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", *MEASURES,
                 "--fill", str(judged), "--format", "md"]) == 0
    assert ("## What the fill moved\n\n```\nthe fill moved no cell (of 15 cells, run x measure)\n"
            "the order of the 5 runs: unchanged by every measure\n```\n") in capsys.readouterr().out


def test_json_fill_moves_give_every_moved_cell_and_each_measures_order_as_scipy_ranks_them(holes, capsys):
    """eval's and compare's JSON carry the same record: every moved cell with its unrounded values,
    and per measure whether the order changed and Kendall's tau-b between the two orders."""
    before, after = scores(capsys), scores(capsys, "--fill", str(holes))
    runs = [path.stem for path in CAST2021_DOC_RUNS]
    moves = after["fill_moves"]
    assert {(m["run"], m["measure"]): (m["before"], m["after"]) for m in moves["moves"]} == {
        (run, m): (before[run][m], after[run][m]) for run in runs for m in MEASURES if before[run][m] != after[run][m]}
    assert (moves["runs"], moves["cells"], moves["moved"]) == (5, 15, len(moves["moves"]))
    for m in MEASURES:
        tau = scipy_stats.kendalltau([before[run][m] for run in runs], [after[run][m] for run in runs]).statistic
        assert moves["order"][m]["kendall_tau"] == pytest.approx(tau)
        assert moves["order"][m]["changed"] == (m == "P@3")  # org_convdr_bert's tie with org_manual_bm25 broken
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", *MEASURES,
                 "--fill", str(holes), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fill_moves"] == moves


def test_a_run_named_fill_moves_is_refused_where_json_output_carries_what_the_fill_moved(holes, tmp_path, capsys):
    run = tmp_path / "fill_moves.run"
    run.write_text(CAST2021_DOC_RUNS[0].read_text())
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(run), "--fill", str(holes), "--format", "json"]) == 2
    assert f"{run}: a run named 'fill_moves' would share its key with the cells the fill moved" in (
        capsys.readouterr().err)


def test_counts_are_listed_after_the_means_they_would_crowd_out(holes, capsys):
    """NumRelRet moves by whole documents: its cells come after every moved mean, however large."""
    assert main(["eval", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", "NumRelRet",
                 "P@3", "--fill", str(holes), "--format", "json"]) == 0
    measures = [move["measure"] for move in json.loads(capsys.readouterr().out)["fill_moves"]["moves"]]
    assert "NumRelRet" in measures and "P@3" in measures
    assert measures == sorted(measures, key=lambda m: m == "NumRelRet")


def test_a_measure_warning_is_said_once_though_the_runs_are_scored_twice(holes, capsys):
    """The 'before' pass scores the runs again on --qrels alone: what the measures warn of (a
    relevance level no judgment reaches) was said as they were scored with the fill."""
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "P(rel=9)@10",
                 "--fill", str(holes)]) == 0
    assert sum("reaches grade 9" in line for line in capsys.readouterr().err.splitlines()) == 1
