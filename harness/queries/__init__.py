"""Query formulation strategies: (conversation, turn index) -> query text, registered by name.

A strategy may read the current turn and `conversation.history(i)`, never a later turn
(no leakage). Names take optional arguments after ':' (`variant:2`, `ptkb_topk:3:bm25`): each
strategy declares them as `Param`s, in order, and they are read into those types, and checked,
when a config names the strategy.

Strategies that need more than the topics (`ptkb_topk` ranks PTKB statements with a
retriever) live in the higher layer that has it and are named here as plug-ins, loaded on
first look-up, so that this package imports nothing above it.

Elsewhere (harness/_assembly.py): `ptkb_topk` is harness.ikat.ptkb_topk's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.registry import Declaration, Param, Registry, arguments, split_spec, usage
from harness.topics.model import Conversation, Query

F = TypeVar("F", bound=Callable[..., Query])


class Strategy:
    """A query strategy: `strategy(conversation, turn_index, arg)` is the turn's Query, where
    `arg` is the text after `NAME:` (None without one), read into the parameters it declares
    (one per ':'-separated part; `with_responses:2` gives K=2) and handed to `query` in order.

    A strategy reading inputs outside the topics (a rewrites file, an LLM) overrides `check`
    (run when a config is read), `check_stream` (once the whole stream is built) and `inputs`
    (what it read, for the run's JSON); one reading a part of the topics that some benchmarks
    lack (PTKB statements) overrides `check_topics` (before any query is built); one that falls
    back to other text on some turns overrides `notes` (said once the stream is built). A built-in
    that can give a turn an empty query says why in `empty` (a plug-in's are counted in one
    warning). As defined here they do nothing."""

    def __init__(self, name: str, summary: str = "", params: Sequence[Param] = (), needs: Sequence[str] = ()) -> None:
        self.name = name
        self.declaration = Declaration(name, summary, tuple(params), needs=tuple(needs))

    def __call__(self, conversation: Conversation, turn_index: int, arg: str | None = None) -> Query:
        return self.query(conversation, turn_index, *self.arguments(arg))

    def query(self, conversation: Conversation, turn_index: int, *args: Any) -> Query:
        raise NotImplementedError

    def check(self, *args: Any) -> None:
        """What the strategy reads besides the topics is there (a config names the key on error)."""

    def check_topics(self, conversations: Sequence[Conversation], *args: Any) -> None:
        """The benchmark's conversations hold what the strategy reads (a one-line HarnessError
        when they do not), checked before any query is built."""

    def check_stream(self, qids: set[str], *args: Any) -> None:
        """The whole stream of a benchmark was built: `qids` are its turns."""

    def empty(self, qid: str, *args: Any) -> str | None:
        """Why turn `qid`'s query is empty, warned of once a stream; None: nothing to say."""
        return None

    def inputs(self, *args: Any) -> dict:
        """What the strategy read besides the topics (file hashes, model), for the run's JSON."""
        return {}

    def notes(self, conversations: Sequence[Conversation], *args: Any) -> list[str]:
        """What the stream's queries do not show of how they were made (a fallback taken on some
        turns), each said once as a note when a stream is built."""
        return []

    def arguments(self, arg: str | None) -> list[Any]:
        """`arg` read into the declared parameters, in order (a one-line HarnessError when it
        does not fit them)."""
        return list(arguments(self.declaration, arg).values())


class Function(Strategy):
    """A strategy written as a function `(conversation, turn_index, *arguments) -> Query`, with
    `topics`, if given, as its `check_topics` (what every turn must hold: a manual rewrite),
    `arguments_check` as its `check` (what its arguments name can be read: a benchmark) and
    `said` as its `notes` and `empty` as its `empty` (why a turn's query is empty: its rewrite is)."""

    def __init__(self, name: str, summary: str, params: Sequence[Param], function: Callable[..., Query],
                 topics: Callable[[Sequence[Conversation]], None] | None = None,
                 arguments_check: Callable[..., None] | None = None,
                 said: Callable[[Sequence[Conversation]], list[str]] | None = None,
                 empty: Callable[[str], str] | None = None, needs: Sequence[str] = ()) -> None:
        super().__init__(name, summary, params, needs)
        self.function, self.topics, self.arguments_check, self.said = function, topics, arguments_check, said
        self.empty_note = empty

    def query(self, conversation: Conversation, turn_index: int, *args: Any) -> Query:
        return self.function(conversation, turn_index, *args)

    def check(self, *args: Any) -> None:
        if self.arguments_check is not None:
            self.arguments_check(*args)

    def check_topics(self, conversations: Sequence[Conversation], *args: Any) -> None:
        if self.topics is not None:
            self.topics(conversations)

    def notes(self, conversations: Sequence[Conversation], *args: Any) -> list[str]:
        return self.said(conversations) if self.said is not None else []

    def empty(self, qid: str, *args: Any) -> str | None:
        return None if self.empty_note is None else self.empty_note(qid)


# plug-ins (harness/queries/plugins.py): entry points `harness.strategies`, `python:module:attr[:arg]`,
# STRATEGIES.using({name: function})
# built-ins of higher layers (ptkb_topk, harness.ikat): harness/_assembly.py
STRATEGIES: Registry[Strategy] = Registry(
    "query strategy", ("harness.queries.cosrec", "harness.queries.history", "harness.queries.llm",
                       "harness.queries.plugins", "harness.queries.rewrites"),
    group="harness.strategies", by_keyword=False)


