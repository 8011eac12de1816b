"""The one JSON-lines reader: topic files, corpus dumps and iKAT 2025 submissions all go
through it, so that a bad line reads the same everywhere (`FILE:LINE: invalid JSON: ...`).

Blank lines are skipped and lines are numbered from 1. `decode` keeps a line that does not
parse as its `json.JSONDecodeError` (the iKAT validator reports those as findings, as the
official tool does); `read` makes it an InputError naming the file and the line. Files are
opened by `harness.errors.open_input`, so .gz/.bz2, a byte-order mark and a byte that is not
UTF-8 read the same as in every other input.

Every reader of a user's JSON decodes it with `loads`, so that JSON which parses but not into
Python (nested past the recursion limit, an integer of more digits than Python converts) is
said as a syntax error is, naming the file and the line, not a traceback.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.errors import InputError, open_input

# a string (a key too), a bracket or a number: enough of JSON to find where a text that
# parsed up to there is nested too deep or holds too long an integer
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')


class Unreadable(json.JSONDecodeError):
    """JSON that parses but not into Python: a JSONDecodeError, so that every reader reports it
    where it reports a syntax error (the iKAT validator as a finding), at its line and column."""


def loads(text: str, object_pairs_hook: Any = None) -> Any:
    """json.loads, raising only JSONDecodeError (Unreadable for JSON nested deeper than the
    recursion limit or holding an integer longer than int_max_str_digits)."""
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise _too_deep(text) from None
    except ValueError:
        too_long = _too_long(text)
        if too_long is None:
            raise  # not the integer limit: object_pairs_hook's own error
        raise too_long from None


def _too_deep(text: str) -> Unreadable:
    """The text's deepest nesting, placed at the first bracket that reaches it."""
    depth = deepest = place = 0
    for token in _TOKEN.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest, place = depth, token.start()
        elif token.group() in ("]", "}"):
            depth -= 1
    problem = f"nested {deepest} levels deep, more than Python's recursion limit ({sys.getrecursionlimit()}) allows"
    return Unreadable(problem, text, place)


def _too_long(text: str) -> Unreadable | None:
    """The first integer of more digits than Python converts to int (a float converts at any length)."""
    limit = sys.get_int_max_str_digits()
    for token in _TOKEN.finditer(text):
        digits = token.group().removeprefix("-")
        if len(digits) > limit and digits.isdigit():
            return Unreadable(f"an integer of {len(digits)} digits, more than Python's limit ({limit}) allows",
                              text, token.start())
    return None


def invalid(path: str | Path, problem: json.JSONDecodeError, line: int | None = None) -> InputError:
    """`FILE:LINE: invalid JSON: WHAT (column N)`, `line` that of a JSON line (else the
    document's). Its cause is `problem`: a hosted board tells Unreadable JSON by it."""
    error = InputError(path, f"invalid JSON: {problem.msg} (column {problem.colno})",
                       line=problem.lineno if line is None else line)
    error.__cause__ = problem
    return error


def decode(lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, value, or the line's JSONDecodeError) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                # without its line end: an error at the end of the line is placed there, not at
                # column 1 of a line that follows it
                yield number, loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as problem:
                yield number, problem


def first_line(lines: Iterable[str]) -> tuple[str, Any]:
    """The first non-blank line and its JSON value, or the JSONDecodeError it raised (("", None)
    for none): the sniff that tells JSON Lines (an object a line) from one JSON document. A text
    whose first line is a whole object is JSON Lines, unless the text is that one object
    (`document`), when only its keys can tell."""
    line = next((line for line in lines if line.strip()), "")
    if not line:
        return "", None
    try:
        return line, loads(line)
    except json.JSONDecodeError as problem:
        return line, problem


def document(text: str, path: str | Path) -> Any:
    """The text (of the file at `path`) as one JSON document; None when it is not one (every
    caller looks for an object). One that is, but not one Python can hold, is an InputError:
    read as JSON Lines, its first line would be blamed for it."""
    try:
        return loads(text)
    except Unreadable as problem:
        raise invalid(path, problem) from problem
    except json.JSONDecodeError:
        return None


def read(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file, streaming."""
    path = Path(path)
    with open_input(path) as handle:
        for number, value in decode(handle):
            if isinstance(value, json.JSONDecodeError):
                raise invalid(path, value, number)
            yield number, value
