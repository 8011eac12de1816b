"""Errors a user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import IO


class HarnessError(Exception):
    """A problem with the user's input or setup, explained in one sentence."""


class InputError(HarnessError):
    """A malformed input file: names the file, the line or record, and what was expected."""

    def __init__(
        self,
        path: str | Path,
        problem: str,
        *,
        line: int | None = None,
        record: str | None = None,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.record = record
        where = self.path
        if line is not None:
            where += f":{line}"
        if record is not None:
            where += f" (record {record})"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):
        """Survives pickling, so errors raised in worker processes reach the user intact."""
        return (_input_error, (self.path, self.problem, self.line, self.record))


def _input_error(path: str, problem: str, line: int | None, record: str | None) -> InputError:
    return InputError(path, problem, line=line, record=record)


def open_input(path: str | Path) -> IO[str]:
    """Open a user's text input; a missing file or a folder is an InputError naming it."""
    try:
        return open(path, encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a file") from None
