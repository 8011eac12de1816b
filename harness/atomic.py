"""Atomic output: a file appears under its final name complete, or not at all.

Temporary files carry the writer's pid (`.NAME.PID.RANDOM.tmp`), so that a later writer
removes what a killed process left and never what a live one is still writing. A process id
taken by a process that started after the leftover last changed (a folder copied mid-run to
another place or machine, its pid now an unrelated process's) is not its writer's: the leftover
is removed as a dead process's (`_may_write`). Build folders (`.NAME.building.PID.RANDOM`) are
made under a lock on their target (`temp_folder`): one whose lock nobody holds and whose process
is gone is dead, so one left by a kill is removed by the next build beside it (a live process's
is kept: a harness from before build locks holds none).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TypeVar

from harness.errors import HarnessError


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                 before_replace: Callable[[], object] | None = None) -> Iterator[IO]:
    """Write to a temp file in the target's folder, fsync, then rename over the target.

    An exception (or a kill) leaves the previous file, if any, untouched; the temp file
    is removed on exceptions and is never mistaken for a finished output because its
    name starts with '.' and ends with '.tmp'. A symlink's target is written (the link
    stays); a device or a pipe (`/dev/null`, `/dev/stdout`) is written to as it is, never
    replaced. A target that cannot be written (a folder, a read-only folder, a file where
    a folder should be) is a HarnessError naming it. `before_replace` is called once the new
    file is complete, just before it replaces the target (a run's old JSON removed: `harness run`).
    Text is written with `errors="backslashreplace"`: the only str UTF-8 cannot encode holds lone
    surrogates, a path's bytes that are not UTF-8 (a Latin-1 folder name, any non-ASCII name under
    an ASCII locale), each then written as its `\\udcXX` escape, JSON's own (json.loads reads back
    the same str), where it raised after the work was done and left the output unwritten.
    """
    path = Path(path)
    text = {} if "b" in mode else {"encoding": encoding, "errors": "backslashreplace"}
    descriptor = _standard_stream(path)
    if descriptor is not None:  # /dev/stdout redirected to a file: write where the shell writes, as `>` does
        with os.fdopen(os.dup(descriptor), mode, **text) as handle:
            yield handle
        return
    kind = _kind(path)  # through symlinks
    if kind == "folder":
        raise OutputError(f"cannot write {path}: it is a folder")
    if kind == "special":
        with _opened(path, lambda: open(path, mode, **text)) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path))  # a symlink's file is replaced, not the link
    _opened(path, lambda: _clear_leftovers(target.parent, f".{target.name}", ".tmp"))
    tmp_name = _temp_name(target.parent, f".{target.name}", ".tmp")
    try:  # named before it exists: an interrupt arriving just after its creation still removes it
        fd = _opened(path, lambda: os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        with os.fdopen(fd, mode, **text) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        _opened(path, lambda: os.replace(tmp_name, target))
    except BaseException as error:
        Path(tmp_name).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.errno in FULL:  # (closing the file raised it again: one line)
            raise OutputError(f"cannot write {path}: {error.strerror} ({FULL_MEANS})") from None
        raise


# what a full disk, a quota and `ulimit -f` answer a write with, and what it means
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
FULL_MEANS = "the disk is full, or a quota or a file-size limit (`ulimit -f`) is reached"


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
    return parent / f"{stem}.{os.getpid()}.{os.urandom(8).hex()}{suffix}"


T = TypeVar("T")


def _opened(path: Path, action: Callable[[], T], folder: bool = False) -> T:
    """`action()`, its OSError (permission denied, a file where a folder should be) as an
    OutputError naming `path` and the cause (`output_problem`'s, else the system's)."""
    try:
        return action()
    except OSError as error:
        problem = _cause(Path(path), folder) or error.strerror or str(error)
        raise OutputError(f"cannot write {path}: {problem}") from None


def output_problem(path: str | Path, folder: bool = False) -> str | None:
    """Why `path` cannot be written as a file (or, with `folder`, made and written into as a
    folder), found before anything is written; None if it can. Nothing is left behind: the
    nearest existing folder on its way is tried with a hidden folder, made and removed at once."""
    path = Path(path)
    if _standard_stream(path) is not None or (not folder and _kind(path) == "special"):
        return None  # written as it is, as `>` would
    return _cause(path, folder)


def check_outputs(*paths: str | Path | None, folder: bool = False) -> None:
    """Every output's location checked (`output_problem`) before any is written, so that a
    command with several outputs fails on the last one's before it writes the first."""
    for path in paths:
        if path is not None and (problem := output_problem(path, folder)):
            raise OutputError(f"cannot write {path}: {problem}")


