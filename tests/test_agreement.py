"""`harness qrels agree` and `harness qrels rank-agree` equal independent implementations:
scikit-learn's cohen_kappa_score (the weighted kappas given labels= every integer from the lowest
grade to the highest, as README says) / confusion_matrix for labels, scipy's kendalltau for
orderings, and the definition of tau_AP (Yilmaz, Aslam and Robertson 2008) worked by hand.

Real data: the NIST iKAT 2024 qrels against the organisers' GPT-4 judgments of the 2024 pool,
the two shipped iKAT 2023 PTKB qrels (NIST's and the organisers'), and a sweep of BM25
settings and query fields ranking the 2023 PTKB statements (bm25s)."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import random
import sys
import warnings
from fractions import Fraction

import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from harness import paths
from harness.cli import main
from harness.judge import base
from harness.judge.agree import kendall_tau, ranks, tau_ap
from harness.paths import qrels_root
from harness.trec import read_qrels
from tests.conftest import extra, shared_path

PTKB_NIST = qrels_root() / "ikat" / "ptkb_rel_nist"
PTKB_ORG = qrels_root() / "ikat" / "ptkb_rel_org"
THRESHOLDS = ["1", "2", "3", "4"]


def ikat_2024_pair() -> tuple[str, str]:
    """The NIST 2024 qrels (shipped) and the GPT-4 pool of CONE-RAG (../shared)."""
    pool = shared_path("data/ikat/2024/cone-rag") / "resources/automatic_resources/llm-gpt4-pool-depth-30.txt"
    return str(qrels_root() / "ikat" / "2024-qrels.txt"), str(pool)


def agree_json(a: str, b: str, capsys) -> dict:
    assert main(["qrels", "agree", a, b, "--thresholds", *THRESHOLDS, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@functools.lru_cache(maxsize=4)
def judgments(path: str) -> dict[str, dict[str, int]]:
    return read_qrels(path).judgments


def shared_labels(a: str, b: str, qid: str | None = None) -> tuple[list[int], list[int]]:
    """The (A, B) grades of the pairs both judge, read independently of harness.judge."""
    left, right = judgments(a), judgments(b)
    pairs = [(grade, right[q][d]) for q, docs in left.items() if qid in (None, q)
             for d, grade in docs.items() if d in right.get(q, {})]
    return [x for x, _ in pairs], [y for _, y in pairs]


def same(value: float | None, expected: float) -> bool:
    """JSON gives kappas unrounded: equal to scikit-learn's but for floating-point summation order."""
    return (value is None and math.isnan(expected)) or (value is not None and abs(value - expected) < 1e-12)


def between(grades: list[int]) -> list[int]:
    """Every grade from the lowest to the highest: scikit-learn weighs by a label's position,
    the harness by the grade's value, which agree where no grade between is left out."""
    return list(range(min(grades), max(grades) + 1)) if grades else grades


def check_against_sklearn(document: dict, a: str, b: str, qid: str | None = None) -> None:
    """Every kappa of `document` (overall, or `qid`'s) is scikit-learn's, the weighted ones given
    labels= every integer from the lowest grade to the highest (`between`), not its default."""
    x, y = shared_labels(a, b, qid)
    part = document if qid is None else document["per_query"][qid]
    grades = document["grades"]
    assert grades == sorted(set(x + y)) or qid is not None
    assert part["pairs"] == len(x)
    assert part["confusion"] == confusion_matrix(x, y, labels=grades).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns where kappa is undefined (NaN); we answer n/a
        for threshold in THRESHOLDS:
            t = int(threshold)
            expected = cohen_kappa_score([g >= t for g in x], [g >= t for g in y], labels=[False, True])
            assert same(part["kappa"][threshold], expected), (qid, threshold)
        for weighting in ("linear", "quadratic"):
            expected = cohen_kappa_score(x, y, labels=between(grades), weights=weighting)
            assert same(part["weighted_kappa"][weighting], expected), (qid, weighting)


# -- labels --------------------------------------------------------------------------------


@pytest.mark.reference
def test_kappa_on_nist_2024_vs_gpt4_equals_scikit_learn_at_every_threshold_and_weighting(capsys):
    a, b = ikat_2024_pair()
    document = agree_json(a, b, capsys)
    check_against_sklearn(document, a, b)
    assert document["grades"] == [0, 1, 2, 3, 4]
    for qid in document["per_query"]:
        check_against_sklearn(document, a, b, qid)


