"""BM25 (optionally + RM3) over a Lucene index, searched through pyserini's LuceneSearcher.

The index is a local folder, a pyserini prebuilt index name, or the cached index of the
corpus (built on first use). Queries run as one multi-threaded `batch_search`; the cost at
k=1000 is Anserini's (it loads every hit's stored document), the harness adds one pass
that copies (docid, score) out of the Java objects.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.retrieve import RETRIEVERS, Hit, SearchQuery, check_parameters
from harness.retrieve.java import ensure_jvm
from harness.retrieve.lucene import cached_index
from harness.trec import maxp

# MaxP searches this many passages per wanted document, as Anserini's MaxP regressions do
# (-hits 10000 -selectMaxPassage.hits 1000).
MAXP_PASSAGES_PER_DOC = 10


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
    ) -> None:
        self.threads = threads or os.cpu_count() or 1
        self.maxp = maxp
        self.searcher = _open_searcher(index)
        self.searcher.set_bm25(float(k1), float(b))
        if rm3:
            try:
                self.searcher.set_rm3(int(fb_terms), int(fb_docs), float(original_weight))
            except TypeError as error:  # pyserini's way of saying "no docvectors"
                raise HarnessError(f"RM3 needs an index with document vectors: {index}: {error}") from None

    def search(self, queries: Sequence[SearchQuery], k: int) -> dict[str, list[Hit]]:
        qids = [query.qid for query in queries]
        if len(set(qids)) != len(qids):
            raise HarnessError("query ids must be unique within one search")
        depth = k * MAXP_PASSAGES_PER_DOC if self.maxp else k
        results = self.searcher.batch_search(
            [query.text for query in queries], qids, k=depth, threads=self.threads
        )
        rankings: dict[str, list[Hit]] = {}
        for qid in qids:
            ranking = [(hit.docid, hit.score) for hit in results.get(qid, ())]
            if self.maxp:  # iKAT/ClueWeb22 passage ids: `<docid>:<n>`
                ranking = maxp(ranking, ":")[:k]
            rankings[qid] = [Hit(docid, score) for docid, score in ranking]
        return rankings


def _open_searcher(index: str):
    ensure_jvm()
    from pyserini.search.lucene import LuceneSearcher

    if Path(index).is_dir():
        return LuceneSearcher(str(index))
    from pyserini.util import download_prebuilt_index

    try:
        folder = download_prebuilt_index(index, verbose=False)
    except ValueError:
        raise HarnessError(f"index {index!r} is neither an index folder nor a pyserini prebuilt index name") from None
    except OSError as error:
        raise HarnessError(f"cannot download pyserini prebuilt index {index!r}: {error}") from None
    return LuceneSearcher(folder, prebuilt_index_name=index)


@RETRIEVERS.register("bm25")
def bm25(corpus: Corpus | None = None, *, index: str | None = None, **params) -> BM25:
    """Factory: `index` wins; else the corpus's cached index (built on first use)."""
    check_parameters("bm25", BM25, "index", **params)
    if index is None:
        if corpus is None:
            raise HarnessError("bm25 needs an index (folder or pyserini prebuilt name) or a corpus")
        index = str(cached_index(corpus, threads=params.get("threads")))
    return BM25(index, **params)


bm25.accepts = BM25  # the parameters a config may give (harness.retrieve.specs)
