"""Measure names as the field writes them (harness.evaluate.names), on the CAsT 2021 document
runs and qrels: trec_eval's names accepted and said once, one case rule, every bad name at
once with the nearest valid one, results under the names given; and run lines with text
after the sixth field, which trec_eval ignores."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.evaluate import names
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

RUN = str(CAST2021_DOC_RUNS[0])


@pytest.fixture(autouse=True)
def fresh_announcements(monkeypatch):
    monkeypatch.setattr(names, "_announced", set())


def scores(capsys, *measures: str) -> tuple[dict[str, float], str]:
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--depth", "1000", "--format", "json",
                 "--measures", *measures]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["org_convdr"], captured.err


def test_trec_eval_names_give_the_values_of_the_measures_they_map_to(capsys):
    trec_eval = ["ndcg_cut_10", "P_5", "map", "recip_rank", "recall_1000", "map_cut_500", "set_P", "num_rel_ret",
                 "Rprec", "bpref", "success_10", "ndcg", "num_q"]
    harness = ["nDCG@10", "P@5", "AP", "RR", "R@1000", "AP@500", "SetP", "NumRet(rel=1)", "Rprec", "Bpref",
               "Success@10", "nDCG", "NumQ"]
    by_trec_eval, _ = scores(capsys, *trec_eval)
    by_harness, _ = scores(capsys, *harness)
    assert [by_trec_eval[t] for t in trec_eval] == [by_harness[h] for h in harness]


def test_the_mapping_of_translated_names_is_said_once_on_stderr(capsys):
    _, first = scores(capsys, "ndcg_cut_10", "P_5", "nDCG@3")
    _, again = scores(capsys, "ndcg_cut_10", "P_5", "nDCG@3")
    assert "measures: ndcg_cut_10 = nDCG@10, P_5 = P@5 (" in first and "nDCG@3 =" not in first
    assert "measures:" not in again


def test_measure_names_are_matched_without_regard_to_case(capsys):
    lower, _ = scores(capsys, "map", "ndcg@10", "p_5", "rr")
    upper, _ = scores(capsys, "MAP", "NDCG@10", "P_5", "RR")
    assert list(lower.values()) == list(upper.values())


def test_measures_are_reported_under_the_names_given(capsys):
    result, _ = scores(capsys, "NumRelRet", "ndcg_cut_3", "MRR")
    assert list(result) == ["NumRelRet", "ndcg_cut_3", "MRR"]
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", "NumRelRet", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "run,qid,NumRelRet"


def test_every_bad_measure_is_named_at_once_with_the_nearest_valid_name(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN,
                 "--measures", "nDGC@10", "P5", "unj_10", "nDCG@3", "recip_rnak", "set_F", "P.5,10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "6 of 7 measures refused" in err[0]
    for bad, nearest in [("nDGC@10", "nDCG@10"), ("P5", "P_5"), ("unj_10", "Judged@10"),
                         ("recip_rnak", "recip_rank"), ("set_F", "use set_P and set_recall"),
                         ("P.5,10", "give P_5 P_10")]:
        assert f"'{bad}'" in err[0] and nearest in err[0]


@pytest.mark.parametrize("name", ["gm_map", "GM_BPREF"])
def test_a_geometric_mean_is_refused_with_the_reason_not_a_nearest_name(capsys, name):
    """GMAP is not AP: no 'nearest valid name: map', as iprec_at_recall is refused with its reason."""
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", name]) == 2
    assert capsys.readouterr().err == (
        f"harness eval: error: cannot read measure {name!r}: refused: trec_eval's gm_map and gm_bpref are geometric "
        "means over the queries, which the harness does not take (map and bpref are the arithmetic means)\n")


@pytest.mark.parametrize("written, give", [("nDCG@3,RR", "nDCG@3 RR"), ("nDCG@3, RR", "nDCG@3 RR"),
                                           ("P@5,10", "P@5 P@10"), ("P(rel=2)@5,nDCG@3", "'P(rel=2)@5' nDCG@3"),
                                           ("nDCG@3,", "nDCG@3")])
def test_a_comma_separated_list_of_measures_is_told_one_measure_per_argument(capsys, written, give):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", written]) == 2
    assert capsys.readouterr().err == (f"harness eval: error: cannot read measure {written!r}: one measure per "
                                       f"argument, not a comma-separated list: give {give}\n")


def test_parameters_inside_parentheses_are_not_a_list(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", "P(rel=2,judged_only=True)@5"]) == 2
    assert "trec_eval -J is not applied" in capsys.readouterr().err


def test_the_same_measure_under_two_names_is_refused_naming_both(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", "map", "AP"]) == 2
    assert "'map' and 'AP' are the same measure (AP)" in capsys.readouterr().err


def test_text_after_the_sixth_field_is_ignored_as_trec_eval_does_with_a_note(tmp_path, capsys):
    lines = CAST2021_DOC_RUNS[0].read_text().splitlines(keepends=True)
    trailing = tmp_path / "org_convdr.run"
    trailing.write_text("".join(line.rstrip("\n") + " more junk at\n" if i % 2 else line
                                for i, line in enumerate(lines)))
    plain, _ = scores(capsys, "nDCG@3", "AP")
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(trailing), "--depth", "1000", "--format", "json",
                 "--measures", "nDCG@3", "AP"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["org_convdr"] == plain
    assert f"{len(lines) // 2} lines with text after the sixth field (ignored, as trec_eval does)" in captured.err