@pytest.mark.reference
def test_the_counts_are_pairs_in_a_only_b_only_and_both(capsys):
    a, b = ikat_2024_pair()
    document = agree_json(a, b, capsys)
    left = {(q, d) for q, docs in read_qrels(a).judgments.items() for d in docs}
    right = {(q, d) for q, docs in read_qrels(b).judgments.items() for d in docs}
    assert document["counts"] == {"both": len(left & right), "a_only": len(left - right), "b_only": len(right - left)}
    assert document["queries"]["both"] == len({q for q, _ in left} & {q for q, _ in right})


def test_kappa_on_the_two_ptkb_qrels_equals_scikit_learn(capsys):
    document = agree_json(str(PTKB_NIST), str(PTKB_ORG), capsys)
    assert document["grades"] == [0, 1]
    check_against_sklearn(document, str(PTKB_NIST), str(PTKB_ORG))
    for qid in document["per_query"]:
        check_against_sklearn(document, str(PTKB_NIST), str(PTKB_ORG), qid)
    assert document["kappa"]["2"] is None  # no grade 2 on either side: undefined, never a made-up 0


def test_a_threshold_above_every_grade_is_a_warning_that_its_kappa_is_n_a(capsys):
    """The PTKB qrels grade 0 and 1: kappa at >= 2 or 3 is undefined (n/a), said as `harness eval`
    says a rel= no judgment reaches; once per threshold, whatever the format."""
    for fmt in ("table", "json"):
        assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--thresholds", "1", "3", "2", "3",
                     "--format", fmt]) == 0
        assert capsys.readouterr().err.splitlines() == [
            f"warning: --thresholds {t}: no judgment in qrels {PTKB_NIST} or {PTKB_ORG} reaches grade {t} "
            "(the highest is 1), so its kappa is n/a" for t in (3, 2)]


def test_a_default_threshold_above_every_grade_is_said_to_be_the_default(capsys):
    """Binary qrels and the default thresholds 1 2: the user gave no --thresholds 2."""
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG)]) == 0
    assert capsys.readouterr().err == (f"warning: the default --thresholds 2: no judgment in qrels {PTKB_NIST} or "
                                       f"{PTKB_ORG} reaches grade 2 (the highest is 1), so its kappa is n/a\n")


def test_thresholds_given_as_the_default_values_are_named_as_given(capsys):
    """`--thresholds 1 2` typed by the user is what they gave, though it equals the default."""
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--thresholds", "1", "2"]) == 0
    assert capsys.readouterr().err == (f"warning: --thresholds 2: no judgment in qrels {PTKB_NIST} or "
                                       f"{PTKB_ORG} reaches grade 2 (the highest is 1), so its kappa is n/a\n")


def test_a_threshold_at_or_below_every_grade_is_a_warning_that_its_kappa_is_n_a(capsys):
    """At >= 0 every label is 1 on both sides: undefined too, and said so."""
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--thresholds", "0", "1", "--format", "json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["kappa"]["0"] is None
    assert said.err.splitlines() == [f"warning: --thresholds 0: every judgment in qrels {PTKB_NIST} and {PTKB_ORG} "
                                     "reaches grade 0 (the lowest is 0), so its kappa is n/a"]


def yes_no_labels(path, human: str, judge: str = "llm") -> str:
    """The people's labels of iKAT 2024 as a yes-no judge would give them (grade >= 2: 1), written as
    `harness judge --scale yes-no` writes them: the qrels and its provenance sidecar."""
    from harness.judge.base import counts, write_qrels
    from harness.judge.model import Judgment

    judgments = [Judgment((qid, docid), int(grade >= 2), "ok", str(int(grade >= 2)), False)
                 for qid, docs in read_qrels(human).judgments.items() for docid, grade in docs.items()]
    write_qrels(path, judgments, {"judge": judge, "scale": "yes-no", "counts": counts(judgments)})
    return str(path)


