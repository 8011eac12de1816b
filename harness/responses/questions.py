"""Each turn's question, which fills the `{question}` of the nugget and citation judges' prompts.

Declared rule (tested in tests/test_responses.py): a turn's question is the first stated of
- the nugget bank: nuggetizer's `query`, the standalone question the nuggets were written for and
  nuggetizer's own assigner prompts with;
- the topics (`--topics`, the Python API's `topics=`, a hosted task's `topics:`): the benchmark
  turn's utterance, which may lean on the conversation before it ("Oh, do I need a visa?");
- the responses: TREC RAG's `topic` (2025: `metadata.narrative`), of the first run given that
  states one;
a question blank or not stated counting as none. Where a later source states another question
(spacing aside) the first is asked all the same, and the notes count such turns; a turn none
of them states a question for is asked with an empty one, and the notes count those. Every
run's answer to a turn is judged under the one question, whichever file stated it. A CONE-RAG
bank states no question, so iKAT's CONE-RAG turns are asked their topics' utterance.

A hosted board's response task (harness.serve.responses) asks by the same rule from its
organiser's files alone, its nugget bank and its topics: an upload's own question would be the
participant's words in the judge's prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.errors import verb
from harness.responses.model import NuggetBank, ResponseRun, first_few

if TYPE_CHECKING:
    from harness.topics.model import Conversation

BANK, TOPICS, RESPONSES = "the nugget bank", "the topics", "the responses"  # the sources, first one first


@dataclass(frozen=True)
class Questions:
    """Each turn's question, where it came from, and the sources asked for one (in order)."""

    text: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # turn -> the source of its question
    differing: dict[str, tuple[str, ...]] = field(default_factory=dict)  # turn -> later sources stating another
    sources: tuple[str, ...] = ()

    def counts(self, turns: Sequence[str]) -> dict[str, int]:
        """How many of `turns` have their question from each source, and from none."""
        found: dict[str, int] = {}
        for turn in turns:
            source = self.source.get(turn, "none")
            found[source] = found.get(source, 0) + 1
        return found

    def notes(self, turns: Sequence[str]) -> list[str]:
        """The notes on `turns` (the evaluated ones) asked with no question, or with one other
        sources state otherwise."""
        notes = []
        missing = [turn for turn in turns if turn not in self.text]
        if missing:
            why = (f"neither {' nor '.join(self.sources)} states one" if len(self.sources) > 1 else
                   f"{self.sources[0]} states none" if self.sources else "no source of questions was given")
            notes.append(f"{len(missing)} of the {len(turns)} evaluated turns {verb(len(missing))} no question "
                         f"({why}): the judge's {{question}} is empty there ({first_few(missing)})")
        differing = [turn for turn in turns if turn in self.differing]
        if differing:
            pairs = sorted({(self.source[t], other) for t in differing for other in self.differing[t]})
            said = "; ".join("two runs' files differ" if other == first else f"{first} and {other} differ"
                             for first, other in pairs)
            notes.append(f"{len(differing)} of the {len(turns)} evaluated turns {verb(len(differing))} two questions "
                         f"({said}): the judge is asked the first source's, in the order {', '.join(self.sources)} "
                         f"({first_few(differing)})")
        return notes


def topic_questions(conversations: Iterable[Conversation]) -> dict[str, str]:
    """Each turn of the topics and its utterance: the topics' questions, and the turns a run is
    evaluated on where topics are given."""
    return {turn.qid: turn.utterance for conversation in conversations for turn in conversation.turns}


def turn_questions(runs: Sequence[ResponseRun] | None, bank: NuggetBank,
                   topics: Mapping[str, str] | None = None) -> Questions:
    """Each turn's question by the rule of the module docstring (`topics`: turn -> utterance,
    `topic_questions`'; `runs` None: the responses are no source, as on a hosted board)."""
    stated: dict[str, list[tuple[str, str]]] = {}
    given = [(BANK, bank.questions)] + ([(TOPICS, topics)] if topics is not None else [])
    for source, questions in given:
        for turn, text in questions.items():
            stated.setdefault(turn, []).append((source, text))
    for run in runs or ():
        for turn, response in run.responses.items():
            stated.setdefault(turn, []).append((RESPONSES, response.question or ""))
    text, source, differing = {}, {}, {}
    for turn, found in stated.items():
        found = [(where, question) for where, question in found if question.strip()]
        if not found:
            continue
        source[turn], text[turn] = found[0]
        others = tuple(dict.fromkeys(where for where, question in found[1:] if question.split() != text[turn].split()))
        if others:
            differing[turn] = others
    answers = (RESPONSES,) if runs is not None else ()
    return Questions(text, source, differing, tuple(where for where, _ in given) + answers)
