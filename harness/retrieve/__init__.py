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
RETRIEVERS: Registry[RetrieverFactory] = Registry("retriever")


def build(name: str, **params) -> Retriever:
    _import_retrievers()
    return RETRIEVERS.get(name)(**params)


def _import_retrievers() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
