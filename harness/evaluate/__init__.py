"""Scoring runs against qrels with ir-measures, under trec_eval's conventions.

ir-measures computes the per-query values (through pytrec_eval, i.e. trec_eval's own C
code, for most families; see `harness.evaluate.measures` for the accepted ones). What
ir-measures leaves to the caller, this module pins down so that every value equals
`trec_eval -q -c -M<depth>`:

- order: every ranking is put into trec_eval's canonical order (score descending, docid
  descending), cut to `depth` (trec_eval -M), and handed on with strictly decreasing
  scores n, n-1, ..., 1, so no provider's own tie rule (some break ties by docid
  ascending) can change a value;
- missing queries (trec_eval -c): a query in the qrels but absent from the run is scored on
  an empty ranking: 0 for the rank measures, its real relevant count for NumRel, 1 for
  NumQ, and no unjudged document (Judged@k = 1) as trec_eval's unj says;
- `all`: counts (NumQ, NumRel, NumRet) are summed, every other measure averaged over all
  qrels queries;
- unjudged queries: a query in the run but not in the qrels is ignored (and counted);
- duplicates: a repeated (qid, docid) in the run keeps its highest-scored occurrence
  (counted; see harness.trec);
- a qrels query whose grades are all negative is refused: trec_eval (and pytrec_eval, in
  this process) stops or crashes on it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.evaluate.coverage import docid_warning
from harness.evaluate.measures import family, parse_measures
from harness.errors import HarnessError, InputError
from harness.trec import Qrels, Run, read_run

__all__ = ["JUDGED", "Evaluation", "Evaluator", "RunFileOptions", "evaluate", "evaluate_files", "keep_measures",
           "parse_measures", "with_judged"]

JUDGED = "Judged@10"  # share of the top 10 that is judged: reports show it beside the measures asked for


@dataclass
class Evaluation:
    run_name: str
    measures: list[str]  # the names asked for (ir-measures or trec_eval syntax), in that order
    per_query: dict[str, dict[str, float]]  # measure -> qid -> value, every qrels query
    means: dict[str, float]  # the `all` value: the mean, or the sum for a count measure
    missing_queries: list[str] = field(default_factory=list)  # judged, absent from the run
    unjudged_queries: list[str] = field(default_factory=list)  # in the run, not judged
    duplicates: int = 0
    depth: int | None = None
    counts: list[str] = field(default_factory=list)  # measures summed, not averaged, on `all`
    trailing: int = 0  # run lines with text after the sixth field (ignored, as trec_eval does)
    docid_warning: str | None = None  # the run's top documents are almost never judged (coverage.py)

    @property
    def num_queries(self) -> int:
        return len(next(iter(self.per_query.values()), {}))


def with_judged(measures: Sequence[str]) -> tuple[list[str], str]:
    """The measures to score so that JUDGED comes out of the same pass, and its name in the
    results: the caller's own spelling when it asked for Judged@10, else JUDGED (added)."""
    asked = next((name for name, measure in zip(measures, parse_measures(list(measures), announce=False))
                  if str(measure) == JUDGED), None)
    return (list(measures), asked) if asked else ([*measures, JUDGED], JUDGED)


def keep_measures(evaluation: Evaluation, measures: Sequence[str]) -> Evaluation:
    """The evaluation of `measures` alone (the names it was asked for), dropping one scored
    alongside them in the same pass, such as a report's JUDGED (with_judged)."""
    return replace(evaluation, measures=list(measures), per_query={m: evaluation.per_query[m] for m in measures},
                   means={m: evaluation.means[m] for m in measures}, counts=[m for m in evaluation.counts if m in measures])


