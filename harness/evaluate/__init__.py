"""Scoring runs against qrels under trec_eval's conventions, every value equal to
`trec_eval -q -c -M<depth>`'s (Judged@k, which trec_eval lacks, to ir-measures' own).

Runs and qrels are read into columns (`harness.evaluate.tables`: pyarrow on all cores for
files in the common form, the exact readers of harness.trec for the rest), put into
trec_eval's order and scored in numpy (`harness.evaluate.ranked`) for every accepted family
but infAP and the set measures, which ir-measures computes (through pytrec_eval, trec_eval's
own C code) on the same rankings. Both are checked against the trec_eval binary
(tests/test_trec_eval_differential.py). What ir-measures leaves to the caller, this package
pins down:

- order: every ranking is put into trec_eval's canonical order (score descending, docid
  descending), cut to `depth` (trec_eval -M), and handed on with strictly decreasing
  scores n, n-1, ..., 1, so no provider's own tie rule (some break ties by docid
  ascending) can change a value;
- missing queries (trec_eval -c): a query in the qrels but absent from the run is scored on
  an empty ranking: 0 for the rank measures (Judged@k too, as ir-measures has it), its real
  relevant count for NumRel, 1 for NumQ;
- `all`: counts (NumQ, NumRel, NumRet) are summed, every other measure averaged over all
  qrels queries;
- unjudged queries: a query in the run but not in the qrels is ignored (and counted);
- duplicates: a repeated (qid, docid) in the run keeps its highest-scored occurrence
  (counted; see harness.trec);
- a qrels query whose grades are all negative is refused: trec_eval (and pytrec_eval, in
  this process) stops or crashes on it.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from harness.evaluate.coverage import TOP, docid_warning, may_be_in_other_case, must_look
from harness.evaluate.depths import unequal_depths, usual_depth
from harness.evaluate.measures import family, parse_measures
from harness.errors import ARGUMENTS, FLAGS, HarnessError, InputError, Spelling, listed, verb
from harness.trec import Qrels, Run, read_run

if TYPE_CHECKING:  # numpy and pyarrow are imported where runs are scored by them, not by `harness eval`'s
    from harness.evaluate.tables import QrelsTable, RunTable  # compiled route (harness.evaluate.lean)

__all__ = ["JUDGED", "Evaluation", "Evaluator", "RunFileOptions", "evaluate", "evaluate_files", "keep_measures",
           "parse_measures", "reading_lines", "report_reading", "with_judged"]

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
    # documents ranked for 9 in 10 judged queries at most, after `depth`: how deep its measures see (depths.py)
    usual_depth: int = 0
    counts: list[str] = field(default_factory=list)  # measures summed, not averaged, on `all`
    trailing: int = 0  # run lines with text after the sixth field (ignored, as trec_eval does)
    docid_warning: str | None = None  # top documents almost never judged, or only in another case (coverage.py)

    @property
    def num_queries(self) -> int:
        return len(next(iter(self.per_query.values()), {}))

    def whole_counts(self) -> "Evaluation":
        """This evaluation with its counts as the whole numbers they are (5505, not 5505.0): as
        the JSON outputs give them, agreeing with the tables, which print them so."""
        def whole(measure: str, value: float) -> float | int:
            return json_value(value, measure in self.counts)

        return replace(self, means={m: whole(m, v) for m, v in self.means.items()},
                       per_query={m: {qid: whole(m, v) for qid, v in values.items()}
                                  for m, values in self.per_query.items()})

    def judged_note(self) -> str:
        """How many judged queries were scored and how many of them the run lacks, which
        trec_eval -c scores as empty rankings (0 in every mean and paired test) without a word:
        one wording for `harness eval`, `harness compare` and `harness run`."""
        note = f"{self.num_queries} judged queries"
        if self.missing_queries:
            note += f"; {len(self.missing_queries)} missing from the run (scored as empty rankings)"
        return note

    def coverage_note(self) -> str:
        """`judged_note` with the run's queries the qrels do not judge (ignored) and its repeated
        (qid, docid) pairs (dropped, the best kept), which trec_eval also passes over in silence:
        `harness eval`'s line on stderr, a Python API warning (`api_warnings`)."""
        notes = [self.judged_note()]
        if self.unjudged_queries:
            notes.append(f"{len(self.unjudged_queries)} unjudged in the run (ignored)")
        if self.duplicates:
            notes.append(f"{self.duplicates} duplicate documents dropped (highest score kept)")
        return f"{self.run_name}: " + "; ".join(notes)

    def trailing_note(self) -> str | None:
        """The run's lines with text after the sixth field, which trec_eval ignores; None when none."""
        if not self.trailing:
            return None
        return f"{self.run_name}: {self.trailing} lines with text after the sixth field (ignored, as trec_eval does)"

    def disjoint_warning(self, qrels_name: str) -> str | None:
        """A one-line warning when the run answers none of the judged queries (every measure is
        0 because the inputs do not match, which trec_eval prints without a word); None otherwise."""
        if len(self.missing_queries) != self.num_queries:
            return None
        return f"run {self.run_name!r} has no query in common with {qrels_name}; every measure is 0"


