"""BM25 (optionally + RM3) over a Lucene index, with pyserini's rankings and scores.

The index is a local folder, a pyserini prebuilt index name, or the cached index of the
corpus (built on first use). Two backends give the same hits:

- `numpy` (default): the index's postings are exported once (beside it) and memory-mapped,
  and queries are scored by a compiled loop (numba; block-max MaxScore) exactly as Lucene
  and Anserini score them (`lucene_scorer`, `_lucene_kernels`), queries analysed by the
  analyzer Anserini's searcher uses (its default English one) and RM3's expanded query
  computed by Anserini; at k=1000 on 1.26M passages 7.5-9.4x pyserini's `batch_search` on
  this busy 2-core machine (`benchmarks/bm25_speed.py --passages N`). Indexes it cannot
  read (deleted documents) fall back to pyserini, with one line on stderr.
- `pyserini`: multi-threaded `batch_search`es of `PYSERINI_BATCH` queries, whose cost at
  k=1000 is Anserini's (it loads every hit's stored document).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any, Literal

from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.paths import commit_key, home_expanded
from harness.registry import INT_LIMIT, AtLeast, Between, LocalPath, Param, ParamError, check_given
from harness.retrieve import RETRIEVERS, THREADS, SearchQuery
from harness.retrieve.java import ensure_jvm, path_problem
from harness.retrieve.lucene import cached_index, is_index
from harness.retrieve.lucene_scorer import (
    LuceneIndex, LuceneScorer, analyze, bag_of_words, feedback_query, read_index,
)
from harness.trec import Run, maxp

# MaxP searches this many passages per wanted document, as Anserini's MaxP regressions do
# (-hits 10000 -selectMaxPassage.hits 1000).
MAXP_PASSAGES_PER_DOC = 10
BACKENDS = ("numpy", "pyserini")
DEFAULT_BACKEND = "numpy"
PYSERINI_BATCH = 64


# Lucene's BM25Similarity and Anserini's RM3 refuse settings out of these ranges, as a Java
# exception in the middle of a run: declared once, checked when a config is read and by BM25
# itself (before any index is built or read)
K1 = Param("k1", Between(0), 0.9, "BM25 term-frequency saturation")
B = Param("b", Between(0, 1), 0.4, "BM25 length normalisation")
FB_TERMS = Param("fb_terms", AtLeast(1), 10, "RM3: expansion terms")
FB_DOCS = Param("fb_docs", AtLeast(1), 10, "RM3: feedback documents")
ORIGINAL_WEIGHT = Param("original_weight", Between(0, 1), 0.5, "RM3: weight of the original query")
SETTINGS = (K1, B, FB_TERMS, FB_DOCS, ORIGINAL_WEIGHT)
BACKEND = Param("backend", Literal[BACKENDS], DEFAULT_BACKEND,
                "numpy: exact Lucene scores in numpy; pyserini: Anserini's own search")


@dataclass(frozen=True)
class LuceneFolder(LocalPath):
    """The type of bm25's `index`: a Lucene index folder, told as Lucene tells one (it holds a
    segments_N commit file: DirectoryReader.indexExists), or a pyserini prebuilt index name.
    Any other folder (one `harness encode` wrote, a corpus's) is an error at its key when a
    config is read, not a Java traceback once its run starts."""

    def problem(self, value: object) -> str | None:
        if (problem := super().problem(value)) is not None or not isinstance(value, (str, PurePath)):
            return problem
        folder = home_expanded(value)
        if os.path.isdir(folder) and not is_index(folder):  # (a name too long for a path is no folder)
            return (f"{str(value)!r} is not a Lucene index (no segments_N file in it): expected a folder "
                    "`harness index` wrote (or another Lucene index) or a pyserini prebuilt index name")
        return path_problem(folder) if os.path.isdir(folder) else None  # a non-ASCII name under LC_ALL=C


INDEX = Param("index", LuceneFolder(folder=True, or_name=True, or_none=True), None, "a Lucene index folder or "
              "pyserini prebuilt index name (default: the corpus's own index, built on first use)")


class BM25:
    def __init__(
        self,
        index: str,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        rm3: bool = False,
        fb_terms: int = 10,
        fb_docs: int = 10,
        original_weight: float = 0.5,
        threads: int | None = None,
        maxp: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        check_given("bm25", (*SETTINGS, BACKEND), k1=k1, b=b, fb_terms=fb_terms, fb_docs=fb_docs,
                    original_weight=original_weight, backend=backend)
        self.threads = threads or os.cpu_count() or 1
        self.maxp = maxp
        self.rm3 = rm3
        folder, prebuilt = _index_folder(index)
        ensure_jvm(Path(folder))
        self.scorer: LuceneScorer | None = None
        if backend == "numpy":
            read = _read_index(folder, commit_key(folder))
            if isinstance(read, LuceneIndex):
                self.scorer = LuceneScorer(read, k1, b)
            else:
                print(f"bm25: searching {index} through pyserini: {read}", file=sys.stderr)
        from jnius import autoclass

        self.anserini = None  # Anserini's searcher: pyserini's route, and RM3's feedback terms
        if self.scorer is None:
            from pyserini.search.lucene import LuceneSearcher

            self.searcher = LuceneSearcher(folder, prebuilt_index_name=prebuilt)
            self.anserini = self.searcher.object
        elif rm3:  # Anserini's own searcher, which pyserini wraps, without importing pyserini
            self.anserini = autoclass("io.anserini.search.SimpleSearcher")(folder)
        if self.anserini is not None:
            self.anserini.set_bm25(float(k1), float(b))
            self.analyzer = self.anserini.get_analyzer()
        else:  # the searcher's analyzer made alone: SimpleSearcher's class took 0.6 s to load
            self.analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
        if rm3:
            if self.scorer is None:
                try:
                    self.searcher.set_rm3(int(fb_terms), int(fb_docs), float(original_weight))
                except TypeError as error:  # pyserini's way of saying "no docvectors"
                    raise HarnessError(f"RM3 needs an index with document vectors: {index}: {error}") from None
            elif not self.anserini.reader.getTermVectors(0):
                raise HarnessError(f"RM3 needs an index with document vectors: {index}")
            else:  # pyserini's set_rm3 for an index with docvectors
                self.anserini.set_rm3(None, int(fb_terms), int(fb_docs), float(original_weight), False, True)

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        qids = [query.qid for query in queries]
        if len(set(qids)) != len(qids):
            raise HarnessError("query ids must be unique within one search")
        # within a Java int: Anserini's hits are one (Lucene caps them at the index's size)
        depth = min(k * MAXP_PASSAGES_PER_DOC if self.maxp else k, INT_LIMIT)
        with _collector_paused():  # a million short-lived hits would set the GC off again and again
            found = self._search_numpy(queries, depth) if self.scorer else self._search_pyserini(queries, depth)
            if self.maxp:  # iKAT/ClueWeb22 passage ids: `<docid>:<n>`
                found = Run.of({qid: maxp(found.pairs(qid), ":")[:k] for qid in qids})
            return found

    def _search_numpy(self, queries: Sequence[SearchQuery], depth: int) -> Run:
        texts = [query.text for query in queries]
        if self.rm3:
            bags = [feedback_query(self.anserini, text) for text in texts]
        else:
            bags = [bag_of_words(tokens) for tokens in analyze(self.analyzer, texts)]
        return self.scorer.search(dict(zip((query.qid for query in queries), bags)), depth, threads=self.threads)

    def _search_pyserini(self, queries: Sequence[SearchQuery], depth: int) -> Run:
        """`batch_search` by `PYSERINI_BATCH` queries: Anserini holds every hit's stored document
        until the batch is done, so a whole run at k=1000 would need a heap of gigabytes."""
        found = {}
        for start in range(0, len(queries), PYSERINI_BATCH):
            batch = queries[start : start + PYSERINI_BATCH]
            qids = [query.qid for query in batch]
            results = self.searcher.batch_search([q.text for q in batch], qids, k=depth, threads=self.threads)
            found.update({qid: [(hit.docid, hit.score) for hit in results.get(qid, ())] for qid in qids})
        return Run.of(found)


@contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@lru_cache(maxsize=4)
def _read_index(folder: str, commit: str) -> LuceneIndex | str:
    """One reading per index commit and process, shared by every BM25 on it (plain, RM3, fused)."""
    from jnius import autoclass

    reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(folder)
    try:
        return read_index(reader, Path(folder))
    finally:
        reader.close()


def _index_folder(index: str) -> tuple[str, str | None]:
    """The index folder (`~` expanded, as the config check expands it), and the pyserini prebuilt
    name it was downloaded under (if any)."""
    if home_expanded(index).is_dir():
        return str(home_expanded(index)), None
    ensure_jvm()  # pyserini needs the harness's JVM options before its first import
    from pyserini.util import download_prebuilt_index

    try:
        return download_prebuilt_index(index, verbose=False), index
    except ValueError as error:  # an unknown name, or a known one whose every URL failed (offline)
        if not str(error).startswith("Unrecognized"):
            raise HarnessError(f"cannot download pyserini prebuilt index {index!r}: {error} (none is downloaded "
                               "without the network: give an index folder)") from None
        raise HarnessError(f"index {index!r} is neither an index folder nor a pyserini prebuilt index name") from None
    except OSError as error:
        raise HarnessError(f"cannot download pyserini prebuilt index {index!r}: {error}") from None


def _compiled_kernels() -> None:
    """bm25's preload: the numpy route's loops compiled (numba) before the first search."""
    from harness.retrieve._lucene_kernels import compile_kernels

    compile_kernels()


def _numpy_backend(params: Mapping[str, Any]) -> bool:
    """Whether a bm25 with these params searches by the numpy route, the kernels' only user
    (pyserini's needs no numba)."""
    return params.get("backend", DEFAULT_BACKEND) == "numpy"


@RETRIEVERS.register("bm25", "BM25 (optionally with RM3) over a Lucene index, scored as pyserini scores it", [
    INDEX,
    K1, B,
    Param("rm3", bool, False, "expand each query with RM3 pseudo-relevance feedback (needs document vectors)"),
    FB_TERMS, FB_DOCS, ORIGINAL_WEIGHT, THREADS,
    Param("maxp", bool, False, "rank documents by their best passage (ids `<docid>:<n>`, as iKAT's)"),
    BACKEND,
], preload=_compiled_kernels, preload_if=_numpy_backend, needs=("pyserini",))
def bm25(corpus: Corpus | None = None, *, index: str | None = None, k1: float = 0.9, b: float = 0.4,
         rm3: bool = False, fb_terms: int = 10, fb_docs: int = 10, original_weight: float = 0.5,
         threads: int | None = None, maxp: bool = False, backend: str = DEFAULT_BACKEND) -> BM25:
    """Factory: `index` wins; else the corpus's cached index (built on first use)."""
    settings = {"k1": k1, "b": b, "original_weight": original_weight, "fb_terms": fb_terms, "fb_docs": fb_docs}
    check_given("bm25", (*SETTINGS, BACKEND), backend=backend, **settings)  # before the corpus's index is built
    if index is not None and (problem := INDEX.type.problem(index)):  # (a fusion hands on a config's index)
        raise ParamError("bm25.index", problem)
    if index is None:
        if corpus is None:
            raise HarnessError("bm25 needs an index (folder or pyserini prebuilt name) or a corpus")
        index = str(cached_index(corpus, threads=threads))
    return BM25(index, rm3=rm3, threads=threads, maxp=maxp, backend=backend, **settings)
