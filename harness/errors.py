"""Errors a user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations

import difflib
import io
import os
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """'1 turn', '2 turns': a count in a message, its noun agreeing with it."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def verb(number: int, singular: str = "has", plural: str = "have") -> str:
    """The verb agreeing with a count's noun: '1 turn has', '2 turns have'."""
    return singular if number == 1 else plural


def listed(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C': names in a message."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters: a message quotes what it found, not a whole file
    that YAML read as one string."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(text)} characters)"


def shown_id(value: object) -> str:
    """An id (a document's, a query's) as `shown` quotes it, whole to 240 characters: real ids run past 80 (a
    derived qrels' 84), and a message comparing a run's ids with the qrels' must show them whole."""
    return shown(value, 240)


def command(*words: object) -> str:
    """A command a message tells the user to run, each word quoted as a POSIX shell reads it
    (shlex): a config path holding a space or a quote pastes as one word, where it split."""
    return shlex.join(str(word) for word in words)


def nearest(name: str, names: Iterable[str]) -> str:
    """'; nearest: X' for the one of `names` closest to a misspelt `name`, '' when none is close:
    every unknown name (a registered component, a config key, a run, a tag) is answered alike."""
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f"; nearest: {close[0]}" if close else ""


@dataclass(frozen=True)
class Spelling:
    """How a message names a setting the user gave: the command line's `--passage-separator '-'`,
    the Python API's `passage_separator='-'` or a config's `passage_separator: '-'`. A check they
    share takes the caller's, so each user reads the name they typed."""

    way: str  # "flags", "arguments", "config" or "team"

    @property
    def config(self) -> bool:
        """A config file: it has keys for a few settings only, set per experiment."""
        return self.way == "config"

    @property
    def team(self) -> bool:
        """A hosted task's team: it sets nothing (the task's config keys are its organisers') and
        never sees the task's qrels."""
        return self.way == "team"

    def name(self, key: str) -> str:
        """`key` (the Python argument's name) as this caller spells it."""
        return {"flags": "--" + key.replace("_", "-"), "config": key + ":", "team": key + ":"}.get(self.way, key)

    def given(self, key: str, value: object) -> str:
        """`key` set to `value`, as this caller would write it (a string quoted, as a shell and
        YAML read it)."""
        return f"{key}={value!r}" if self.way == "arguments" else f"{self.name(key)} {value!r}"


FLAGS = Spelling("flags")  # the command line
ARGUMENTS = Spelling("arguments")  # the Python API (harness.api)
CONFIG = Spelling("config")  # a `harness run` config's keys
TEAM = Spelling("team")  # a hosted task's submitting team (harness serve)


# The opening bytes of compressed files, by format: one table for every reader of a user's text
# (the CLI's readers at a bad byte, the hosted board before it reads an upload).
# bzip2's is "BZh", its block size ("1"-"9") and the magic of its first block or, empty, of its end: text can
# start "BZh" (a run whose first id does), none "BZh91AY&SY".
_COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", **{b"BZh" + bytes([size]) + block: "bzip2" for size in b"123456789"
                                              for block in (b"1AY&SY", b"\x17rE8P\x90")},
                      b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip"}
_READ_DECOMPRESSED = {"gzip": ".gz", "bzip2": ".bz2"}  # the formats open_input reads decompressed, by suffix
COMPRESSED = tuple(_READ_DECOMPRESSED.values())  # the suffixes open_input decompresses
# Byte-order marks of Unicode text other than UTF-8, by encoding, longest first: UTF-32 LE's starts as UTF-16 LE's.
_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


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


