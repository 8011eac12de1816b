"""trec_eval's order and measures on whole runs at once, in numpy.

`rank` puts every judged query of a run into trec_eval's order (score descending, ties by
docid descending), cut to depth (-M), as one array of grades query by query. Runs are
nearly always written in that order already, so the order is checked rather than sorted,
and docids are compared only inside tied groups whose grades differ (elsewhere the order of
tied documents cannot change a value).

`VECTORISED` computes the families that are functions of those grades (every accepted one
but infAP and the set measures, which ir-measures computes) exactly as trec_eval's C loops
do: the same divisions, log2 from the C library, and sums added one by one in rank order,
not pairwise; Judged@k, which trec_eval lacks, as ir-measures' judged provider does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from harness.evaluate.tables import NONPOOL, QrelsTable, RunTable, in_rank_order, range_rows, starts_of, tie_order


@dataclass
class Ranked:
    """Each evaluated query's ranking in trec_eval's order, cut to depth: its qrels query
    number, and the grades of its documents in rank order (NONPOOL: not in the qrels; UNJUDGED:
    graded below 0), the queries one after another."""

    query: np.ndarray  # qrels query number of each ranking
    starts: np.ndarray  # int64, where each ranking starts in `grades`, then the total
    grades: np.ndarray  # int32
    rows: np.ndarray | None  # each document's row in the RunTable (kept only when asked for)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def hits(self, level: int | None) -> np.ndarray:
        """The documents graded `level` or above (None: those the qrels do not list), in order."""
        if ("hits", level) not in self._cache:
            hit = self.grades == NONPOOL if level is None else self.grades >= level
            self._cache["hits", level] = np.flatnonzero(hit)
        return self._cache["hits", level]

    def locate(self, documents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ranking of each document (ascending) and its rank - 1 there."""
        ranking = np.searchsorted(self.starts, documents, side="right") - 1
        return ranking, documents - self.starts[ranking]

    def count_in_top(self, level: int | None, shown: int | np.ndarray | None) -> np.ndarray:
        """Per ranking, how many of its first `shown` documents (all: None) are hits at `level`."""
        hits = self.hits(level)
        ends = self.starts[1:] if shown is None else self.starts[:-1] + np.minimum(self.lengths, shown)
        return np.searchsorted(hits, ends) - np.searchsorted(hits, self.starts[:-1])


def rank(run: RunTable, qrels: QrelsTable, depth: int | None, keep_rows: bool = False) -> Ranked:
    """The run's judged queries in trec_eval's order, cut to `depth` (see Ranked). Written
    for memory: no array as long as the run is made unless it is needed."""
    grades, query, score = run.judged(qrels), run.query, run.score
    if not len(query):
        return Ranked(np.empty(0, np.int32), np.zeros(1, np.int64), grades, None)
    starts = starts_of(query)
    rows = None
    if not run.ordered:
        if not in_rank_order(query, score, starts):
            rows = np.lexsort((-score, query))
            query, score, grades = query[rows], score[rows], grades[rows]
            starts = starts_of(query)
        grades, rows = _break_ties(run, score, starts, grades, rows, keep_rows)
    judged = qrels.numbers(run.qids)[query[starts]]  # each ranking's query in the qrels, -1 if not judged
    lengths = np.diff(np.append(starts, len(query)))
    shown = np.where(judged >= 0, lengths if depth is None else np.minimum(lengths, depth), 0)
    if keep_rows and rows is None:
        rows = np.arange(len(grades))
    if (shown != lengths).any():  # an unjudged query, or a ranking deeper than `depth`
        grades = _ranges(grades, starts, shown)
        rows = _ranges(rows, starts, shown) if rows is not None else None
        judged, lengths = judged[shown > 0], shown[shown > 0]
    return Ranked(judged, np.concatenate([[0], np.cumsum(lengths)]), grades, rows)


