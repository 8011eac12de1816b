"""Retrievers: one small interface, registered by name, so BM25, dense and fused plug in alike.

A retriever is built once from its config parameters and then searches many queries; each
registers with a one-line summary and its parameters (`Param`s: type, default, description),
which a config's `params:` are checked against when it is read (harness.retrieve.specs):

    retriever = build("bm25", index=..., k1=0.9, b=0.4)   # checked as a config's params are
    run = retriever.search(queries, k=1000)   # a harness.trec.Run: run[qid] is [Hit, ...], best first

Heavy libraries (pyserini, torch, sentence-transformers, faiss) are imported inside the
implementations, never at module import: `harness eval` must start fast.

Elsewhere (harness/_assembly.py): sharded dense search (`dense` with shards) is harness.scale.search's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.registry import AtLeast, LocalPath, Param, Registry, as_declared, check_params
from harness.trec import Hit, Run  # Hit: re-exported, a run's items (run[qid] is [Hit, ...])


@dataclass(frozen=True)
class SearchQuery:
    qid: str
    text: str


class Retriever(Protocol):
    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        """Per qid, the best-first hits (harness.trec.Run); at most k per query."""
        ...

    # Optionally, `search_batches(batches, k) -> Iterator[Run]`: `search` of each batch, in
    # turn, working ahead on the next batches (see `search_batches` below).


def search_batches(retriever: Retriever, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
    """`retriever.search(batch, k)` of each batch, in turn, with the same results. A retriever
    that has its own `search_batches` works on the next batches while the caller takes one
    (dense encodes their queries meanwhile: the runner hands over a run's batches so)."""
    ahead = getattr(retriever, "search_batches", None)
    if ahead is None:
        for batch in batches:
            yield retriever.search(batch, k)
        return
    yield from ahead(batches, k)


class SearchesAhead:
    """A retriever defined by its `search_batches`: `search` is that of one batch."""

    def search(self, queries: Sequence[SearchQuery], k: int) -> Run:
        with closing(self.search_batches([queries], k)) as runs:
            return next(runs)

    def search_batches(self, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
        raise NotImplementedError


RetrieverFactory = Callable[..., Retriever]
# plug-ins (harness/retrieve/plugins.py): entry points `harness.retrievers`, `python:module:attr`,
# RETRIEVERS.using({name: object})
RETRIEVERS: Registry[RetrieverFactory] = Registry(
    "retriever", ("harness.retrieve.bm25", "harness.retrieve.dense", "harness.retrieve.fusion",
                  "harness.retrieve.plugins", "harness.retrieve.pyserini_dense", "harness.retrieve.rerank"),
    group="harness.retrievers", not_from_config=("query", "k", "corpus"))
# parameters several retrievers take alike
THREADS = Param("threads", AtLeast(1, or_none=True), None, "CPU threads (default: the cores this process may use)")
DEVICE = Param("device", str | None, None, "torch device, cpu or cuda (default: cuda when there is one)")
BATCH_SIZE = Param("batch_size", AtLeast(1), 32, "texts encoded at once")
# the type of a model or index parameter: a local folder (looked for when a config is read), or a
# name the retriever resolves (a pyserini prebuilt index, a cached model), or null
FOLDER = LocalPath(folder=True, or_name=True, or_none=True)


def build(name: str, **params) -> Retriever:
    """The named retriever; a parameter it does not take, or a value not of its declared type,
    is a one-line HarnessError, as in a config (so factories need not check them again).
    Inside `shared_retrievers()`, the one already built with the same parameters."""
    factory = RETRIEVERS.get(name)
    given = {key: value for key, value in params.items() if key != "corpus"}  # the harness's, not a config's
    declaration = RETRIEVERS.declaration(name)
    check_params(declaration, given, f"build({name!r})", "retriever")  # `build('rrf').depth: ...`
    params = as_declared(declaration, params)  # (`mode: fast` a plug-in's Mode.FAST)
    check_parameters(name, factory, **params)
    shared = _SHARED.get()
    if shared is None:
        return factory(**params)
    return shared.retriever(name, params, lambda: factory(**params))


class _Remembering(SearchesAhead):
    """A retriever that answers a batch it has answered before from memory. Only whole
    batches: a batch is searched as it comes, so dense scores, which move in the last float
    digits with the other queries of their batch, are those of a retriever not shared.
    Results are kept while the shared budget of hits lasts."""

    def __init__(self, retriever: Retriever, shared: "_Shared") -> None:
        self.retriever, self.shared = retriever, shared
        # per batch: each query's ranking, and the repeats the retriever's answer dropped (Run.duplicates)
        # with the first one's query by its place in the batch (Run.repeated), so a run answered
        # from memory reports them as the first did
        self.answers: dict[tuple[tuple[str, ...], int],
                           tuple[list[dict[str, float]], int, tuple[int, str] | None]] = {}

    def search_batches(self, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
        """The batches answered before from memory, the others by the retriever (ahead)."""
        keys = [(tuple(query.text for query in batch), k) for batch in batches]
        known = [key in self.answers for key in keys]
        fresh = search_batches(self.retriever, [batch for batch, old in zip(batches, known) if not old], k)
        with closing(fresh):
            for batch, key, old in zip(batches, keys, known):
                qids = [query.qid for query in batch]
                if old:
                    answers, duplicates, place = self.answers[key]
                    yield Run("run", {qid: dict(ranking) for qid, ranking in zip(qids, answers)}, duplicates,
                              repeated=None if place is None else (qids[place[0]], place[1]))
                    continue
                found = next(fresh)
                answers = [found.scores.get(qid, {}) for qid in qids]
                if self.shared.keep(sum(map(len, answers))):
                    place = None
                    if found.repeated is not None and found.repeated[0] in qids:
                        place = qids.index(found.repeated[0]), found.repeated[1]
                    self.answers[key] = answers, found.duplicates, place
                yield found


@dataclass
class _Shared:
    hits_left: int
    retrievers: dict[tuple[str, str], _Remembering]

    def retriever(self, name: str, params: dict[str, Any], make: Callable[[], Retriever]) -> Retriever:
        key = (name, _identity(params))
        if key not in self.retrievers:
            self.retrievers[key] = _Remembering(make(), self)
        return self.retrievers[key]

    def keep(self, hits: int) -> bool:
        self.hits_left -= hits
        return self.hits_left >= 0


def _identity(params: dict[str, Any]) -> str:
    """Parameters as one canonical string; a corpus stands for its content (its fingerprint)."""
    from harness.corpus import Corpus

    def plain(value: Any) -> Any:
        return f"corpus:{value.fingerprint}" if isinstance(value, Corpus) else repr(value)

    return json.dumps(params, sort_keys=True, default=plain)


_SHARED: ContextVar[_Shared | None] = ContextVar("shared_retrievers", default=None)


@contextmanager
def shared_retrievers(max_hits: int = 5_000_000) -> Iterator[None]:
    """Within the block, `build` makes one retriever per name, parameters and corpus, and each
    answers a batch of query texts at a depth once: a fusion of bm25 and dense after the bm25
    and dense runs (the runner's batches are the same) searches nothing again. Up to
    `max_hits` hits are kept in all (about 1 GB at 5 million)."""
    token = _SHARED.set(_Shared(max_hits, {}))
    try:
        yield
    finally:
        _SHARED.reset(token)


def check_parameters(name: str, target: Callable, *args, **params) -> None:
    """A one-line HarnessError, before any work, when `target` cannot take these parameters."""
    import inspect

    try:
        inspect.signature(target).bind(*args, **params)
    except TypeError as error:
        raise HarnessError(f"retriever {name!r}: {error}") from None
