"""The check registry behind `harness ikat validate`: findings, the context checks read,
and `@check(name, years)` to register one.

A check is a function `(Context) -> findings`. The official validators' classes are kept:
an error is what makes the official tool refuse the file, a warning what it counts and
reports. The checks themselves live in the module each year names in
harness.ikat.submission.YEARS: checks_2023.py (the 2023 and 2024 JSON runs) and
checks_2025.py (the 2025 JSON Lines runs).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.ikat.submission import YEARS, Submission
from harness.registry import Registry
from harness.topics.model import Conversation

Level = Literal["error", "warning"]
RUN_TYPES = {year: set(entry.run_types) for year, entry in YEARS.items()}


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str
    turn: str | None = None
    line: int | None = None  # 2025 files: the JSON line

    def __str__(self) -> str:
        where = "".join(
            [f" line {self.line}" if self.line is not None else "", f" turn {self.turn}" if self.turn else ""]
        )
        return f"{self.level.upper()}{where} [{self.check}]: {self.message}"


@dataclass(frozen=True)
class TopicInfo:
    """What the validators need of a topic: its turn ids and its PTKB."""

    id: str
    turn_ids: tuple[str, ...]
    ptkb: dict[str, str]


def topic_index(conversations: Iterable[Conversation]) -> dict[str, TopicInfo]:
    return {
        c.id: TopicInfo(c.id, tuple(t.qid for t in c.turns), {s.id: s.text for s in c.personal})
        for c in conversations
    }


@dataclass
class Context:
    """What checks read: the decoded file, the submission it parses to, the topics."""

    year: int
    topics: dict[str, TopicInfo]
    raw: Any = None  # 2023/2024: the decoded JSON object
    entries: list[tuple[int, Any]] = field(default_factory=list)  # 2025: (line, decoded object)
    submission: Submission | None = None  # 2023/2024, once the structure checks passed
    passages: Container[str] | None = None  # the passage collection's ids, when given

    def turn_topic(self, turn_id: str) -> TopicInfo | None:
        topic, sep, number = turn_id.rpartition("_")
        return self.topics.get(topic) if sep and number.isdigit() else None


CheckFn = Callable[[Context], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    name: str
    years: frozenset[int]
    structural: bool  # later checks need it to pass (they read the parsed submission)
    run: CheckFn


# each year's checks module (harness.ikat.submission.YEARS) registers its checks, imported on the
# first look-up (harness/_assembly.py: this module cannot import them, they import it)
CHECKS: Registry[Check] = Registry("iKAT check")


def check(name: str, years: Sequence[int], structural: bool = False) -> Callable[[CheckFn], CheckFn]:
    def decorator(fn: CheckFn) -> CheckFn:
        CHECKS.add(name, Check(name, frozenset(years), structural, fn))
        return fn

    return decorator


def error(check_name: str, message: str, turn: str | None = None, line: int | None = None) -> Finding:
    return Finding("error", check_name, message, turn, line)


def warning(check_name: str, message: str, turn: str | None = None, line: int | None = None) -> Finding:
    return Finding("warning", check_name, message, turn, line)