def make_folder(folder: str | Path) -> Path:
    """`folder` made with its missing parents (as `mkdir -p`); an OutputError naming it and the
    cause (a file in the way, permission denied, a file system that takes no new entries)."""
    folder = Path(folder)
    _opened(folder, lambda: folder.mkdir(parents=True, exist_ok=True), folder=True)
    return folder


def in_the_way(path: str | Path, folder: bool = False) -> str | None:
    """What is in the way of `path` being written (as a file, or as a `folder`), seen without
    writing anything: itself, or an entry on its way that is a file, or a folder on its way that
    is a symlink to nothing (mkdir answered 'File exists'). None if nothing is (it may still be
    unwritable: `output_problem` tries)."""
    path = Path(path)
    for link in (*([path] if folder else []), *path.parents):  # a runs disk not mounted, a scratch folder moved
        if os.path.islink(link) and not os.path.exists(link):
            return f"{link} is a symlink to {os.readlink(link)}, which does not exist"
    kind = _kind(path)
    if folder and kind in ("file", "special"):
        return "it is a file, expected a folder" if kind == "file" else "it is not a folder"
    if not folder and kind == "folder":
        return "it is a folder"
    here = _nearest_existing(path, kind)
    return f"{here} is a file, expected a folder" if not here.is_dir() else None


def not_writable(path: str | Path, folder: bool = False) -> str | None:
    """Why `path` could not be written (`in_the_way`, or no right to make entries in the nearest
    existing folder), seen without writing anything, for a check that must only read (a dry run
    on a read-only folder); None if it looks writable (`output_problem` is the sure test)."""
    path = Path(path)
    if (problem := in_the_way(path, folder)) is not None:
        return problem
    here = _nearest_existing(path, _kind(path))
    return None if os.access(here, os.W_OK | os.X_OK) else f"{here} is not writable"


def _nearest_existing(path: Path, kind: str) -> Path:
    """The nearest existing entry on the way to `path` (its folder if it is one), symlinks followed."""
    real = Path(os.path.realpath(path))  # the folders the kernel walks
    here = real if kind == "folder" else real.parent
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    return here


def _cause(path: Path, folder: bool) -> str | None:
    """What stops `path` being written (as a file, or as a `folder`): what is in the way, or a
    nearest existing folder in which no entry can be made. None if nothing does."""
    if (problem := in_the_way(path, folder)) is not None:
        return problem
    here = _nearest_existing(path, _kind(path))
    trial = _temp_name(here, ".harness-probe")
    try:  # the one sure test: make an entry there (a hidden folder, removed at once)
        trial.mkdir()
        trial.rmdir()
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"{here} is not writable ({error.strerror})"
        return f"{here} takes no new files or folders ({error.strerror})"
    return None


@contextmanager
def temp_folder(target: Path, doing: str, log=None) -> Iterator[Path]:
    """A new hidden folder `.NAME.building.PID.RANDOM` beside `target`, to build it in and rename
    it into place from, made holding `target`'s lock (`.NAME.lock` beside it, gone once released):
    a second process building the same target says 'another harness process is {doing}' in one
    line and waits, then finds it built. Build folders beside it that no lock holds and no live
    process made (left by a kill) are removed first. Removed on leaving with whatever it still
    holds, so the caller renames what it keeps out of it first."""
    parent = target.parent
    make_folder(parent)
    with contextlib.ExitStack() as lock:  # a folder where no file can be made: an OutputError naming it
        _opened(parent, lambda: lock.enter_context(
            _locked_file(parent / f".{target.name}.lock", f"another harness process is {doing}", log)), folder=True)
        _opened(parent, lambda: _remove_dead_builds(parent, target.name), folder=True)
        folder = _temp_name(parent, f".{target.name}.building")
        try:
            _opened(parent, folder.mkdir, folder=True)
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def build_once(target: Path, doing: str, finished: Callable[[], T | None],
               build: Callable[[Path], tuple[Path | None, T]]) -> tuple[T, float | None]:
    """A folder (an index, an export, a cache entry) built once however many processes want it:
    what `finished()` finds at `target`, else, holding its lock (temp_folder: a second process
    says 'another harness process is {doing}' and waits), what it finds once the build it waited
    for is done, else what `build(folder)` makes in a new build folder, and the folder it names
    (that one or one inside it; None: nothing to keep) renamed to `target`, an old one (an index
    --force rebuilds, another commit's export, a partial entry of an earlier version) removed only
    then. With it, when the build began, its wait over (progress.say_made); None where found."""
    if (found := finished()) is not None:
        return found, None
    with temp_folder(target, doing) as folder:
        if (found := finished()) is not None:  # built by the process this one waited for
            return found, None
        started = time.perf_counter()
        made, result = build(folder)
        if made is not None:
            if target.exists():
                shutil.rmtree(target)
            os.replace(made, target)
    return result, started