def decompressed(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed by suffix (.gz, .bz2), as every reader takes a file."""
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        import bz2

        return bz2.open(path, "rb")
    return open(path, "rb")


@dataclass(frozen=True)
class NotText:
    """What a file's first bytes say it is when they are not UTF-8 text: a compressed file or
    UTF-16 or UTF-32 text, named alike by every reader; what to do about a compressed one is the reader's."""

    format: str  # a _COMPRESSION_MAGIC format, or a _BOMS encoding ("UTF-16", "UTF-32")
    said: str  # as messages name it: "gzip-compressed", "UTF-16 text (byte-order mark FF FE)"

    @property
    def compressed(self) -> bool:
        return self.format not in _BOMS.values()

    def problem(self, if_compressed: str) -> str:
        """The message: what the file is, then `if_compressed` for a compressed file or how to
        save UTF-16 or UTF-32 text as UTF-8."""
        cure = if_compressed if self.compressed else f"save it as UTF-8, e.g. iconv -f {self.format} -t UTF-8"
        return f"{self.said}, not UTF-8 text: {cure}"


def not_text(start: bytes) -> NotText | None:
    """What a file starting with `start` is when that is a compression format's magic number or
    a UTF-16 or UTF-32 byte-order mark; None otherwise."""
    for magic, name in _COMPRESSION_MAGIC.items():
        if start.startswith(magic):
            return NotText(name, f"{name}-compressed")
    bom = next((bom for bom in _BOMS if start.startswith(bom)), None)
    return None if bom is None else NotText(_BOMS[bom], f"{_BOMS[bom]} text (byte-order mark {bom.hex(' ').upper()})")


def bad_byte(line: bytes, start: int) -> str:
    """'not UTF-8 text (byte 0xff at column 3)': the byte at `start` of `line`, counted in characters."""
    return f"not UTF-8 text (byte 0x{line[start]:02x} at column {len(line[:start].decode('utf-8', 'replace')) + 1})"


def _cure(path: Path, found: NotText) -> str:
    """What to do with `path`, found compressed: name it so that it is read decompressed (after
    decompressing it once, when it was read decompressed already), or decompress it."""
    suffix = _READ_DECOMPRESSED.get(found.format)
    if suffix is None:
        return f"decompress it (only {' and '.join(COMPRESSED)} files are read decompressed)"
    if path.suffix in COMPRESSED:  # read decompressed by its suffix, and compressed still
        keep = f"keep the {suffix}" if path.suffix == suffix else f"name it {path.stem}{suffix}"
        return f"it was compressed twice: decompress it once and {keep}"
    return f"rename it {path.name}{suffix}, which is read decompressed"


def _bad_byte(path: Path, error: UnicodeDecodeError) -> InputError:
    """The line holding the first byte that is not UTF-8; a file starting as compressed data or
    UTF-16/UTF-32 text is said as such at line 1, wherever that byte is (a bzip2 or zip header
    can hold a newline before its first byte that is not UTF-8: no signature holds one)."""
    try:
        with decompressed(path) as raw:
            for number, line in enumerate(raw, start=1):
                if number == 1 and (what := not_text(line)) is not None:
                    return InputError(path, what.problem(_cure(path, what)), line=1)
                try:
                    line.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as found:
                    return InputError(path, bad_byte(line, found.start), line=number)
    except (OSError, EOFError):
        pass
    return InputError(path, f"not UTF-8 text ({error.reason})")


def other_form(path: str | Path) -> str:
    """For a path not found: '; did you mean X (the same name in another Unicode form)?' where
    exactly one path on disk is the same once each part is NFC-normalised, else ''. Archives made
    on macOS keep decomposed (NFD) names, which Linux does not normalise, so a `café.run` typed
    (NFC) does not find its file. Said, not silently used: the name given is the one a run's
    record and resume key keep and a report shows, and no other tool (trec_eval, a shell script)
    would find the file by it either; renaming the file mends them all. X is ascii() of the path,
    where the two forms differ (cafe\\u0301 against caf\\xe9), which print alike."""
    from unicodedata import normalize

    given = Path(path)
    if str(given).isascii():  # an ASCII name has no other form
        return ""
    found, changed = Path(given.anchor), False
    for part in given.parts[1 if given.anchor else 0:]:
        if not os.path.lexists(found / part):
            try:
                same = [name for name in os.listdir(found) if normalize("NFC", name) == normalize("NFC", part)]
            except OSError:  # not a folder, or one that cannot be listed
                return ""
            if len(same) != 1:
                return ""
            part, changed = same[0], True
        found /= part
    return f"; did you mean {ascii(str(found))} (the same name in another Unicode form)?" if changed else ""


def open_input(path: str | Path, *, newline: str | None = None, encoding: str = "utf-8-sig") -> TextInput:
    """Open a user's text input (.gz/.bz2 decompressed): a missing file or a folder is an
    InputError naming it; see TextInput for the BOM (`encoding="utf-8"` keeps it) and bad bytes."""
    path = Path(path)
    try:
        raw = decompressed(path)
    except FileNotFoundError:
        raise InputError(path, f"no such file{other_form(path)}") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a file") from None
    except PermissionError:
        raise InputError(path, "cannot be read (permission denied)") from None
    return TextInput(path, io.TextIOWrapper(raw, encoding=encoding, newline=newline))


def read_input(path: str | Path, *, encoding: str = "utf-8-sig") -> str:
    """The whole text of a user's input file, read as `open_input` reads it."""
    with open_input(path, encoding=encoding) as handle:
        return handle.read()
