"""Scoring runs against qrels with ir-measures, under trec_eval's conventions.

ir-measures computes the per-query values (through pytrec_eval, i.e. trec_eval's own C
code, for the trec_eval family of measures). What ir-measures leaves to the caller, this
module pins down so that the means equal `trec_eval -c -M<depth>`:

- depth (trec_eval -M): only the top `depth` documents per query in canonical order
  (score descending, docid descending) are evaluated;
- missing queries (trec_eval -c): a query in the qrels but absent from the run scores 0
  for every measure, and the mean is over all qrels queries;
- unjudged queries: a query in the run but not in the qrels is ignored (and counted);
- duplicates: a repeated (qid, docid) in the run keeps its first occurrence (counted).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.trec import Qrels, Run, read_run


@dataclass
class Evaluation:
    run_name: str
    measures: list[str]  # canonical ir-measures names, in the order asked for
    per_query: dict[str, dict[str, float]]  # measure -> qid -> value, every qrels query
    means: dict[str, float]
    missing_queries: list[str] = field(default_factory=list)  # judged, absent from the run
    unjudged_queries: list[str] = field(default_factory=list)  # in the run, not judged
    duplicates: int = 0
    depth: int | None = None

    @property
    def num_queries(self) -> int:
        return len(next(iter(self.per_query.values()), {}))


def parse_measures(names: Sequence[str]) -> list:
    """ir-measures objects for measure names, with a one-line error for a bad name."""
    import ir_measures

    parsed = []
    for name in names:
        try:
            parsed.append(ir_measures.parse_measure(name))
        except (ValueError, NameError, SyntaxError, TypeError) as error:
            raise HarnessError(
                f"cannot read measure {name!r} ({error}); use ir-measures syntax, e.g. nDCG@10, "
                "P(rel=2)@5, AP(rel=2)@1000, RR, R@100"
            ) from None
    if len({str(m) for m in parsed}) != len(parsed):
        raise HarnessError(f"a measure is listed twice in {list(names)}")
    return parsed


class Evaluator:
    """Measures bound to one qrels, reused across runs (the qrels are converted once)."""

    def __init__(self, qrels: Qrels, measures: Sequence[str]) -> None:
        import ir_measures

        parsed = parse_measures(measures)
        self.qrels = qrels
        self.measures = [str(m) for m in parsed]
        self._names = {measure: str(measure) for measure in parsed}
        self._scorer = ir_measures.evaluator(parsed, qrels.judgments)

    def __call__(self, run: Run, depth: int | None = None) -> Evaluation:
        judged = self.qrels.judgments
        cut = run.cut(depth)
        evaluated_run = {qid: ranking for qid, ranking in cut.scores.items() if qid in judged and ranking}
        per_query = {name: dict.fromkeys(sorted(judged), 0.0) for name in self.measures}
        for metric in self._scorer.iter_calc(evaluated_run):
            per_query[self._names[metric.measure]][metric.query_id] = float(metric.value)
        means = {name: sum(values.values()) / len(values) for name, values in per_query.items()}
        return Evaluation(
            run_name=run.name,
            measures=self.measures,
            per_query=per_query,
            means=means,
            missing_queries=sorted(set(judged) - set(evaluated_run)),
            unjudged_queries=sorted(set(cut.scores) - set(judged)),
            duplicates=run.duplicates,
            depth=depth,
        )


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
        return [_evaluate_file(evaluator, path, options) for path in paths]
    import multiprocessing

    # spawn, not fork: the caller may hold threads (a JVM, torch) that fork would copy mid-lock
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=_start_worker,
                      initargs=(evaluator.qrels, evaluator.measures, options)) as pool:
        return pool.map(_evaluate_in_worker, [str(path) for path in paths], chunksize=1)


_worker_state: tuple[Evaluator, RunFileOptions] | None = None


def _start_worker(qrels: Qrels, measures: list[str], options: RunFileOptions) -> None:
    global _worker_state
    _worker_state = (Evaluator(qrels, measures), options)


def _evaluate_in_worker(path: str) -> Evaluation:
    assert _worker_state is not None
    evaluator, options = _worker_state
    return _evaluate_file(evaluator, path, options)


def _evaluate_file(evaluator: Evaluator, path: str | Path, options: RunFileOptions) -> Evaluation:
    run = read_run(path, strict=options.strict)
    if options.passage_separator:
        run = run.to_documents(options.passage_separator)
    return evaluator(run, options.depth)
