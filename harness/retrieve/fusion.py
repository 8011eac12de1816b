"""Fusion: one ranking from two or more retrievers' rankings of the same queries.

    {name: rrf, k: 60, retrievers: [{name: bm25, k1: 0.9, b: 0.4}, {name: dense}]}
    {name: linear, weights: [0.3, 0.7], retrievers: [{name: bm25}, {name: dense}]}

Every sub-retriever is built with the same corpus and asked for `max(depth, k)` hits per
query (depth 1000 by default, the depth of a TREC run and of pyserini's fusion), so a
fused top-10 is the top of the same fused list as a fused top-1000. The fused list is cut
to k. Sub-retrievers may themselves be fusions.

Ties in the fused score are broken by docid, ascending (byte order of the string), so the
output does not depend on the order in which sub-retrievers are listed.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from harness.corpus import Corpus
from harness.errors import shown
from harness.registry import REQUIRED, AtLeast, Between, OnePer, Param, ParamError, check_given
from harness.retrieve import FOLDER, RETRIEVERS, Retriever, SearchesAhead, SearchQuery, build, search_batches
from harness.retrieve.specs import RetrieverSpecs, parts
from harness.trec import Hit, Ranking, Run

DEFAULT_DEPTH = 1000


def reciprocal_rank_fusion(rankings: Sequence[Ranking], k: float = 60, limit: int | None = None) -> list[Hit]:
    """Cormack, Clarke and Büttcher (SIGIR 2009): score(d) = sum over rankings of 1 / (k + rank),
    rank 1-based (the position in the list). A document a ranking did not return adds nothing
    from it; a docid repeated within one ranking counts once, at its best rank. The best
    `limit` (default: all)."""
    fused: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        seen: set[str] = set()
        for rank, (docid, _) in enumerate(ranking, start=1):
            if docid not in seen:
                seen.add(docid)
                fused[docid] += 1.0 / (k + rank)
    return _best_first(fused, limit)


def linear_fusion(rankings: Sequence[Ranking], weights: Sequence[float], limit: int | None = None) -> list[Hit]:
    """score(d) = sum of weight_i * minmax_i(d), with each ranking's scores min-max
    normalised to [0, 1] per query (all-equal scores become 1). A document a ranking did not
    return gets 0 from it: the same as that ranking's lowest returned hit. A docid repeated
    within one ranking counts once, with its best score. The best `limit` (default: all)."""
    fused: dict[str, float] = defaultdict(float)
    for ranking, weight in zip(rankings, weights, strict=True):
        for docid, value in min_max(ranking).items():
            fused[docid] += weight * value
    return _best_first(fused, limit)


def min_max(ranking: Ranking) -> dict[str, float]:
    """(score - low) / (high - low) per docid (its best score), in [0, 1] for any finite
    scores: where high - low overflows (scores from 1e308 down to -1e308), each is halved
    before it is subtracted, an exact step that leaves the quotient as it is."""
    best = _best_hits(ranking)
    if not best:
        return {}
    low, high = min(best.values()), max(best.values())
    if high == low:
        return dict.fromkeys(best, 1.0)
    if math.isinf(high - low):
        return {docid: (score / 2 - low / 2) / (high / 2 - low / 2) for docid, score in best.items()}
    return {docid: (score - low) / (high - low) for docid, score in best.items()}


def _best_hits(ranking: Ranking) -> dict[str, float]:
    best: dict[str, float] = {}
    for docid, score in ranking:
        best[docid] = max(score, best.get(docid, score))
    return best


def _best_first(scores: Mapping[str, float], limit: int | None) -> list[Hit]:
    """Cut before the Hits are made: two fused lists of 1,000 give up to 2,000 documents."""
    return list(map(Hit._make, sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]))


class FusionRetriever(SearchesAhead):
    def __init__(self, retrievers: Sequence[Retriever], fuse: Callable[[list[Ranking], int], list[Hit]], depth: int):
        self.retrievers = list(retrievers)
        self.fuse = fuse
        self.depth = depth

    def search_batches(self, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
        """Each batch fused, in turn, from each retriever's `search_batches` (which work ahead)."""
        depth = max(self.depth, k)
        streams = [search_batches(retriever, batches, depth) for retriever in self.retrievers]
        try:
            for queries in batches:
                results = [next(stream) for stream in streams]
                yield Run.of({query.qid: self.fuse([list(result.pairs(query.qid)) for result in results], k)
                              for query in queries})
        finally:
            for stream in streams:
                stream.close()


