"""Runs ranked to different depths, compared on a measure that reads past the shallowest: `harness
compare` and `harness eval` say it in one line (compare's report in a note too), on the CAsT 2021
organiser runs (81 to 94 documents for 9 in 10 judged queries) and BM25's run cut to 20 a query."""

from __future__ import annotations

import json
import warnings

import pytest

from harness import api
from harness.cli import main
from harness.evaluate import lean
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

CONVDR = next(path for path in CAST2021_DOC_RUNS if path.stem == "org_convdr")
WARNING = ("R@1000 and AP reach past the depth of bm25_k20 (at most 20 documents for 9 in 10 of its judged queries) "
           "while org_convdr ranks 84: "
           "these compare depths, not systems; cut every run to 20 (--depth 20) or rerun bm25_k20 deeper")


@pytest.fixture
def bm25_k20(tmp_path):
    """org_manual_bm25 cut to its top 20 a query: a run of k=20."""
    bm25 = next(path for path in CAST2021_DOC_RUNS if path.stem == "org_manual_bm25")
    path = tmp_path / "bm25_k20.run"
    path.write_text("".join(line + "\n" for line in bm25.read_text().splitlines() if int(line.split()[3]) <= 20))
    return path


def compare(capsys, *args: str) -> tuple[str, list[str]]:
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *args]) == 0
    out, err = capsys.readouterr()
    return out, [line for line in err.splitlines() if "reach" in line and "past the depth" in line]


def test_runs_of_different_depths_on_a_measure_reaching_past_the_shallowest_are_warned_of_once(bm25_k20, capsys):
    """Before: R@1000 0.2393 against 0.3678 and AP 0.1631 against 0.2024, significant, without a word."""
    out, said = compare(capsys, str(bm25_k20), str(CONVDR), "--measures", "nDCG@10", "R@1000", "AP")
    assert said == [f"warning: {WARNING}"]
    assert f"Warning: {WARNING}.\n" in out  # the Markdown report's note, under its title


@pytest.mark.parametrize("fmt", ["csv", "json", "html"])
def test_the_depth_warning_is_a_note_in_every_report_format(bm25_k20, capsys, fmt):
    out, _ = compare(capsys, str(bm25_k20), str(CONVDR), "--measures", "nDCG@10", "R@1000", "AP", "--format", fmt)
    if fmt == "csv":
        assert f"# Warning: {WARNING}.\n" in out
    elif fmt == "json":
        assert json.loads(out)["notes"] == [f"Warning: {WARNING}."]
    else:
        assert WARNING in out


def test_runs_nearly_as_deep_are_compared_without_a_word(capsys):
    """The organiser runs, made from passage runs cut at 100, rank 91 to 100 documents a judged query:
    as deep, on the default measures (AP, RR and R@1000 among them)."""
    _, said = compare(capsys, *map(str, CAST2021_DOC_RUNS))
    assert said == []


def test_measures_whose_cutoff_stops_at_the_shallowest_depth_say_nothing(bm25_k20, capsys):
    _, said = compare(capsys, str(bm25_k20), str(CONVDR), "--measures", "nDCG@10", "P@10", "R@20")
    assert said == []


def test_every_measure_that_reads_the_difference_is_named_and_every_run_s_depth(bm25_k20, capsys):
    """R@50 reads ranks 21 to 50 of the deeper runs; RR reads the whole ranking; the runs deepest first."""
    _, said = compare(capsys, str(bm25_k20), *map(str, CAST2021_DOC_RUNS), "--measures", "nDCG@3", "R@50", "RR")
    assert said == ["warning: R@50 and RR reach past the depth of bm25_k20 (at most 20 documents for 9 in 10 of its "
                    "judged queries) while org_manual_bm25 ranks 94, org_convdr 84, org_convdr_bert 84, "
                    "org_manual_ance 81 and org_manual_ance_bert 81: these compare depths, not systems; cut every "
                    "run to 20 (--depth 20) or rerun bm25_k20 deeper"]


def test_depth_counts_what_depth_keeps_so_cutting_every_run_to_the_shallowest_silences_it(bm25_k20, capsys):
    _, said = compare(capsys, str(bm25_k20), str(CONVDR), "--measures", "R@1000", "AP", "--depth", "20")
    assert said == []


def test_harness_eval_of_several_runs_says_it_alike_on_both_routes(bm25_k20, capsys, monkeypatch):
    argv = ["eval", "--qrels", str(CAST2021_QRELS), "--run", str(bm25_k20), str(CONVDR), "--measures", "nDCG@10",
            "R@1000", "AP"]
    assert main(argv) == 0
    compiled = capsys.readouterr()
    assert f"warning: {WARNING}" in compiled.err.splitlines()
    monkeypatch.setattr(lean, "compiled", lambda: None)  # the numpy route
    assert main(argv) == 0
    assert capsys.readouterr() == compiled


def test_the_python_api_warns_of_it_naming_its_depth_argument(bm25_k20):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api.compare([str(bm25_k20), str(CONVDR)], str(CAST2021_QRELS), ["nDCG@10", "R@1000", "AP"])
    assert [str(w.message) for w in caught if "past the depth" in str(w.message)] == [
        WARNING.replace("(--depth 20)", "(depth=20)")]


def test_a_run_s_depth_is_counted_on_its_judged_queries(bm25_k20, tmp_path, capsys):
    """A query the qrels do not judge is scored by no measure: 1000 documents of it change no depth."""
    deep = tmp_path / "deep_unjudged.run"
    lines = bm25_k20.read_text().splitlines()
    deep.write_text("".join(line + "\n" for line in lines)
                    + "".join(f"999_1 Q0 D{rank} {rank} {-rank} x\n" for rank in range(1, 1001)))
    _, said = compare(capsys, str(bm25_k20), str(deep), "--measures", "R@1000", "AP")
    assert said == []


def test_a_run_s_depth_is_that_of_9_in_10_of_its_judged_queries_not_of_its_deepest_one(bm25_k20, tmp_path, capsys):
    """A run of k=20 that ranks one judged query deeper is still a run of depth 20: the warning names it, not
    the deeper run, and says to cut to 20 (by its deepest query it said to cut every run to 91)."""
    bm25 = next(path for path in CAST2021_DOC_RUNS if path.stem == "org_manual_bm25")
    one_deep = tmp_path / "bm25_k20.run"
    deeper = [line for line in bm25.read_text().splitlines()
              if line.split()[0] == "106_1" and int(line.split()[3]) > 20]
    one_deep.write_text(bm25_k20.read_text() + "".join(line + "\n" for line in deeper))
    _, said = compare(capsys, str(one_deep), str(CONVDR), "--measures", "nDCG@10", "R@1000", "AP")
    assert said == [f"warning: {WARNING}"]


def test_a_depth_cut_to_the_shallowest_run_is_not_told_to_go_deeper_than_the_runs_rank(bm25_k20, capsys):
    """After the warning's --depth 20, the older one said 'give --depth 1000 for what the names say' of R@1000: that
    brings back the depth warning, bm25_k20 ranking 20. It names the measure reading no deeper instead, and the
    deeper --depth where every run ranks that deep."""
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(bm25_k20), str(CONVDR), "--measures", "nDCG@10",
                 "R@1000", "AP", "P@100", "--depth", "20"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert said == ["warning: --depth 20 keeps 20 documents per query, fewer than R@1000 (1000), P@100 (100) reads: "
                    "scored on the top 20 alone; ask for R@20 and P@20, which read no deeper, or give --depth 1000 "
                    "where every run ranks that deep"]
