"""Query formulation strategies: (conversation, turn index) -> query text, registered by name.

A strategy may read the current turn and `conversation.history(i)`, never a later turn
(no leakage). Names take an optional argument after ':' (e.g. `variant:2`), passed as the
string `arg`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from harness.registry import Registry
from harness.topics.model import Conversation, Query


class Strategy(Protocol):
    def __call__(self, conversation: Conversation, turn_index: int, arg: str | None = None) -> Query: ...


STRATEGIES: Registry[Strategy] = Registry("query strategy")


def get(name: str) -> tuple[Strategy, str | None]:
    _import_strategies()
    base, _, arg = name.partition(":")
    return STRATEGIES.get(base), (arg or None)


def _import_strategies() -> None:
    """Strategy modules register themselves on import."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def stream(conversations, strategy_name: str) -> Iterator[Query]:
    """The query stream of a benchmark under one strategy, in conversation and turn order."""
    strategy, arg = get(strategy_name)
    for conversation in conversations:
        for index in range(len(conversation.turns)):
            yield strategy(conversation, index, arg)
