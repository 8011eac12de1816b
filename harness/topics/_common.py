"""Small pieces every adapter needs: split choice, shipped qrels, qid bookkeeping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.errors import InputError
from harness.paths import qrels_root
from harness.registry import UnknownName
from harness.topics import ADAPTERS
from harness.trec import Qrels, read_qrels


def choose_split(name: str, split: str | None) -> str:
    """The split asked for, or the default: the first of those the adapter `name` declares
    (the split the official qrels judge). An unknown split is refused, listing the known."""
    splits = ADAPTERS.declaration(name).splits
    chosen = split or splits[0]
    if chosen not in splits:
        raise UnknownName(f"{name} has no split {chosen!r}; known: {', '.join(splits)}", chosen)
    return chosen


def shipped_qrels(*parts: str) -> Callable[[], Qrels]:
    """A lazy reader of a qrels file under qrels_root()."""

    def load() -> Qrels:
        return read_qrels(qrels_root().joinpath(*parts))

    return load


class QidSet:
    """Refuses a qid seen twice in one topic file: runs and qrels key on it."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.seen: set[str] = set()

    def add(self, qid: str, record: str) -> str:
        if qid in self.seen:
            raise InputError(self.path, f"turn id {qid!r} appears twice", record=record)
        self.seen.add(qid)
        return qid
