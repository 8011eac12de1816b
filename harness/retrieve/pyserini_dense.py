"""pyserini's own dense search, for users who have one of its faiss indexes on disk.

    {name: pyserini-dense, index: /indexes/faiss.cast2019.tct_colbert-v2,
     encoder: /models/tct_colbert-v2-hnp-msmarco, encoder_class: tct_colbert}

The index folder is pyserini's layout (`index`, the faiss file, and `docid`, one id per
line), e.g. an unpacked prebuilt index; the query encoder is a local model folder. Nothing
is downloaded: both must be on disk. The index, not the harness corpus, defines the
collection searched, so the `corpus` argument is not used.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.paths import home_expanded
from harness.registry import REQUIRED, Param
from harness.retrieve import FOLDER, RETRIEVERS, THREADS, SearchQuery
from harness.trec import Run

# pyserini query-encoder classes by the names its own CLI uses (`--encoder-class`).
ENCODER_CLASSES = {
    "auto": "AutoQueryEncoder",
    "dpr": "DprQueryEncoder",
    "tct_colbert": "TctColBertQueryEncoder",
    "ance": "AnceQueryEncoder",
    "bpr": "BprQueryEncoder",
}


class PyseriniDenseRetriever:
    def __init__(self, searcher: Any, threads: int):
        self.searcher = searcher
        self.threads = threads

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        if not queries:
            return Run.of({})
        results = self.searcher.batch_search(
            [query.text for query in queries], [query.qid for query in queries], k=k, threads=self.threads
        )
        return Run.of({qid: [(result.docid, float(result.score)) for result in hits] for qid, hits in results.items()})


@RETRIEVERS.register("pyserini-dense", "pyserini's own dense search over one of its faiss indexes on disk", [
    Param("index", FOLDER, None, "local pyserini faiss index folder (required)"),
    Param("encoder", FOLDER, REQUIRED, "local query-encoder folder"),
    Param("encoder_class", Literal[tuple(ENCODER_CLASSES)] | None, None,
          "pyserini's query-encoder class (default: pyserini guesses from the folder name)"),
    Param("pooling", str, "cls", "pooling of the `auto` encoder class (cls or mean)"),
    Param("l2_norm", bool, False, "unit-length query vectors, for the `auto` encoder class"),
    Param("device", str, "cpu", "torch device of the query encoder"),
    THREADS,
], needs=("pyserini", "faiss", "torch"))
def pyserini_dense(
    corpus: Corpus | None = None,
    *,
    index: str | None = None,
    encoder: str,
    encoder_class: str | None = None,
    pooling: str = "cls",
    l2_norm: bool = False,
    device: str = "cpu",
    threads: int | None = None,
) -> PyseriniDenseRetriever:
    """pyserini's FaissSearcher with its own query encoder (the parameters as declared above)."""
    index_dir = _index_folder(index)
    encoder_dir = _encoder_folder(encoder)
    if encoder_class is not None and encoder_class not in ENCODER_CLASSES:
        raise HarnessError(f"unknown encoder_class {encoder_class!r}; known: {', '.join(ENCODER_CLASSES)}")
    from harness.retrieve.java import ensure_jvm

    ensure_jvm()  # pyserini's faiss module imports its Lucene searcher, hence Java
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import pyserini.encode
    from pyserini.search.faiss import FaissSearcher

    query_encoder: Any = str(encoder_dir)  # FaissSearcher picks the class from the folder name
    if encoder_class == "auto":
        query_encoder = pyserini.encode.AutoQueryEncoder(
            encoder_dir=str(encoder_dir), pooling=pooling, l2_norm=l2_norm, device=device
        )
    elif encoder_class is not None:
        query_encoder = getattr(pyserini.encode, ENCODER_CLASSES[encoder_class])(encoder_dir=str(encoder_dir), device=device)
    searcher = FaissSearcher(str(index_dir), query_encoder)
    return PyseriniDenseRetriever(searcher, threads or len(os.sched_getaffinity(0)))


def _index_folder(index: str | None) -> Path:
    if not index:
        raise HarnessError("pyserini-dense needs `index:` a local pyserini faiss index folder")
    folder = home_expanded(index)
    missing = [name for name in ("index", "docid") if not (folder / name).is_file()]
    if missing:
        raise HarnessError(
            f"pyserini-dense index {folder} is not a pyserini faiss index: missing {' and '.join(missing)}; "
            "unpack a prebuilt index there (nothing is downloaded at run time)"
        )
    return folder


def _encoder_folder(encoder: str) -> Path:
    folder = home_expanded(encoder)
    if not (folder / "config.json").is_file():
        raise HarnessError(
            f"pyserini-dense query encoder {folder} not found (or has no config.json); "
            "encoders load from local folders only"
        )
    return folder
