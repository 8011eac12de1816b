"""Corpora: streams of documents, re-iterable, with a content fingerprint for caches.

Never the whole corpus in memory: `Corpus.documents()` opens a fresh stream each call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


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