def printed(value: float, count: bool, sign: str = "") -> str:
    """A value as trec_eval prints it: a count (summed over the queries) as a whole number,
    any other measure to 4 decimals; `sign` "+" for a difference."""
    return f"{value:{sign}.{0 if count else 4}f}"


def json_value(value: float, count: bool) -> float | int:
    """A value as a JSON output gives it: a count (summed over the queries) as a whole number,
    as `printed` prints it; any other measure unrounded."""
    return round(value) if count else value


def json_number(value: object) -> object:
    """`value` as strict JSON can hold it: a float that is not finite (an infinite Cohen's d, a
    NaN mean of no turn) as null, which JSON has instead of NaN and Infinity; anything else as is."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def csv_value(value: float, count: bool) -> str:
    """A value as a CSV output gives it, for pandas and csv readers: as JSON gives it (`json_value`),
    the shortest decimal that reads back as the same float, so that statistics recomputed from the
    file equal the harness's (4 decimals, as the tables print them, moved a paired-t p)."""
    return str(json_value(value, count)) if count else repr(float(value))


def csv_statistic(value: float) -> str:
    """A statistic (an interval's end, a p-value, a kappa) as CSV gives it: unrounded (`csv_value`),
    or an empty cell where it is undefined (nan), as the other empty cells: text ('n/a') in a column
    of numbers breaks a reader's types."""
    return "" if math.isnan(value) else csv_value(value, count=False)


class JudgedQueries(Protocol):
    """Qrels as the checks and notes on them read them: every form the harness holds them in
    (Qrels, QrelsTable, the compiled route's LeanQrels) gives its grades query by query."""

    name: str
    path: Path | None

    def grades_by_query(self) -> dict[str, list[int]]:
        """Each judged query's grades, the queries sorted (trec_eval's order)."""
        ...


def qrels_name(qrels: JudgedQueries) -> str:
    """The qrels as a warning names them: their file, else the benchmark's name for them."""
    return str(qrels.path) if qrels.path is not None else f"the qrels {qrels.name}"


def reading_warnings(evaluation: Evaluation, qrels: str) -> list[str]:
    """What scoring the run found that the numbers do not show: no query in common with the
    qrels (named `qrels`), documents almost never judged. Said by `report_reading` on the
    command line and warned of by the Python API (`api_warnings`)."""
    return [warning for warning in (evaluation.disjoint_warning(qrels), evaluation.docid_warning) if warning]


def report_reading(evaluation: Evaluation, qrels: str, log: TextIO | None = None) -> None:
    """`reading_lines` said the same way by `harness eval`, `harness compare` and `harness run`.
    To `log`, stderr by default."""
    for line in reading_lines(evaluation, qrels):
        print(line, file=log or sys.stderr)


