"""Leaderboard of runs: per-measure means with intervals, paired tests against baselines.

Runs are compared on the same queries: the union of the queries their evaluations list
(the evaluator lists every qrels query, so this is the qrels' query set); a query missing
from a run's evaluation scores 0, as trec_eval -c scores it. A query whose score on a measure
is undefined (NaN: a response turn whose nuggets all weigh 0) is left out of that measure's
means and tests, and a measure undefined on every query is not shown; the legend says over
how many queries each measure is averaged. Every (run, baseline, measure)
comparison is one member of a single family, and the correction is applied over all of
them at once. A breakdown's groups are tested alike, each on its own queries, and the
comparisons of all its groups are one family of their own (`score_family`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from harness.errors import ARGUMENTS, FLAGS, HarnessError, Spelling, counted, nearest
from harness.report import stats
from harness.report.stats import Resampling
from harness.trec import refuse_shared_names

BASELINE_LETTERS = "abcdefghijklmnopqrstuvwxyz"
RESAMPLED = ("permutation", "bootstrap")  # the tests that take --resamples and --seed


class EvaluationLike(Protocol):
    """What the leaderboard reads from `harness.evaluate.Evaluation` (and its `counts`, the
    measures summed over the queries, where it has them)."""

    run_name: str
    measures: list[str]
    per_query: dict[str, dict[str, float]]


@dataclass(frozen=True)
class RunScores:
    """A run's per-query scores, for a leaderboard of what `harness.evaluate` does not score:
    the hosted board's stored submissions, the responses' nugget scores (an EvaluationLike)."""

    run_name: str
    measures: list[str]
    per_query: dict[str, dict[str, float]]  # measure -> query -> score


@dataclass(frozen=True)
class Scores:
    """Per-query scores of several runs on one aligned query list."""

    runs: list[str]
    measures: list[str]
    qids: list[str]
    values: dict[str, dict[str, np.ndarray]]  # measure -> run -> scores in `qids` order
    counts: tuple[str, ...] = ()  # measures trec_eval sums over the queries (NumRet...), not averages

    def per_query(self, measure: str, run: str) -> dict[str, float]:
        return dict(zip(self.qids, self.values[measure][run].tolist()))

    def among(self, indices: Sequence[int]) -> Scores:
        """The scores of the queries at `indices` alone (a group's, which its board tests)."""
        values = {m: {run: scores[indices] for run, scores in by_run.items()} for m, by_run in self.values.items()}
        return Scores(self.runs, self.measures, [self.qids[i] for i in indices], values, self.counts)

    def defined(self, measure: str) -> np.ndarray:
        """Where every run's score on `measure` is a number: a NaN is an undefined score (a
        response turn whose nuggets all weigh 0), left out of that measure for every run."""
        return ~np.any([np.isnan(self.values[measure][run]) for run in self.runs], axis=0)


def align(evaluations: Sequence[EvaluationLike]) -> Scores:
    """Put the runs' per-query scores side by side; a query a run lacks scores 0, unless no
    run has a score for it on that measure: then it is undefined there (NaN, Scores.defined)."""
    if not evaluations:
        raise HarnessError("no runs to compare")
    runs = [evaluation.run_name for evaluation in evaluations]
    refuse_shared_names(runs)
    measures = list(evaluations[0].measures)
    for evaluation in evaluations[1:]:
        if list(evaluation.measures) != measures:
            raise HarnessError(
                f"run {evaluation.run_name} was scored with {evaluation.measures}, expected {measures}"
            )
    qids = sorted({qid for e in evaluations for m in measures for qid in e.per_query.get(m, {})})
    scored = {m: {qid for e in evaluations for qid in e.per_query.get(m, {})} for m in measures}
    values = {
        measure: {
            e.run_name: np.array([e.per_query.get(measure, {}).get(qid, 0.0 if qid in scored[measure] else np.nan)
                                  for qid in qids], dtype=float)
            for e in evaluations
        }
        for measure in measures
    }
    counts = tuple(m for m in measures if m in getattr(evaluations[0], "counts", ()))
    return Scores(runs, measures, qids, values, counts)


@dataclass(frozen=True)
class Summary:
    run: str
    measure: str
    mean: float  # the run's value: the mean over the queries, or a count's sum (Scores.counts)
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Comparison:
    """One member of the test family: `run` against `baseline` on `measure`."""

    run: str
    baseline: str
    measure: str
    difference: float  # mean(run - baseline); for a count, sum(run - baseline)
    ci_low: float  # t-interval of the mean difference; nan (n/a) on fewer than two queries
    ci_high: float
    effect_size: float  # Cohen's d for paired samples; nan where undefined (stats.cohens_d_paired)
    p_value: float  # nan on fewer than two queries: no test, outside the corrected family
    p_adjusted: float  # nan where p_value is
    wins: int
    ties: int
    losses: int

    @property
    def tested(self) -> bool:
        """Whether a test was run (two or more queries): every board's 'untested' asks this one question."""
        return not math.isnan(self.p_value)


@dataclass
class Leaderboard:
    scores: Scores
    baselines: list[str]
    test: str
    correction: str
    alpha: float
    confidence: float
    resampling: Resampling
    summaries: dict[tuple[str, str], Summary] = field(default_factory=dict)  # (run, measure)
    comparisons: list[Comparison] = field(default_factory=list)
    undefined: list[str] = field(default_factory=list)  # measures undefined on every query: not in `scores`
    unit: tuple[str, str] = ("query", "queries")  # what is compared, as the legend names it: a response turn, ...
    mean: Callable[[np.ndarray], float] = stats.running_mean  # a run's mean of a measure (`leaderboard`'s `mean`)
    # the family the correction acted on: its tested comparisons (this board's, or every group's: score_family)
    # and what it spans, as the legend says them
    family: int = 0
    span: str = "runs x baselines x measures"

    def queries(self, measure: str) -> int:
        """How many queries the measure's means, intervals, tests and breakdowns are over."""
        return int(self.scores.defined(measure).sum())

    def queries_note(self) -> str:
        """The number of queries compared, and each measure averaged over fewer (undefined on
        some: Scores.defined) or over none, so that no page states a count a mean is not over."""
        total = len(self.scores.qids)
        fewer = [f"{m} on {n} of them, undefined on {total - n}"
                 for m in self.measures if (n := self.queries(m)) < total]
        fewer += [f"{m} undefined on every {self.unit[0]}" for m in self.undefined]
        return counted(total, *self.unit) + (f" ({'; '.join(fewer)})" if fewer else "")

    @property
    def measures(self) -> list[str]:
        return self.scores.measures

    @property
    def ranked_runs(self) -> list[str]:
        """Runs by their mean on the first measure, best first (input order breaks ties)."""
        first = self.measures[0]
        return sorted(self.scores.runs, key=lambda run: -self.summaries[run, first].mean)

    def ranks(self) -> dict[str, int]:
        """Each run's rank, in `ranked_runs` order: equal means on the first measure share a rank and the
        next run's is its place after them (1, 1, 3), so that input order, which breaks the tie in
        `ranked_runs`, ranks no run above its equal. Equal as floats, not as printed (0.35424 ranks above
        0.35421, both 0.3542): the order the means sort in. The hosted board's and every report's ranks."""
        first, ranks = self.measures[0], {}
        rank, above = 0, None
        for place, run in enumerate(self.ranked_runs, start=1):
            mean = self.summaries[run, first].mean
            if mean != above:
                rank, above = place, mean
            ranks[run] = rank
        return ranks

    def letter(self, baseline: str) -> str:
        return BASELINE_LETTERS[self.baselines.index(baseline)]

    def comparisons_of(self, run: str, measure: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.run == run and c.measure == measure]

    def significant(self, comparison: Comparison) -> bool:
        return comparison.p_adjusted < self.alpha  # False for nan: an untested comparison

    @property
    def tested(self) -> list[Comparison]:
        """The family the correction acts on: comparisons over two or more queries."""
        return [c for c in self.comparisons if c.tested]

    def untestable_note(self) -> str:
        """The measures compared on fewer than two queries, whose comparisons have no test, Cohen's
        d or interval (n/a): one query has no spread to test a difference against."""
        measures = sorted({c.measure for c in self.comparisons} - {c.measure for c in self.tested},
                          key=self.measures.index)
        if not measures:
            return ""
        # a measure defined on no query is left out (undefined): these are defined on exactly one
        which = "" if len(measures) == len(self.measures) else f" of {', '.join(measures)}"
        return (f"one {self.unit[0]} cannot be tested (no spread to test a difference against): the p-values, "
                f"Cohen's d and intervals{which} are n/a.")

    def marks(self, run: str, measure: str) -> str:
        """'▲a' = significantly above baseline a, '▼a' = significantly below it."""
        return "".join(
            ("▲" if c.difference > 0 else "▼") + self.letter(c.baseline)
            for c in self.comparisons_of(run, measure)
            if self.significant(c)
        )

    def rows(self) -> list[dict]:
        """Per run and measure: the mean and its interval, and against each baseline the
        difference, corrected p-value and whether it is significant (the API's DataFrame rows)."""
        rows = []
        for run in self.scores.runs:
            for measure in self.measures:
                summary = self.summaries[run, measure]
                row = {"run": run, "measure": measure, "mean": summary.mean, "ci_low": summary.ci_low,
                       "ci_high": summary.ci_high}
                for c in self.comparisons_of(run, measure):
                    row.update({f"vs {c.baseline}": c.difference, f"p vs {c.baseline}": c.p_adjusted,
                                f"significant vs {c.baseline}": self.significant(c)})
                rows.append(row)
        return rows

    def warnings(self, spelling: Spelling = FLAGS) -> list[str]:
        """What the commands (and the Python API, by warnings.warn) warn of: comparisons on one query
        (no test), and resamples too few for any comparison to be significant (stats.least_p), the
        resamples advised as the caller sets them (--resamples N, resamples=N)."""
        untestable = self.untestable_note()
        found = [untestable] if untestable else []
        family = self.family
        if self.test in RESAMPLED and self.tested:
            resamples = self.resampling.resamples
            pairs = max(self.queries(measure) for measure in {c.measure for c in self.tested})  # the lowest floor
            smallest = self._smallest_corrected(resamples, pairs, family)
            if smallest >= self.alpha:
                exact = self.test == "permutation" and resamples >= 2**pairs  # its floor stays 2/2**pairs
                floor = "/".join(map(str, stats.least_p_fraction(self.test, resamples, pairs)))
                found.append(
                    f"{counted(resamples, 'resample')}: the {self.test} test's p-values are at least {floor}"
                    + (f" (exact on {counted(pairs, *self.unit)}: all {2**pairs} sign flips)" if exact else "")
                    + f", which {self.correction}-corrected over {counted(family, 'comparison')} is {smallest:.4g}, "
                    f"not below alpha {self.alpha}: no comparison can be significant; "
                    + self._resamples_advice(pairs, family, spelling, exact))
        return found

    def warn(self, stacklevel: int = 2) -> None:
        """The warnings as the Python API gives them (warnings.warn), what the commands print; `stacklevel`
        as the caller's own warnings.warn would take it, to name its caller's line."""
        for warning in self.warnings(ARGUMENTS):
            warnings.warn(warning, stacklevel=stacklevel + 1)

    def _smallest_corrected(self, resamples: int, pairs: int, family: int) -> float:
        """The family's smallest p as corrected where one comparison is at the test's floor, on
        `pairs` queries (holm, bonferroni: x the family's size, capped at 1; none: x 1)."""
        floor = stats.least_p(self.test, resamples, pairs)
        return stats.CORRECTIONS.get(self.correction)([floor, *[1.0] * (family - 1)])[0]

    def _resamples_advice(self, pairs: int, family: int, spelling: Spelling, exact: bool) -> str:
        """The fewest resamples whose floor, corrected, is below alpha (counted from the floor: the
        corrected p, capped at 1, understated them); none where the exact permutation test's
        floor, 2/2**pairs, is not, as no more resamples lower it (said short where the test was
        `exact`: the warning has said that floor)."""
        if self.test == "permutation" and self._smallest_corrected(2**pairs, pairs, family) >= self.alpha:
            if exact:
                return f"no number of resamples can help: too few {self.unit[1]}"
            return (f"no number of resamples can help: on {counted(pairs, *self.unit)} the exact permutation test's "
                    f"p-values are at least 2/{2**pairs} (too few {self.unit[1]})")
        # the smallest p falls as the resamples grow: the fewest whose p is below alpha, between the resamples
        # given (too few) and Bonferroni's bound, family x 2 / alpha (the permutation test's floor: 2/(R + 1))
        low, high = self.resampling.resamples, math.ceil(2 * family / self.alpha)
        while high - low > 1:
            middle = (low + high) // 2
            if self._smallest_corrected(middle, pairs, family) < self.alpha:
                high = middle
            else:
                low = middle
        return f"give {spelling.given('resamples', high)} or more"

    def legend(self) -> str:
        if not self.comparisons:
            return f"A single run: no paired tests. Intervals: {self.single_intervals_note()}. {self.missing_note()}"
        return f"{self.marks_note()}; {self.test_note()} {self.statistics_note()} {self.missing_note()}"

    def marks_note(self) -> str:
        baselines = ", ".join(f"{self.letter(b)} = {b}" for b in self.baselines)
        return f"▲x / ▼x: significantly higher / lower than baseline x ({baselines})"

    def statistics_note(self) -> str:
        return (f"Intervals: {self.confidence:.0%} t-intervals. Effect size: Cohen's d (paired; n/a where "
                f"every {self.unit[0]} differs by the same amount).")

    def single_intervals_note(self) -> str:
        """A single run's intervals: n/a on a measure defined on one query (no spread), as a
        comparison's legend says of its own, not t-intervals on a query that has none."""
        single = [m for m in self.measures if self.queries(m) < 2]
        why = f"one {self.unit[0]} has no spread to form an interval"
        if single and len(single) == len(self.measures):
            return f"n/a on {self.queries_note()} ({why})"
        intervals = f"{self.confidence:.0%} t-intervals on {self.queries_note()}"
        return intervals + (f"; n/a for {', '.join(single)} ({why})" if single else "")

    def missing_note(self) -> str:
        return f"A {self.unit[0]} missing from a run scores 0."

    def test_note(self) -> str:
        """The test, its family and level, for a page that shows p-values without the marks (a board
        with one run: that it has no other run to be tested against)."""
        if not self.comparisons:
            return f"no {self.test} test on {self.queries_note()}: a single run, with no other run to test it against."
        untestable = self.untestable_note()
        if not self.tested:
            return f"no {self.test} test on {self.queries_note()}: {untestable}"
        return (f"{self.test_words()} on {self.queries_note()}, {self.family_note()}"
                + (f" {untestable}" if untestable else ""))

    def test_words(self) -> str:
        """The test as the legends name it: 'two-sided permutation test with 500 resamples (seed 3)'."""
        resampled = (
            f" with {self.resampling.resamples} resamples (seed {self.resampling.seed})"
            if self.test in RESAMPLED
            else ""
        )
        return f"two-sided {self.test} test{resampled}"

    def family_note(self) -> str:
        return (f"p-values {self.correction}-corrected over the family of {counted(self.family, 'comparison')} "
                f"({self.span}), alpha = {self.alpha}.")


def comparison_pairs(runs: Sequence[str], baselines: Sequence[str]) -> list[tuple[str, str]]:
    """(run, baseline) pairs; two baselines are compared once, the later against the earlier."""
    pairs = []
    for b_index, baseline in enumerate(baselines):
        for run in runs:
            if run == baseline or (run in baselines and baselines.index(run) < b_index):
                continue
            pairs.append((run, baseline))
    return pairs


def check_baselines(baselines: Sequence[str], runs: Sequence[str]) -> None:
    """A baseline that is none of the runs is an error naming the nearest run's name: from the
    leaderboard, and from the commands before their work (`responses eval`'s judging)."""
    unknown = [b for b in baselines if b not in runs]
    if unknown:
        raise HarnessError(f"baseline {unknown[0]!r} is not among the runs ({', '.join(runs)})"
                           + nearest(unknown[0], runs))


def leaderboard(
    evaluations: Sequence[EvaluationLike],
    baselines: Sequence[str] | None = None,
    *,
    test: str = "paired-t",
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    resampling: Resampling = Resampling(),
    unit: tuple[str, str] = ("query", "queries"),
    mean: Callable[[np.ndarray], float] = stats.running_mean,
) -> Leaderboard:
    """Summaries and the corrected test family. Baselines default to the first run given;
    `unit` names what the runs answer (singular, plural), as the legend says it; `mean` takes
    a run's mean of a measure (responses: nuggetizer's exact mean)."""
    scores = align(evaluations)
    # a baseline named twice (by name and by path) is one baseline: not a second set of tests in the family
    baselines = list(dict.fromkeys(baselines)) if baselines else [scores.runs[0]]
    check_baselines(baselines, scores.runs)
    if len(baselines) > len(BASELINE_LETTERS):
        raise HarnessError(f"at most {len(BASELINE_LETTERS)} baselines")
    undefined = [measure for measure in scores.measures if not scores.defined(measure).any()]
    if scores.measures[0] in undefined:
        raise HarnessError(f"{scores.measures[0]} is undefined on every query: the runs cannot be ranked by it")
    if undefined:  # no mean to show or test: left out, and the legend says so (queries_note)
        kept = [measure for measure in scores.measures if measure not in undefined]
        scores = Scores(scores.runs, kept, scores.qids, {measure: scores.values[measure] for measure in kept},
                        scores.counts)
    board = Leaderboard(scores, baselines, test, correction, alpha, confidence, resampling, undefined=undefined,
                        unit=unit, mean=mean)
    score_family([board])
    return board


def group_boards(board: Leaderboard, members: Mapping[Hashable, Sequence[int]]) -> dict[Hashable, Leaderboard]:
    """`board`'s runs, baselines and test within each group of its queries (`members`: group -> the indices
    of its queries in board.scores), a board per group: its comparisons, across every group, are one family
    corrected at once (groups x runs x baselines x measures), as the board's own are, so that k groups are
    not k tries at alpha; a group of one query has no test (n/a), as the board's one-query measures. A count's
    (NumRet...) difference and interval are per query there, as the group's table gives its means, not sums."""
    boards = {group: replace(board, scores=replace(board.scores.among(indices), counts=()), summaries={},
                             comparisons=[])
              for group, indices in members.items()}
    score_family(list(boards.values()), "groups x runs x baselines x measures")
    return boards


def group_legend(boards: Mapping[Hashable, Leaderboard], name: str) -> str:
    """What group_boards tested, once for all the groups of breakdown `name`; the groups untested named."""
    first = next(iter(boards.values()))
    untested = [str(group) for group, board in boards.items() if len(board.tested) < len(board.comparisons)]
    if not first.family:
        return (f"Within each {name}: no {first.test} test: every {name} holds one {first.unit[0]}, which has "
                "no spread to test a difference against.")
    return (f"Within each {name}, on its {first.unit[1]} alone: {first.marks_note()}; {first.test_words()}, "
            f"{first.family_note()}"
            + (f" A group of one {first.unit[0]} cannot be tested (no spread to test a difference against): its "
               f"p-values, Cohen's d and intervals are n/a ({name} {', '.join(untested)})." if untested else "")
            + f" {first.statistics_note()}")


def score_family(boards: Sequence[Leaderboard], span: str = "runs x baselines x measures") -> None:
    """Each board's summaries and comparisons on its own queries, with the first board's test and
    settings; the tested comparisons of all the boards are one family, which `span` names,
    corrected at once."""
    test_fn = stats.TESTS.get(boards[0].test)
    correct = stats.CORRECTIONS.get(boards[0].correction)
    raw = [(board, item) for board in boards for item in _summarised(board, test_fn)]
    corrected = iter(correct([item[7] for _, item in raw if not math.isnan(item[7])]))
    adjusted = [math.nan if math.isnan(item[7]) else next(corrected) for _, item in raw]
    family = len(adjusted) - sum(map(math.isnan, adjusted))
    for board in boards:
        board.family, board.span = family, span
    for (board, (run, baseline, measure, diff, low, high, d, p, wtl)), p_adj in zip(raw, adjusted):
        board.comparisons.append(Comparison(run, baseline, measure, diff, low, high, d, p, p_adj, *wtl))


def _summarised(board: Leaderboard, test_fn: stats.PairedTest) -> list[tuple]:
    """Fill the board's summaries; its comparisons' fields, uncorrected, in the family's order."""
    scores, confidence, resampling = board.scores, board.confidence, board.resampling
    defined = {measure: scores.defined(measure) for measure in scores.measures}
    # a count's value is its sum over the queries, as trec_eval's `all` line gives it: its
    # interval and differences are scaled by the queries alike (tests and effect sizes unchanged)
    scale = {measure: int(defined[measure].sum()) if measure in scores.counts else 1 for measure in scores.measures}
    for measure in scores.measures:
        for run in scores.runs:
            values = scores.values[measure][run][defined[measure]]
            low, high = stats.mean_ci(values, confidence)
            value = float(values.sum()) if scale[measure] != 1 else float(board.mean(values))
            board.summaries[run, measure] = Summary(run, measure, value, low * scale[measure], high * scale[measure])

    raw = []
    for measure in scores.measures:
        for run, baseline in comparison_pairs(scores.runs, board.baselines):
            a, b = scores.values[measure][run][defined[measure]], scores.values[measure][baseline][defined[measure]]
            # one query: no spread to test against, no interval (it was a zero-width one) and no d (it was inf)
            testable = len(a) >= 2
            low, high = stats.mean_ci(a - b, confidence) if testable else (math.nan, math.nan)
            n = scale[measure]
            raw.append(
                (run, baseline, measure, float((a - b).sum() if n != 1 else (a - b).mean()), low * n, high * n,
                 stats.cohens_d_paired(a, b), test_fn(a, b, resampling) if testable else math.nan,
                 stats.win_tie_loss(a, b))
            )
    return raw
