"""Retrievers: one small interface, registered by name, so BM25, dense and fused plug in alike.

A retriever is built once from its config parameters and then searches many queries:

    retriever = RETRIEVERS.get("bm25")(index=..., k1=0.9, b=0.4)
    hits = retriever.search(queries, k=1000)   # {qid: [Hit, ...]} best first

Heavy libraries (pyserini, torch, sentence-transformers, faiss) are imported inside the
implementations, never at module import: `harness eval` must start fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.errors import HarnessError
from harness.registry import Registry


@dataclass(frozen=True)
class Hit:
    docid: str
    score: float


@dataclass(frozen=True)
class SearchQuery:
    qid: str
    text: str


class Retriever(Protocol):
    def search(self, queries: Sequence[SearchQuery], k: int) -> dict[str, list[Hit]]:
        """Best-first hits per qid; at most k per query."""
        ...


RetrieverFactory = Callable[..., Retriever]
RETRIEVERS: Registry[RetrieverFactory] = Registry("retriever", package=__name__)


def build(name: str, **params) -> Retriever:
    """The named retriever; a parameter it does not take is a one-line HarnessError."""
    factory = RETRIEVERS.get(name)
    check_parameters(name, factory, **params)
    return factory(**params)


def check_parameters(name: str, target: Callable, *args, **params) -> None:
    """A one-line HarnessError, before any work, when `target` cannot take these parameters."""
    import inspect

    try:
        inspect.signature(target).bind(*args, **params)
    except TypeError as error:
        raise HarnessError(f"retriever {name!r}: {error}") from None