def _check_scorable(qrels: Qrels) -> None:
    """trec_eval sizes its relevance levels by a query's highest grade: with none at 0 or
    above it stops with "Can't calculate measure" or reads out of bounds, and pytrec_eval,
    the same C code, would take this process down with it."""
    for qid, grades in qrels.judgments.items():
        if grades and max(grades.values()) < 0:
            message = (f"query {qid!r} has only negative grades ({', '.join(map(str, sorted(set(grades.values()))))}): "
                       "trec_eval cannot score such a query (it stops or crashes); grade one of its documents "
                       "0 or above, or leave the query out")
            raise InputError(qrels.path, message) if qrels.path else HarnessError(f"qrels {qrels.name}: {message}")


def canonical_scores(run: Run, qid: str, depth: int | None) -> dict[str, float]:
    """One ranking in trec_eval's order, cut to depth, scored n, n-1, ..., 1."""
    ranking = run.ranked(qid, depth)
    n = len(ranking)
    return {docid: float(n - i) for i, (docid, _) in enumerate(ranking)}


class Evaluator:
    """Measures bound to one qrels, reused across runs (the qrels are converted once)."""

    def __init__(self, qrels: Qrels, measures: Sequence[str], *, announce: bool = True) -> None:
        """`measures` in ir-measures or trec_eval syntax; results are keyed by the names as given."""
        import ir_measures

        names = [measures] if isinstance(measures, str) else list(measures)
        parsed = parse_measures(names, announce=announce)
        _check_scorable(qrels)
        self.qrels = qrels
        self.measures = names
        self._names = {measure: name for measure, name in zip(parsed, names)}
        self._counts = [name for name, m in zip(names, parsed) if family(m).summed]
        judged_measures = [m for m in parsed if m.NAME == "Judged"]
        others = [m for m in parsed if m.NAME != "Judged"]
        self._judged = {self._names[m]: m["cutoff"] for m in judged_measures}
        self._scorer = ir_measures.evaluator(others, qrels.judgments) if others else None
        # trec_eval's unj: a document graded below 0 is in the pool but unjudged
        judged_qrels = {qid: kept for qid, docs in qrels.judgments.items()
                        if (kept := {d: g for d, g in docs.items() if g >= 0})}
        self._judged_scorer = (ir_measures.evaluator(judged_measures, judged_qrels)
                               if judged_measures and judged_qrels else None)
        self._empty = {name: _on_empty_ranking(m, qrels.judgments) for name, m in zip(names, parsed)}

    def __call__(self, run: Run, depth: int | None = None) -> Evaluation:
        judged = self.qrels.judgments
        evaluated_run = {qid: canonical_scores(run, qid, depth) for qid, ranking in run.scores.items()
                         if qid in judged and ranking}
        per_query = {name: {qid: self._empty[name][qid] for qid in sorted(judged)} for name in self.measures}
        if self._scorer is not None:
            for metric in self._scorer.iter_calc(evaluated_run):
                # ir-measures also yields its default (0) for the queries the run lacks
                if metric.query_id in evaluated_run:
                    per_query[self._names[metric.measure]][metric.query_id] = float(metric.value)
        self._judged_fractions(evaluated_run, per_query)
        means = {name: sum(values.values()) / (1 if name in self._counts else len(values))
                 for name, values in per_query.items()}
        return Evaluation(
            run_name=run.name,
            measures=self.measures,
            per_query=per_query,
            means=means,
            missing_queries=sorted(set(judged) - set(evaluated_run)),
            unjudged_queries=sorted(set(run.scores) - set(judged)),
            duplicates=run.duplicates,
            depth=depth,
            counts=list(self._counts),
            trailing=run.trailing,
            docid_warning=docid_warning(run.name, evaluated_run, judged, str(self.qrels.path or self.qrels.name)),
        )

    def _judged_fractions(self, run: dict[str, dict[str, float]], per_query: dict[str, dict[str, float]]) -> None:
        """Judged@k as 1 - trec_eval's unj@k: ir-measures gives the judged fraction of the first
        min(k, n) documents; trec_eval divides the unjudged count by k (empty ranks are not
        unjudged). A query with no judgment of 0 or more has every document unjudged."""
        if not self._judged:
            return
        fractions: dict[tuple[str, str], float] = {}
        if self._judged_scorer is not None:
            for metric in self._judged_scorer.iter_calc(run):
                fractions[self._names[metric.measure], metric.query_id] = float(metric.value)
        for name, cutoff in self._judged.items():
            for qid, ranking in run.items():
                shown = min(cutoff, len(ranking))
                judged_count = round(fractions.get((name, qid), 0.0) * shown)
                per_query[name][qid] = 1.0 - (shown - judged_count) / cutoff


