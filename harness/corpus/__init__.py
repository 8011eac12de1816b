"""Corpora: streams of documents, re-iterable, with a content fingerprint for caches.

Never the whole corpus in memory: `Corpus.documents()` opens a fresh stream each call.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, InputError


@dataclass(frozen=True)
class Document:
    id: str
    contents: str
    title: str | None = None


@dataclass(frozen=True)
class Corpus:
    name: str
    documents: Callable[[], Iterator[Document]] = field(compare=False)
    # Known up front for file-backed corpora (hash of the file); else computed by one pass.
    known_fingerprint: str | None = None
    # the documents with where each starts, (file, line) or None; unset: nowhere (Corpus.located)
    read_located: Callable[[], Iterator[tuple[Document, tuple[Path, int] | None]]] | None = field(
        default=None, compare=False)

    @property
    def fingerprint(self) -> str:
        """sha256 over ids, titles and texts: the key for indexes and embedding caches."""
        if self.known_fingerprint is not None:
            return self.known_fingerprint
        digest = hashlib.sha256()
        for document in self.documents():
            for part in (document.id, document.title or "", document.contents):
                digest.update(part.encode("utf-8"))
                digest.update(b"\0")
        object.__setattr__(self, "known_fingerprint", digest.hexdigest())
        return self.known_fingerprint

    def located(self) -> Iterator[tuple[Document, tuple[Path, int] | None]]:
        """Each document with the file and line it starts at (None: not read from a file)."""
        if self.read_located is not None:
            return self.read_located()
        return ((document, None) for document in self.documents())


def unique_ids(corpus: Corpus, documents: Iterable[Document]) -> Iterator[Document]:
    """`documents` (the corpus's, read to build an index) passed through; once the last has
    passed, an id given twice is an error naming where: an index would hold both documents,
    and a ranking keep the id once, at the higher of their scores (Run.of), whichever document
    the qrels judged under it (pyserini's BM25 and dense; the numpy BM25 refuses such an
    index and falls back to pyserini). Holds 8 bytes a document, a 64-bit hash of its id (the
    ids of ClueWeb22-B's 117M passages would take gigabytes); where hashes repeat, the corpus
    is read again to tell a repeated id from two ids sharing a hash, and to say where."""
    hashes = array("q")
    for document in documents:
        hashes.append(hash(document.id))
        yield document
    repeated = _repeated(hashes)
    del hashes
    if not repeated:
        return
    first: dict[str, tuple[int, tuple[Path, int] | None]] = {}  # id of a repeated hash -> where it came first
    for ordinal, (document, where) in enumerate(corpus.located()):
        if hash(document.id) not in repeated:
            continue
        if document.id not in first:
            first[document.id] = ordinal, where
            continue
        earlier, where_first = first[document.id]
        consequence = "an index would hold both documents under one id, and a ranking give it the higher of their scores"
        if where is None or where_first is None:
            raise HarnessError(f"corpus {corpus.name}: document id {document.id!r} is given twice, as documents "
                               f"{earlier + 1:,} and {ordinal + 1:,}; {consequence}")
        place = f"line {where_first[1]}" if where_first[0] == where[0] else f"{where_first[0]}:{where_first[1]}"
        raise InputError(where[0], f"document id {document.id!r} again (first at {place}); {consequence}",
                         line=where[1])


def _repeated(hashes: array) -> set[int]:
    """The values given more than once (sorted in place: no copy of a corpus's hashes)."""
    import numpy as np

    values = np.frombuffer(hashes, dtype=np.int64)
    values.sort()
    return set(values[1:][values[1:] == values[:-1]].tolist())
