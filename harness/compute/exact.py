"""Exact dense scores that do not depend on how the work is cut.

A float32 matrix product sums in an order set by BLAS blocking, threads and the matrix's
shape, so the same (query, passage) pair can score differently in the last bit when the
corpus is split into shards, and near-ties then swap. Here the fast float32 product only
proposes candidates; every candidate is then re-scored on its own as a float64 dot product
(numpy's pairwise sum along one row: the same for a row wherever it sits) rounded to
float32, and ranked by that score, then by corpus row. Every candidate whose exact score
could reach the k-th is kept: the float32 error of a dot product is below d * 2^-24 * |q| |v|,
and candidates are taken down to the k-th proposed score minus twice a 4x bound on it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# (query vectors [q x d], depth) -> (float32 scores [q x depth], rows [q x depth]), best first
Proposer = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def exact_scores(query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """float64 dot products of one query with each row, rounded to float32."""
    products = np.asarray(vectors, dtype=np.float64) * np.asarray(query, dtype=np.float64)
    return products.sum(axis=1).astype(np.float32)


def rank(scores: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best by score desc, then row asc."""
    order = np.lexsort((rows, -scores))[:k]
    return scores[order], rows[order]


def longest_norm(matrix: np.ndarray, rows: int = 65536) -> float:
    """The largest row norm, read block by block (a memory-mapped matrix stays on disk)."""
    largest = 0.0
    for start in range(0, len(matrix), rows):
        block = np.asarray(matrix[start : start + rows], dtype=np.float64)
        largest = max(largest, float((block**2).sum(axis=1).max()))
    return float(np.sqrt(largest))


def exact_search(
    matrix: np.ndarray, queries: np.ndarray, k: int, propose: Proposer, *, longest: float,
    exhaustive: bool = True, depth: int | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per query, the top-k rows of `matrix` by exact score (ties by row) and their scores.

    longest: longest_norm(matrix). exhaustive: widen the proposer's depth until no row outside it can reach the top k (an
    exact proposer then gives the exact answer); else (an approximate index) re-score the
    `depth` candidates it returns (default k) and rank those.
    """
    n = len(matrix)
    k = min(k, n)
    if k < 1:
        return [np.empty(0, np.float32)] * len(queries), [np.empty(0, np.int64)] * len(queries)
    depth = min(n, depth or (k + max(16, k // 8) if exhaustive else k))
    # twice a 4x bound on each float32 dot product's error
    margins = 8 * matrix.shape[1] * 2.0**-24 * longest * np.linalg.norm(queries.astype(np.float64), axis=1)
    if not exhaustive:
        margins[:] = 0
    while True:
        proposed, rows = propose(queries, depth)
        if not exhaustive or depth >= n:
            break
        floor = proposed[:, k - 1] - margins
        if np.all(proposed[:, -1] < floor):
            break
        depth = min(n, 2 * depth)
    all_scores, all_rows = [], []
    for query, query_scores, query_rows, margin in zip(queries, proposed, rows, margins):
        keep = query_rows >= 0  # faiss pads short lists with -1
        if exhaustive:
            keep &= query_scores >= query_scores[k - 1] - margin
        candidates = query_rows[keep].astype(np.int64)
        order = np.argsort(candidates)  # ascending rows: sequential reads of a memory map
        candidates = candidates[order]
        scores = exact_scores(query, matrix[candidates])
        best_scores, best_rows = rank(scores, candidates, k)
        all_scores.append(best_scores)
        all_rows.append(best_rows)
    return all_scores, all_rows
