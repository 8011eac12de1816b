"""Judged@k is ir-measures' own Judged@k (trec_eval has no such measure), per query and on
`all`: for each judged query the run ranks, the share of its first min(k, ranked) documents
the qrels list, whatever the grade; 0 for a judged query the run lacks; the mean over every
judged query.

The reference is ir-measures' judged provider, given each ranking in the order the harness
scores every measure in (trec_eval's: score descending, ties by docid descending) with
strictly decreasing scores, and cut to the same depth: its own tie rule (docid ascending) is
the one thing the harness does not take from it. Inputs: the real qrels of CAsT 2019-2022 and
iKAT 2023/2024 with the CAsT 2021 organiser runs (document and passage runs), the iKAT 2024
sample submission and seeded random runs full of edges; trec_eval's own test files; small
cases, one per rule; and a seeded fuzz of small random qrels and runs.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import ir_measures
import pytest

from harness.cli import main
from harness.evaluate import Evaluator, RunFileOptions, evaluate, evaluate_file
from harness.trec import Qrels, Run, read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS, CAST2021_QRELS, data_root, reference_dir
from tests.test_trec_eval_differential import QRELS, seeded_inputs

CUTOFFS = (1, 3, 10, 100)
JUDGED = [f"Judged@{k}" for k in CUTOFFS]


def in_harness_order(run: dict[str, dict[str, float]], depth: int | None) -> list[ir_measures.ScoredDoc]:
    """Each ranking in trec_eval's order, cut to `depth`, scored n, n-1, ..., 1 (no tie left)."""
    docs = []
    for qid, scores in run.items():
        ranked = sorted(sorted(scores.items(), reverse=True), key=lambda item: -item[1])[:depth]
        docs += [ir_measures.ScoredDoc(qid, docid, float(len(ranked) - i)) for i, (docid, _) in enumerate(ranked)]
    return docs


def read_plain_run(path: Path) -> dict[str, dict[str, float]]:
    """A run file's first five fields (trec_eval's test files have more: ir-measures' reader
    refuses them), a repeated document keeping its highest score."""
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        qid, _, docid, _, score = line.split()[:5]
        run[qid][docid] = max(float(score), run[qid].get(docid, float("-inf")))
    return run


def theirs(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], depth: int | None = None,
           cutoffs=CUTOFFS) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """ir-measures' Judged@k per query and mean: ({name: {qid: value}}, {name: mean})."""
    measures = {f"Judged@{k}": ir_measures.Judged @ k for k in cutoffs}
    listed = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    result = ir_measures.judged.evaluator(list(measures.values()), listed).calc(in_harness_order(run, depth))
    per_query: dict[str, dict[str, float]] = {name: {} for name in measures}
    names = {measure: name for name, measure in measures.items()}
    for metric in result.per_query:
        per_query[names[metric.measure]][metric.query_id] = metric.value
    return per_query, {name: result.aggregated[measure] for name, measure in measures.items()}


def assert_equal(ours, qrels, run, depth=None, cutoffs=CUTOFFS) -> None:
    """Every query's value the same float as ir-measures'; the means equal but for the order of the sum."""
    per_query, means = theirs(qrels, run, depth, cutoffs)
    for name in per_query:
        assert ours.per_query[name] == per_query[name], name
        assert ours.means[name] == pytest.approx(means[name], rel=1e-12, abs=1e-15), name


@pytest.mark.slow
def test_judged_at_k_equals_ir_measures_on_the_cast2021_organiser_runs():
    """Document runs (mostly judged) and passage runs against document qrels (nothing judged:
    0, where 1 - unj@k would read the empty ranks of nothing as judged), read as `harness eval`
    reads a file, at depth none and 5 (shorter than most k)."""
    qrels = read_qrels(CAST2021_QRELS)
    evaluator = Evaluator(qrels, JUDGED, announce=False)
    for path in CAST2021_DOC_RUNS + CAST2021_PASSAGE_RUNS:
        for depth in (None, 5):
            ours = evaluate_file(evaluator, path, RunFileOptions(depth=depth))
            assert_equal(ours, qrels.judgments, read_plain_run(path), depth)
    assert ours.means["Judged@10"] == 0.0  # the last passage run: none of its passage ids is a judged document


def test_judged_at_k_equals_ir_measures_on_the_ikat2024_sample_submission(tmp_path, capsys):
    """The iKAT 2024 sample run (218 turns; NIST judged 116, the others ignored) and its PTKB
    run, none of whose ids the passage qrels judge: 0, where 1 - unj@10 gave 0.7302."""
    sample = data_root() / "ikat" / "2024" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
    if not sample.exists():
        pytest.skip(f"no {sample}")
    run, ptkb = tmp_path / "s.run", tmp_path / "s.ptkb.run"
    assert main(["ikat", "to-trec", str(sample), "--output", str(run), "--ptkb-out", str(ptkb)]) == 0
    capsys.readouterr()
    qrels = read_qrels(QRELS["ikat2024"])
    evaluator = Evaluator(qrels, JUDGED, announce=False)
    for path in (run, ptkb):
        ours = evaluate_file(evaluator, path, RunFileOptions())
        assert_equal(ours, qrels.judgments, read_plain_run(path))
    assert ours.means["Judged@10"] == 0.0


