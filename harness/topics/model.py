"""One model for every conversational benchmark: conversations made of turns.

`Turn` and `Conversation` hold what every benchmark has. A benchmark with more (iKAT's PTKB
provenance, CoSRec's query variants, CRS Arena's system and sentiment) subclasses them with
typed fields and declares those fields when it registers (`fields=` / `conversation_fields=`,
made by `declared_fields`), so that a reader finds them by attribute and a user by
`harness components benchmark`.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from harness.registry import REQUIRED, Param


@dataclass(frozen=True)
class PersonalStatement:
    """A piece of personal knowledge: an iKAT PTKB statement, a CoSRec profile keyword."""

    id: str
    text: str


# The metadata of a turn's field that holds its answer (the system response, the gold passages):
# given for the turns before, blank in the turn a plug-in strategy builds the query of (`asked`).
ANSWER = {"answer": True}


@dataclass(frozen=True)
class Turn:
    """One user turn. `qid` is spelled exactly as the benchmark's qrels spell it."""

    qid: str
    utterance: str
    manual_rewrite: str | None = None
    automatic_rewrite: str | None = None
    response: str | None = dataclasses.field(default=None, metadata=ANSWER)
    provenance: tuple[str, ...] = dataclasses.field(default=(), metadata=ANSWER)
    # 1-based position of the turn in its dialogue (the "turn depth" breakdowns group by), set by
    # an adapter whose conversation's turns are not the dialogue's user turns one by one (CoSRec:
    # several intents and personalised copies of one utterance; OpenDialKG: the recommendation
    # turns only); None: the turn's position among its conversation's turns is its depth
    depth: int | None = None


def asked(turn: Turn) -> Turn:
    """The turn as the user asked it: its answer fields (`ANSWER`) at their defaults, so that a
    query built from it cannot read the response or the passages it is judged on."""
    blank = {field.name: field.default for field in dataclasses.fields(turn) if field.metadata.get("answer")}
    return dataclasses.replace(turn, **blank)


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]
    title: str | None = None
    personal: tuple[PersonalStatement, ...] = ()
    # the topic this conversation is one path through, where a topic is a tree of turns (CAsT
    # 2022: path `132/2-14` of topic `132`); None: the conversation is its topic
    topic: str | None = None

    def history(self, turn_index: int) -> tuple[Turn, ...]:
        """The turns before `turn_index`: all a query strategy may read besides the turn."""
        return self.turns[:turn_index]

    def dialogue(self, turn_index: int) -> tuple[Turn, ...]:
        """The user turns of the dialogue before `turn_index`, each once: where the turns give their
        depth (`Turn.depth`), the last turn of each depth below the turn's, since CoSRec's intents and
        personalised copies of one utterance are several turns of one depth (those of the turn's own
        utterance, with its response, are not before it); else every turn before it (`history`)."""
        depth = self.turns[turn_index].depth
        history = self.history(turn_index)
        if depth is None:
            return history
        last = {turn.depth: turn for turn in history if turn.depth is not None and turn.depth < depth}
        return tuple(last[d] for d in sorted(last))


def so_far(conversation: Conversation, turn_index: int) -> Conversation:
    """The conversation as a system sees it at the turn: the turns before it as the benchmark
    gives them, then the turn as the user asked it (`asked`), no later turn. What a plug-in
    strategy and every PTKB method but the `gold` oracle are handed."""
    return dataclasses.replace(conversation, turns=(*conversation.turns[:turn_index],
                                                    asked(conversation.turns[turn_index])))


def declared_fields(*classes: type, **descs: str) -> tuple[Param, ...]:
    """The fields the subclasses `classes` of Turn (or of Conversation) add to it, as Params
    (type and default from the dataclass, desc from `descs`), in order of first appearance.
    Every added field needs a desc and every desc a field, so the declaration cannot drift
    from the class."""
    params: dict[str, Param] = {}
    for cls in classes:
        base = Turn if issubclass(cls, Turn) else Conversation
        hints = typing.get_type_hints(cls)
        basic = {f.name for f in dataclasses.fields(base)}
        for field in dataclasses.fields(cls):
            if field.name in basic or field.name in params:
                continue
            if field.name not in descs:
                raise TypeError(f"{cls.__name__}.{field.name} needs a description")
            default = field.default if field.default is not dataclasses.MISSING else \
                field.default_factory() if field.default_factory is not dataclasses.MISSING else REQUIRED
            params[field.name] = Param(field.name, hints[field.name], default, descs[field.name])
    unknown = set(descs) - set(params)
    if unknown:
        raise TypeError(f"no field {', '.join(sorted(unknown))} in {', '.join(c.__name__ for c in classes)}")
    return tuple(params.values())


@dataclass(frozen=True)
class Query:
    """One line of a query stream: what a retriever runs, and what it was built from."""

    qid: str
    text: str
    conversation_id: str
    turn_index: int  # 0-based position of the turn among its conversation's turns
    context: tuple[str, ...] = ()  # the pieces of text the strategy used, in order