def reading_lines(evaluation: Evaluation, qrels: str) -> list[str]:
    """`reading_warnings` and text after the sixth field, as the commands' lines on stderr."""
    lines = [f"warning: {warning}" for warning in reading_warnings(evaluation, qrels)]
    if (note := evaluation.trailing_note()) is not None:
        lines.append(note)
    return lines


def api_warnings(evaluation: Evaluation, qrels: str) -> list[str]:
    """What `harness eval` says of a run on stderr, in its order, as the Python API warns it:
    `reading_warnings`, text after the sixth field, and the counts (`coverage_note`, unjudged
    queries among them) where the run lacks a judged query (a 0 in every mean) or repeats a
    document. Unjudged queries alone change no number and are the rule (CAsT 2021's runs answer
    239 turns, its qrels judge 158): warned of, every real run would be."""
    said = reading_warnings(evaluation, qrels)
    if (note := evaluation.trailing_note()) is not None:
        said.append(note)
    if evaluation.missing_queries or evaluation.duplicates:
        said.append(evaluation.coverage_note())
    return said


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


def check_scorable(qrels: Qrels) -> None:
    """`_check_scorable` on a Qrels, for a run config's check: its `qrels:` file is refused when
    the config is read, not after its runs are ranked."""
    _check_scorable(qrels)


def judges_none(qrels: Qrels, turns: Sequence[str], topics: str) -> str | None:
    """Why qrels judging none of the turns (another benchmark's, another year's) cannot score
    runs of them, in words naming the qrels, a query of each and what to do; None when they
    judge one. Every run would score 0 against them: a run config and a hosted task refuse them."""
    if not turns or qrels.judgments.keys() & set(turns):
        return None
    first = f"its first query {next(iter(qrels.judgments))!r}" if qrels.judgments else "it judges no query"
    return (f"{qrels.path or qrels.name} judges none of the turns of {topics} ({first}, the topics' first turn "
            f"{turns[0]!r}): give the topics' own qrels")


def _check_scorable(qrels: JudgedQueries) -> None:
    """trec_eval sizes its relevance levels by a query's highest grade: with none at 0 or
    above it stops with "Can't calculate measure" or reads out of bounds, and pytrec_eval,
    the same C code, would take this process down with it."""
    for qid, grades in qrels.grades_by_query().items():
        if not grades or max(grades) >= 0:
            continue
        message = (f"query {qid!r} has only negative grades ({', '.join(map(str, sorted(set(grades))))}): "
                   "trec_eval cannot score such a query (it stops or crashes); grade one of its documents "
                   "0 or above, or leave the query out")
        raise InputError(qrels.path, message) if qrels.path else HarnessError(f"qrels {qrels.name}: {message}")


def warn_unreachable(parsed: Sequence, names: Sequence[str], qrels: JudgedQueries, say: Callable[[str], None]) -> None:
    """A measure whose relevance level (rel=) no judgment reaches is 0 on every query, which
    trec_eval prints without a word: said once, naming the highest grade."""
    top = max((max(grades) for grades in qrels.grades_by_query().values() if grades), default=None)
    for measure, name in zip(parsed, names):
        level = measure.params.get("rel")
        if level is not None and (top is None or level > top):
            say(f"{unreachable(name, qrels_name(qrels), level, top)}, so it is 0 on every query")


def on_stderr(warning: str) -> None:
    print(f"warning: {warning}", file=sys.stderr)


def unreachable(what: str, qrels: str, level: int, top: int | None, judged: str = "judgment in qrels") -> str:
    """'{what}: no judgment in qrels {qrels} reaches grade {level} (the highest is {top})': a
    relevance level above every grade (a measure's rel=, `qrels agree --thresholds`, or a
    nugget bank's --vital-grade with `judged` "nugget in"), whose number then says nothing;
    the caller says what it is instead."""
    highest = f"the highest is {top}" if top is not None else "they judge nothing"
    return f"{what}: no {judged} {qrels} reaches grade {level} ({highest})"


