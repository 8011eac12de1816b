"""A plug-in's function made into a query strategy, checked when a config names it.

A plug-in strategy is `f(conversation, turn_index, arg=None)` returning the query text (a
`str`) or a `Query`. It is handed the conversation up to and including the turn, so that it
cannot read a later one; its optional `check`, `check_stream` and `inputs` are used as a
built-in strategy's are.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from harness.errors import HarnessError
from harness.queries import STRATEGIES
from harness.topics.model import Conversation, Query

_EXPECTED = "a function f(conversation, turn_index, arg=None) -> str or Query"


@STRATEGIES.adapter
def adapt(name: str, obj: Any) -> "PluginStrategy":
    if not callable(obj):
        raise HarnessError(f"query strategy {name!r}: got {type(obj).__name__}; expected {_EXPECTED}")
    try:
        inspect.signature(obj).bind(None, 0, None)
    except (TypeError, ValueError):
        raise HarnessError(f"query strategy {name!r}: {getattr(obj, '__qualname__', obj)} cannot be called as "
                           f"f(conversation, turn_index, arg); expected {_EXPECTED}") from None
    return PluginStrategy(name, obj)


class PluginStrategy:
    def __init__(self, name: str, function: Callable) -> None:
        self.name, self.function = name, function

    def __call__(self, conversation: Conversation, turn_index: int, arg: str | None = None) -> Query:
        seen = dataclasses.replace(conversation, turns=conversation.turns[:turn_index + 1])
        answer = self.function(seen, turn_index, arg)
        turn = conversation.turns[turn_index]
        if isinstance(answer, str):
            return Query(turn.qid, answer, conversation.id, turn_index, (answer,))
        if isinstance(answer, Query) and answer.qid == turn.qid:
            return answer
        raise HarnessError(f"query strategy {self.name!r} answered {answer!r} for turn {turn.qid}; "
                           "expected the query text or a Query of that turn")

    def __getattr__(self, attribute: str) -> Any:
        if attribute in ("check", "check_stream", "inputs"):  # the plug-in's own, if it has them
            return getattr(self.function, attribute)
        raise AttributeError(attribute)