def _on_empty_ranking(measure, judgments: dict[str, dict[str, int]]) -> dict[str, float]:
    """Per query, the value trec_eval -c gives a query the run does not answer."""
    if measure.NAME == "NumQ":
        return dict.fromkeys(judgments, 1.0)
    if measure.NAME == "NumRel":
        return {qid: float(sum(g >= 1 for g in docs.values())) for qid, docs in judgments.items()}
    if measure.NAME == "Judged":
        return dict.fromkeys(judgments, 1.0)
    return dict.fromkeys(judgments, 0.0)


def evaluate(qrels: Qrels, run: Run, measures: Sequence[str], depth: int | None = None) -> Evaluation:
    return Evaluator(qrels, measures)(run, depth)


@dataclass(frozen=True)
class RunFileOptions:
    strict: bool = False  # a duplicate (qid, docid) is an error instead of being dropped
    passage_separator: str | None = None  # judge '<docid><sep><n>' passages as documents (MaxP)
    depth: int | None = None


def evaluate_files(
    evaluator: Evaluator, paths: Sequence[str | Path], options: RunFileOptions, workers: int | None = None
) -> list[Evaluation]:
    """Read and score many run files, in order, on all cores (runs are independent)."""
    workers = min(len(paths) // 2, workers or os.cpu_count() or 1)
    if workers <= 1:
        return [evaluate_file(evaluator, path, options) for path in paths]
    import multiprocessing

    # spawn, not fork: the caller may hold threads (a JVM, torch) that fork would copy mid-lock
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=_start_worker,
                      initargs=(evaluator.qrels, evaluator.measures, options)) as pool:
        return pool.map(_evaluate_in_worker, [str(path) for path in paths], chunksize=1)


_worker_state: tuple[Evaluator, RunFileOptions] | None = None


def _start_worker(qrels: Qrels, measures: list[str], options: RunFileOptions) -> None:
    global _worker_state
    _worker_state = (Evaluator(qrels, measures, announce=False), options)  # the parent announced


def _evaluate_in_worker(path: str) -> Evaluation:
    assert _worker_state is not None
    evaluator, options = _worker_state
    return evaluate_file(evaluator, path, options)


def evaluate_file(evaluator: Evaluator, path: str | Path, options: RunFileOptions) -> Evaluation:
    """One run file read as `harness eval` reads it: streamed to `options.depth` per query,
    except passage runs, which MaxP needs whole and are cut after conversion."""
    stream_depth = None if options.passage_separator else options.depth
    run = read_run(path, strict=options.strict, depth=stream_depth)
    if options.passage_separator:
        run = run.to_documents(options.passage_separator)
    return evaluator(run, options.depth)


def score_runs(runs, qrels, measures: str | Sequence[str] | None = None, *, preset: str | None = None,
               depth: int | None = None, passage_separator: str | None = None) -> list[Evaluation]:
    """Runs (files, `Run`s or DataFrames; one, a list or {name: run}) scored as `harness eval`
    scores them: the same default measures, presets and depth."""
    from harness.evaluate.frames import as_qrels, run_list
    from harness.evaluate.presets import measure_settings

    measures, depth, separator = measure_settings(measures, preset, depth, passage_separator)
    evaluator = Evaluator(as_qrels(qrels), measures)
    evaluations = [evaluator(run.to_documents(separator) if separator else run, depth) for run in run_list(runs)]
    for evaluation in evaluations:
        if evaluation.docid_warning:
            warnings.warn(evaluation.docid_warning, stacklevel=3)
    return evaluations
