"""Approximate inner-product indexes (faiss) that propose candidates for exact re-scoring.

For the 100M-passage case: exact search reads every vector for every query batch; HNSW
(graph, vectors kept) and IVF-PQ (inverted lists of 48-byte codes) read a small part. The
candidates an index returns are re-scored exactly (exact.py) where the vectors live, so
the scores in a run are always exact; only which passages are found may differ.
benchmarks/scale.py reports recall@1000 against exact search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.atomic import atomic_write
from harness.errors import HarnessError
from harness.registry import Registry
from harness.compute.exact import Proposer

# name -> (matrix [n x d] float32) -> faiss index, trained and filled
APPROX: Registry[Callable[[np.ndarray], object]] = Registry("approximate dense index")
_BLOCK = 65536


def _add(index, matrix: np.ndarray) -> None:
    for start in range(0, len(matrix), _BLOCK):
        index.add(np.ascontiguousarray(matrix[start : start + _BLOCK], dtype=np.float32))


@APPROX.register("hnsw", needs=("faiss",))
def hnsw(matrix: np.ndarray):
    """HNSW, 32 links per node, efConstruction 200; efSearch is set per search."""
    import faiss

    index = faiss.IndexHNSWFlat(matrix.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 200
    _add(index, matrix)
    return index


@APPROX.register("ivfpq", needs=("faiss",))
def ivfpq(matrix: np.ndarray):
    """IVF with ~4 sqrt(n) lists and PQ codes of d/8 bytes (8-bit codes once n allows training them)."""
    import faiss

    n, dimension = matrix.shape
    if dimension % 8:
        raise HarnessError(f"ivfpq needs a vector dimension divisible by 8, not {dimension}")
    nlist = max(1, min(int(4 * math.sqrt(n)), n // 39))
    nbits = 8 if n >= 256 * 39 else max(1, min(8, int(math.log2(max(2, n // 39)))))
    quantizer = faiss.IndexFlatIP(dimension)
    index = faiss.IndexIVFPQ(quantizer, dimension, nlist, dimension // 8, nbits, faiss.METRIC_INNER_PRODUCT)
    wanted = max(256, nlist) * 39  # faiss's minimum for k-means on the lists and the codebooks
    sample = np.ascontiguousarray(matrix[:: max(1, n // wanted)], dtype=np.float32)
    index.train(sample)
    _add(index, matrix)
    index.nprobe = max(1, nlist // 8)
    return index


def load_or_build(name: str, matrix: np.ndarray, path: Path):
    """The index cached at `path` (written atomically), else built and saved."""
    import faiss

    builder = APPROX.get(name)
    if path.is_file():
        return faiss.read_index(str(path))
    index = builder(matrix)
    with atomic_write(path, "wb") as handle:
        handle.write(faiss.serialize_index(index).tobytes())
    return index


def proposer(index) -> Proposer:
    def propose(queries: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        if hasattr(index, "hnsw"):
            index.hnsw.efSearch = max(128, depth)
        scores, rows = index.search(np.ascontiguousarray(queries, dtype=np.float32), depth)
        return scores, rows

    return propose
