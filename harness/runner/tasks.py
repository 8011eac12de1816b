"""What an experiment ranks, by task name: passages per query (`retrieval`) or PTKB statements
per turn (`ptkb`). A task turns a run's plain values (strategy, retriever name and parameters,
depth) into the query list (hashed for resuming) and the per-query rankings that `write_run`
streams; the runner does the rest the same way for all. Tasks know neither the config nor the
runner: they sit below both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.registry import Registry
from harness.retrieve import Retriever, SearchQuery
from harness.topics import Benchmark
from harness.trec import Qrels, Ranking

Ranker = Callable[[Sequence[SearchQuery]], list[tuple[str, Ranking]]]  # a batch of queries -> (qid, ranking)s


class Task(Protocol):
    uses_strategies: bool
    searches_corpus: bool  # needs documents: the benchmark's, the config's, or an index
    retriever_kind: str  # what the config's `retrievers:` entries are, for error messages

    def retriever_names(self) -> list[str]: ...

    def check_params(self, name: str, params: Mapping[str, Any]) -> None:
        """Config-time check: a SpecError (harness.retrieve.specs) at `params.<key>`."""
        ...

    def default_measures(self) -> Sequence[str] | None: ...

    def has_default_qrels(self, benchmark: Benchmark) -> bool: ...

    def default_qrels(self, benchmark: Benchmark) -> Qrels: ...

    def queries(self, strategy: str | None, benchmark: Benchmark) -> list[SearchQuery]: ...

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        """Inputs besides the queries that the rankings depend on (hashed with them)."""
        ...

    def ranker(
        self, benchmark: Benchmark, name: str, params: Mapping[str, Any], k: int, retriever: Callable[[], Retriever]
    ) -> Ranker:
        """Does the set-up (index, model) up front, so that ranking time is measured apart.
        `retriever` builds the named retriever over the experiment's corpus, for tasks that search one."""
        ...


TASKS: Registry[Task] = Registry("task")


class RetrievalTask:
    """Topics -> query strategy -> retriever over a corpus -> ranked documents per turn."""

    uses_strategies = True
    searches_corpus = True
    retriever_kind = "retriever"

    def retriever_names(self) -> list[str]:
        from harness import retrieve

        return retrieve.RETRIEVERS.names()

    def check_params(self, name: str, params: Mapping[str, Any]) -> None:
        from harness.retrieve.specs import check_spec

        check_spec(name, params)

    def default_measures(self) -> None:
        return None

    def has_default_qrels(self, benchmark: Benchmark) -> bool:
        return benchmark.qrels is not None

    def default_qrels(self, benchmark: Benchmark) -> Qrels:
        if benchmark.qrels is None:
            raise HarnessError(f"benchmark {benchmark.name!r} ships no qrels; give 'qrels: FILE'")
        return benchmark.qrels()

    def queries(self, strategy: str | None, benchmark: Benchmark) -> list[SearchQuery]:
        from harness.queries import stream

        return [SearchQuery(query.qid, query.text) for query in stream(benchmark.conversations, strategy)]

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        return ()

    def ranker(
        self, benchmark: Benchmark, name: str, params: Mapping[str, Any], k: int, retriever: Callable[[], Retriever]
    ) -> Ranker:
        searcher = retriever()

        def rank(batch: Sequence[SearchQuery]) -> list[tuple[str, Ranking]]:
            hits = searcher.search(batch, k)
            return [(query.qid, [(hit.docid, hit.score) for hit in hits.get(query.qid, [])[:k]]) for query in batch]

        return rank


class PtkbTask:
    """iKAT PTKB statement ranking: each turn ranks its conversation's personal statements."""

    uses_strategies = False
    searches_corpus = False  # the conversation's own statements
    retriever_kind = "PTKB ranking method"

    def retriever_names(self) -> list[str]:
        from harness.ikat import ptkb

        return ptkb.METHODS.names()

    def check_params(self, name: str, params: Mapping[str, Any]) -> None:
        from harness.ikat.ptkb import check_params

        check_params(name, params)

    def default_measures(self) -> Sequence[str]:
        from harness.evaluate.presets import PRESETS

        return [str(measure) for measure in PRESETS.get("ptkb").measures]

    def has_default_qrels(self, benchmark: Benchmark) -> bool:
        return benchmark.name == "ikat2023:test"  # the NIST PTKB qrels judge these turns only

    def default_qrels(self, benchmark: Benchmark) -> Qrels:
        from harness.topics.ikat import ptkb_qrels

        return ptkb_qrels("nist")

    def queries(self, strategy: str | None, benchmark: Benchmark) -> list[SearchQuery]:
        return [SearchQuery(turn.qid, turn.utterance) for turn in benchmark.turns]

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        for conversation in benchmark.conversations:
            for statement in conversation.personal:
                yield f"{conversation.id}\t{statement.id}\t{statement.text}"

    def ranker(
        self, benchmark: Benchmark, name: str, params: Mapping[str, Any], k: int, retriever: Callable[[], Retriever]
    ) -> Ranker:
        from harness.ikat.ptkb import rank_ptkb

        ranked = rank_ptkb(benchmark, name, **params)
        return lambda batch: [(query.qid, list(ranked.get(query.qid, []))[:k]) for query in batch]


TASKS.add("retrieval", RetrievalTask())
TASKS.add("ptkb", PtkbTask())