_BUILDING = re.compile(r"\.(.+)\.building\.(\d+)\.\w+")


def _remove_dead_builds(parent: Path, held: str) -> None:
    """Remove the build folders in `parent` whose target's lock nobody holds and whose process
    is gone: those of `held` (whose lock this process holds), and of any other target whose lock
    is free (taken for the removal, so that no build of it starts meanwhile). A live process's
    folder is kept whatever the lock says: a harness from before build locks builds without one."""
    dead: dict[str, list[str]] = {}
    with os.scandir(parent) as entries:
        for entry in entries:
            match = _BUILDING.fullmatch(entry.name)
            if match and entry.is_dir(follow_symlinks=False) and not _may_write(int(match.group(2)), entry):
                dead.setdefault(match.group(1), []).append(entry.path)
    for name, paths in dead.items():
        with contextlib.ExitStack() as stack:
            if name != held:
                try:
                    stack.enter_context(_locked_file(parent / f".{name}.lock"))
                except OSError:  # held by a live build (or not ours to lock)
                    continue
            for path in paths:
                shutil.rmtree(path, ignore_errors=True)


def remove_leftovers(folder: Path, stem: str, suffix: str = "") -> None:
    """Remove `STEM.PID.*SUFFIX` entries of `folder` whose process PID no longer writes them (`_may_write`)."""
    if not folder.is_dir():
        return
    with os.scandir(folder) as entries:  # every atomic write looks: names only, no Path per entry
        for entry in entries:
            name = entry.name
            if not (name.startswith(stem + ".") and name.endswith(suffix)):
                continue
            pid = name[len(stem) + 1:].split(".", 1)[0]
            if pid.isdigit() and not _may_write(int(pid), entry):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    Path(entry.path).unlink(missing_ok=True)


# How far a file system's clock (a network one's server) may be behind this machine's, so that a
# live writer's file never looks older than its process
_CLOCK_SLACK = 60.0


def _may_write(pid: int, entry: os.DirEntry) -> bool:
    """Whether process `pid` may still be writing (or building) `entry`: it is alive, and did not
    start after `entry` last changed (where the system says when it started: Linux's /proc), as
    the process that took a copied leftover's pid did."""
    if not _alive(pid):
        return False
    started = _started(pid)
    if started is None:
        return True
    try:
        return entry.stat(follow_symlinks=False).st_mtime >= started - _CLOCK_SLACK
    except OSError:  # gone meanwhile
        return True


def _started(pid: int) -> float | None:
    """When process `pid` started, in seconds since the epoch; None where /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])  # field 22, after '(name)'
        return _boot_time() + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def _boot_time() -> float:
    """When this machine booted (Linux's /proc/stat btime); OSError where it does not say."""
    with open("/proc/stat", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("btime "):
                return float(line.split()[1])
    raise OSError("/proc/stat names no boot time")


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
    make_folder(folder)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _lock(fd, f"another harness run is writing to {folder}", log)
        yield
    finally:
        os.close(fd)


def _lock(fd: int, waiting: str | None, log=None) -> None:
    """An exclusive flock on `fd`; when another holds it, `waiting` (then 'waiting for it to
    finish') is said in one line and the lock waited for, or with no `waiting`, BlockingIOError."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if waiting is None:
            raise
        print(f"{waiting}; waiting for it to finish", file=log or sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def _locked_file(path: Path, waiting: str | None = None, log=None) -> Iterator[None]:
    """Hold `_lock` on the lock file `path`, made if missing and removed on release (the kernel
    releases it when the holder dies, however it dies). A lock won on a file removed or
    replaced meanwhile is not the lock: taken again on the file now there."""
    while True:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            _lock(fd, waiting, log)
            if _same_file(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        Path(path).unlink(missing_ok=True)  # before the release: a waiter then sees its file is gone
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)