def ceiling_notes(qrels: JudgedQueries, measures: Sequence[str], depth: int | None) -> list[str]:
    """One note per relevance level that some judged queries, not all, never reach: trec_eval -c
    scores every qrels query, so the level's measures are 0 there for every run and their means
    have a ceiling below 1, which it prints without a word. The level is a measure's rel= (1
    by default) or, for nDCG, a positive grade; counts (NumRel, NumRet) are left out. The
    ceiling is named only for the measures a perfect run scores 1 on every other query
    (`_reaches_one`), where it is exact: the share of queries that reach the level."""
    by_level: dict[int, list[tuple[str, object]]] = {}
    for measure, name in zip(parse_measures(list(measures), announce=False), measures):
        kind = family(measure)
        if not kind.summed and (kind.rel or measure.NAME == "nDCG"):
            by_level.setdefault(measure.params.get("rel") or 1, []).append((name, measure))
    notes, graded = [], list(qrels.grades_by_query().values()) if by_level else []
    for level, named in sorted(by_level.items()):
        counts = [sum(map(level.__le__, grades)) for grades in graded]  # grades >= level, counted in C
        reached = [count for count in counts if count > 0]
        if not reached or len(reached) == len(counts):  # none reach it: warn_unreachable says so
            continue
        missing = len(counts) - len(reached)
        names = [name for name, _ in named]
        capped = [name for name, measure in named if _reaches_one(measure, reached, depth)]
        ceiling = f" ({listed(capped)} can reach at most {len(reached) / len(counts):.4f})" if capped else ""
        notes.append(f"{missing} of {len(counts)} judged queries {verb(missing)} no judgment of grade >= {level}: "
                     f"{listed(names)} {verb(len(names), 'scores', 'score')} 0 there for every run{ceiling}")
    return notes


def _reaches_one(measure, relevant: list[int], depth: int | None) -> bool:
    """Whether a run ranking the judgments by grade scores 1 on every query with `relevant`
    (> 0) documents at the measure's level, evaluated to `depth`: trec_eval's RR and Success
    at any depth; R, AP and Rprec where the depth and cutoff leave room for every relevant
    document; P@k where every query has k and the depth reaches k; nDCG@k where the depth holds
    the ideal top k. Other families (Bpref, infAP, the set measures): not claimed."""
    cutoff = measure.params.get("cutoff")
    room = min((limit for limit in (cutoff, depth) if limit is not None), default=math.inf)
    if measure.NAME in ("RR", "Success"):
        return True
    if measure.NAME in ("R", "AP", "Rprec"):
        return room >= max(relevant)
    if measure.NAME == "P":
        return room >= cutoff and min(relevant) >= cutoff
    if measure.NAME == "nDCG":
        return (depth or math.inf) >= min(cutoff or math.inf, max(relevant))
    return False


