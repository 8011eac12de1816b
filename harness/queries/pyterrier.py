"""The query strategies as PyTerrier transformers, so that pt.Experiment users get `hqe`,
`all_history`, `rewrites:FILE`, `llm`, ... in front of any pipeline:

    import harness, pyterrier as pt
    topics = pt.get_dataset("irds:harness/ikat2023/test").get_topics()
    pt.Experiment([harness.strategy("raw", "ikat2023:test") >> bm25,
                   harness.strategy("hqe", "ikat2023:test") >> bm25], topics, qrels, ["nDCG@3"])

Each row's qid is found among the benchmark's turns, and the strategy builds that turn's
query from the conversation as the benchmark provides it (history, PTKB, responses), as
`harness run` does: the same text, never from a later turn. The frame's `query` becomes the
strategy's text and the one before is kept as `query_0` (PyTerrier's convention). pyterrier is
imported when a transformer is first made.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from harness.errors import HarnessError
from harness.queries import check, get, warn_empty
from harness.topics import Benchmark, load


def transformer(strategy: str, benchmark: str | Benchmark) -> Any:
    """A pt.Transformer applying `strategy` (as a config names it) to the turns of `benchmark`
    (`NAME[:SPLIT]` or a loaded Benchmark)."""
    return _transformer_class()(strategy, load(benchmark) if isinstance(benchmark, str) else benchmark)


@lru_cache(maxsize=1)
def _transformer_class() -> type:
    import pyterrier as pt

    class StrategyTransformer(pt.Transformer):
        def __init__(self, strategy: str, benchmark: Benchmark) -> None:
            check(strategy)
            self.strategy, self.benchmark = strategy, benchmark
            self.turns = {}
            for conversation in benchmark.conversations:
                for index, turn in enumerate(conversation.turns):
                    self.turns.setdefault(turn.qid, (conversation, index))

        def transform(self, topics: Any) -> Any:
            strategy, arg = get(self.strategy)
            texts, warned = [], set()
            for qid in topics["qid"]:
                if qid not in self.turns:
                    raise HarnessError(f"qid {qid!r} is not a turn of {self.benchmark.name}")
                conversation, index = self.turns[qid]
                query = strategy(conversation, index, arg)
                if qid not in warned:  # an empty rewrite is said once a transform
                    warned.add(qid)
                    warn_empty(strategy, query, strategy.arguments(arg))
                texts.append(query.text)
            result = pt.model.push_queries(topics, inplace=False) if "query" in topics.columns else topics.copy()
            result["query"] = texts
            return result

        def __repr__(self) -> str:
            return f"harness.strategy({self.strategy!r}, {self.benchmark.name!r})"

    return StrategyTransformer
