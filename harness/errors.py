"""Errors a user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """'1 turn', '2 turns': a count in a message, its noun agreeing with it."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def verb(number: int, singular: str = "has", plural: str = "have") -> str:
    """The verb agreeing with a count's noun: '1 turn has', '2 turns have'."""
    return singular if number == 1 else plural


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters: a message quotes what it found, not a whole file
    that YAML read as one string."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text)} characters)"


@dataclass(frozen=True)
class Spelling:
    """How a message names a setting the user gave: the command line's `--passage-separator '-'`
    or the Python API's `passage_separator='-'`. A check both share takes the caller's, so
    each user reads the name they typed."""

    flags: bool

    def name(self, key: str) -> str:
        """`key` (the Python argument's name) as this caller spells it."""
        return "--" + key.replace("_", "-") if self.flags else key

    def given(self, key: str, value: object) -> str:
        """`key` set to `value`, as this caller would write it."""
        return f"{self.name(key)} {value!r}" if self.flags else f"{key}={value!r}"


FLAGS = Spelling(flags=True)  # the command line
ARGUMENTS = Spelling(flags=False)  # the Python API (harness.api)


COMPRESSED = (".gz", ".bz2")  # the suffixes open_input decompresses


class HarnessError(Exception):
    """A problem with the user's input or setup, explained in one sentence."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, saying what was kept and how to resume, in one line (the CLI prints it, exit 130)."""


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


class TextInput:
    """A user's text file, opened by `open_input`: iterate it by lines inside `with`, or
    `read()` it whole.

    A byte-order mark is read away (kept with `encoding="utf-8"`). A byte that is not UTF-8 is an InputError naming the
    line it is on (found by re-reading the raw lines: a decoder that works in blocks only
    knows the block), so every reader reports it the same way.
    """

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path = path
        self._handle = handle

    def __enter__(self) -> "TextInput":
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: object) -> None:
        """A decoding error raised while the file was read inside the `with` block becomes the
        InputError naming its line (iterating the file object itself stays at full speed)."""
        self.close()
        if isinstance(error, UnicodeDecodeError):
            raise _bad_byte(self.path, error) from None
        if isinstance(error, (OSError, EOFError)) and self.path.suffix in COMPRESSED:
            raise InputError(self.path, f"cannot be read ({error})") from None  # a damaged stream

    def close(self) -> None:
        self._handle.close()

    def __iter__(self) -> Iterator[str]:
        return iter(self._handle)

    def read(self) -> str:
        with self:
            return self._handle.read()


def _raw(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed by suffix (.gz, .bz2)."""
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        import bz2

        return bz2.open(path, "rb")
    return open(path, "rb")


# What a file's first bytes say it is when they are not UTF-8 text, with what to do: checked only
# once a bad byte is met on line 1 (the usual reasons a text reader meets one there).
_UTF16 = "save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8"
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "rename it {name}.gz, which is read decompressed"),
    (b"\xff\xfe", "UTF-16 text (byte-order mark FF FE)", _UTF16),
    (b"\xfe\xff", "UTF-16 text (byte-order mark FE FF)", _UTF16),
)


def _what_it_is(path: Path, start: bytes) -> str | None:
    """What a file starting with a gzip magic number or a UTF-16 byte-order mark is, and what to
    do; None for any other bad byte."""
    for magic, kind, cure in _MAGIC:
        if start.startswith(magic):
            if magic == b"\x1f\x8b" and path.suffix in COMPRESSED:
                cure = f"it was compressed twice: decompress it once and keep the {path.suffix}"
            return f"{kind}, not UTF-8 text: {cure.format(name=path.name)}"
    return None


def _bad_byte(path: Path, error: UnicodeDecodeError) -> InputError:
    """The line holding the first byte that is not UTF-8 (at line 1, a compressed or UTF-16 file said as such)."""
    try:
        with _raw(path) as raw:
            for number, line in enumerate(raw, start=1):
                try:
                    line.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as found:
                    if number == 1 and (said := _what_it_is(path, line)) is not None:
                        return InputError(path, said, line=1)
                    return InputError(path, f"not UTF-8 text (byte 0x{line[found.start]:02x} at column "
                                            f"{len(line[:found.start].decode('utf-8', 'replace')) + 1})",
                                      line=number)
    except (OSError, EOFError):
        pass
    return InputError(path, f"not UTF-8 text ({error.reason})")


def open_input(path: str | Path, *, newline: str | None = None, encoding: str = "utf-8-sig") -> TextInput:
    """Open a user's text input (.gz/.bz2 decompressed): a missing file or a folder is an
    InputError naming it; see TextInput for the BOM (`encoding="utf-8"` keeps it) and bad bytes."""
    path = Path(path)
    try:
        raw = _raw(path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a file") from None
    except PermissionError:
        raise InputError(path, "cannot be read (permission denied)") from None
    return TextInput(path, io.TextIOWrapper(raw, encoding=encoding, newline=newline))


def read_input(path: str | Path, *, encoding: str = "utf-8-sig") -> str:
    """The whole text of a user's input file, read as `open_input` reads it."""
    with open_input(path, encoding=encoding) as handle:
        return handle.read()
