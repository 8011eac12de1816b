"""What an experiment ranks, by task name: passages per query (`retrieval`) or PTKB statements
per turn (`ptkb`). A task turns a run spec into the query list (hashed for resuming) and the
per-query rankings that `write_run` streams; the runner does the rest the same way for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from harness.errors import HarnessError
from harness.registry import Registry
from harness.retrieve import SearchQuery
from harness.topics import Benchmark
from harness.trec import Qrels

if TYPE_CHECKING:
    from harness.runner.config import RunSpec
    from harness.runner.runner import Workspace

Ranking = tuple[str, list[tuple[str, float]]]  # (qid, best-first [(docid, score)])
Ranker = Callable[[Sequence[SearchQuery]], list[Ranking]]  # a batch of queries -> their rankings


class Task(Protocol):
    uses_strategies: bool
    searches_corpus: bool  # needs documents: the benchmark's, the config's, or an index
    retriever_kind: str  # what the config's `retrievers:` entries are, for error messages

    def retriever_names(self) -> list[str]: ...

    def default_measures(self) -> Sequence[str] | None: ...

    def has_default_qrels(self, benchmark: Benchmark) -> bool: ...

    def default_qrels(self, benchmark: Benchmark) -> Qrels: ...

    def queries(self, run: "RunSpec", benchmark: Benchmark) -> list[SearchQuery]: ...

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        """Inputs besides the queries that the rankings depend on (hashed with them)."""
        ...

    def ranker(self, run: "RunSpec", benchmark: Benchmark, workspace: "Workspace") -> Ranker:
        """Does the set-up (index, model) up front, so that ranking time is measured apart."""
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

    def default_measures(self) -> None:
        return None

    def has_default_qrels(self, benchmark: Benchmark) -> bool:
        return benchmark.qrels is not None

    def default_qrels(self, benchmark: Benchmark) -> Qrels:
        if benchmark.qrels is None:
            raise HarnessError(f"benchmark {benchmark.name!r} ships no qrels; give 'qrels: FILE'")
        return benchmark.qrels()

    def queries(self, run: "RunSpec", benchmark: Benchmark) -> list[SearchQuery]:
        from harness.queries import stream

        return [SearchQuery(query.qid, query.text) for query in stream(benchmark.conversations, run.strategy)]

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        return ()

    def ranker(self, run: "RunSpec", benchmark: Benchmark, workspace: "Workspace") -> Ranker:
        retriever = workspace.retriever(run)
        k = run.experiment.k

        def rank(batch: Sequence[SearchQuery]) -> list[Ranking]:
            hits = retriever.search(batch, k)
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

    def default_measures(self) -> Sequence[str]:
        from harness.ikat.ptkb import PTKB_MEASURES

        return [str(measure) for measure in PTKB_MEASURES]

    def has_default_qrels(self, benchmark: Benchmark) -> bool:
        return benchmark.name == "ikat2023:test"  # the NIST PTKB qrels judge these turns only

    def default_qrels(self, benchmark: Benchmark) -> Qrels:
        from harness.topics.ikat import ptkb_qrels

        return ptkb_qrels("nist")

    def queries(self, run: "RunSpec", benchmark: Benchmark) -> list[SearchQuery]:
        return [SearchQuery(turn.qid, turn.utterance) for turn in benchmark.turns]

    def context(self, benchmark: Benchmark) -> Iterable[str]:
        for conversation in benchmark.conversations:
            for statement in conversation.personal:
                yield f"{conversation.id}\t{statement.id}\t{statement.text}"

    def ranker(self, run: "RunSpec", benchmark: Benchmark, workspace: "Workspace") -> Ranker:
        from harness.ikat.ptkb import rank_ptkb

        ranked = rank_ptkb(benchmark, run.retriever.name, **run.retriever.params)
        k = run.experiment.k
        return lambda batch: [(query.qid, list(ranked.get(query.qid, []))[:k]) for query in batch]


TASKS.add("retrieval", RetrievalTask())
TASKS.add("ptkb", PtkbTask())
