"""Query formulation strategies: (conversation, turn index) -> query text, registered by name.

A strategy may read the current turn and `conversation.history(i)`, never a later turn
(no leakage). Names take an optional argument after ':' (e.g. `variant:2`), passed as the
string `arg`.

Strategies that need more than the topics (`ptkb_topk` ranks PTKB statements with a
retriever) live in the higher layer that has it and are named here as plug-ins, loaded on
first look-up, so that this package imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from harness.errors import HarnessError
from harness.registry import PYTHON, Registry
from harness.topics.model import Conversation, Query


class Strategy(Protocol):
    """A strategy reading inputs outside the topics (a rewrites file, an LLM) may also define
    `check(arg)` (run when a config is read), `check_stream(arg, qids)` (once the whole stream
    is built) and `inputs(arg)` (what it read, for the run's JSON); each is used if present."""

    def __call__(self, conversation: Conversation, turn_index: int, arg: str | None = None) -> Query: ...


# plug-ins (harness/queries/plugins.py): entry points `harness.strategies`, `python:module:attr[:arg]`,
# STRATEGIES.using({name: function})
STRATEGIES: Registry[Strategy] = Registry("query strategy", package=__name__, plugins=("harness.ikat.ptkb_topk",),
                                          group="harness.strategies")


def split(name: str) -> tuple[str, str | None]:
    """(registered name, argument) of `NAME[:ARG]` or `python:module:attr[:ARG]`."""
    if name.startswith(PYTHON):
        module, _, rest = name[len(PYTHON):].partition(":")
        attr, _, arg = rest.partition(":")
        return f"{PYTHON}{module}:{attr}", (arg or None)
    base, _, arg = name.partition(":")
    return base, (arg or None)


def get(name: str) -> tuple[Strategy, str | None]:
    base, arg = split(name)
    return STRATEGIES.get(base), arg


def check(name: str) -> None:
    """A strategy name and its argument, checked before any query is built (a config names
    the key on error): the strategy exists, and an external one's inputs can be read."""
    strategy, arg = get(name)
    if hasattr(strategy, "check"):
        strategy.check(arg)


def stream(conversations, strategy_name: str) -> Iterator[Query]:
    """The query stream of a benchmark under one strategy, in conversation and turn order.

    Each qid comes once: flattened trees (CAsT 2022) repeat a shared turn in every path
    through it, with the same history and hence the same query; a repeat whose query
    differs is an error.
    """
    strategy, arg = get(strategy_name)
    seen: dict[str, str] = {}
    for conversation in conversations:
        for index in range(len(conversation.turns)):
            query = strategy(conversation, index, arg)
            if query.qid in seen:
                if seen[query.qid] != query.text:
                    raise HarnessError(f"turn {query.qid} gets two different queries under {strategy_name!r}")
                continue
            seen[query.qid] = query.text
            yield query
    if hasattr(strategy, "check_stream"):
        strategy.check_stream(arg, set(seen))


def inputs(strategy_name: str) -> dict:
    """What a strategy read besides the topics (file hashes, model), recorded in the run JSON."""
    strategy, arg = get(strategy_name)
    return strategy.inputs(arg) if hasattr(strategy, "inputs") else {}
