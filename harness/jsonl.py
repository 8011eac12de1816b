"""The one JSON-lines reader: topic files, corpus dumps and iKAT 2025 submissions all go
through it, so that a bad line reads the same everywhere (`FILE:LINE: invalid JSON: ...`).

Blank lines are skipped and lines are numbered from 1. `decode` keeps a line that does not
parse as its `json.JSONDecodeError` (the iKAT validator reports those as findings, as the
official tool does); `read` makes it an InputError naming the file and the line. Files are
opened by `harness.errors.open_input`, so .gz/.bz2, a byte-order mark and a byte that is not
UTF-8 read the same as in every other input.

A file holding one JSON document (a topics file, a responses file) is read by `read_document`,
with the same errors. Every reader of a user's JSON decodes it with `loads`, so that JSON which parses but not into
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
    except (RecursionError, ValueError) as error:
        # Python's limits, not object_pairs_hook's own error (whatever integers the text holds)
        if isinstance(error, RecursionError):
            unreadable = _too_deep(text)
        else:
            unreadable = _too_long(text) if str(error).startswith("Exceeds the limit") else None
        if unreadable is None:
            raise
        raise unreadable from None


def _too_deep(text: str) -> Unreadable | None:
    """Placed at the first bracket past the recursion limit, read no further (a deep first line
    of a large upload costs no more than the line); a text json failed on that nests no deeper
    (the calls in progress count against the limit too) at its deepest bracket."""
    limit = sys.getrecursionlimit()
    depth = deepest = 0
    at = None
    for token in _TOKEN.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest, at = depth, token.start()
                if depth > limit:
                    break
        elif token.group() in ("]", "}"):
            depth -= 1
    if at is None:
        return None
    nested = f"more than {limit}" if deepest > limit else f"{deepest}"
    return Unreadable(f"nested {nested} levels deep, deeper than Python reads (its recursion limit is {limit})",
                      text, at)


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
    """The text read up to the first non-blank line, that line included, and the line's JSON
    value, or the JSONDecodeError it raised (("", None) for none): the sniff that tells JSON Lines
    (an object a line) from one JSON document. A text whose first line is a whole object is JSON
    Lines, unless the text is that one object (`document`, of the text read and the rest, whose
    lines are numbered as in the file), when only its keys can tell."""
    taken = []
    for line in lines:
        taken.append(line)
        if line.strip():
            try:
                return "".join(taken), loads(line)
            except json.JSONDecodeError as problem:
                return "".join(taken), problem
    return "", None


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


def read_document(path: str | Path, object_pairs_hook: Any = None) -> Any:
    """A file holding one JSON document; syntax errors (e.g. a truncated file) name the line.
    `object_pairs_hook` as json.load takes it (e.g. to see a key an object gives twice)."""
    path = Path(path)
    with open_input(path) as handle:
        text = handle.read()
    return parse_document(text, path, object_pairs_hook)


def parse_document(text: str, path: str | Path, object_pairs_hook: Any = None) -> Any:
    """read_document of the text of the file at `path`, read already (a pipe gives its bytes once)."""
    try:
        return loads(text, object_pairs_hook)
    except json.JSONDecodeError as error:
        raise invalid(path, error) from error


def read(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file, streaming."""
    path = Path(path)
    with open_input(path) as handle:
        for number, value in decode(handle):
            if isinstance(value, json.JSONDecodeError):
                raise invalid(path, value, number)
            yield number, value