def test_judged_at_k_equals_ir_measures_on_real_qrels_and_random_runs(tmp_path):
    """20 real queries of each CAsT/iKAT qrels (1 judgment in 12 graded -1) and a run with tied
    scores, duplicates, empty and short rankings, judged queries missing and unjudged ones
    answered, at depth none and 25."""
    for seed, name in enumerate(QRELS):
        _, qrels, full, _ = seeded_inputs(name, seed, tmp_path / name)
        assert any(grade < 0 for docs in qrels.judgments.values() for grade in docs.values())
        evaluator = Evaluator(qrels, JUDGED, announce=False)
        for depth in (None, 25):
            ours = evaluate_file(evaluator, full, RunFileOptions(depth=depth))
            assert ours.missing_queries and ours.unjudged_queries
            assert_equal(ours, qrels.judgments, read_plain_run(full), depth)


@pytest.mark.reference
@pytest.mark.parametrize("files", [("qrels.test", "results.test"), ("qrels.test", "results.trunc"),
                                   ("qrels.rel_level", "results.test")])
def test_judged_at_k_equals_ir_measures_on_trec_evals_test_files(files):
    folder = reference_dir("trec_eval", "test")
    qrels = read_qrels(folder / files[0])
    ours = Evaluator(qrels, JUDGED, announce=False)(read_run(folder / files[1]))
    assert_equal(ours, qrels.judgments, read_plain_run(folder / files[1]))


# One case per rule: (qrels, run, depth, {qid: Judged@5})
Q = {"q1": {"a": 2, "b": 0, "c": -1, "d": 1}, "q2": {"a": 1}, "q3": {"x": 0}}
CASES = {
    "over the k documents of a ranking at least k long": (
        Q, {"q1": {"a": 9, "b": 8, "u1": 7, "u2": 6, "u3": 5, "d": 4}, "q2": {"a": 1}, "q3": {"x": 1}}, None,
        {"q1": 2 / 5, "q2": 1.0, "q3": 1.0}),
    "a short ranking over its own length, not k": (
        Q, {"q1": {"a": 3, "u1": 2, "b": 1}, "q2": {"a": 1}, "q3": {"x": 1}}, None,
        {"q1": 2 / 3, "q2": 1.0, "q3": 1.0}),
    "a query the run lacks counts 0": (Q, {"q1": {"a": 1}}, None, {"q1": 1.0, "q2": 0.0, "q3": 0.0}),
    "a negative grade is a judgment": (
        Q, {"q1": {"c": 2, "u1": 1}, "q2": {"a": 1}, "q3": {"x": 1}}, None, {"q1": 1 / 2, "q2": 1.0, "q3": 1.0}),
    "a run none of whose documents is judged reads 0": (
        Q, {"q1": {"u1": 2, "u2": 1}, "q2": {"u3": 1}}, None, {"q1": 0.0, "q2": 0.0, "q3": 0.0}),
    "a query the qrels lack is ignored": (
        Q, {"q2": {"a": 1}, "zz": {"u1": 1}}, None, {"q1": 0.0, "q2": 1.0, "q3": 0.0}),
    "a depth under k: over the documents kept": (
        Q, {"q1": {"u1": 9, "a": 8, "b": 7, "d": 6}, "q2": {"a": 1}, "q3": {"x": 1}}, 2,
        {"q1": 1 / 2, "q2": 1.0, "q3": 1.0}),
    "tied scores in trec_eval's order (docid descending)": (
        Q, {"q1": {"a": 1, "u9": 1}, "q2": {"a": 1}, "q3": {"x": 1}}, 1, {"q1": 0.0, "q2": 1.0, "q3": 1.0}),
}


@pytest.mark.parametrize("case", CASES)
def test_judged_at_k_rule(case):
    qrels, run, depth, expected = CASES[case]
    ours = evaluate(Qrels("q", qrels), Run("r", run), ["Judged@5"], depth=depth)
    assert ours.per_query["Judged@5"] == expected
    assert ours.means["Judged@5"] == pytest.approx(sum(expected.values()) / len(expected))
    assert_equal(ours, qrels, run, depth, cutoffs=(5,))


def test_judged_at_k_equals_ir_measures_on_a_seeded_fuzz_of_small_runs():
    """400 small qrels and runs: grades -2 to 3, rankings of 0 to 12 documents (half of them
    with tied scores), queries on one side only, k from 1 to 15, depth none or 1 to 8."""
    rng = random.Random(17)
    for _ in range(400):
        docs = [f"d{i}" for i in range(12)]
        qrels = {}
        for qid in rng.sample([f"q{i}" for i in range(6)], rng.randint(1, 6)):
            judged = rng.sample(docs, rng.randint(1, 8))
            grades = {doc: rng.randint(-2, 3) for doc in judged}
            grades[judged[0]] = rng.randint(0, 3)  # a query graded only below 0 is refused (trec_eval crashes)
            qrels[qid] = grades
        run = {}
        for qid in rng.sample([f"q{i}" for i in range(7)], rng.randint(1, 7)):
            ranked = rng.sample(docs + [f"u{i}" for i in range(8)], rng.randint(1, 12))
            tied = rng.random() < 0.5
            run[qid] = {doc: float(rng.randint(0, 3) if tied else rng.random()) for doc in ranked}
        cutoffs, depth = tuple(rng.sample(range(1, 16), 3)), rng.choice([None, rng.randint(1, 8)])
        ours = evaluate(Qrels("q", qrels), Run("r", run), [f"Judged@{k}" for k in cutoffs], depth=depth)
        assert_equal(ours, qrels, run, depth, cutoffs)
