"""Strict JSON reading shared by the topic adapters.

Every benchmark file is read through `harness.jsonl` (`read_document` / `read`), and every field
through a `Record`, so that a missing field, a wrong type or a truncated file is an `InputError` naming
the file, the line (JSONL) and the record ("topic 9-1, turn 3") instead of a KeyError deep
inside an adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import InputError

_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
               list: "a list", dict: "an object", type(None): "null"}


def _kind(value: Any) -> str:
    return _KIND_NAMES.get(type(value), type(value).__name__)


class Record:
    """A JSON object read field by field: each accessor checks presence and type."""

    def __init__(self, data: Any, path: str | Path, label: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.label = label
        self.line = line
        if not isinstance(data, dict):
            raise self.error(f"expected a JSON object, found {_kind(data)}")
        self.data: dict[str, Any] = data

    def error(self, problem: str) -> InputError:
        return InputError(self.path, problem, line=self.line, record=self.label)

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, *kinds: type, optional: bool = False) -> Any:
        """The value of `key`, which must be one of `kinds` (bool never passes for int)."""
        if key not in self.data:
            if optional:
                return None
            raise self.error(f"missing field {key!r}")
        value = self.data[key]
        if value is None and optional:
            return None
        if not any(_is(value, kind) for kind in kinds):
            expected = " or ".join(_KIND_NAMES.get(kind, kind.__name__) for kind in kinds)
            raise self.error(f"field {key!r} should be {expected}, found {_kind(value)}")
        return value

    def text(self, key: str, *, optional: bool = False) -> str | None:
        return self.get(key, str, optional=optional)

    def strings(self, key: str, *, optional: bool = False) -> tuple[str, ...]:
        """A list of strings (an absent optional field is the empty tuple)."""
        return tuple(str(v) for v in self.items(key, str, optional=optional))

    def items(self, key: str, *kinds: type, optional: bool = False) -> list[Any]:
        """A list whose elements must be of one of `kinds`."""
        values = self.get(key, list, optional=optional) or []
        for index, value in enumerate(values):
            if not any(_is(value, kind) for kind in kinds):
                expected = " or ".join(_KIND_NAMES.get(kind, kind.__name__) for kind in kinds)
                raise self.error(f"element {index} of {key!r} should be {expected}, found {_kind(value)}")
        return values

    def records(self, key: str, label: str) -> list[Record]:
        """A list of objects, each a Record labelled `<this label>, <label> <index>`."""
        return [
            Record(value, self.path, f"{self.label}, {label} {index}", self.line)
            for index, value in enumerate(self.get(key, list))
        ]

    def child(self, key: str) -> Record:
        return Record(self.get(key, dict), self.path, f"{self.label}, {key}", self.line)

    def relabel(self, label: str) -> Record:
        """The same record under a better name, once its id is known."""
        return Record(self.data, self.path, label, self.line)


def _is(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


def records(value: Any, path: str | Path, label: str) -> list[Record]:
    """A top-level JSON list of objects as Records labelled `<label> <index>`."""
    if not isinstance(value, list):
        raise InputError(path, f"expected a JSON list of {label}s, found {_kind(value)}")
    return [Record(item, path, f"{label} {index}") for index, item in enumerate(value)]


def single_entry(value: Any, path: str | Path, line: int) -> tuple[str, Any]:
    """CoSRec-style lines `{"<id>": value}`: exactly one key."""
    if not isinstance(value, dict) or len(value) != 1:
        found = f"{len(value)} keys" if isinstance(value, dict) else _kind(value)
        raise InputError(path, f"expected an object with exactly one key (the id), found {found}", line=line)
    return next(iter(value.items()))
