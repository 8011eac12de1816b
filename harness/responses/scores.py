"""Scores of one response: nugget recall in nuggetizer's four variants, grade-weighted recall,
and citation support.

Nugget scores (castorini/nuggetizer, nuggetizer.core.metrics.calculate_nugget_scores; the
tests check equality with it): each nugget is assigned `support` (credit 1),
`partial_support` (0.5 in the non-strict scores, 0 in the strict ones) or `not_support` (0).
- `strict_vital` / `vital`: the mean credit over the turn's vital nuggets (0 when the turn
  has no vital nugget, as nuggetizer scores it);
- `strict_all` / `all`: the mean credit over all the turn's nuggets;
- `weighted`: recall weighted by the nuggets' grades, sum(grade x credit) / sum(grade), with
  partial support 0.5 (harness.responses.nuggets declares the grades). A turn whose nuggets
  all have grade 0 has none (NaN: undefined, left out of the mean, as trec_eval leaves out a
  query without relevant documents); nuggetizer has no weighted score, and no zero weight.

Citation support, as the TREC 2024 RAG Track's support evaluation defines it (Thakur et al.,
"Support Evaluation for the TREC 2024 RAG Track: Comparing Human versus LLM Judges", SIGIR
2025, arXiv:2504.15205: its weighted precision and weighted recall): every (answer sentence,
cited passage) pair is judged full support (1), partial support (0.5) or no support (0);
- `support_precision`: the mean of those weights over all the response's cited pairs (the
  share of citations that support their sentence); a response citing nothing has none (NaN);
- `support_recall`: over all the response's sentences, the mean of each sentence's best
  weight among its citations, a sentence citing nothing counting 0 (the share of sentences
  their citations support; "best" is our reading for a sentence with several citations).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from harness.responses.model import Nugget, Sentence

SUPPORT, PARTIAL, NOT = "support", "partial_support", "not_support"
CREDIT = {SUPPORT: 1.0, PARTIAL: 0.5, NOT: 0.0}
CITATION_SCORES = ("support_precision", "support_recall")


@dataclass(frozen=True)
class NuggetScores:
    """A response's five nugget scores, in the one order the per-turn rows and NUGGET_SCORES
    follow (TurnResult inherits them; the leaderboard's order is responses.evaluation.MEASURES)."""

    strict_vital: float
    strict_all: float
    vital: float
    all: float
    weighted: float


NUGGET_SCORES = tuple(score.name for score in fields(NuggetScores))


def _mean_credit(assigned: Sequence[str], strict: bool) -> float:
    if not assigned:
        return 0.0
    return sum(1.0 if a == SUPPORT else 0.5 if a == PARTIAL and not strict else 0.0 for a in assigned) / len(assigned)


def nugget_scores(nuggets: Sequence[Nugget], assigned: Sequence[str]) -> NuggetScores:
    """The five nugget scores of one response; `assigned[i]` is nuggets[i]'s assignment."""
    vital = [a for nugget, a in zip(nuggets, assigned, strict=True) if nugget.vital]
    total_grade = sum(n.grade for n in nuggets)
    weighted = (sum(n.grade * CREDIT[a] for n, a in zip(nuggets, assigned)) / total_grade) if total_grade else math.nan
    return NuggetScores(_mean_credit(vital, True), _mean_credit(assigned, True), _mean_credit(vital, False),
                        _mean_credit(assigned, False), weighted)


def mean(values: Iterable[float]) -> float:
    """A run's mean of per-turn scores as nuggetizer's calculate_global_metrics takes it
    (statistics.mean: the exact mean, rounded once); NaN (undefined) scores left out, NaN when
    none is left. A float sum, running or pairwise (numpy, pandas), differs from it in the last
    bit, and so in the 4th decimal at a mean such as 0.46875."""
    defined = [float(v) for v in values if not math.isnan(v)]
    return statistics.mean(defined) if defined else math.nan


SUPPORT_WEIGHT = {2: 1.0, 1: 0.5, 0: 0.0}  # full / partial / no support on the support-0-2 scale


def citation_scores(sentences: Sequence[Sentence], weights: Mapping[tuple[int, str], float]) -> tuple[float, float]:
    """(support precision, support recall); weights[(sentence index, passage id)] per cited pair."""
    pairs = [weights[index, pid] for index, sentence in enumerate(sentences) for pid in sentence.citations]
    precision = sum(pairs) / len(pairs) if pairs else math.nan
    best = [max((weights[index, pid] for pid in sentence.citations), default=0.0)
            for index, sentence in enumerate(sentences)]
    recall = sum(best) / len(best) if best else 0.0
    return precision, recall
