"""Where the shipped benchmark files and the caches live, and files' content digests.

The repo ships the topics, qrels and small corpora its default benchmark and tests use
(as Anserini ships its topics and qrels). A wheel carries a copy as `harness/_data/` (see
setup.py); a clone or an editable install reads the repo's own `data/` and `qrels/`.
`HARNESS_DATA` / `HARNESS_QRELS` point elsewhere, e.g. at a full copy of the upstream files.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from pathlib import Path
from collections.abc import Iterable, Iterator, Sequence
from stat import S_ISDIR, S_ISREG
from typing import Any

# Files this large are hashed once per version across processes too (file_sha256): a 100 GB
# corpus is not read again each time a run opens it.
MEMO_BYTES = 64 << 20
# A file changed this recently may change again within its mtime's resolution: not memoised.
SETTLED_NS = 2_000_000_000

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent
PACKAGED = PACKAGE_ROOT / "_data"  # present in an installed wheel only


def _shipped(name: str) -> Path:
    packaged = PACKAGED / name
    return packaged if packaged.is_dir() else REPO_ROOT / name


def data_root() -> Path:
    """Topic files and small corpora, laid out as their upstream repositories lay them out."""
    return Path(os.environ.get("HARNESS_DATA") or _shipped("data"))


def qrels_root() -> Path:
    return Path(os.environ.get("HARNESS_QRELS") or _shipped("qrels"))


def in_package(path: Path) -> bool:
    """Whether `path` lies in the harness package's folder (an install's shipped data): no default
    output goes there, as pip's record would not list it nor an uninstall remove it."""
    return path.resolve().is_relative_to(PACKAGE_ROOT)


def shipped_configs() -> dict[str, Path]:
    """The benchmark configs the project ships, by name (`default` for configs/default.yaml): the
    repo's configs/ or a wheel's copy, so an installed harness runs them from any folder."""
    folder = _shipped("configs")
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def cache_root() -> Path:
    """Derived artefacts (indexes, embeddings, segmented corpora) that can be rebuilt: in the
    clone's .cache/, or for an installed wheel in the user's cache folder."""
    if os.environ.get("HARNESS_CACHE"):
        return Path(os.environ["HARNESS_CACHE"])
    if PACKAGED.is_dir():
        if os.environ.get("XDG_CACHE_HOME"):
            return Path(os.environ["XDG_CACHE_HOME"]) / "harness"
        try:
            return Path.home() / ".cache" / "harness"
        except RuntimeError:  # no HOME, and a uid with no passwd entry (`docker run --user 12345`)
            from harness.errors import HarnessError

            raise HarnessError(f"no cache folder: HOME is not set and this user has no home folder; {CACHE_HINT}") \
                from None
    return REPO_ROOT / ".cache"


# the way out where the cache folder cannot be found or written
CACHE_HINT = "set HARNESS_CACHE to a writable folder to keep the caches (indexes, embeddings) there"


def home_expanded(value: str | os.PathLike[str]) -> Path:
    """`value` with a leading `~` or `~user` read as a shell reads it (`~/x`: in the home folder). One that
    names no home folder known here (`~nouser/x`) is left as written, as a shell leaves it, for the caller's
    'no such file' to name: Path.expanduser raises RuntimeError for it, a traceback."""
    return Path(os.path.expanduser(value))


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a plain file name inside a folder (None if it can): no separator,
    not '.' or '..', not hidden (dot names are the harness's temp files), no whitespace."""
    if not name or any(c.isspace() for c in name):
        return "must be non-empty and contain no whitespace"
    if "/" in name or "\\" in name or "\0" in name:
        return "must be a plain file name, without '/' or '\\'"
    if name.startswith("."):
        return "must not start with '.'"
    return None


def file_in(folder: Path, name: str) -> Path:
    """`folder/name`, refused (HarnessError) unless it is a plain name that stays inside
    `folder`: every output path derived from a user's string goes through here."""
    from harness.errors import HarnessError

    problem = name_problem(name)
    path = Path(folder) / name
    if problem is None and path.resolve().parent != Path(folder).resolve():
        problem = "resolves outside its folder"
    if problem:
        raise HarnessError(f"{name!r} cannot name a file in {folder}: it {problem}")
    return path


def feed_file(digest: Any, path: str | Path) -> Any:
    """`digest` (a hashlib object) updated with a file's bytes, 1 MiB at a time; returned."""
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest


def file_version(path: str | Path) -> list[int]:
    """What changes whenever a file's bytes may have: size, mtime, inode and ctime (which
    `cp -p`, `tar`, `rsync -a` or `os.utime` cannot put back, unlike the mtime)."""
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]