class Evaluator:
    """Measures bound to one qrels, reused across runs (the qrels are converted once).

    The families in `harness.evaluate.ranked.VECTORISED` are computed there, on whole runs
    at once; the others by ir-measures, on the same rankings in trec_eval's order with
    strictly decreasing scores n, n-1, ..., 1."""

    def __init__(self, qrels: Qrels | QrelsTable, measures: Sequence[str], *, announce: bool = True,
                 spelling: Spelling = FLAGS, warn: Callable[[str], None] = on_stderr) -> None:
        """`measures` in ir-measures or trec_eval syntax; results are keyed by the names as given.
        `spelling`: how warnings name a setting (the command line's flags, the API's arguments);
        `warn`: where a warning goes when `announce` (stderr; the API's, to Python warnings)."""
        from harness.evaluate.ranked import vectorised
        from harness.evaluate.tables import QrelsTable

        names = [measures] if isinstance(measures, str) else list(measures)
        parsed = parse_measures(names, announce=announce)
        self.table = qrels if isinstance(qrels, QrelsTable) else QrelsTable.from_qrels(qrels)
        _check_scorable(self.table)
        self.measures = names
        self._names = {measure: name for measure, name in zip(parsed, names)}
        self._counts = [name for name, m in zip(names, parsed) if family(m).summed]
        self._vectorised = [m for m in parsed if vectorised(m)]
        self._others = [m for m in parsed if not vectorised(m)]
        self._scorer = None
        self._spelling = spelling
        if announce:
            warn_unreachable(parsed, names, self.table, warn)

    @property
    def qrels(self) -> Qrels:
        return self.table.qrels

    @property
    def needs_docids(self) -> bool:
        """Whether ir-measures computes some measure, and so needs every ranked document's id."""
        return bool(self._others)

    def __call__(self, run: Run | RunTable, depth: int | None = None) -> Evaluation:
        from harness.evaluate.ranked import rank, values
        from harness.evaluate.tables import RunTable

        table = run if isinstance(run, RunTable) else RunTable.from_run(run)
        qrels = self.table
        ranked = rank(table, qrels, depth, keep_rows=bool(self._others))
        per_query = {self._names[m]: dict(zip(qrels.qids, values(m, ranked, qrels).tolist()))
                     for m in self._vectorised}
        evaluated = {qrels.qids[number] for number in ranked.query.tolist()}
        if self._others:
            per_query.update(self._score_others(table, ranked, evaluated))
        per_query = {name: per_query[name] for name in self.measures}
        means = {name: added_in_order(values.values()) / (1 if name in self._counts else len(values))
                 for name, values in per_query.items()}
        judged = set(qrels.qids)
        return Evaluation(
            run_name=table.name,
            measures=self.measures,
            per_query=per_query,
            means=means,
            missing_queries=sorted(judged - evaluated),
            unjudged_queries=sorted(set(table.qids) - judged),
            duplicates=table.duplicates,
            depth=depth,
            usual_depth=usual_depth(ranked.lengths.tolist()),
            counts=list(self._counts),
            trailing=table.trailing,
            docid_warning=self._docid_warning(table, ranked, depth),
        )

    def _docid_warning(self, run: RunTable, ranked, depth: int | None) -> str | None:
        """coverage.docid_warning, asked only where coverage.must_look says so: the top 10s' docids
        are read only then. Where enough are judged that only ids judged in another case could be
        warned of, the look query by query waits for one top document to match some judged id only so."""
        judged, shown = int(ranked.count_in_top(0, TOP).sum()), int(ranked.lengths.clip(max=TOP).sum())
        if not must_look(judged, shown, lambda: may_be_in_other_case(run.top_docids(), *self.table.folded_docids())):
            return None
        tops = run.top_ranked(min(TOP, depth or TOP))
        rankings = {self.table.qids[number]: tops[self.table.qids[number]] for number in ranked.query.tolist()}
        return docid_warning(run.name, rankings, self.qrels.judgments, qrels_name(self.table), self._spelling)

    def _score_others(self, run: RunTable, ranked, evaluated: set[str]) -> dict[str, dict[str, float]]:
        """The families without vectorised code, by ir-measures: each ranking handed on in
        trec_eval's order, scored n, n-1, ..., 1, so no provider's own tie rule can matter;
        a query the run lacks scores 0 (the value of an empty ranking for these families)."""
        import ir_measures

        if self._scorer is None:
            self._scorer = ir_measures.evaluator(self._others, self.qrels.judgments)
        docids = run.docids_of(ranked.rows).to_pylist()
        rankings = {}
        for number, start, end in zip(ranked.query.tolist(), ranked.starts[:-1].tolist(), ranked.starts[1:].tolist()):
            rankings[self.table.qids[number]] = {docid: float(end - i) for i, docid in
                                                 enumerate(docids[start:end], start=start)}
        per_query = {self._names[m]: dict.fromkeys(self.table.qids, 0.0) for m in self._others}
        for metric in self._scorer.iter_calc(rankings):
            if metric.query_id in evaluated:  # ir-measures also yields its default for the queries the run lacks
                per_query[self._names[metric.measure]][metric.query_id] = float(metric.value)
        return per_query


