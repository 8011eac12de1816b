"""Small pieces every adapter needs: split choice, shipped qrels, qid bookkeeping."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from harness.errors import HarnessError, InputError
from harness.paths import qrels_root
from harness.trec import Qrels, read_qrels


class UnknownSplit(HarnessError):
    """A split the adapter does not have; `splits` lists those it has (see `topics.splits`)."""

    def __init__(self, name: str, split: str, splits: Iterable[str]) -> None:
        self.splits = tuple(splits)
        super().__init__(f"{name} has no split {split!r}; known: {', '.join(self.splits)}")


def choose_split(name: str, split: str | None, splits: Iterable[str], default: str) -> str:
    """The split asked for, or the default (the split the official qrels judge)."""
    splits = tuple(splits)
    chosen = split or default
    if chosen not in splits:
        raise UnknownSplit(name, chosen, splits)
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
