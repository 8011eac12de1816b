"""Runs ranked to different depths, compared on a measure that reads past the shallowest.

R@1000 or AP of a run that stops at 100 documents a query against one that ranks 1000 is lower
because the run is shallower, not because it ranks worse: trec_eval prints both without a word.
`harness eval`, `harness compare` and `harness run` say it in one line (compare's report and run's
leaderboard too), naming the measures, the runs and how deep each goes: the documents it ranks for
9 in 10 of its judged queries at most, after --depth (Evaluation.usual_depth, `usual_depth`): one
query ranked deeper changes no run's depth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from harness.errors import Spelling, counted, listed
from harness.evaluate.measures import parse_measures

# a run at least this share of another's depth is taken as deep as it: runs made from passage runs by
# keeping each document's best passage rank fewer documents than they were cut to (CAsT 2021's organiser
# runs, cut at 100 passages, rank at most 81 to 94 documents for 9 in 10 of their judged queries)
SAME_DEPTH = 0.8
RUN_BLIND = ("NumQ", "NumRel")  # counted from the qrels: no run's depth changes them


class Deep(Protocol):
    """What the check reads of an Evaluation."""

    run_name: str
    measures: list[str]
    usual_depth: int


def usual_depth(lengths: Iterable[int]) -> int:
    """How deep a run ranks its judged queries: the documents it ranks for 9 in 10 of the judged queries
    it answers at most (their 90th percentile); 0 where it answers none. Not the most for any one query:
    a run of k=20 that ranks one query 300 deep is a run of depth 20."""
    ranked = sorted(length for length in lengths if length > 0)
    return ranked[(9 * len(ranked) + 9) // 10 - 1] if ranked else 0


def unequal_depths(evaluations: Sequence[Deep], spelling: Spelling, key: str = "depth") -> str | None:
    """One line naming the measures that read past the shallowest run's depth into what a deeper
    run ranks, each run's depth and what to do, cutting every run by the setting `key` as `spelling`
    writes it (--depth 20, depth=20; a config's k: 20, which ranks its runs that deep); None where
    the runs are as deep (SAME_DEPTH) or no measure reads that far. A run ranking no judged query
    is left out: it is warned of itself."""
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
    shallow = listed([run for run, depth in depths.items() if depth == shallowest])
    deeper = sorted(((depth, run) for run, depth in depths.items() if depth > shallowest), key=lambda d: -d[0])
    ranks = listed([f"{run} ranks {depth}" if i == 0 else f"{run} {depth}" for i, (depth, run) in enumerate(deeper)])
    return (f"{listed(seeing)} {'reaches' if len(seeing) == 1 else 'reach'} past the depth of {shallow} "
            f"(at most {counted(shallowest, 'document')} for 9 in 10 of its judged queries) while {ranks}: "
            f"these compare depths, not systems; cut every run to {shallowest} "
            f"({spelling.given(key, shallowest)}) or rerun {shallow} deeper")
