"""The exact BM25 route's inner loops, compiled (numba): one query's search over the
memory-mapped postings, in Lucene's float32 arithmetic, without the GIL.

Why compiled: at a million passages a query matches millions of postings, and numpy pays a
pass over memory per operation (gather the norms, multiply, add, divide, subtract, scatter
the sums) plus the pruning's many small arrays; a loop per posting does it in one pass and
can prune posting by posting, as Lucene does.

The arithmetic is `lucene_scorer`'s (see there): each clause's score
w - w / (1 + tf * normInverse) in float32, a document's clause scores summed in double (a
sum of a few float32 values of similar size is exact in double, so the order of the terms
does not change it) and cast to float32.

The pruning is Lucene's block-max MaxScore (`MaxScoreBulkScorer`), exactly: the export
keeps, for every BLOCK postings of a term, their largest frequency and smallest norm byte,
which bound the block's scores. Documents are taken a window at a time; in each window, the
terms whose bounds there add up to less than the k-th best score so far (a lower bound of
the final k-th score) are non-essential: their postings are not read, only looked up for
the documents that the other terms could lift to that score.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import numpy as np
from numba import njit

from harness.errors import HarnessError
from harness.paths import cache_root

BLOCK = 128  # postings per block of the export's score bounds (Lucene's block size too)
WINDOW = 8192  # documents scored together: a window's sums stay in the CPU cache
_F32 = np.float32
_MISSING = np.float32(-np.inf)
# A document no clause has matched yet holds -0.0 in an accumulator: adding any clause score,
# 0 included, makes it +0.0 or more, so a match with score 0 still counts (as in Lucene).
_UNTOUCHED = -0.0
_UNTOUCHED_BITS = np.int64(-(2**63))  # its bits, as an int64


try:  # numba's cache classes (numba.core.caching, not a public API: checked on 0.68.1)
    from numba.core.caching import (CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator, _CacheLocator,
                                    _SourceFileBackedLocatorMixin)
except ImportError:  # moved in a later numba: the kernels are compiled in memory, as with no writable cache
    _KernelCache = None
else:
    class _HarnessCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
        """The compiled kernels kept in the harness's cache folder (<cache>/numba), where its other
        caches live, rather than beside this file (numba's default: site-packages in a wheel)."""

        def __init__(self, py_func: Callable, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = str(cache_root() / "numba" / self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self) -> str:
            return self._cache_path

        @classmethod
        def from_function(cls, py_func: Callable, py_file: str) -> _HarnessCacheLocator | None:
            """None (no cache) where the cache folder cannot be found or written."""
            try:
                return super().from_function(py_func, py_file)
            except HarnessError:  # no HOME to put the cache folder in
                return None

    class _KernelCacheImpl(CompileResultCacheImpl):
        _locator_classes = [UserProvidedCacheLocator, _HarnessCacheLocator]  # NUMBA_CACHE_DIR if set, else ours

    class _KernelCache(FunctionCache):
        _impl_class = _KernelCacheImpl


def _kernel(function: Callable) -> Callable:
    """`function` compiled (numba, nogil), its machine code cached in NUMBA_CACHE_DIR if set, else in
    the harness's cache folder: for this module's kernels alone, numba's settings left as they are
    for other code. Where neither can be written (a read-only HOME and cache), it is compiled in
    memory, once a process, without a word: the same scores, a few seconds later, where a note would
    repeat in every process (each command, each worker) that imports the kernels."""
    kernel = njit(nogil=True, error_model="numpy")(function)
    if _KernelCache is not None:
        with contextlib.suppress(RuntimeError):  # numba's "no locator available": no cache
            kernel._cache = _KernelCache(function)  # what njit(cache=True) sets, with our locators
    return kernel


@_kernel
def _frequency(freqs, big_freqs, p):
    """Posting p's frequency: 16 bits, or (65535) looked up among the rare larger ones."""
    tf = np.int64(freqs[p])
    if tf == 65535 and len(big_freqs):
        where = np.searchsorted(big_freqs[:, 0], p)
        if where < len(big_freqs) and big_freqs[where, 0] == p:
            return big_freqs[where, 1]
    return tf


@_kernel
def _score(weight, tf, norm_inverse):
    return weight - weight / (_F32(1) + _F32(tf) * norm_inverse)


@_kernel
def block_bounds(starts, first_blocks, postings, freqs, big_freqs, norms):
    """Each term's blocks of BLOCK postings (term t's are first_blocks[t]:first_blocks[t+1],
    `lucene_scorer.block_starts`): their largest frequency and smallest norm byte."""
    max_tf = np.empty(first_blocks[-1], dtype=np.int32)
    min_norm = np.empty(first_blocks[-1], dtype=np.uint8)
    block = 0
    for t in range(len(starts) - 1):
        for first in range(starts[t], starts[t + 1], BLOCK):
            tf, norm = 0, 255
            for p in range(first, min(first + BLOCK, starts[t + 1])):
                tf = max(tf, _frequency(freqs, big_freqs, p))
                norm = min(norm, norms[postings[p]])
            max_tf[block] = min(tf, np.iinfo(np.int32).max)
            min_norm[block] = norm
            block += 1
    return max_tf, min_norm


@_kernel
def _reaching(sums, touched, count, rest, threshold):
    """Keeps (in order) the documents of touched[:count] that `rest` more could lift to the
    threshold, marks the others untouched; returns how many are kept."""
    kept = 0
    for c in range(count):
        local = touched[c]
        reaches = not _F32(sums[local] + rest) < threshold
        sums[local] = sums[local] if reaches else _UNTOUCHED
        touched[kept] = local
        kept += reaches
    return kept


@_kernel
def _first_at_least(postings, low, high, doc, step):
    """The first position in postings[low:high] (sorted) holding doc or more: galloping from
    low by `step` (1: a cursor moving forward), then binary search."""
    while low + step < high and postings[low + step] < doc:
        low += step
        step *= 2
    high = min(low + step, high)
    while low < high:
        middle = (low + high) // 2
        if postings[middle] < doc:
            low = middle + 1
        else:
            high = middle
    return low


@_kernel
def top_candidates(terms, weights, k, window, starts, postings, freqs, big_freqs, norms, norm_inverse,
                   block_starts, block_max_tf, block_min_norm, best_norm_inverse):
    """The documents (int32) and float32 scores of every document scoring at least the k-th
    best score, unordered. `norm_inverse[n]`: BM25Similarity's cache for norm byte n (256
    floats stay in the CPU cache, unlike one per document); `best_norm_inverse[n]`: the
    largest of them for a norm byte n or more (a block's bound from its smallest norm byte)."""
    n = len(terms)
    cursor = np.empty(n, dtype=np.int64)  # each term's first posting not yet passed
    first = np.empty(n, dtype=np.int64)  # and its postings in the window: first:cursor
    bound = np.empty(n, dtype=np.float32)  # the term's best score in the window
    for i in range(n):
        cursor[i] = starts[terms[i]]
    order = np.empty(n, dtype=np.int64)
    below = np.empty(n + 1, dtype=np.float64)  # below[q]: bound sum of order[:q]
    sums = np.full(window, _UNTOUCHED)
    bits = sums.view(np.int64)
    touched = np.empty(window, dtype=np.int32)
    heap = np.empty(k, dtype=np.float32)  # the k best scores so far, smallest first
    size = 0
    threshold = _MISSING  # heap[0] once full: at most the final k-th score
    docs = np.empty(2 * k + 16, dtype=np.int32)  # every document that scored >= threshold
    scores = np.empty(2 * k + 16, dtype=np.float32)
    found = 0
    for start in range(0, len(norms), window):
        stop = min(start + window, len(norms))
        live = 0
        total = 0.0
        for i in range(n):
            t = terms[i]
            first[i] = cursor[i]
            cursor[i] = _first_at_least(postings, cursor[i], starts[t + 1], stop, 1)
            if first[i] == cursor[i]:
                continue
            best = _F32(0)
            base = block_starts[t]
            for b in range(base + (first[i] - starts[t]) // BLOCK, base + (cursor[i] - 1 - starts[t]) // BLOCK + 1):
                best = max(best, _score(weights[i], block_max_tf[b], best_norm_inverse[block_min_norm[b]]))
            bound[i] = best
            total += np.float64(best)
            j = live  # insertion sort, smallest bound first
            while j > 0 and bound[order[j - 1]] > best:
                order[j] = order[j - 1]
                j -= 1
            order[j] = i
            live += 1
        if live == 0 or _F32(total) < threshold:
            continue
        essential = 0  # order[:essential] cannot lift a document to the threshold alone
        below[0] = 0.0
        while essential < live and _F32(below[essential] + bound[order[essential]]) < threshold:
            below[essential + 1] = below[essential] + bound[order[essential]]
            essential += 1
        count = 0  # touched[:count]: the window's documents the essential terms match
        for q in range(essential, live):
            i = order[q]
            for p in range(first[i], cursor[i]):
                doc = postings[p]
                touched[count] = doc - start
                count += bits[doc - start] == _UNTOUCHED_BITS
                # -0.0 + score is the score, +0.0 for 0
                sums[doc - start] += np.float64(
                    _score(weights[i], _frequency(freqs, big_freqs, p), norm_inverse[norms[doc]]))
        ordered = False
        for q in range(essential - 1, -1, -1):  # the non-essential terms, best bound first
            count = _reaching(sums, touched, count, below[q + 1], threshold)
            i = order[q]
            if cursor[i] - first[i] <= 16 * count:  # read the term's postings in the window
                for p in range(first[i], cursor[i]):
                    local = postings[p] - start
                    if bits[local] != _UNTOUCHED_BITS:  # scored only for a document still in play
                        sums[local] += np.float64(
                            _score(weights[i], _frequency(freqs, big_freqs, p), norm_inverse[norms[start + local]]))
            else:  # or look the documents up in them, in order
                if not ordered:
                    touched[:count].sort()
                    ordered = True
                p = first[i]
                for c in range(count):
                    doc = start + touched[c]
                    p = _first_at_least(postings, p, cursor[i], doc, 1)
                    if p < cursor[i] and postings[p] == doc:
                        sums[touched[c]] += np.float64(
                            _score(weights[i], _frequency(freqs, big_freqs, p), norm_inverse[norms[doc]]))
        for c in range(count):
            doc = start + touched[c]
            sum_ = sums[touched[c]]
            sums[touched[c]] = _UNTOUCHED
            if _F32(sum_) < threshold:
                continue
            score = _F32(sum_)
            if found == len(docs):
                docs = np.concatenate((docs, np.empty(found, dtype=np.int32)))
                scores = np.concatenate((scores, np.empty(found, dtype=np.float32)))
            docs[found] = doc
            scores[found] = score
            found += 1
            if size < k:  # sift up
                j = size
                size += 1
                while j > 0 and heap[(j - 1) // 2] > score:
                    heap[j] = heap[(j - 1) // 2]
                    j = (j - 1) // 2
                heap[j] = score
            elif score > heap[0]:  # replace the smallest, sift down
                j = 0
                while 2 * j + 1 < k:
                    child = 2 * j + 1
                    if child + 1 < k and heap[child + 1] < heap[child]:
                        child += 1
                    if heap[child] >= score:
                        break
                    heap[j] = heap[child]
                    j = child
                heap[j] = score
            if size == k:
                threshold = heap[0]
    keep = scores[:found] >= threshold
    return docs[:found][keep], scores[:found][keep]


@_kernel
def adjust_ties(scores):
    """Anserini's ScoreTiesAdjusterReranker on one best-first float32 score list: round to
    1e-4 (in double, half up), then lower the n-th of a run of near-ties (a gap to the
    previous adjusted score not above 1e-4f) by n * 1e-6f, in float32 as Java does it."""
    adjusted = np.empty(len(scores), dtype=np.float32)
    ties = _F32(0)
    for i in range(len(scores)):
        scaled = np.float64(scores[i]) * 1e4
        floor = math.floor(scaled)
        rounded = _F32((floor + (1.0 if scaled - floor >= 0.5 else 0.0)) / 1e4)  # Math.round, then / 1e4d
        ties = ties + _F32(1) if i > 0 and not adjusted[i - 1] - rounded > _F32(1e-4) else _F32(0)
        adjusted[i] = rounded - _F32(1e-6) * ties
    return adjusted


def compile_kernels() -> None:
    """The kernels compiled (or read from numba's cache) for the argument types a search
    passes, by running them on a one-posting index: the bm25 retriever's preload, so that a
    first search does not wait 5 s for the compiler. The postings and frequencies are
    read-only, as the memory-mapped export's are (numba compiles each kind apart)."""
    def read_only(array: np.ndarray) -> np.ndarray:
        array.setflags(write=False)
        return array

    starts, first_blocks = np.array([0, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    postings, freqs = read_only(np.zeros(1, dtype=np.int32)), read_only(np.ones(1, dtype=np.uint16))
    big_freqs, norms = np.zeros((0, 2), dtype=np.int64), np.ones(1, dtype=np.uint8)
    max_tf, min_norm = block_bounds(starts, first_blocks, postings, freqs, big_freqs, norms)
    inverse = np.ones(256, dtype=_F32)
    _, scores = top_candidates(np.zeros(1, dtype=np.int64), np.ones(1, dtype=_F32), 1, WINDOW, starts, postings,
                               freqs, big_freqs, norms, inverse, first_blocks, max_tf, min_norm, inverse.copy())
    adjust_ties(scores)
