"""One model for every conversational benchmark: conversations made of turns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PersonalStatement:
    """A piece of personal knowledge: an iKAT PTKB statement, a CoSRec profile keyword."""

    id: str
    text: str


@dataclass(frozen=True)
class Turn:
    """One user turn. `qid` is spelled exactly as the benchmark's qrels spell it."""

    qid: str
    utterance: str
    manual_rewrite: str | None = None
    automatic_rewrite: str | None = None
    response: str | None = None
    provenance: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]
    title: str | None = None
    personal: tuple[PersonalStatement, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def history(self, turn_index: int) -> tuple[Turn, ...]:
        """The turns before `turn_index`: all a query strategy may read besides the turn."""
        return self.turns[:turn_index]


@dataclass(frozen=True)
class Query:
    """One line of a query stream: what a retriever runs, and what it was built from."""

    qid: str
    text: str
    conversation_id: str
    turn_index: int  # 0-based position of the turn in its conversation (turn depth - 1)
    context: tuple[str, ...] = ()  # the pieces of text the strategy used, in order