def build_sub_retrievers(corpus: Corpus | None, specs: list[Mapping | str], index: str | None = None) -> list[Retriever]:
    """Each built through the registry with the fusion's corpus, and its `index` (the runner's
    corpus-as-an-index) unless the entry names its own."""
    return [build_from_spec(spec, corpus, index) for spec in specs]


def build_from_spec(spec: Mapping | str, corpus: Corpus | None, index: str | None) -> Retriever:
    """A nested `{name, params, label}` spec, a plain name (or the old flat `{name, param: ...}` shape) built."""
    name, params = parts(spec)
    if index is not None:
        params.setdefault("index", index)
    return build(name, corpus=corpus, **params)


@dataclass(frozen=True)
class Weights(OnePer):
    """The type of linear's weights: one number per retriever, whose positive ones add up to a
    finite number, and so do their negative ones. A fused score adds weight x score, score
    from 0 to 1, in the retrievers' order: it lies between those two sums (a document scoring
    1 where the weight is positive and 0 elsewhere gets the first), so that no fused score
    overflows to inf (or nan), which a run file cannot hold, exactly when neither sum does:
    [1e308, -1e308] is fine, [1e308, 1e308] is an error at its key when a config is read."""

    def check(self, key: str, value: Any) -> None:
        super().check(key, value)
        if value is None:
            return
        # as floats, as the fused scores are (each holds a float, by the check above; YAML's
        # 309-digit integers summed as ints were an OverflowError in isfinite), one at a
        # time in order, as they are added up (sum() of floats is compensated from Python 3.12)
        weights = [float(weight) for weight in value]
        for side in ([weight for weight in weights if weight > 0], [weight for weight in weights if weight < 0]):
            if not math.isfinite(reduce(operator.add, side, 0.0)):
                raise ParamError(key, "expected weights whose positive ones add up to a finite number, and whose "
                                      "negative ones too (a fused score can reach either sum: weights times scores "
                                      f"from 0 to 1), got {shown(value)}")


# what both fusions take besides their own
SUB_RETRIEVERS = Param("retrievers", RetrieverSpecs(least=2), REQUIRED, "the retrievers fused: a name or {name, params} each")
DEPTH = Param("depth", AtLeast(1), DEFAULT_DEPTH, "hits asked of each retriever per query (at least k)")
FUSED_INDEX = Param("index", FOLDER, None, "handed to each retriever that names none (a config's "
                    "`corpus: {index: NAME}`)")
RRF_K = Param("k", Between(0), 60, "RRF's rank constant (not the number of hits)")
WEIGHTS = Param("weights", Weights("retrievers", Between()), None, "one weight per retriever (default: equal, 1/n)")


@RETRIEVERS.register("rrf", "reciprocal rank fusion of two or more retrievers' rankings", [
    SUB_RETRIEVERS, RRF_K, DEPTH, FUSED_INDEX])
def rrf(
    corpus: Corpus | None = None,
    *,
    retrievers: Sequence[Mapping | str],
    k: float = 60,
    depth: int = DEFAULT_DEPTH,
    index: str | None = None,
) -> FusionRetriever:
    """Reciprocal rank fusion; `k` is RRF's rank constant (60), not the number of hits. The
    parameters are checked as declared above, called from Python too, before any is built."""
    check_given("rrf", (SUB_RETRIEVERS, RRF_K, DEPTH), retrievers=retrievers, k=k, depth=depth)
    subs = build_sub_retrievers(corpus, retrievers, index)
    return FusionRetriever(subs, lambda rankings, limit: reciprocal_rank_fusion(rankings, k, limit), depth)


@RETRIEVERS.register("linear", "weighted sum of two or more retrievers' min-max normalised scores", [
    SUB_RETRIEVERS, WEIGHTS, DEPTH, FUSED_INDEX])
def linear(
    corpus: Corpus | None = None,
    *,
    retrievers: Sequence[Mapping | str],
    weights: Sequence[float] | None = None,
    depth: int = DEFAULT_DEPTH,
    index: str | None = None,
) -> FusionRetriever:
    """Weighted sum of min-max normalised scores; equal weights (1/n) unless given. The
    parameters are checked as declared above, called from Python too, before any is built."""
    check_given("linear", (SUB_RETRIEVERS, WEIGHTS, DEPTH), retrievers=retrievers, weights=weights, depth=depth)
    if weights is None:
        weights = [1.0 / len(retrievers)] * len(retrievers)
    weights = [float(weight) for weight in weights]
    subs = build_sub_retrievers(corpus, retrievers, index)
    return FusionRetriever(subs, lambda rankings, limit: linear_fusion(rankings, weights, limit), depth)