def every_turn(check: Callable[[Conversation, int], object]) -> Callable[[Sequence[Conversation]], None]:
    """A `topics` check (register) that runs `check(conversation, turn_index)` on every turn:
    what a strategy reads from each turn is looked for when a config names it, not at the turn."""
    def check_all(conversations: Sequence[Conversation]) -> None:
        for conversation in conversations:
            for index in range(len(conversation.turns)):
                check(conversation, index)

    return check_all


def register(name: str, summary: str, params: Sequence[Param] = (),
             topics: Callable[[Sequence[Conversation]], None] | None = None,
             check: Callable[..., None] | None = None,
             notes: Callable[[Sequence[Conversation]], list[str]] | None = None,
             empty: Callable[[str], str] | None = None, needs: Sequence[str] = ()) -> Callable[[F], F]:
    """Decorator: the function `(conversation, turn_index, *arguments) -> Query` is the strategy
    `name`, declared by `summary` and `params` (its arguments after `NAME:`); when a config names
    it, `topics` checks that a benchmark's conversations hold what it reads, and `check(*arguments)`
    that what its arguments name can be read; `notes(conversations)` is what its stream says, and
    `empty(qid)` why a turn's query is empty; `needs`, the modules of an optional extra it imports
    (harness.extras), are looked for when a config names it."""
    def decorator(function: F) -> F:
        add(Function(name, summary, params, function, topics, check, notes, empty, needs))
        return function

    return decorator


def add(strategy: Strategy) -> None:
    """Register a strategy object under its name, as it declares itself."""
    declared = strategy.declaration
    STRATEGIES.add(declared.name, strategy, declared.summary, declared.params, needs=declared.needs)


def get(name: str) -> tuple[Strategy, str | None]:
    """The strategy and its argument text; a name ending in ':' (`python:mine:last:`), a
    typo that would act as the name without it under a run tag of its own, is an error."""
    base, arg = split_spec(name)
    strategy = STRATEGIES.get(base)
    if arg is None and name != base:
        declaration = strategy.declaration
        bare = "" if any(param.required for param in declaration.params) else f" or leave the ':' out ({base!r})"
        raise HarnessError(f"query strategy {name!r} has nothing after its last ':': give the argument "
                           f"({usage(declaration)}){bare}")
    return strategy, arg


def check(name: str) -> None:
    """A strategy name and its arguments, checked before any query is built (a config names
    the key on error): the strategy exists, its arguments fit its declaration, and an external
    one's inputs can be read."""
    strategy, arg = get(name)
    strategy.check(*strategy.arguments(arg))


def check_topics(name: str, conversations: Sequence[Conversation]) -> None:
    """The strategy `name` can build queries from these conversations (a config names the key
    on error; `stream` checks it too, before the first query)."""
    strategy, arg = get(name)
    strategy.check_topics(conversations, *strategy.arguments(arg))


def stream(conversations: Sequence[Conversation], strategy_name: str) -> Iterator[Query]:
    """The query stream of a benchmark under one strategy, in conversation and turn order.

    Each qid comes once: flattened trees (CAsT 2022) repeat a shared turn in every path
    through it, with the same history and hence the same query; a repeat whose query
    differs is an error. A plug-in's empty queries, which retrieve nothing, are counted in
    a warning on stderr; a built-in's are warned of per turn where it says why (`manual` and
    `automatic`: the benchmark's rewrite is empty), each turn once a stream; what the strategy
    notes of the stream (Strategy.notes) is a note there.
    """
    check_topics(strategy_name, conversations)
    strategy, arg = get(strategy_name)
    arguments = strategy.arguments(arg)
    seen: dict[str, str] = {}
    for conversation in conversations:
        for index in range(len(conversation.turns)):
            query = strategy(conversation, index, arg)
            if query.qid in seen:
                if seen[query.qid] != query.text:
                    raise HarnessError(f"turn {query.qid} gets two different queries under {strategy_name!r}")
                continue
            seen[query.qid] = query.text
            warn_empty(strategy, query, arguments)
            yield query
    strategy.check_stream(set(seen), *arguments)
    for note in strategy.notes(conversations, *arguments):
        print(f"note: query strategy {strategy_name!r}: {note}", file=sys.stderr)
    blank = [qid for qid, text in seen.items() if not text.strip()]
    if blank and STRATEGIES.origin(split_spec(strategy_name)[0]) is not None:
        print(f"warning: query strategy {strategy_name!r} gave {len(blank)} of {len(seen)} turns an empty query "
              f"(first: {blank[0]}), which retrieves nothing and scores 0", file=sys.stderr)


def warn_empty(strategy: Strategy, query: Query, arguments: Sequence[Any]) -> None:
    """Say on stderr why `query` is empty, where it is and `strategy` says why (`Strategy.empty`);
    the caller says it once a turn in its own call (a stream, a PyTerrier transform)."""
    if not query.text.strip() and (why := strategy.empty(query.qid, *arguments)) is not None:
        print(f"warning: {why}", file=sys.stderr)


def inputs(strategy_name: str) -> dict:
    """What a strategy read besides the topics (file hashes, model), recorded in the run JSON."""
    strategy, arg = get(strategy_name)
    return strategy.inputs(*strategy.arguments(arg))
