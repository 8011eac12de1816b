"""Agreement between two sets of labels, and between the system orderings they produce.

Labels (`harness qrels agree A B`), on the (qid, docid) pairs both judge:
- Cohen's kappa of the binary labels grade >= t, for each threshold t;
- weighted kappa on the grades, linear (|a - b|) and quadratic ((a - b)^2) weights taken from
  the grade values (they equal scikit-learn's index weights when the grades seen are
  consecutive integers, as on most TREC files, but not every query: CAsT 2021 106_6 has 0, 1, 2, 4);
- the confusion matrix of grades (rows A, columns B), the pairs in A only / B only / both,
  and every measure again per query.
A kappa whose chance agreement is perfect (e.g. every label the same on both sides) is
undefined: NaN, shown "n/a", as scikit-learn returns it.

Orderings (`harness qrels rank-agree`): Kendall's tau-b between the runs' scores under A and
under B, and tau_AP (Yilmaz, Aslam and Robertson, SIGIR 2008), which weighs a swap near the
top of the ordering more than one near the bottom. tau_AP is asymmetric: A's ordering is the
truth, B's the estimate; for each run i below the top of B's ordering, C(i) is the share of
the runs above it in B that A also puts above it, and tau_AP = 2 * mean(C(i)) - 1. Ties, which
the paper leaves out: "above in B" means a strictly higher B score (a run tied with the top is
skipped, like the paper's first run), and a run A scores equal to run i counts one half (neither
right nor wrong). Without ties this is exactly the paper's formula.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from harness.trec import Qrels

WEIGHTINGS = ("linear", "quadratic")


def kappa(confusion: Sequence[Sequence[int]], grades: Sequence[int], weights: str | None = None) -> float:
    """Cohen's kappa from a confusion matrix (rows A, columns B, both over `grades`): 1 minus
    weighted observed disagreement over weighted chance disagreement. Counts and weights are
    whole numbers, so it is one division of integers, rounded once: a kappa of exactly 0 is
    0.0 (summing chance disagreement in floats gave -2.2e-16, shown -0.0000)."""
    n = sum(map(sum, confusion))
    rows = [sum(row) for row in confusion]
    columns = [sum(column) for column in zip(*confusion)]

    def weight(i: int, j: int) -> int:
        if weights is None:
            return int(i != j)
        distance = abs(grades[i] - grades[j])
        return distance if weights == "linear" else distance ** 2

    size = len(grades)
    observed = sum(weight(i, j) * confusion[i][j] for i in range(size) for j in range(size))
    expected = sum(weight(i, j) * rows[i] * columns[j] for i in range(size) for j in range(size))  # n x chance's
    return (expected - n * observed) / expected if expected else math.nan


@dataclass
class PairAgreement:
    """Agreement on one set of shared pairs (all of them, or one query's)."""

    pairs: int
    grades: list[int]
    confusion: list[list[int]]  # rows A's grade, columns B's
    kappa: dict[int, float]  # threshold -> Cohen's kappa of grade >= threshold
    weighted: dict[str, float]  # "linear" / "quadratic" -> weighted kappa


def agreement(labels: Sequence[tuple[int, int]], thresholds: Sequence[int], grades: Sequence[int]) -> PairAgreement:
    """Kappas and confusion of (A grade, B grade) pairs over the grade list `grades`."""
    position = {grade: index for index, grade in enumerate(grades)}
    confusion = [[0] * len(grades) for _ in grades]
    for a, b in labels:
        confusion[position[a]][position[b]] += 1
    binary = {}
    for threshold in thresholds:
        table = [[0, 0], [0, 0]]
        for a, b in labels:
            table[a >= threshold][b >= threshold] += 1
        binary[threshold] = kappa(table, (0, 1))
    return PairAgreement(len(labels), list(grades), confusion, binary,
                         {name: kappa(confusion, grades, name) for name in WEIGHTINGS})


@dataclass
class Agreement:
    a_only: int
    b_only: int
    overall: PairAgreement
    per_query: dict[str, PairAgreement] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)  # "A", "B", "both" -> queries judged


THRESHOLDS = (1, 2)  # the grades binary kappa is taken at when none are given (`qrels agree --thresholds`)


def compare_labels(a: Qrels, b: Qrels, thresholds: Sequence[int] = THRESHOLDS) -> Agreement:
    """Agreement of two qrels on the pairs both judge (queries in the order A lists them)."""
    shared: dict[str, list[tuple[int, int]]] = {}
    a_only = b_only = 0
    for qid, docs in a.judgments.items():
        other = b.judgments.get(qid, {})
        labels = [(grade, other[docid]) for docid, grade in docs.items() if docid in other]
        a_only += len(docs) - len(labels)
        b_only += len(other) - len(labels)
        if labels:
            shared[qid] = labels
    b_only += sum(len(docs) for qid, docs in b.judgments.items() if qid not in a.judgments)
    everything = [pair for labels in shared.values() for pair in labels]
    seen = {grade for pair in everything for grade in pair}
    grades = sorted(seen)  # those given, not every one between: grades 0 and 100000 made 100001 rows
    return Agreement(
        a_only, b_only, agreement(everything, thresholds, grades),
        {qid: agreement(labels, thresholds, grades) for qid, labels in shared.items()},
        {"A": len(a.judgments), "B": len(b.judgments), "both": len(set(a.judgments) & set(b.judgments))},
    )


# -- system orderings -------------------------------------------------------------------


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties in either list corrected for), over paired values."""
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def tau_ap(truth: Sequence[float], estimate: Sequence[float]) -> float:
    """AP correlation of the estimated ordering against the true one (scores, higher first;
    ties as the module docstring says). The shares are fractions, added exactly and rounded
    once: a tau_AP of exactly 0 is 0.0 (a float sum gave -1.1e-16, shown -0.0000)."""
    shares = []
    for i in range(len(truth)):
        above = [j for j in range(len(truth)) if estimate[j] > estimate[i]]
        if above:
            halves = sum(2 if truth[j] > truth[i] else 1 if truth[j] == truth[i] else 0 for j in above)
            shares.append(Fraction(halves, 2 * len(above)))
    return float(2 * sum(shares) / len(shares) - 1) if shares else math.nan


def ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1 for the best score; tied runs share the best rank of their group."""
    ordered = sorted(scores.values(), reverse=True)
    return {run: ordered.index(score) + 1 for run, score in scores.items()}


@dataclass
class RankingAgreement:
    measure: str
    runs: int
    tau: float
    tau_ap: float
    moves: list[tuple[str, int, int]]  # (run, rank under A, rank under B), largest move first


def compare_orderings(measure: str, under_a: Mapping[str, float], under_b: Mapping[str, float]) -> RankingAgreement:
    names = list(under_a)
    a = [under_a[name] for name in names]
    b = [under_b[name] for name in names]
    rank_a, rank_b = ranks(under_a), ranks(under_b)
    moves = sorted(((name, rank_a[name], rank_b[name]) for name in names),
                   key=lambda move: (-abs(move[2] - move[1]), move[1], move[0]))
    return RankingAgreement(measure, len(names), kendall_tau(a, b), tau_ap(a, b), moves)
