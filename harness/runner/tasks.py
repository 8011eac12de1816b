"""What an experiment ranks, by task name: passages per query (`retrieval`) or PTKB statements
per turn (`ptkb`). A task turns a run's plain values (strategy, retriever name and parameters,
depth) into the query list (hashed for resuming) and a `Run` per batch of queries, which the
runner streams into the run file (`write_run`); the runner does the rest the same way for
all. Tasks know neither the config nor the runner: they sit below both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.registry import Registry
from harness.retrieve import Retriever, SearchQuery
from harness.topics import Benchmark
from harness.trec import Qrels, Run

# a run's batches of queries -> each batch's rankings, in turn (the runner cuts them at k); a
# ranker may work ahead on the next batches while the runner writes one
Ranker = Callable[[Sequence[Sequence[SearchQuery]]], Iterator[Run]]


class Task(Protocol):
    uses_strategies: bool
    searches_corpus: bool  # needs documents: the benchmark's, the config's, or an index

    def retrievers(self) -> Registry:
        """What the config's `retrievers:` entries name, each declaring the `params:` it takes."""
        ...

    def default_measures(self) -> Sequence[str] | None: ...

    def has_default_qrels(self, benchmark: Benchmark) -> bool: ...

    def check_benchmark(self, benchmark: Benchmark) -> None:
        """The task can run on the benchmark (a one-line HarnessError when it cannot), checked
        when a config is read."""
        ...

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

    def retrievers(self) -> Registry:
        from harness.retrieve import RETRIEVERS

        return RETRIEVERS

    def default_measures(self) -> None:
        return None

    def has_default_qrels(self, benchmark: Benchmark) -> bool:
        return benchmark.qrels is not None

    def check_benchmark(self, benchmark: Benchmark) -> None:
        pass

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
        return lambda batches: _searched(searcher, batches, k)


def _searched(searcher: Retriever, batches: Sequence[Sequence[SearchQuery]], k: int) -> Iterator[Run]:
    """Each batch's rankings, its empty queries (an empty rewrite) not searched: they rank nothing,
    as their warning says, whatever a retriever would answer to "" (a plug-in's first documents,
    a dense model's nearest)."""
    from harness.retrieve import search_batches

    asked = [[query for query in batch if query.text.strip()] for batch in batches]
    with closing(search_batches(searcher, [batch for batch in asked if batch], k)) as found:
        for batch in asked:
            yield next(found) if batch else Run.of({})


class PtkbTask:
    """iKAT PTKB statement ranking: each turn ranks its conversation's personal statements."""

    uses_strategies = False
    searches_corpus = False  # the conversation's own statements

    def retrievers(self) -> Registry:
        from harness.ikat.ptkb import METHODS

        return METHODS

    def default_measures(self) -> Sequence[str]:
        from harness.evaluate.presets import PRESETS

        return [str(measure) for measure in PRESETS.get("ptkb").measures]

    def check_benchmark(self, benchmark: Benchmark) -> None:
        from harness.ikat.ptkb import require_ptkb

        require_ptkb(benchmark.conversations, "task ptkb", benchmark.name)

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
        # every turn's ranking, made up front; the runner picks the batch's
        return lambda batches: (ranked for _ in batches)


TASKS.add("retrieval", RetrievalTask(), "rank passages for each turn: a query strategy, then a retriever over a corpus")
TASKS.add("ptkb", PtkbTask(), "rank each turn's PTKB statements (iKAT), evaluated against the NIST PTKB qrels")
