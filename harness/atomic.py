"""Atomic output: a file appears under its final name complete, or not at all.

Temporary names carry the writer's pid (`.NAME.PID.RANDOM.tmp`, and for folders
`.NAME.building.PID.RANDOM`), so that a later writer removes what a killed process left
and never what a live one is still writing. A process id reused by an unrelated live
process keeps its leftover until that process ends: at worst a stale file stays, nothing
live is ever deleted.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TypeVar

from harness.errors import HarnessError


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temp file in the target's folder, fsync, then rename over the target.

    An exception (or a kill) leaves the previous file, if any, untouched; the temp file
    is removed on exceptions and is never mistaken for a finished output because its
    name starts with '.' and ends with '.tmp'. A symlink's target is written (the link
    stays); a device or a pipe (`/dev/null`, `/dev/stdout`) is written to as it is, never
    replaced. A target that cannot be written (a folder, a read-only folder, a file where
    a folder should be) is a HarnessError naming it.
    """
    path = Path(path)
    binary = "b" in mode
    descriptor = _standard_stream(path)
    if descriptor is not None:  # /dev/stdout redirected to a file: write where the shell writes, as `>` does
        with os.fdopen(os.dup(descriptor), mode, encoding=None if binary else encoding) as handle:
            yield handle
        return
    kind = _kind(path)  # through symlinks
    if kind == "folder":
        raise OutputError(f"cannot write {path}: it is a folder")
    if kind == "special":
        with _opened(path, lambda: open(path, mode, encoding=None if binary else encoding)) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path))  # a symlink's file is replaced, not the link
    _opened(path, lambda: _clear_leftovers(target.parent, f".{target.name}", ".tmp"))
    tmp_name = _temp_name(target.parent, f".{target.name}", ".tmp")
    try:  # named before it exists: an interrupt arriving just after its creation still removes it
        fd = _opened(path, lambda: os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _opened(path, lambda: os.replace(tmp_name, target))
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


class OutputError(HarnessError, OSError):
    """An output that cannot be written: a HarnessError for the CLI's one line, an OSError for
    callers that may go on without it (a cache)."""


_DESCRIPTOR = re.compile(r"/dev/(?:std(out|err)|fd/(\d+))|/proc/(?:self|\d+)/fd/(\d+)")


def _standard_stream(path: Path) -> int | None:
    """The descriptor a /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N path names: such a
    path may resolve to the very file the shell redirected to, which must not be replaced."""
    match = _DESCRIPTOR.fullmatch(str(path))
    if match is None:
        return None
    stream, *numbers = match.groups()
    return {"out": 1, "err": 2}[stream] if stream else int(next(n for n in numbers if n))


def _kind(target: Path) -> str | None:
    """'folder', 'special' (a device, pipe or socket), 'file', or None where nothing is yet."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return None
    return "folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "special"


def _clear_leftovers(parent: Path, stem: str, suffix: str = "") -> None:
    parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(parent, stem, suffix)


def _temp_name(parent: Path, stem: str, suffix: str = "") -> Path:
    """`parent/STEM.PID.RANDOM SUFFIX`, not yet made: the caller holds the name before the file
    or folder exists, so the cleanup that follows an interrupt always knows what to remove."""
    return parent / f"{stem}.{os.getpid()}.{secrets.token_hex(8)}{suffix}"


T = TypeVar("T")


def _opened(path: Path, action: Callable[[], T]) -> T:
    """`action()`, its OSError (permission denied, a file where a folder should be) as an OutputError."""
    try:
        return action()
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None


@contextmanager
def temp_folder(parent: Path, stem: str) -> Iterator[Path]:
    """A new hidden folder `parent/STEM.PID.RANDOM` (e.g. `.NAME.building` for an index
    being built), after removing the ones dead processes left under the same stem; removed on
    leaving with whatever it still holds, so the caller renames what it keeps out of it first."""
    _clear_leftovers(parent, stem)
    folder = _temp_name(parent, stem)
    try:
        folder.mkdir()
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_leftovers(folder: Path, stem: str, suffix: str = "") -> None:
    """Remove `STEM.PID.*SUFFIX` entries of `folder` whose process PID is no longer alive."""
    if not folder.is_dir():
        return
    with os.scandir(folder) as entries:  # every atomic write looks: names only, no Path per entry
        for entry in entries:
            name = entry.name
            if not (name.startswith(stem + ".") and name.endswith(suffix)):
                continue
            pid = name[len(stem) + 1:].split(".", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    Path(entry.path).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextmanager
def folder_lock(folder: Path, log=None) -> Iterator[None]:
    """Hold an exclusive lock on an output folder (flock on the folder itself: no lock file to
    leave behind; the kernel releases it when the holder dies, however it dies). A second
    process says so in one line and waits."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"another harness run is writing to {folder}; waiting for it to finish",
                  file=log or sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