def test_labels_on_another_scale_draw_the_warning_eval_fill_gives_in_agree_and_rank_agree(tmp_path, capsys):
    """B's sidecar records the yes-no scale: its 1s are compared with (and score runs as) iKAT's grade 1,
    'related'. The check is `eval --fill`'s, worded for each command; whichever side holds the LLM's labels."""
    from harness.judge.fill import FILLED, fill

    human = str(qrels_root() / "ikat" / "2024-qrels.txt")
    b = yes_no_labels(tmp_path / "yn.qrels", human)
    warning = fill(read_qrels(human), b).scale_warning
    assert warning.startswith(f"{b}: its provenance sidecar puts its labels on the scale yes-no (0 to 1), but the "
                              f"top grade of {human} is 4: {FILLED}, mixing the two scales; judge with --scale")
    compared = warning.replace(FILLED, "each of its labels is compared with the grade of the same number there")
    for a_b in ([human, b], [b, human]):
        assert main(["qrels", "agree", *a_b, "--format", "json"]) == 0
        said = capsys.readouterr()
        assert f"warning: {compared}\n" in said.err and compared in json.loads(said.out)["warnings"]
    run = tmp_path / "r.run"
    qid, docs = next(iter(read_qrels(human).judgments.items()))
    run.write_text("".join(f"{qid} Q0 {docid} {rank} {-rank} r\n" for rank, docid in enumerate(docs, 1)))
    again = tmp_path / "again.run"
    again.write_text(run.read_text().replace(" r\n", " again\n"))
    assert main(["qrels", "rank-agree", human, b, str(run), str(again), "--measures", "nDCG@10"]) == 0
    assert "warning: " + warning.replace(FILLED, "the runs are scored on its labels as on that file's grades of the "
                                         "same number") + "\n" in capsys.readouterr().err


def test_a_threshold_one_file_never_or_always_reaches_says_its_kappa_is_not_informative(tmp_path, capsys,
                                                                                         monkeypatch):
    """Yes-no labels never reach grade 2: at >= 2 each is 0, and the kappa there (0.0000 on iKAT 2024)
    measures nothing; at >= 1 both files vary and nothing is said. Labels of relevant documents only
    (all >= 1) at >= 1 are each 1: the same. On a terminal the table carries the warnings, stderr nothing."""
    human = str(qrels_root() / "ikat" / "2024-qrels.txt")
    b = yes_no_labels(tmp_path / "yn.qrels", human)
    assert main(["qrels", "agree", human, b]) == 0
    said = capsys.readouterr()
    assert "Cohen's kappa, grade >= 2: 0.0000" in said.out
    assert [line for line in said.err.splitlines() if "thresholds" in line] == [
        f"warning: the default --thresholds 2: no judgment in qrels {b} reaches grade 2 (the highest is 1), so each "
        "of its labels is 0 there: its kappa (0 or n/a, whatever the other file says) is not informative"]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal: the table's warnings, not twice
    assert main(["qrels", "agree", human, b]) == 0
    said = capsys.readouterr()
    assert said.err == "" and f"\nwarning: the default --thresholds 2: no judgment in qrels {b} reaches" in said.out
    monkeypatch.undo()
    relevant = tmp_path / "relevant.qrels"
    relevant.write_text("".join(line for line in open(b) if not line.endswith(" 0\n")))
    assert main(["qrels", "agree", human, str(relevant), "--thresholds", "1"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: --thresholds 1: every judgment in qrels {relevant} reaches grade 1 (the lowest is 1), so each of "
        "its labels is 1 there: its kappa (0 or n/a, whatever the other file says) is not informative"]


def test_csv_and_table_say_what_json_says(capsys):
    document = agree_json(str(PTKB_NIST), str(PTKB_ORG), capsys)
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--thresholds", *THRESHOLDS, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    overall = rows[-1]
    assert overall["qid"] == "all" and int(overall["pairs"]) == document["pairs"]
    assert float(overall["kappa(>=1)"]) == document["kappa"]["1"]  # unrounded, as harness eval's CSV
    assert overall["kappa(>=2)"] == ""  # undefined
    assert int(overall["A1_B0"]) == document["confusion"][1][0]
    assert [row["qid"] for row in rows[:-1]] == list(document["per_query"])
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG)]) == 0
    table = capsys.readouterr().out
    assert f"Cohen's kappa, grade >= 1: {document['kappa']['1']:.4f}" in table
    assert f"pairs: {document['counts']['both']} in both, {document['counts']['a_only']} in A only" in table


