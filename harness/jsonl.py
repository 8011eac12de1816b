"""The one JSON-lines reader: topic files, corpus dumps and iKAT 2025 submissions all go
through it, so that a bad line reads the same everywhere (`FILE:LINE: invalid JSON: ...`).

Blank lines are skipped and lines are numbered from 1. `decode` keeps a line that does not
parse as its `json.JSONDecodeError` (the iKAT validator reports those as findings, as the
official tool does); `read` makes it an InputError naming the file and the line. Files are
opened by `harness.errors.open_input`, so .gz/.bz2, a byte-order mark and a byte that is not
UTF-8 read the same as in every other input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.errors import InputError, open_input


def decode(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, value, or the line's JSONDecodeError) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                # without its line end: an error at the end of the line is placed there, not at
                # column 1 of a line that follows it
                yield number, json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as problem:
                yield number, problem


def first_line(lines: Iterable[str]) -> tuple[str, Any]:
    """The first non-blank line and its JSON value, or the JSONDecodeError it raised (("", None)
    for none): the sniff that tells JSON Lines (an object a line) from one JSON document. A text
    whose first line is a whole object is JSON Lines, unless the text is that one object
    (`document`), when only its keys can tell. JSON nested too deep or holding a number too long
    raises (RecursionError, ValueError), as every reader of the file would: a hosted board
    answers an upload's with one error."""
    line = next((line for line in lines if line.strip()), "")
    if not line:
        return "", None
    try:
        return line, json.loads(line)
    except json.JSONDecodeError as problem:
        return line, problem


def document(text: str) -> Any:
    """The text as one JSON document; None when it is not one (every caller looks for an
    object). Raises as `first_line` does."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def read(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file, streaming."""
    path = Path(path)
    with open_input(path) as handle:
        for number, value in decode(handle):
            if isinstance(value, json.JSONDecodeError):
                raise InputError(path, f"invalid JSON: {value.msg} (column {value.colno})", line=number)
            yield number, value
