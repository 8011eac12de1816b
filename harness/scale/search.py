"""Sharded dense search: each group of vector shards is searched where it lives (a Ray actor
per worker, or this process), candidates are re-scored exactly there, and the driver merges
the per-shard top-k by score desc, then corpus row. Exact search gives byte-identical runs
to the one-machine dense retriever; with `approx`, the vectors stay memory-mapped on the
worker and only its index's candidates are read to re-score them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from harness.compute.engines import EngineSpec, start_engine
from harness.compute.exact import exact_search, longest_norm, rank
from harness.corpus import Corpus
from harness.paths import cache_root
from harness.retrieve import SearchQuery
from harness.retrieve.embeddings import Encoder, default_device
from harness.retrieve.dense import SEARCH_BACKENDS, SHARDED_SEARCH
from harness.scale.encode import (VectorShard, encode_sharded, encoded_manifest, sharded_cache_folder,
                                  vector_shards)
from harness.trec import Run


@dataclass
class _Part:
    shard: VectorShard
    vectors: np.ndarray
    ids: list[str]
    longest: float
    propose: object


def shard_groups(shards: list[VectorShard], workers: int) -> list[list[VectorShard]]:
    """Consecutive shards in at most `workers` groups of near-equal count: one searcher each."""
    groups = min(len(shards), workers)
    return [[s for i, s in enumerate(shards) if i * groups // len(shards) == g] for g in range(groups)]


class ShardSearcher:
    """Holds some vector shards, memory-mapped (a worker's shards need not fit in its RAM):
    searched exactly (proposed on the GPU when the worker has one), or through an approximate
    index built once per shard and cached beside it."""

    def __init__(self, shards: list[VectorShard], approx: str | None, depth: int | None) -> None:
        from harness.compute import approx as approx_indexes

        self.approx, self.depth, self.parts = approx, depth, []
        backend = SEARCH_BACKENDS.get("torch" if default_device() == "cuda" else "numpy")  # proposes only: same run either way
        for shard in shards:
            ids = Path(shard.ids).read_text(encoding="utf-8").splitlines()
            vectors = np.load(shard.vectors, mmap_mode="r", allow_pickle=False)
            if approx is None:
                propose = backend(vectors)
            else:
                index_path = Path(shard.vectors).with_suffix(f".{approx}.faiss")
                index = approx_indexes.load_or_build(approx, vectors, index_path)
                propose = approx_indexes.proposer(index)
            longest = longest_norm(vectors) if approx is None else 0.0  # approximate: re-scored, no margin
            self.parts.append(_Part(shard, vectors, ids, longest, propose))
        self._starts = [part.shard.offset for part in self.parts]

    def search(self, queries: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray, list[str]]]:
        """Per query: exact scores, corpus rows and docids of this searcher's best k."""
        found = [([], []) for _ in queries]
        for part in self.parts:
            scores, rows = exact_search(part.vectors, queries, k, part.propose, longest=part.longest,
                                        exhaustive=self.approx is None, depth=self.depth)
            for (all_scores, all_rows), query_scores, query_rows in zip(found, scores, rows):
                all_scores.append(query_scores)
                all_rows.append(query_rows + part.shard.offset)
        results = []
        for all_scores, all_rows in found:
            scores, rows = rank(np.concatenate(all_scores), np.concatenate(all_rows), k)
            results.append((scores, rows, [self._docid(row) for row in rows]))
        return results

    def _docid(self, row: int) -> str:
        part = self.parts[bisect_right(self._starts, row) - 1]
        return part.ids[row - part.shard.offset]


@SHARDED_SEARCH.register("sharded")
class ShardedDenseRetriever:
    """The dense retriever on an engine: vectors encoded shard by shard (resumable), or those
    `harness encode` wrote to `encoded`, searched by one ShardSearcher per worker, per-shard top-k
    merged here."""

    def __init__(self, corpus: Corpus | None, encoder: Encoder, *, dtype: str, engine: EngineSpec,
                 shard_docs: int | None, approx: str | None, approx_depth: int | None, cache_dir: Path | None,
                 encoded: Path | None = None) -> None:
        self.corpus, self.encoder, self.dtype = corpus, encoder, dtype
        self.spec, self.shard_docs = engine, shard_docs
        self.approx, self.approx_depth = approx, approx_depth
        self.cache_dir = cache_dir or cache_root() / "embeddings"
        self.encoded = encoded  # a folder `harness encode` wrote: searched, never encoded again; checked now
        self._made = None if encoded is None else encoded_manifest(encoded, corpus, encoder, dtype)

    @cached_property
    def engine(self):
        return start_engine(self.spec)  # kept while the retriever lives

    @cached_property
    def folder(self) -> Path:
        from harness.scale.encode import SHARD_DOCS

        if self.encoded is not None:
            return self.encoded
        return sharded_cache_folder(self.cache_dir, self.corpus, self.encoder, self.dtype,
                                    self.shard_docs or SHARD_DOCS)

    @cached_property
    def _searchers(self):
        manifest = self._made or encode_sharded(self.corpus, self.encoder, self.folder, self.engine, dtype=self.dtype,
                                                shard_docs=self.shard_docs)
        return [self.engine.hold(ShardSearcher, group, self.approx, self.approx_depth)
                for group in shard_groups(vector_shards(self.folder, manifest), self.engine.workers)]

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        if not queries or k < 1:
            return Run.of({query.qid: [] for query in queries})
        searchers = self._searchers
        vectors = self.encoder.encode_queries([query.text for query in queries])
        answers = self.engine.get([searcher.call("search", vectors, k) for searcher in searchers])
        hits = {}
        for position, query in enumerate(queries):
            parts = [answer[position] for answer in answers]
            scores = np.concatenate([part[0] for part in parts])
            rows = np.concatenate([part[1] for part in parts])
            docids = [docid for part in parts for docid in part[2]]
            best_scores, best_rows = rank(scores, rows, k)
            by_row = dict(zip(rows.tolist(), docids))
            hits[query.qid] = [(by_row[row], float(score)) for score, row in zip(best_scores, best_rows.tolist())]
        return Run.of(hits)