def _ranges(values: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """values[start:start + size] for each range, one after another: copied slice by slice
    (adjacent ranges as one), not through an index array as long as the result (memory, time)."""
    ends = starts + sizes
    cut = np.flatnonzero(sizes > 0)
    if len(cut) > len(values) // 64:  # many short ranges: one index array is cheaper than the slices
        return values[range_rows(starts, sizes)]
    if not len(cut):
        return values[:0]
    starts, ends = starts[cut], ends[cut]
    joined = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # where a range does not continue the one before
    firsts, lasts = starts[np.concatenate([[0], joined])], ends[np.append(joined - 1, len(ends) - 1)]
    return np.concatenate([values[first:last] for first, last in zip(firsts.tolist(), lasts.tolist())])


def _break_ties(run: RunTable, score: np.ndarray, starts: np.ndarray, grades: np.ndarray,
                rows: np.ndarray | None, keep_rows: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The documents of each group of equal scores ordered by docid descending, where the
    group's grades differ (see tables.tie_order): (grades, rows), reordered copies where
    they changed."""
    moved = tie_order(score, starts, grades, lambda members: run.docids_of(members if rows is None else rows[members]))
    if moved is None:
        return grades, rows
    members, order = moved
    grades = grades.copy() if rows is None else grades  # the run's own, or already a reordered copy
    grades[members] = grades[order]
    if rows is None and not keep_rows:
        return grades, None
    rows = np.arange(len(grades)) if rows is None else rows
    rows[members] = rows[order]
    return grades, rows


# --- the measures ---------------------------------------------------------------------------


_LOG2 = {"table": np.empty(0)}


def _log2(size: int) -> np.ndarray:
    """log2(i + 2) for i < size, from the C library as trec_eval takes it (grown as needed)."""
    if len(_LOG2["table"]) < size:
        _LOG2["table"] = np.array([math.log2(i + 2) for i in range(max(size, 2 * len(_LOG2["table"])))])
    return _LOG2["table"][:size]


def _sums_in_order(segment: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Per segment (segment numbers ascending, values in rank order), the values added one by
    one from 0.0, as trec_eval's loops add them (numpy's reductions add pairwise)."""
    sums = np.zeros(size)
    if not len(values):
        return sums
    first = np.flatnonzero(np.concatenate([[True], segment[1:] != segment[:-1]]))
    counts = np.diff(np.append(first, len(segment)))
    longest_first = np.argsort(-counts, kind="stable")
    first, counts = first[longest_first], counts[longest_first]
    alive = len(first)
    for index in range(int(counts[0])):
        while counts[alive - 1] <= index:
            alive -= 1
        picked = first[:alive] + index
        sums[segment[picked]] += values[picked]
    return sums


def _num_rel(qrels: QrelsTable, level: int) -> np.ndarray:
    """Relevant judgments (grade >= level) per qrels query: trec_eval's num_rel."""
    key = ("num_rel", level)
    if key not in qrels._cache:
        qrels._cache[key] = np.bincount(qrels.query[qrels.grades >= level], minlength=len(qrels.qids))
    return qrels._cache[key]


def _ideal_dcg(qrels: QrelsTable, cutoff: int | None) -> np.ndarray:
    """Per qrels query, the DCG of its positive grades in descending order, to `cutoff`."""
    key = ("ideal", cutoff)
    if key not in qrels._cache:
        positive = qrels.grades > 0
        query, gain = qrels.query[positive], qrels.grades[positive]
        order = np.lexsort((-gain, query))
        query, gain = query[order], gain[order]
        starts = np.searchsorted(query, query)
        position = np.arange(len(query)) - starts
        if cutoff is not None:
            kept = position < cutoff
            query, gain, position = query[kept], gain[kept], position[kept]
        terms = gain / _log2(int(position.max(initial=-1)) + 1)[position]
        qrels._cache[key] = _sums_in_order(query, terms, len(qrels.qids))
    return qrels._cache[key]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval leaves the value 0)."""
    out = np.zeros(len(numerator))
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _level(params: dict) -> int:
    return params.get("rel", 1)


def _precision(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    return r.count_in_top(_level(p), p["cutoff"]) / p["cutoff"]


def _recall(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    found = r.count_in_top(_level(p), p["cutoff"])
    return _ratio(found.astype(float), _num_rel(q, _level(p))[r.query].astype(float))


def _success(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    return (r.count_in_top(_level(p), p["cutoff"]) > 0).astype(float)


def _reciprocal_rank(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    hits = r.hits(_level(p))
    where = np.searchsorted(hits, r.starts[:-1])
    found = where < len(hits)
    rank = np.full(len(r.query), np.iinfo(np.int64).max)  # 0-based; past the end without a relevant document
    rank[found] = hits[where[found]] - r.starts[:-1][found]
    shown = r.lengths if p.get("cutoff") is None else np.minimum(r.lengths, p["cutoff"])
    out = np.zeros(len(r.query))
    hit = rank < shown
    out[hit] = 1.0 / (rank[hit] + 1).astype(float)
    return out


def _average_precision(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    level = _level(p)
    hits = r.hits(level)
    ranking, position = r.locate(hits)
    so_far = np.arange(1, len(hits) + 1) - np.searchsorted(hits, r.starts[:-1])[ranking]  # relevant up to here
    if p.get("cutoff") is not None:
        kept = position < p["cutoff"]
        ranking, position, so_far = ranking[kept], position[kept], so_far[kept]
    terms = so_far.astype(float) / (position + 1).astype(float)
    return _ratio(_sums_in_order(ranking, terms, len(r.query)), _num_rel(q, level)[r.query].astype(float))


def _rprec(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    total = _num_rel(q, _level(p))[r.query]
    found = r.count_in_top(_level(p), total)  # in the first min(retrieved, relevant)
    return _ratio(found.astype(float), np.where(np.minimum(r.lengths, total) > 0, total, 0).astype(float))


def _ndcg(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    cutoff = p.get("cutoff")
    gains = r.hits(1)  # graded above 0
    ranking, position = r.locate(gains)
    if cutoff is not None:
        kept = position < cutoff
        gains, ranking, position = gains[kept], ranking[kept], position[kept]
    terms = r.grades[gains].astype(float) / _log2(int(position.max(initial=-1)) + 1)[position]
    dcg = _sums_in_order(ranking, terms, len(r.query))
    return _ratio(dcg, _ideal_dcg(q, cutoff)[r.query])


def _num_nonrel(qrels: QrelsTable, level: int) -> np.ndarray:
    """Judgments graded 0 to level - 1 per qrels query: bpref's judged non-relevant."""
    key = ("num_nonrel", level)
    if key not in qrels._cache:
        judged = (qrels.grades >= 0) & (qrels.grades < level)
        qrels._cache[key] = np.bincount(qrels.query[judged], minlength=len(qrels.qids))
    return qrels._cache[key]


def _bpref(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    """trec_eval's bpref: per relevant document ranked, 1 - (judged non-relevant ranked above
    it, at most R) / min(judged non-relevant, R), summed in rank order, over R. Computed here,
    not by pytrec_eval: its loop reads a count per grade below `rel=` past the end of its
    array for a query graded lower (a crash for a large rel=; the query scores 0 anyway)."""
    level = _level(p)
    relevant, nonrelevant = _num_rel(q, level)[r.query], _num_nonrel(q, level)[r.query]
    hits = r.hits(level)
    ranking, _ = r.locate(hits)
    below = np.flatnonzero((r.grades >= 0) & (r.grades < level))  # judged non-relevant, in rank order
    above = np.searchsorted(below, hits) - np.searchsorted(below, r.starts[:-1])[ranking]
    cap = relevant[ranking]
    terms = 1.0 - _ratio(np.minimum(above, cap).astype(float), np.minimum(nonrelevant[ranking], cap).astype(float))
    return _ratio(_sums_in_order(ranking, terms, len(r.query)), relevant.astype(float))


def _judged(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    """ir-measures' Judged@k (trec_eval has no such measure): of the first min(k, ranked)
    documents, the share the qrels list, whatever the grade (a negative one too: a qrels line
    is a judgment). Over the documents ranked, not k: a short ranking of unjudged documents
    reads 0 (1 - trec_eval's unj@k would count its empty ranks as judged)."""
    shown = np.minimum(r.lengths, p["cutoff"])  # at least 1: `rank` keeps no empty ranking
    return (shown - r.count_in_top(None, p["cutoff"])) / shown


def _num_ret(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    if "rel" not in p:
        return r.lengths.astype(float)
    return r.count_in_top(p["rel"], None).astype(float)


def _num_rel_ranked(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    return _num_rel(q, 1)[r.query].astype(float)


def _num_q(r: Ranked, q: QrelsTable, p: dict) -> np.ndarray:
    return np.ones(len(r.query))


# family -> (values of the ranked queries, value of a query the run lacks (trec_eval -c): None = 0,
# else per qrels query)
VECTORISED: dict[str, tuple[Callable[[Ranked, QrelsTable, dict], np.ndarray],
                            Callable[[QrelsTable], np.ndarray] | None]] = {
    "nDCG": (_ndcg, None), "P": (_precision, None), "R": (_recall, None), "AP": (_average_precision, None),
    "RR": (_reciprocal_rank, None), "Rprec": (_rprec, None), "Success": (_success, None), "Bpref": (_bpref, None),
    "Judged": (_judged, None),  # a query the run lacks: 0, as in ir-measures (nothing of its top k is judged)
    "NumQ": (_num_q, lambda q: np.ones(len(q.qids))),
    "NumRel": (_num_rel_ranked, lambda q: _num_rel(q, 1).astype(float)),
    "NumRet": (_num_ret, None),
}


def vectorised(measure) -> bool:
    return measure.NAME in VECTORISED


def values(measure, ranked: Ranked, qrels: QrelsTable) -> np.ndarray:
    """The measure for every qrels query (in qrels.qids order), -c style."""
    compute, empty = VECTORISED[measure.NAME]
    out = np.zeros(len(qrels.qids)) if empty is None else empty(qrels).astype(float)
    if len(ranked.query):
        out[ranked.query] = compute(ranked, qrels, dict(measure.params))
    return out
