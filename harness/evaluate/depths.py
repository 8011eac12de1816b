"""Runs ranked to different depths, compared on a measure that reads past the shallowest.

R@1000 or AP of a run that stops at 100 documents a query against one that ranks 1000 is lower
because the run is shallower, not because it ranks worse: trec_eval prints both without a word.
`harness eval`, `harness compare` and `harness run` say it in one line (compare's report and run's
leaderboard too), naming the measures, the runs and how deep each goes: the documents it ranks for
9 in 10 of its judged queries at most, after --depth (Evaluation.usual_depth, `usual_depth`): one
query ranked deeper changes no run's depth. Its hint tells the shallowest run to be rerun deeper only
where that can help: not where it was asked for more documents than it ranks (a config's k, or its
record's beside a run file), for a run ranking every document that matches its queries ranks no more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from harness.errors import Spelling, counted, listed
from harness.evaluate.measures import parse_measures
from harness.trec import record_of_run

# a run at least this share of another's depth is taken as deep as it: runs made from passage runs by
# keeping each document's best passage rank fewer documents than they were cut to (CAsT 2021's organiser
# runs, cut at 100 passages, rank at most 81 to 94 documents for 9 in 10 of their judged queries)
SAME_DEPTH = 0.8
RUN_BLIND = ("NumQ", "NumRel")  # counted from the qrels: no run's depth changes them


class Deep(Protocol):
    """What the check reads of an Evaluation."""

    run_name: str
    measures: list[str]
    depth: int | None
    usual_depth: int


def usual_depth(lengths: Iterable[int]) -> int:
    """How deep a run ranks its judged queries: the documents it ranks for 9 in 10 of the judged queries
    it answers at most (their 90th percentile); 0 where it answers none. Not the most for any one query:
    a run of k=20 that ranks one query 300 deep is a run of depth 20."""
    ranked = sorted(length for length in lengths if length > 0)
    return ranked[(9 * len(ranked) + 9) // 10 - 1] if ranked else 0


def hits_asked(k: int, retriever: Mapping[str, Any]) -> int:
    """The documents a query a run was asked for: its k, or a re-ranker's `depth` where less (it ranks
    the first stage's top `depth` alone); `retriever` as a config gives it ({name, params})."""
    params = retriever.get("params")
    depth = params.get("depth") if retriever.get("name") == "rerank" and isinstance(params, Mapping) else None
    return min(k, depth) if type(depth) is int and depth > 0 else k


def asked_of(files: Sequence[str], evaluations: Sequence[Deep]) -> Callable[[str], int | None]:
    """unequal_depths' `asked` for run files (scored as `evaluations`, in their order): the documents a
    query a run was asked for, where `harness run`'s record beside it says (hits_asked). A record (some
    200 KB) is read only for a run a warning names, not for every run scored."""
    paths = {evaluation.run_name: path for path, evaluation in zip(files, evaluations)}

    def asked(name: str) -> int | None:
        record = record_of_run(paths[name]) if name in paths else None
        return None if record is None or record.k is None else hits_asked(record.k, record.retriever)

    return asked


def unequal_depths(evaluations: Sequence[Deep], spelling: Spelling, key: str = "depth",
                   asked: Callable[[str], int | None] | None = None) -> str | None:
    """One line naming the measures that read past the shallowest run's depth into what a deeper
    run ranks, each run's depth and what to do, cutting every run by the setting `key` as `spelling`
    writes it (--depth 20, depth=20; a config's k: 20, which ranks its runs that deep); None where
    the runs are as deep (SAME_DEPTH) or no measure reads that far. A run ranking no judged query
    is left out: it is warned of itself. `asked`: the documents a query a run (by name) was asked
    for, None where unknown, which tells a run cut short from one that ranks all that matched (_hint);
    asked only of the shallowest runs."""
    depths = {e.run_name: e.usual_depth for e in evaluations if e.usual_depth > 0}
    if len(depths) < 2:
        return None
    shallowest, deepest = min(depths.values()), max(depths.values())
    measures = list(evaluations[0].measures)
    seeing = [name for name, measure in zip(measures, parse_measures(measures, announce=False))
              if measure.NAME not in RUN_BLIND
              and shallowest < SAME_DEPTH * min(measure.params.get("cutoff") or deepest, deepest)]
    if not seeing:
        return None
    shallow = [e for e in evaluations if e.usual_depth == shallowest]
    deeper = sorted(((depth, run) for run, depth in depths.items() if depth > shallowest), key=lambda d: -d[0])
    ranks = listed([f"{run} ranks {depth}" if i == 0 else f"{run} {depth}" for i, (depth, run) in enumerate(deeper)])
    return (f"{listed(seeing)} {'reaches' if len(seeing) == 1 else 'reach'} past the depth of "
            f"{listed([e.run_name for e in shallow])} (at most {counted(shallowest, 'document')} for 9 in 10 of "
            f"its judged queries) while {ranks}: "
            + _hint(shallow, f"{shallowest} ({spelling.given(key, shallowest)})",
                    {e.run_name: k for e in shallow if asked is not None and (k := asked(e.run_name)) is not None}))


def _hint(shallow: Sequence[Deep], cut: str, asked: Mapping[str, int]) -> str:
    """What to do: cut every run to the shallowest depth (`cut`), or rerun the shallowest runs deeper,
    those alone that may have been cut there. A run asked for more documents than it ranks (and scored
    deeper) ranks no more because nothing more matched its queries (BM25 ranks only the documents
    sharing a term with the query): rerunning it cannot help. Where what a run was asked for is not
    known, a depth that is no round cut (681, not 20 or 1000) may be such a run's: rerunning it is
    offered as what helps only if it was cut there."""
    def ranks_all(e: Deep) -> bool:
        return e.run_name in asked and e.usual_depth < min(asked[e.run_name], e.depth or asked[e.run_name])

    depth, cut_short = shallow[0].usual_depth, [e for e in shallow if not ranks_all(e)]
    if not cut_short:
        one = len(shallow) == 1
        return (f"{listed([e.run_name for e in shallow])} {'was' if one else 'were'} asked for "
                f"{listed([str(k) for k in sorted({asked[e.run_name] for e in shallow})])} documents a query and "
                f"{'ranks' if one else 'rank'} no more because nothing more matched, so rerunning "
                f"{'it' if one else 'them'} deeper cannot help; to compare one depth, cut every run to {cut}")
    rerun = (f"these compare depths, not systems; cut every run to {cut} or rerun "
             f"{listed([e.run_name for e in cut_short])} deeper")
    if _round(depth) or any(e.run_name in asked for e in cut_short):
        return rerun
    return (f"{rerun} if {'it was' if len(cut_short) == 1 else 'they were'} cut there ({depth} is no usual cut: a "
            f"run ranking every document that matches its queries ranks no deeper)")


def _round(depth: int) -> bool:
    """Whether `depth` is a usual cut of a run (10, 20, 25, 100, 1000): one ranking all that matched
    its queries stops anywhere (681)."""
    return len(digits := str(depth).rstrip("0")) == 1 or digits in ("15", "25", "75")