def folder_version(path: str | Path) -> str:
    """A cheap fingerprint of a folder (an index, a model), for resume keys. A Lucene index
    (a folder holding segments_N) by its commit (commit_key): what a search reads, whatever
    else lies beside it. Any other folder by the sha256 over each file's name below it, size
    and mtime, as harness.scale.shards keys a file, not over its bytes (hashing a large index
    on every run would cost as much as searching it); symlinked subfolders (a model folder
    linking into a download cache) are followed, but not one linking to the folder or above
    it (its parent's other files are no part of it; / would be a walk of the disk). A folder
    rebuilt in place changes it, so a run over the old one is not reused. A file changed
    within SETTLED_NS may change again within its mtime's resolution: the fingerprint waits
    that long, once, for the folder to settle; one still changing then gets a key of its
    own, which no later run matches."""
    root = Path(path)
    if any(root.glob("segments_*")):
        return commit_key(root)  # bytes, not stat: vouches for the commit at once
    for waited in (False, True):
        digest, newest = _sha256(), 0
        for name, stat in sorted(_files_below(root, (), _real_folders_up(root)), key=lambda found: found[0]):
            digest.update(f"{'/'.join(name)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            newest = max(newest, stat.st_mtime_ns, stat.st_ctime_ns)
        wait = newest + SETTLED_NS - time.time_ns()
        if wait <= 0:
            return digest.hexdigest()
        if not waited:
            time.sleep(min(wait, SETTLED_NS) / 1e9)
    return f"{digest.hexdigest()}:unsettled:{time.time_ns()}"


def _files_below(folder: Path, name: tuple[str, ...],
                 above: frozenset[tuple[int, int]]) -> Iterator[tuple[tuple[str, ...], os.stat_result]]:
    """Each file below `folder`, by its path's parts from the root, with its stat (links
    followed); a link to a folder in `above` (the root, a folder walked to get here, or one
    above either in the filesystem) is not followed: a cycle, or a walk of the root's parent
    (or of / or ~); a folder that cannot be listed holds none (as pathlib's rglob skips it)."""
    try:
        above = above | {_identity(os.stat(folder))}
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            stat = entry.stat()
        except OSError:
            continue  # a dangling link: no file there
        if S_ISDIR(stat.st_mode) and _identity(stat) not in above:
            # below a link, the folders above its target are `above` too (a cache's `up -> ../..`)
            yield from _files_below(Path(entry.path), (*name, entry.name),
                                    above | _real_folders_up(entry.path) if entry.is_symlink() else above)
        elif S_ISREG(stat.st_mode):
            yield (*name, entry.name), stat


def _real_folders_up(path: str | Path) -> frozenset[tuple[int, int]]:
    """The folder `path` resolves to and each folder above that one, by identity."""
    real = Path(os.path.realpath(path))
    found = set()
    for folder in (real, *real.parents):
        with contextlib.suppress(OSError):
            found.add(_identity(os.stat(folder)))
    return frozenset(found)


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def commit_key(folder: Path) -> str:
    """The sha256 of a Lucene index's commit files (`segments_N`): Lucene writes random
    segment ids into them, so a rebuilt or changed index never has the key of the old one."""
    digest = _sha256()
    for path in sorted(Path(folder).glob("segments_*")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def settled(version: list[int]) -> bool:
    """Unchanged for a while: a file changed this instant may change again within the same
    timestamp, so its version does not yet vouch for its bytes."""
    return time.time_ns() - max(version[1], version[3]) >= SETTLED_NS


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read once per process per version of the file (file_version:
    an edited or replaced file is read again), as git and make trust a file's stat: a qrels file
    each run of a config names its copy by, a finished run's file checked unedited on each resume.
    A file of MEMO_BYTES or more is read once per version across processes too: its digest is
    kept under cache_root()/digests/. A file changed too recently for its version to vouch for
    its bytes (settled) is read each time."""
    path = Path(path).resolve()
    version = file_version(path)
    if settled(version):
        return _settled_sha256(str(path), tuple(version))
    return _read_sha256(path, version)


# Bounded: a long-lived process (harness serve, a notebook) may hash many files over its life, most
# of them long gone. An entry (a path, a version, a digest) takes under 1 KB: a full memo, 3 MB at most,
# holds a large config's run files and qrels.
@functools.lru_cache(maxsize=4096)
def _settled_sha256(path: str, version: tuple[int, ...]) -> str:
    return _read_sha256(Path(path), list(version))


def _read_sha256(path: Path, version: list[int]) -> str:
    """The sha256 of the file's bytes, through the on-disk memo for a file of MEMO_BYTES or more."""
    if version[0] < MEMO_BYTES:
        return feed_file(_sha256(), path).hexdigest()
    memo = cache_root() / "digests" / f"{_sha256(os.fsencode(path)).hexdigest()[:32]}.json"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        if known["path"] == str(path) and known["version"] == version:
            return known["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = feed_file(_sha256(), path).hexdigest()  # the version was taken before reading
    if settled(version):
        _remember(memo, {"path": str(path), "version": version, "sha256": digest})
    return digest


def _remember(memo: Path, record: dict[str, Any]) -> None:
    from harness.atomic import atomic_write

    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(memo) as handle:
            json.dump(record, handle)
    except OSError:
        pass  # a read-only cache only costs the next reader a re-hash


def output_format(fmt: str | None, out: str | None, names: Sequence[str], default: str,
                  suffixes: dict[str, str]) -> str:
    """The format a command writes: --format's, else the one --output's suffix names (its own
    name, report.csv: csv, or one of `suffixes`), else `default` (stdout, or a name without a
    suffix). Another suffix is an error, before any work: r.pdf would have been the default
    format under a name promising a PDF. --format wins over a suffix naming another format
    (JSON into r.csv), with a warning: what reads r.csv would not read it."""
    from harness.errors import HarnessError

    suffix = Path(out).suffix.lower().lstrip(".") if out else ""
    if fmt and suffix in names and suffix != fmt:
        print(f"warning: --format {fmt} is written to --output {out}, whose suffix names {suffix}", file=sys.stderr)
    if fmt or not suffix:
        return fmt or default
    chosen = suffixes.get(suffix, suffix)
    if chosen not in names:
        known = " ".join(f".{name}" for name in [*names, *suffixes])
        raise HarnessError(f"--output {out}: .{suffix} names no format this command writes (known: {known}); "
                           "name the file so, or give --format")
    return chosen


def refuse_overwriting(inputs: Iterable[str | Path | None], outputs: Iterable[tuple[str, str | Path | None]]) -> None:
    """A command's outputs ((option, path) pairs) must not name one of its input files or each
    other: writing would destroy the input, or the later output the earlier one. And each must
    be writable where it is (atomic.check_outputs), all checked before the command writes any:
    a failed second output never leaves the first one behind."""
    from harness.atomic import check_outputs
    from harness.errors import HarnessError

    outputs = list(outputs)
    seen: dict[str, str] = {os.path.realpath(path): "an input" for path in inputs if path is not None}
    for option, path in outputs:
        if path is None or (os.path.exists(path) and not os.path.isfile(path)):
            continue  # a device (/dev/null) may take several outputs
        real = os.path.realpath(path)
        if real in seen:
            raise HarnessError(f"{option} {path} would overwrite {seen[real]}: choose another file")
        seen[real] = f"the {option} file"
    check_outputs(*(path for _, path in outputs))


def _sha256(data: bytes = b""):
    """hashlib's sha256, imported on first use: hashlib loads OpenSSL (5 MB), which `harness
    eval` on the compiled route does not need."""
    import hashlib

    return hashlib.sha256(data)
