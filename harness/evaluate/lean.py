"""`harness eval`'s and `harness compare`'s compiled route: runs and qrels in the common form scored by
harness/evaluate/_lean.c, without numpy, pyarrow or pytrec_eval in the process.

Scoring 100 runs of 150,000 lines this way takes 31 MB where the numpy route takes 195 MB
(most of it those libraries' own code), in about half the time (benchmarks/eval_speed.py). The
numbers are the same: each family is computed as harness.evaluate.ranked computes it, and both
routes are held to the trec_eval binary
(tests/test_trec_eval_differential.py). The route is taken only where it gives exactly what the
numpy route gives; `lean_scores` answers None, and the numpy route scores the whole command,
where the module was not compiled (no C compiler at install), a file is not a regular file (a
pipe) or is outside the common form (a comment, a tab, a compressed file, an error to name), a
measure is one it does not compute, or a run's top 10s hold ids judged only in another case,
which the numpy route's docid warning looks for among every query's top rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.compute.engines import usable_cores
from harness.errors import COMPRESSED, FLAGS, HarnessError
from harness.evaluate import Evaluation, _check_scorable, added_in_order, on_stderr, qrels_name, warn_unreachable
from harness.evaluate.coverage import RARELY, docid_warning, must_look
from harness.evaluate.depths import usual_depth
from harness.evaluate.measures import family, parse_measures
from harness.evaluate.names import announce
from harness.trec import file_stem

# what each family may be given: the parameters the compiled code reads, as ranked.py reads them
PARAMS = {"nDCG": {"cutoff"}, "P": {"cutoff", "rel"}, "R": {"cutoff", "rel"}, "AP": {"cutoff", "rel"},
          "RR": {"cutoff", "rel"}, "Rprec": {"rel"}, "Success": {"cutoff", "rel"}, "Judged": {"cutoff"},
          "NumQ": set(), "NumRel": set(), "NumRet": {"rel"}}


@dataclass
class LeanQrels:
    """A qrels file read by the compiled route."""

    name: str
    path: Path
    compiled: object  # _lean.Qrels
    qids: list[str]  # sorted (trec_eval's order)
    grades: dict[str, list[int]]

    def grades_by_query(self) -> dict[str, list[int]]:
        return self.grades

    @cached_property
    def judgments(self) -> dict[str, dict[str, int]]:
        """{qid: {docid: grade}}, each query's documents in the order the file first names them
        (for any query), as the numpy route's qrels hold them: built for the docid warning alone."""
        lines = self.compiled.lines()
        first: dict[str, int] = {}
        for _, docid, _ in lines:
            first.setdefault(docid, len(first))
        by_query: dict[str, list[tuple[int, str, int]]] = {qid: [] for qid in self.qids}
        for qid, docid, grade in lines:
            by_query[qid].append((first[docid], docid, grade))
        return {qid: {docid: grade for _, docid, grade in sorted(judged)} for qid, judged in by_query.items()}


@dataclass
class LeanScores:
    """What the compiled route made of a command's inputs: the qrels (for their checks and notes),
    the measures as parsed, and each run's evaluation."""

    qrels: LeanQrels
    parsed: list
    evaluations: list[Evaluation]


def compiled() -> ModuleType | None:
    """The compiled module, None where it was not built (the numpy route scores everything)."""
    try:
        from harness.evaluate import _lean
    except ImportError:
        return None
    return _lean


