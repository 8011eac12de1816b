"""Measure names as the field writes them (harness.evaluate.names), on the CAsT 2021 document
runs and qrels: trec_eval's names accepted and said once a command, one case rule, every bad name at
once with the nearest valid one, results under the names given; and run lines with text
after the sixth field, which trec_eval ignores. The recommender's hit ratio (HR@k, Hit@k) on
OpenDialKG's derived qrels."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from harness.cli import main
from harness.trec import qrels_text
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, child_env

RUN = str(CAST2021_DOC_RUNS[0])


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


def test_the_mapping_of_translated_names_is_said_on_stderr_by_each_command(capsys):
    """A second command in one process (a test, a notebook) says it too: what a user is told
    does not depend on what ran before."""
    for _ in range(2):
        _, err = scores(capsys, "ndcg_cut_10", "P_5", "nDCG@3")
        assert err.count("measures: ndcg_cut_10 = nDCG@10, P_5 = P@5 (") == 1 and "nDCG@3 =" not in err


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


@pytest.mark.parametrize("written, parts", [
    ("'nDCG@3,RR' + ' ' * 400_000 + 'x'", "['nDCG@3', 'RR' + ' ' * 400_000 + 'x']"),
    ("'nDCG@3' + ',' * 200_000", "['nDCG@3']"),
], ids=["spaces", "commas"])
def test_a_measure_list_is_cut_in_linear_time(written, parts):
    """A long run of spaces, or of commas, each looked at from each of its characters to the end, took minutes;
    cut in a child, which fails the test if not done in a time no linear cutting comes near."""
    code = f"from harness.evaluate.names import listed_measures\nprint(listed_measures({written}) == {parts})\n"
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True\n"


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


def opendialkg_run(tmp_path) -> tuple[str, str]:
    """OpenDialKG test's derived qrels (a turn's recommended items) and a seeded run that ranks
    each turn's items at random among 30 of the catalogue's judged ids: turns recommending two
    items often have one in the top 10 alone, where recall and the hit ratio part."""
    from harness.topics import load

    derived = load("opendialkg:test").qrels()
    judgments = derived.judgments
    qrels, run = tmp_path / "opendialkg.qrels", tmp_path / "opendialkg.run"
    qrels.write_text(qrels_text(derived))
    rng, catalogue = random.Random(6), sorted({item for items in judgments.values() for item in items})
    lines = []
    for qid, items in judgments.items():
        ranking = [item for item in rng.sample(catalogue, 30) if item not in items]
        for item in items:
            ranking.insert(rng.randrange(len(ranking) + 1), item)
        lines += [f"{qid} Q0 {item} {rank} {100 - rank} mine\n" for rank, item in enumerate(ranking[:30], start=1)]
    run.write_text("".join(lines))
    return str(qrels), str(run)


def opendialkg_means(capsys, qrels: str, run: str, *measures: str) -> tuple[dict[str, float], str]:
    assert main(["eval", "--qrels", qrels, run, "--format", "json", "--measures", *measures]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["opendialkg"], captured.err


def test_the_hit_ratio_hr_or_hit_at_k_is_success_at_k_not_recall_said_once_and_reported_as_given(tmp_path, capsys):
    qrels, run = opendialkg_run(tmp_path)
    harness, _ = opendialkg_means(capsys, qrels, run, "Success@10", "R@10")
    for name in ("HR@10", "Hit@10", "hr@10", "HIT@10"):
        hit_ratio, err = opendialkg_means(capsys, qrels, run, name)
        assert hit_ratio == {name: harness["Success@10"]}
        assert f"measures: {name} = Success@10 (reported under the names given" in err
    assert harness["Success@10"] > harness["R@10"]


def test_the_hit_ratio_without_a_cutoff_is_told_to_give_one(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUN, "--measures", "HR"]) == 2
    assert capsys.readouterr().err == ("harness eval: error: cannot read measure 'HR': the hit ratio needs a cutoff: "
                                       "give HR@10 (Success@10)\n")


@pytest.mark.reference
def test_the_hit_ratio_equals_trec_evals_success_k_on_opendialkg(trec_eval, tmp_path, capsys):
    qrels, run = opendialkg_run(tmp_path)
    ours, _ = opendialkg_means(capsys, qrels, run, "HR@10", "Hit@5")
    printed = subprocess.run([str(trec_eval), "-c", "-m", "success.5,10", qrels, run], check=True,
                             capture_output=True, text=True).stdout.split()
    assert printed == ["success_5", "all", f"{ours['Hit@5']:.4f}", "success_10", "all", f"{ours['HR@10']:.4f}"]