def test_a_threshold_given_twice_is_one_column_with_its_own_value_in_csv_and_table(capsys, tmp_path):
    """A repeated --thresholds value is one kappa: a second header would shift every later
    value under the wrong column (CSV) or break the per-query table."""
    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    a.write_text("1 0 x 1\n1 0 y 0\n1 0 z 2\n")
    b.write_text("1 0 x 1\n1 0 y 1\n1 0 z 2\n")
    assert main(["qrels", "agree", str(a), str(b), "--thresholds", "2", "1", "1", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert main(["qrels", "agree", str(a), str(b), "--thresholds", "2", "1", "1", "--format", "csv"]) == 0
    [row, overall] = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(overall)[:6] == ["qid", "pairs", "kappa(>=2)", "kappa(>=1)", "kappa(linear)", "kappa(quadratic)"]
    assert float(overall["kappa(>=1)"]) == document["kappa"]["1"]  # unrounded, as harness eval's CSV
    assert float(overall["kappa(linear)"]) == pytest.approx(document["weighted_kappa"]["linear"], abs=1e-4)
    assert main(["qrels", "agree", str(a), str(b), "--thresholds", "2", "1", "1", "--per-query"]) == 0
    assert capsys.readouterr().out.splitlines()[-2].split() == [
        "qid", "pairs", "kappa(>=2)", "kappa(>=1)", "kappa(linear)", "kappa(quadratic)"]



def test_a_kappa_of_exactly_0_is_0_not_a_negative_zero(capsys, tmp_path):
    """Observed disagreement equal to chance's: linear kappa 0, as scikit-learn gives it; a
    float sum of chance disagreement made it -2.2e-16, shown -0.0000 (and -0.0 in JSON).
    Found by differential fuzzing against scikit-learn."""
    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    pairs = [(3, 2), (4, 3), (4, 1), (4, 0), (3, 1)]
    a.write_text("".join(f"1 0 d{i} {x}\n" for i, (x, _) in enumerate(pairs)))
    b.write_text("".join(f"1 0 d{i} {y}\n" for i, (_, y) in enumerate(pairs)))
    expected = cohen_kappa_score(*zip(*pairs), labels=[0, 1, 2, 3, 4], weights="linear")
    assert expected == 0.0
    assert main(["qrels", "agree", str(a), str(b)]) == 0
    assert "weighted kappa (linear): 0.0000\n" in capsys.readouterr().out
    assert main(["qrels", "agree", str(a), str(b), "--format", "json"]) == 0
    assert '"linear": 0.0,' in capsys.readouterr().out


def test_the_confusion_is_over_the_grades_given_not_every_grade_between(capsys, tmp_path):
    """Grades 0 and 100000 are a 2 x 2 confusion (over every grade between, 100001 rows, it was a
    MemoryError); the weights still come from the grade values. Found by differential fuzzing."""
    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    a.write_text("1 0 d1 0\n1 0 d2 100000\n1 0 d3 0\n")
    b.write_text("1 0 d1 0\n1 0 d2 100000\n1 0 d3 100000\n")
    assert main(["qrels", "agree", str(a), str(b), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["grades"] == [0, 100000] and document["confusion"] == [[1, 1], [0, 1]]
    x, y = [0, 100000, 0], [0, 100000, 100000]
    assert document["weighted_kappa"]["linear"] == pytest.approx(cohen_kappa_score(x, y, labels=[0, 100000]))


def test_weighted_kappa_weighs_grades_by_value_not_by_their_position_among_those_used():
    """Grades 0, 1, 2, 4 (CAsT 2021 query 106_6's): 4 is 2 from 2, not 1 as its position next
    to 2 has it in scikit-learn's default, so the weighted kappas equal cohen_kappa_score given
    labels 0 to 4, and not given none (README said 'equal', leaving labels= out)."""
    from harness.judge.agree import compare_labels
    from harness.trec import Qrels

    x, y = [0, 1, 2, 4, 4, 0, 1, 2, 0], [0, 2, 1, 4, 2, 0, 1, 4, 1]
    a, b = ({"106_6": {f"d{i}": grade for i, grade in enumerate(side)}} for side in (x, y))
    part = compare_labels(Qrels("a", a), Qrels("b", b), [1]).overall
    for weighting in ("linear", "quadratic"):
        assert part.weighted[weighting] == pytest.approx(cohen_kappa_score(x, y, labels=[0, 1, 2, 3, 4],
                                                                           weights=weighting), abs=1e-12)
        assert abs(part.weighted[weighting] - cohen_kappa_score(x, y, weights=weighting)) > 0.01


def test_kappas_on_random_qrels_equal_scikit_learns_and_are_undefined_where_its_are():
    """Seeded pairs of qrels (grades -1 to 4, queries and documents on one side only, every
    label the same on one or both sides): every kappa, overall and per query, equals
    cohen_kappa_score, the weighted ones given labels= every integer from the lowest grade to the
    highest (a grade between may go unused), NaN (n/a) exactly where it is NaN."""
    from harness.judge.agree import compare_labels
    from harness.trec import Qrels

    rng, undefined = random.Random(16), 0
    for _ in range(150):
        low = rng.choice([-1, 0, 0, 1])
        high = low + rng.randint(1, 4)
        constant = rng.random() < 0.2
        a: dict[str, dict[str, int]] = {}
        b: dict[str, dict[str, int]] = {}
        for q in map(str, range(rng.randint(1, 4))):
            for d in map(str, range(rng.randint(1, 12))):
                side = rng.random()
                if side < 0.9:
                    a.setdefault(q, {})[d] = low if constant else rng.randint(low, high)
                if side > 0.1:
                    b.setdefault(q, {})[d] = rng.randint(low, high)
        thresholds = sorted(set(rng.choices(range(low - 1, high + 2), k=2)))
        result = compare_labels(Qrels("a", a), Qrels("b", b), thresholds)
        for qid, part in [(None, result.overall), *result.per_query.items()]:
            pairs = [(x, b[q][d]) for q, docs in a.items() if qid in (None, q) for d, x in docs.items()
                     if d in b.get(q, {})]
            x, y = [p[0] for p in pairs], [p[1] for p in pairs]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scikit-learn warns where kappa is undefined
                expected = {**{t: cohen_kappa_score([g >= t for g in x], [g >= t for g in y], labels=[False, True])
                               for t in thresholds},
                            **{w: cohen_kappa_score(x, y, labels=between(part.grades), weights=w)
                               for w in ("linear", "quadratic")}}
            for key, value in {**part.kappa, **part.weighted}.items():
                undefined += math.isnan(expected[key])
                assert value == pytest.approx(expected[key], abs=1e-12, nan_ok=True), (qid, key)
    assert undefined > 100  # the undefined cases were met


# -- orderings -----------------------------------------------------------------------------


def test_tau_ap_is_the_papers_formula_on_hand_worked_orderings():
    """Truth A > B > C > D (scores 4 3 2 1). The estimate swaps one adjacent pair:
    at the top, C(2) = 0, C(3) = 2, C(4) = 3 -> 2/3 * (0/1 + 2/2 + 3/3) - 1 = 1/3;
    at the bottom, C(2) = 1, C(3) = 2, C(4) = 2 -> 2/3 * (1 + 1 + 2/3) - 1 = 7/9;
    tau is 2/3 for both: tau_AP weighs the swap at the top more."""
    truth = [4, 3, 2, 1]
    assert tau_ap(truth, truth) == 1
    assert tau_ap(truth, [1, 2, 3, 4]) == -1
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    assert kendall_tau(truth, [3, 4, 2, 1]) == kendall_tau(truth, [4, 3, 1, 2]) == pytest.approx(2 / 3)
    # asymmetric: the estimate's ordering is walked, the truth judges
    assert tau_ap([3, 4, 2, 1], truth) == pytest.approx(1 / 3)
    # truth A > C > B > D, estimate A > B > D > C: B gets 1/1, D 2/2, C 1/3 (only A is right)
    assert tau_ap([4, 2, 3, 1], [4, 3, 1, 2]) == pytest.approx(2 / 3 * (1 + 1 + 1 / 3) - 1)


def test_tau_ap_with_ties_counts_half_and_skips_runs_tied_at_the_top():
    """Truth ties B and C (4 3 3 1); the estimate orders them B > C: C(C) gets 1/2 for B,
    2/3 * (1/1 + (1 + 1/2)/2 + 3/3) - 1 = 5/6. An estimate tying A and B at the top compares
    neither with the other: C(C) = 2/2, C(D) = 3/3 -> 2/2 * (1 + 1) - 1 = 1."""
    assert tau_ap([4, 3, 3, 1], [4, 3, 2, 1]) == pytest.approx(5 / 6)
    assert tau_ap([4, 3, 2, 1], [4, 4, 2, 1]) == 1
    assert math.isnan(tau_ap([1, 2], [5, 5]))  # nothing is above anything
    assert ranks({"a": 0.5, "b": 0.7, "c": 0.5}) == {"b": 1, "a": 2, "c": 2}



def test_a_tau_ap_of_exactly_0_is_0_not_a_negative_zero():
    """Seven runs whose shares C(i) average exactly 1/2: tau_AP 0 (the definition in exact
    fractions), where a float sum of the shares gave -1.1e-16, shown -0.0000. Found by
    differential fuzzing against the definition worked in fractions."""
    truth, estimate = [8, 17, 6, 10, 16, 18, 19], [14, 1, 4, 7, 19, 8, 3]
    shares = [Fraction(sum(truth[j] > truth[i] for j in range(7) if estimate[j] > estimate[i]),
                        sum(estimate[j] > estimate[i] for j in range(7))) for i in range(7) if estimate[i] < 19]
    assert 2 * sum(shares) / len(shares) - 1 == 0
    value = tau_ap(truth, estimate)
    assert value == 0 and math.copysign(1, value) == 1 and f"{value:.4f}" == "0.0000"

@pytest.fixture(scope="module")
def ptkb_sweep(tmp_path_factory):
    """Twelve real PTKB statement rankings of the iKAT 2023 test turns: bm25s (Lucene's BM25)
    over each conversation's statements, k1 x b x query field (the utterance, or the
    utterance with the turns before it)."""
    from harness.topics import load
    from harness.trec import write_run

    bm25s = extra("bm25s", "test")
    folder = tmp_path_factory.mktemp("ptkb-sweep")
    conversations = load("ikat2023").conversations
    paths = []
    for k1 in (0.6, 1.2, 2.0):
        for b in (0.3, 0.9):
            for field in ("utterance", "history"):
                rankings = []
                for conversation in conversations:
                    statements = conversation.personal
                    retriever = bm25s.BM25(k1=k1, b=b)
                    retriever.index(bm25s.tokenize([s.text for s in statements], stopwords="en", show_progress=False),
                                    show_progress=False)
                    for index, turn in enumerate(conversation.turns):
                        text = turn.utterance if field == "utterance" else \
                            " ".join(t.utterance for t in conversation.turns[: index + 1])
                        tokens = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
                        scores = retriever.get_scores(tokens)
                        rankings.append((turn.qid, sorted(((s.id, float(v)) for s, v in zip(statements, scores)),
                                                          key=lambda item: (-item[1], item[0]))))
                path = folder / f"bm25-k{k1}-b{b}-{field}.run"
                write_run(path, rankings, tag=path.stem)
                paths.append(str(path))
    return paths


def test_tau_of_the_run_orderings_on_the_queries_both_judge_equals_scipy_on_a_bm25_sweep(ptkb_sweep, capsys, tmp_path):
    assert main(["qrels", "rank-agree", str(PTKB_NIST), str(PTKB_ORG), *ptkb_sweep, "--preset", "ptkb",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    # both orderings are scored on the queries both qrels judge (39 of 98 and 112)
    nist, org = read_qrels(PTKB_NIST).judgments, read_qrels(PTKB_ORG).judgments
    shared = set(nist) & set(org)
    assert document["queries"] == {"both": len(shared), "A": len(nist), "B": len(org)} == {"both": 39, "A": 98, "B": 112}
    means = {}
    for side, judgments in (("a", nist), ("b", org)):
        qrels = tmp_path / f"{side}.qrels"
        qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q in shared for d, g in judgments[q].items()))
        assert main(["eval", "--qrels", str(qrels), *ptkb_sweep, "--preset", "ptkb", "--format", "json"]) == 0
        means[side] = json.loads(capsys.readouterr().out)
    names = list(means["a"])
    assert len(names) == 12
    for measure, result in document["measures"].items():
        a = [means["a"][name][measure] for name in names]
        b = [means["b"][name][measure] for name in names]
        expected = kendalltau(a, b).statistic
        assert same(result["tau"], expected), measure
        assert same(result["tau_ap"], tau_ap(a, b)), measure
        rank_a, rank_b = ranks(dict(zip(names, a))), ranks(dict(zip(names, b)))
        moves = [abs(m["rank_b"] - m["rank_a"]) for m in result["moves"]]
        assert moves == sorted(moves, reverse=True)
        assert {(m["run"], m["rank_a"], m["rank_b"]) for m in result["moves"]} == \
            {(name, rank_a[name], rank_b[name]) for name in names}
    assert main(["qrels", "rank-agree", str(PTKB_NIST), str(PTKB_ORG), *ptkb_sweep, "--preset", "ptkb"]) == 0
    table = capsys.readouterr().out
    assert "tau_AP" in table and "nDCG@3" in table and " -> " in table
    assert "scored on the 39 queries both judge (98 in A, 112 in B)" in table


@pytest.mark.parametrize("suffix, starts", [(".csv", "qid,pairs,"), (".json", "{"), (".txt", "A: ")])
def test_agree_writes_the_format_its_output_suffix_names(tmp_path, suffix, starts):
    """As compare does: agree.csv was the aligned table under a CSV name."""
    out = tmp_path / f"agree{suffix}"
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--output", str(out)]) == 0
    assert out.read_text().startswith(starts)


def test_an_agree_output_suffix_naming_no_format_is_an_error_before_any_work(tmp_path, capsys):
    out = tmp_path / "agree.pdf"
    assert main(["qrels", "agree", str(PTKB_NIST), str(PTKB_ORG), "--output", str(out)]) == 2
    assert ".pdf names no format this command writes (known: .table .csv .json .txt)" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.reference
def test_a_run_neither_qrels_judges_is_a_warning_naming_it_under_each_as_eval_gives(tmp_path, capsys):
    """A PTKB run a `runs/*.run` glob took beside the passage runs (`ikat to-trec --ptkb-out`):
    scored 0 under both qrels, it sits last in both orderings and inflates tau. rank-agree says
    so in eval's words, once per qrels (on the queries both judge); the passage runs draw none."""
    a, b = ikat_2024_pair()
    sample = shared_path("data/ikat/2024/scripts/run_validation/tests/data/sample_run.json")
    passages, ptkb, again = tmp_path / "s.run", tmp_path / "s.ptkb.run", tmp_path / "again.run"
    assert main(["ikat", "to-trec", str(sample), "--output", str(passages), "--ptkb-out", str(ptkb)]) == 0
    again.write_text(passages.read_text())
    capsys.readouterr()
    assert main(["qrels", "rank-agree", a, b, str(passages), str(again), str(ptkb), "--preset", "ikat2024"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    shared = set(judgments(a)) & set(judgments(b))
    shown = sum(line.split()[0] in shared and int(line.split()[3]) <= 10 for line in ptkb.read_text().splitlines())
    assert [line.partition(" (query ")[0] for line in said] == [
        f"warning: run 's.ptkb': only 0 of the {shown} documents in its top 10s are judged in {qrels}, so nearly every "
        "measure is 0; check that the run and the qrels use the same collection and document ids" for qrels in (a, b)]


def test_a_measure_under_which_every_run_ties_says_why_tau_is_na_not_moves(tmp_path, capsys):
    """B labels every retrieved passage relevant: under B every run's P@1 is 1, tau is n/a, and the
    'moves' were A's ordering alone (r2: 2 -> 1, r3: 2 -> 1), which no disagreement made."""
    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    a.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 0\n")
    b.write_text("q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 1\n")
    runs = []
    for name, top in (("r1", "d1"), ("r2", "d2"), ("r3", "d3")):
        runs.append(tmp_path / f"{name}.run")
        runs[-1].write_text(f"q1 Q0 {top} 1 1 {name}\n")
    assert main(["qrels", "rank-agree", str(a), str(b), *map(str, runs), "--measures", "P@1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split(None, 3) == ["P@1", "n/a", "n/a",
                                                                       "n/a: every run ties under B"]
    assert main(["qrels", "rank-agree", str(b), str(b), *map(str, runs), "--measures", "P@1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("n/a: every run ties under A and B")


@pytest.mark.reference
def test_qrels_sharing_no_judged_pair_are_a_warning_that_tau_measures_no_agreement_and_why(tmp_path, capsys):
    """`harness judge --qrels HUMAN` labels only the pairs HUMAN lacks: rank-agree of HUMAN and its
    qrels compares an ordering by people's labels with one by labels of other documents alone
    (README's recipe once printed tau -1.0000 so, without a word). Said as agree says it, with
    the reason where B's sidecar records it; a copy without the sidecar gets the warning alone."""
    a, pool = ikat_2024_pair()
    sample = shared_path("data/ikat/2024/scripts/run_validation/tests/data/sample_run.json")
    run, holes, copy = tmp_path / "s.run", tmp_path / "llm.qrels", tmp_path / "copy.qrels"
    assert main(["ikat", "to-trec", str(sample), "--output", str(run)]) == 0
    assert main(["judge", str(run), "--topics", "ikat2024", "--qrels", a, "--judge", "file", "--labels", pool,
                 "--depth", "10", "--output", str(holes)]) == 0
    copy.write_text(holes.read_text())
    lines = run.read_text().splitlines(keepends=True)
    other = tmp_path / "other.run"
    other.write_text("".join(line for line in lines if line.split()[3] != "1"))  # each turn's first passage gone
    capsys.readouterr()
    why = (f"; {holes} holds only the pairs {a} lacks (its sidecar says `harness judge` made it with --qrels {a}): "
           "to measure agreement, judge the pairs people judged, without --qrels")
    for b, reason in ((holes, why), (copy, "")):
        assert main(["qrels", "rank-agree", a, str(b), str(run), str(other), "--measures", "nDCG@10"]) == 0
        assert f"warning: {a} and {b} judge no (qid, docid) pair in common: the ordering under B reflects only B's " \
               "labels, of documents A does not judge, so tau and tau_AP do not measure how far the labels agree" \
               f"{reason}\n" in capsys.readouterr().err
        assert main(["qrels", "agree", a, str(b)]) == 0
        assert f"warning: {a} and {b} judge no (qid, docid) pair in common: every kappa is n/a{reason}\n" in \
            capsys.readouterr().err
    assert main(["qrels", "rank-agree", a, pool, str(run), str(other), "--measures", "nDCG@10"]) == 0
    assert "pair in common" not in capsys.readouterr().err  # the GPT-4 pool shares 8,103 pairs with NIST's


@pytest.mark.reference
def test_judged_queries_only_qrels_sharing_no_pair_are_warned_of_with_that_reason(tmp_path, capsys):
    """`harness judge --qrels A --judged-queries-only` labels A's own pairs too: when it still shares
    none with A, the runs' top k held none of the documents people judged, and the warning says so,
    not that judging without --qrels would help."""
    _, pool = ikat_2024_pair()
    sample = shared_path("data/ikat/2024/scripts/run_validation/tests/data/sample_run.json")
    run, a, out = tmp_path / "s.run", tmp_path / "a.qrels", tmp_path / "llm.qrels"
    assert main(["ikat", "to-trec", str(sample), "--output", str(run)]) == 0
    qid = run.read_text().split(None, 1)[0]
    a.write_text(f"{qid} 0 no-such-passage 1\n")  # A judges one document no run ranks
    assert main(["judge", str(run), "--topics", "ikat2024", "--qrels", str(a), "--judged-queries-only",
                 "--judge", "file", "--labels", pool, "--depth", "10", "--output", str(out)]) == 0
    capsys.readouterr()
    assert main(["qrels", "agree", str(a), str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{out} was judged with --judged-queries-only on the runs' top 10, none of which {a} judges" in err
    assert "without --qrels" not in err


@pytest.mark.reference
@pytest.mark.parametrize("form", ["table", "json"])
def test_agree_hashes_each_qrels_file_once_for_its_notes_and_header(tmp_path, capsys, monkeypatch, form):
    """The warning's reason and the header (or JSON provenance) both read the sidecars, which say whether
    their file changed: each file is read for its digest once."""
    _, pool = ikat_2024_pair()
    sample = shared_path("data/ikat/2024/scripts/run_validation/tests/data/sample_run.json")
    run, a, out = tmp_path / "s.run", tmp_path / "a.qrels", tmp_path / "llm.qrels"
    assert main(["ikat", "to-trec", str(sample), "--output", str(run)]) == 0
    a.write_text(f"{run.read_text().split(None, 1)[0]} 0 no-such-passage 1\n")
    assert main(["judge", str(run), "--topics", "ikat2024", "--qrels", str(a), "--judge", "file", "--labels", pool,
                 "--depth", "10", "--output", str(out)]) == 0
    base.sidecar(a).write_text(base.sidecar(out).read_text())  # A's too (said to be of another file)
    hashed: list[str] = []
    feed = paths.feed_file
    monkeypatch.setattr(paths, "feed_file", lambda digest, path: hashed.append(str(path)) or feed(digest, path))
    capsys.readouterr()
    assert main(["qrels", "agree", str(a), str(out), "--format", form]) == 0
    assert "pair in common" in capsys.readouterr().err
    assert sorted(hashed) == sorted([str(a), str(out)])


@pytest.mark.parametrize("given", [0, 1])
def test_rank_agree_with_fewer_than_two_runs_is_one_usage_error_for_none_and_one(tmp_path, capsys, given):
    """One run has no ordering, no run neither: the same words for both (none is found as the
    command line is read, with the --help tail argparse's errors have)."""
    a = tmp_path / "a.qrels"
    a.write_text("q1 0 d1 1\n")
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 1 r\n")
    argv = ["qrels", "rank-agree", str(a), str(a), *[str(run)] * given]
    if given:
        assert main(argv) == 2
    else:
        with pytest.raises(SystemExit, match="2"):
            main(argv)
    assert capsys.readouterr().err.startswith("harness qrels rank-agree: error: give at least 2 run files")