def lean_scores(qrels: str, files: Sequence[str], measures: Sequence[str], depth: int | None,
                strict: bool) -> LeanScores | None:
    """The runs in `files` scored on `qrels` as `harness eval` scores them, by the compiled
    route; None where the numpy route must (see the module's docstring). Nothing is said here:
    the caller says the notes once it knows which route scored."""
    module = compiled()
    if module is None or not all(_plain_file(path) for path in [qrels, *files]):
        return None
    try:
        parsed = parse_measures(list(measures), announce=False)
    except HarnessError:
        return None  # the numpy route says why, in its order
    specs = _specs(module, parsed)
    if specs is None:
        return None
    specs.append((module.NumRet, -1, -1))  # each query's documents, for Evaluation.usual_depth: not shown
    try:
        table = module.Qrels(qrels)
    except module.NotFast:
        return None
    judged = LeanQrels(file_stem(qrels), Path(qrels), table, table.qids, dict(zip(table.qids, table.grades)))
    try:
        _check_scorable(judged)
    except HarnessError:
        return None  # refused by the numpy route, after what it says first

    cores = usable_cores()
    workers = max(1, min(len(files), cores))
    threads = max(1, cores // workers)  # a large run is read in parts at once where cores outnumber the runs

    def scored(path: str) -> tuple | None:
        try:
            return module.evaluate(table, path, -1 if depth is None else depth, specs, strict, RARELY, threads)
        except module.NotFast:
            return None

    with ThreadPoolExecutor(workers) as pool:  # the module lets go of the GIL while it reads and scores
        results = list(pool.map(scored, [str(path) for path in files]))
    if any(result is None or _must_look(result) and result[7] is None for result in results):
        return None  # the top 10s' ids must be read, and the compiled code gave none
    counts = [name for name, measure in zip(measures, parsed) if family(measure).summed]
    return LeanScores(judged, parsed, [_evaluation(judged, path, list(measures), counts, depth, result)
                                       for path, result in zip(files, results)])


def said(lean: LeanScores, measures: Sequence[str]) -> list[Evaluation]:
    """The compiled route's evaluations of `measures` (the names it scored), after what the numpy
    route's Evaluator says before it scores, in its order: the measures' translated names, a rel=
    no grade reaches (`harness eval` and `harness compare` alike)."""
    announce([(name, str(measure)) for name, measure in zip(measures, lean.parsed)])
    warn_unreachable(lean.parsed, measures, lean.qrels, on_stderr)
    return lean.evaluations


def _must_look(result: tuple) -> bool:
    """coverage.must_look on the compiled code's counts of a run's top 10s: documents shown, judged,
    and judged for their query only in another case. It gives their ids only where they are so rarely
    judged that another collection's ids may be warned of (`RARELY`); where only ids in another case
    could be, the numpy route looks for them among every query's top rows (Evaluator._docid_warning)."""
    judged, shown, other_case = result[4:7]
    return must_look(judged, shown, lambda: other_case > 0)


def _plain_file(path: str | Path) -> bool:
    """Whether the compiled route may read `path`: a regular file (a pipe, read once, could not be read
    again when a run writes a query in two places), not named as compressed (the numpy route reads
    or refuses a `.gz` by its suffix)."""
    return Path(path).is_file() and not str(path).endswith(COMPRESSED)


def computes(measure) -> bool:
    """Whether the compiled code computes this (parsed) measure."""
    return measure.NAME in PARAMS and not set(measure.params) - PARAMS[measure.NAME]


def _specs(module: ModuleType, parsed: list) -> list[tuple[int, int, int]] | None:
    """(family, cutoff, level) per measure for the compiled code, -1 for a parameter not given;
    None where a measure is outside what it computes."""
    specs = []
    for measure in parsed:
        if not computes(measure):
            return None
        cutoff, level = measure.params.get("cutoff"), measure.params.get("rel")
        specs.append((getattr(module, measure.NAME), -1 if cutoff is None else cutoff, -1 if level is None else level))
    return specs


def _evaluation(qrels: LeanQrels, path: str, measures: list[str], counts: list[str], depth: int | None,
                result: tuple) -> Evaluation:
    (*values, retrieved), evaluated, unjudged, duplicates, *_, tops = result
    per_query = {name: dict(zip(qrels.qids, column)) for name, column in zip(measures, values)}
    means = {name: added_in_order(column) / (1 if name in counts else len(column))
             for name, column in zip(measures, values)}
    return Evaluation(run_name=file_stem(path), measures=measures, per_query=per_query, means=means,
                      missing_queries=[qid for qid, present in zip(qrels.qids, evaluated) if not present],
                      unjudged_queries=unjudged, duplicates=duplicates, depth=depth,
                      usual_depth=usual_depth(int(n) for n in retrieved), counts=counts,
                      docid_warning=docid_warning(file_stem(path), tops, qrels.judgments, qrels_name(qrels), FLAGS)
                      if _must_look(result) else None)
