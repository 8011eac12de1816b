"""Records of response evaluation: what a system answered, and the nuggets it should say."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import FLAGS, Spelling


@dataclass(frozen=True)
class Sentence:
    """A stretch of a response with the passages it cites (TREC RAG: one answer sentence;
    iKAT 2025: one of a turn's responses, the pieces of its answer; iKAT 2023/2024: the whole
    response, citing its passages as a whole)."""

    text: str
    citations: tuple[str, ...] = ()  # passage ids


@dataclass(frozen=True)
class Response:
    turn: str  # the qid the nugget bank uses, e.g. iKAT `12_1`
    text: str
    sentences: tuple[Sentence, ...] = ()
    passages: Mapping[str, str] = field(default_factory=dict)  # cited passage id -> text, where the file has it
    line: int | None = None  # where the file gives it, for messages
    cites_top: bool = False  # iKAT: it marks no passage used, so its top passages are its citations
    dropped: int = 0  # iKAT 2025: pieces past the turn's word limit, left out as the official validator drops them
    question: str | None = None  # the question the file says it answers (TREC RAG's `topic`), None where it says none

    @property
    def cited(self) -> bool:
        return any(sentence.citations for sentence in self.sentences)


@dataclass(frozen=True)
class ResponseRun:
    """One system's responses, one per turn."""

    name: str
    path: Path
    format: str
    responses: dict[str, Response]  # turn -> response


@dataclass(frozen=True)
class Nugget:
    id: str
    text: str
    grade: int  # the bank's grade (CONE-RAG 1-4; nuggetizer: vital 2, okay 1)
    vital: bool


@dataclass(frozen=True)
class NuggetBank:
    name: str
    nuggets: dict[str, tuple[Nugget, ...]]  # turn -> nuggets
    rule: str  # how grades became vital / okay, in words (recorded with every score)
    vital_grade: int | None = None  # the grade from which a graded nugget is vital; None: importance as given
    questions: dict[str, str] = field(default_factory=dict)  # turn -> its question, where the bank states one

    def of(self, turn: str) -> tuple[Nugget, ...]:
        return self.nuggets.get(turn, ())

    def unreachable_vital_grade(self, spelling: Spelling = FLAGS) -> str | None:
        """Where `vital_grade` is above every nugget's grade no nugget is vital, and the vital
        scores say nothing (nuggetizer's 0 on every turn): the warning that says so, naming the
        setting as `spelling` writes it (--vital-grade, or the API's vital_grade=), else None."""
        grades = [n.grade for nuggets in self.nuggets.values() for n in nuggets]
        if self.vital_grade is None or not grades or max(grades) >= self.vital_grade:
            return None
        from harness.evaluate import unreachable

        setting = spelling.given("vital_grade", self.vital_grade)
        return (f"{unreachable(setting, self.name, self.vital_grade, max(grades), 'nugget in')}, so no nugget is "
                "vital: vital and strict_vital are undefined (n/a)")


def first_few(names: Sequence[str], shown: int = 5) -> str:
    """The first `shown` names, comma-separated, then " ..." where there are more: how the
    notes and errors of response evaluation list turns and runs."""
    return ", ".join(names[:shown]) + (" ..." if len(names) > shown else "")