def added_in_order(values: Iterable[float]) -> float:
    """The values added one by one from 0.0, as trec_eval adds up the queries (in qid order)
    for its `all` line. Not sum(): from Python 3.12 on it adds floats with compensation, which
    moves a mean on a rounding boundary to the other side of trec_eval's fourth decimal."""
    total = 0.0
    for value in values:
        total += value
    return total


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
    """Read and score many run files, in order, on all cores (runs are independent): in
    threads when every measure is vectorised (reading and numpy let go of the GIL), in
    processes when ir-measures computes some (pytrec_eval keeps its state in C statics)."""
    workers = min(len(paths) // 2, workers or os.cpu_count() or 1)
    if workers <= 1:
        return [evaluate_file(evaluator, path, options) for path in paths]
    if not evaluator.needs_docids and not options.passage_separator:
        from concurrent.futures import ThreadPoolExecutor

        evaluator.table.prepare()
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda path: evaluate_file(evaluator, path, options), paths))
    import multiprocessing

    from harness.workers import process_pool

    # spawn, not fork: the caller may hold threads (a JVM, torch) that fork would copy mid-lock
    context = multiprocessing.get_context("spawn")
    with process_pool(context, workers, _start_worker, (evaluator.table, evaluator.measures, options)) as pool:
        return pool.map(_evaluate_in_worker, [str(path) for path in paths])


_worker_state: tuple[Evaluator, RunFileOptions] | None = None


def _start_worker(qrels: QrelsTable, measures: list[str], options: RunFileOptions) -> None:
    from harness.evaluate.tables import spare_memory

    global _worker_state
    spare_memory()
    _worker_state = (Evaluator(qrels, measures, announce=False), options)  # the parent announced


def _evaluate_in_worker(path: str) -> Evaluation:
    assert _worker_state is not None
    evaluator, options = _worker_state
    return evaluate_file(evaluator, path, options)


def evaluate_file(evaluator: Evaluator, path: str | Path, options: RunFileOptions) -> Evaluation:
    """One run file read as `harness eval` reads it (see harness.evaluate.tables), looked up
    in the qrels while it is read; passage runs, which MaxP needs whole, by the exact reader."""
    if options.passage_separator:
        run = read_run(path, strict=options.strict).to_documents(options.passage_separator)
        return evaluator(run, options.depth)
    from harness.evaluate.tables import read_run_table

    run = read_run_table(path, strict=options.strict, depth=options.depth, qrels=evaluator.table,
                         all_docids=evaluator.needs_docids)
    return evaluator(run, options.depth)


def score_runs(runs, qrels, measures: str | Sequence[str] | None = None, *, preset: str | None = None,
               depth: int | None = None, passage_separator: str | None = None) -> list[Evaluation]:
    """Runs (files, `Run`s or DataFrames; one, a list or {name: run}) scored as `harness eval`
    scores them: the same default measures, presets and depth; for the Python API, whose
    messages name its arguments (depth=, passage_separator=)."""
    from harness.evaluate.frames import as_qrels, run_list
    from harness.evaluate.presets import depth_warning, measure_settings

    given = depth
    measures, depth, separator = measure_settings(measures, preset, depth, passage_separator, spelling=ARGUMENTS)
    if (warning := depth_warning(measures, depth, given, preset, spelling=ARGUMENTS)) is not None:
        warnings.warn(warning, stacklevel=3)  # as `harness eval` says it on stderr
    judged = as_qrels(qrels)
    said: list[str] = []
    evaluator = Evaluator(judged, measures, spelling=ARGUMENTS, warn=said.append)
    for warning in [*said, *ceiling_notes(evaluator.table, measures, depth)]:  # as `harness eval` says them
        warnings.warn(warning, stacklevel=3)
    evaluations = [evaluator(run.to_documents(separator) if separator else run, depth) for run in run_list(runs)]
    for evaluation in evaluations:  # what `harness eval` says on stderr
        for warning in api_warnings(evaluation, qrels_name(judged)):
            warnings.warn(warning, stacklevel=3)
    if (shallower := unequal_depths(evaluations, ARGUMENTS)) is not None:
        warnings.warn(shallower, stacklevel=3)
    return evaluations
