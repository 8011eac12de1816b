"""A plug-in's function made into a query strategy, checked when a config names it.

A plug-in strategy is either an instance of a `harness.queries.Strategy` subclass, whose own
`check`, `check_topics`, `check_stream`, `inputs` and `notes` are used as a built-in strategy's are, or
a function `f(conversation, turn_index, *arguments)` returning the query text (a `str`) or a
`Query`. Either is handed the conversation up to and including the turn, that turn without its
answer (`so_far`: its response and gold passages blank), so that it cannot read a later turn nor
what it is judged on. Its arguments (`python:m:f:ARG`, `NAME:ARG`) are its declared parameters
(`harness.declare`), else those of its signature after the first two (`f(conversation,
turn_index, arg=None)` takes one, any text), read and checked as a built-in strategy's are.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from harness.errors import HarnessError
from harness.queries import STRATEGIES, Strategy
from harness.registry import Declaration, declared, summary_of
from harness.topics.model import Conversation, Query, so_far

_EXPECTED = "a function f(conversation, turn_index, arg=None) -> str or Query, or a harness.queries.Strategy"


@STRATEGIES.adapter
def adapt(name: str, obj: Any) -> Strategy:
    if isinstance(obj, Strategy):
        return PluginStrategy(name, obj, Declaration(name, obj.declaration.summary or summary_of(obj),
                                                     obj.declaration.params))
    if not callable(obj):
        raise HarnessError(f"query strategy {name!r}: got {type(obj).__name__}; expected {_EXPECTED}")
    try:
        signature = inspect.signature(obj)
        declaration = declared(name, obj, skip=list(signature.parameters)[:2])
        signature.bind(None, 0, *[None] * len(declaration.params))
    except (TypeError, ValueError):
        raise HarnessError(f"query strategy {name!r}: {getattr(obj, '__qualname__', obj)} cannot be called as "
                           f"f(conversation, turn_index, *arguments); expected {_EXPECTED}") from None
    return PluginStrategy(name, obj, declaration)


class PluginStrategy(Strategy):
    """The plug-in behind the strategy interface, seeing no turn after the current one, nor its answer."""

    def __init__(self, name: str, target: Strategy | Any, declaration: Declaration) -> None:
        super().__init__(name, declaration.summary, declaration.params)
        self.target = target

    def query(self, conversation: Conversation, turn_index: int, *args: Any) -> Query:
        seen = so_far(conversation, turn_index)
        own = self.target.query if isinstance(self.target, Strategy) else self.target
        turn = conversation.turns[turn_index]
        try:
            answer = own(seen, turn_index, *args)
        except HarnessError:
            raise
        except Exception as error:  # its own bug: `harness run` prints the note on the error's line
            error.add_note(f"building the query of turn {turn.qid}")
            raise
        if isinstance(answer, str):
            return Query(turn.qid, answer, conversation.id, turn_index, (answer,))
        if isinstance(answer, Query) and answer.qid == turn.qid:
            return answer
        raise HarnessError(f"query strategy {self.name!r} answered {answer!r} for turn {turn.qid}; "
                           "expected the query text or a Query of that turn")

    def check(self, *args: Any) -> None:
        if isinstance(self.target, Strategy):
            self.target.check(*args)

    def check_topics(self, conversations: Sequence[Conversation], *args: Any) -> None:
        if isinstance(self.target, Strategy):
            self.target.check_topics(conversations, *args)

    def check_stream(self, qids: set[str], *args: Any) -> None:
        if isinstance(self.target, Strategy):
            self.target.check_stream(qids, *args)

    def inputs(self, *args: Any) -> dict:
        return self.target.inputs(*args) if isinstance(self.target, Strategy) else {}

    def notes(self, conversations: Sequence[Conversation], *args: Any) -> list[str]:
        return self.target.notes(conversations, *args) if isinstance(self.target, Strategy) else []
