"""Shards and their manifest, and the resumable driver loop that runs them on an engine.

A shard is fixed by the input alone: one file of a multi-file corpus (a ClueWeb22 `txt`
folder), else a range of `shard_docs` consecutive documents. Each document id is checked once:
a range's as the driver cuts it from its one pass over the corpus; a file's by its task,
within the file, and by the driver across files, from the 64-bit hashes of its ids that the
task keeps beside its outputs (`shard-NNNNN.id-hashes`). Each shard's files are written
atomically by its task, which returns their sha256 and file versions (size, mtime, inode,
ctime); the driver records them in `manifest.json` (rewritten atomically after every shard),
so a killed worker, node or driver loses at most the shards in flight. A rerun skips a shard
whose input key, settings and output files all still match, and redoes the rest. A file is
re-hashed only when its version changed; a complete manifest whose input, settings and files
all match is taken as it is, without reading the corpus (a start-up on a 100M passage corpus
costs a stat per shard file).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from harness.atomic import atomic_write, make_folder
from harness.compute.engines import Engine
from harness.corpus import Corpus, Document, HashSet, id_hash, raise_repeated, unique_ids
from harness.errors import HarnessError
from harness.paths import file_sha256, file_version, settled

MANIFEST = "manifest.json"
# 2: a multi-file corpus's ids are checked across its files. An older manifest is never taken
# whole: its ranges are kept once the driver's pass has checked their ids again; its file
# shards, whose ids' hashes it lacks, are cut again.
MANIFEST_VERSION = 2
ID_HASHES = ".id-hashes"  # a file shard's ids' hashes (id_hash, sorted int64), beside its outputs


@dataclass(frozen=True)
class ShardTask:
    index: int
    folder: str
    key: str  # the input's identity: a file's path, size and mtime, or the sha256 of the documents
    settings: dict[str, Any]
    source: str | None = None  # a corpus spec the task opens itself (one ClueWeb22 file)
    cut: tuple[Document, ...] | None = None  # or the documents, cut from the corpus stream

    @property
    def stem(self) -> str:
        return f"shard-{self.index:05d}"

    def documents(self, seen: HashSet) -> Iterator[Document]:
        """The shard's documents, each id checked once: those cut from the corpus stream were
        checked by `plan`, as the whole corpus's; a file's are checked here, within the file
        (an error names its lines), by their id_hash, which `seen` keeps for the check across files."""
        if self.cut is not None:
            return iter(self.cut)
        from harness.corpus.readers import open_corpus

        corpus = open_corpus(self.source)
        return unique_ids(corpus, corpus.documents(), key=id_hash, seen=seen)

    def result(self, docs: int, count: int, files: dict[str, str], seen: HashSet,
               skipped: tuple[int, int | None] = (0, None)) -> ShardResult:
        """The result of this task, which wrote `files` (name -> sha256 of the bytes it wrote)
        to its folder; a file shard's ids' hashes (`seen`, from `documents`) are kept beside them.
        `skipped`: how many of its documents gave nothing, and the first one's ordinal in the shard."""
        folder = Path(self.folder)
        if self.source is not None:
            hashes = seen.all()
            files = {**files, _id_file(self.index): write_hashed(folder / _id_file(self.index), hashes.tobytes())}
        return ShardResult(docs, count, files, {name: file_version(folder / name) for name in files}, *skipped)


@dataclass(frozen=True)
class ShardResult:
    docs: int  # documents read
    count: int  # records written (passages, vectors)
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    versions: dict[str, list[int]] = field(default_factory=dict)  # file name -> file_version, taken by the task
    skipped: int = 0  # documents read that gave nothing (segment: empty text)
    first_skipped: int | None = None  # the first of those: its ordinal among the shard's documents


def write_hashed(path: Path, data: bytes) -> str:
    """`data` written to `path` atomically; its sha256."""
    with atomic_write(path, "wb") as handle:
        handle.write(data)
    return hashlib.sha256(data).hexdigest()


def outputs(entry: dict[str, Any]) -> list[str]:
    """A manifest entry's output files, in the order its task wrote them (its ids' hashes left out)."""
    return [name for name in entry["files"] if not name.endswith(ID_HASHES)]


def _id_file(index: int) -> str:
    return f"shard-{index:05d}{ID_HASHES}"


def _documents_key(documents: tuple[Document, ...]) -> str:
    """The shard's documents fingerprinted as a corpus is (ids, titles, texts)."""
    return Corpus("shard", lambda: iter(documents)).fingerprint


def source_key(corpus: Corpus) -> str | None:
    """The input's identity for a rerun: a file corpus's paths and file versions (hashing a
    ClueWeb22 folder would cost a pass over it), any other corpus's fingerprint. None while a
    file was changed too recently for its version to vouch for it."""
    paths = getattr(corpus, "paths", ())
    if not paths:
        return corpus.fingerprint
    versions = [[str(path.resolve()), *file_version(path)] for path in paths]
    if not all(settled(version[1:]) for version in versions):
        return None
    return hashlib.sha256(json.dumps(versions).encode("utf-8")).hexdigest()


def plan(corpus: Corpus, folder: Path, settings: dict[str, Any], shard_docs: int, align: int = 1) -> Iterator[ShardTask]:
    """The shards of `corpus`, in corpus order: one per file of a ClueWeb22 folder, else
    ranges of shard_docs documents (rounded up to a multiple of `align`). Ranges are cut here,
    from the one pass over the corpus, so a document id given twice is an error naming its
    file and lines before the shard holding it is handed out (harness.corpus.unique_ids, 8
    bytes a document here). A file's shard is keyed by its path, size and mtime, as
    source_key keys the corpus (a file changed too recently is keyed to be cut again next
    time), and read by its task alone: there its ids are
    checked within the file, and by `run_shards` across files (a pass here would read the
    collection twice)."""
    paths, root = getattr(corpus, "paths", ()), getattr(corpus, "folder", None)
    if root is not None and len(paths) > 1:
        for index, path in enumerate(paths):
            version = file_version(path)
            key = f"{path.relative_to(root).as_posix()}:{version[0]}:{version[1]}"
            if not settled(version):  # may change again within its mtime: a key no later run matches
                key += f":unsettled:{time.time_ns()}"
            yield ShardTask(index, str(folder), key, settings, source=f"clueweb22:{path}")
        return
    size = -(-shard_docs // align) * align
    documents = unique_ids(corpus, corpus.documents())
    index = 0
    while True:
        chunk = []
        for document in documents:
            chunk.append(document)
            if len(chunk) == size:
                break
        if not chunk:
            return
        chunk = tuple(chunk)
        yield ShardTask(index, str(folder), _documents_key(chunk), settings, cut=chunk)
        index += 1


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    with atomic_write(folder / MANIFEST) as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)


def _files_intact(folder: Path, entry: dict[str, Any]) -> bool:
    """Each file as its task wrote it: the same file_version, or else the same sha256 (the new
    version is then recorded, so the next check is a stat again)."""
    versions = entry.setdefault("versions", {})
    for name, sha in entry["files"].items():
        try:
            now = file_version(folder / name)
        except OSError:
            return False
        if versions.get(name) != now:
            if file_sha256(folder / name) != sha:
                return False
            versions[name] = now
    return True


def _still_valid(folder: Path, entry: dict[str, Any] | None, task: ShardTask) -> bool:
    """Done from this input, its files as written; a file shard with its ids' hashes."""
    return (entry is not None and entry.get("input") == task.key
            and (task.source is None or _id_file(task.index) in entry["files"]) and _files_intact(folder, entry))


def _finished(folder: Path, manifest: dict[str, Any] | None, job: str, settings: dict[str, Any],
              source: str | None) -> bool:
    """A complete manifest of this version, job, settings and input whose files are all as written."""
    return (source is not None and manifest is not None and manifest.get("complete") is True
            and manifest.get("version") == MANIFEST_VERSION
            and manifest.get("job") == job and manifest.get("settings") == settings
            and manifest.get("source") == source and bool(manifest.get("shards"))
            and all(_files_intact(folder, entry) for entry in manifest["shards"]))


def intact(folder: Path, manifest: dict[str, Any], job: str) -> bool:
    """`manifest` is a complete one of `job`, of an input it could vouch for, whose files are all
    as its tasks wrote them: another stage may read them as they are (dense, an encode folder)."""
    return _finished(folder, manifest, job, manifest.get("settings"), manifest.get("source"))


def run_shards(
    engine: Engine,
    job: str,
    function: Callable[[ShardTask], ShardResult],
    tasks: Iterator[ShardTask],
    folder: Path,
    settings: dict[str, Any],
    source: str | None,
) -> dict[str, Any]:
    """Run every shard not already done (per the manifest and the files' checksums); returns
    the complete manifest. `source` is the input's fingerprint: with a complete manifest of the
    same source, `tasks` is not read at all. Progress on stderr: shards done, documents/s."""
    from harness.progress import progress_bar

    started = time.monotonic()
    make_folder(folder)
    old = read_manifest(folder)
    before = json.dumps(old, sort_keys=True)
    if _finished(folder, old, job, settings, source):
        if json.dumps(old, sort_keys=True) != before:
            with contextlib.suppress(OSError):  # a read-only folder: re-hashed again next time, nothing lost
                _write_manifest(folder, old)  # a file re-hashed: its new version, not to re-hash it again
        _report(job, folder, old["shards"], 0, started)
        return old
    previous = {}
    if old is not None and old.get("job") == job and old.get("settings") == settings:
        previous = {entry["index"]: entry for entry in old.get("shards", [])}
    entries: dict[int, dict[str, Any]] = {}
    manifest = {"version": MANIFEST_VERSION, "job": job, "settings": settings, "source": source, "complete": False,
                "shards": []}
    across = _IdsAcrossFiles(folder)
    redone = 0

    def save(complete: bool = False) -> None:
        manifest["shards"] = [entries[index] for index in sorted(entries)]
        manifest["complete"] = complete
        _write_manifest(folder, manifest)

    progress = progress_bar(f"{job} shards", " docs", dynamic_ncols=True)

    def pending() -> Iterator[ShardTask]:
        for task in tasks:
            entry = previous.get(task.index)
            if _still_valid(folder, entry, task):
                # its key is the file's path in the folder: the folder may have moved since
                entries[task.index] = entry = {**entry, "source": task.source}
                progress.update(entry["docs"])
                across.add(entry)
                continue
            yield task

    with progress:
        for task, result in engine.map(function, pending()):
            entries[task.index] = {"index": task.index, "input": task.key, "source": task.source,
                                   "docs": result.docs, "count": result.count, "files": result.files,
                                   "versions": result.versions}
            if result.skipped:
                entries[task.index].update(skipped=result.skipped, first_skipped=result.first_skipped)
            redone += 1
            progress.set_postfix_str(f"{len(entries)} shards, {redone} run", refresh=False)
            progress.update(result.docs)
            save()
            across.add(entries[task.index])
    planned = set(entries)
    for index, entry in previous.items():  # shards past the end of a shorter input
        if index not in planned:
            for name in entry["files"]:
                (folder / name).unlink(missing_ok=True)
    manifest["docs"] = sum(entry["docs"] for entry in entries.values())
    manifest["count"] = sum(entry["count"] for entry in entries.values())
    manifest["seconds"] = round(time.monotonic() - started, 3)
    if not entries:  # raised before the manifest says complete, so that a rerun raises too
        raise HarnessError(f"{job}: the corpus has no documents")
    save(complete=True)
    _report(job, folder, manifest["shards"], redone, started)
    return manifest


class _IdsAcrossFiles:
    """The ids of a multi-file corpus's shards, checked across its files as each shard is
    done (within a file its task checked them), from the hashes each task keeps: an id in two
    files is an error naming both, before the manifest says complete (8 bytes a document,
    as harness.corpus.unique_ids). Where hashes repeat, the files holding them are read again
    to tell a repeated id from two ids sharing a hash, and to say where."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen = HashSet()
        self.entries: list[dict[str, Any]] = []

    def add(self, entry: dict[str, Any]) -> None:
        if entry.get("source") is None:
            return  # a range: checked by `plan`
        self.entries.append(entry)
        again = self.seen.add(self._hashes(entry))
        if again:
            self._raise(again)

    def _hashes(self, entry: dict[str, Any]) -> Any:
        import numpy as np

        path = self.folder / _id_file(entry["index"])
        try:
            return np.fromfile(path, dtype=np.int64)
        except OSError as error:  # a worker's file not yet seen here (NFS), or gone
            raise HarnessError(f"cannot read {path} (its shard's ids' hashes, which its task wrote): "
                               f"{error.strerror or error}; run again: the shard is kept if the file can be "
                               f"read then, else cut again") from None

    def _raise(self, again: set[int]) -> None:
        import numpy as np

        from harness.corpus.readers import open_corpus

        wanted = np.fromiter(again, np.int64, len(again))
        holding = sorted((entry for entry in self.entries if np.isin(self._hashes(entry), wanted).any()),
                         key=lambda entry: entry["index"])
        corpora = [open_corpus(entry["source"]) for entry in holding]
        files = Corpus("+".join(corpus.name for corpus in corpora),
                       lambda: chain.from_iterable(corpus.documents() for corpus in corpora),
                       read_located=lambda: chain.from_iterable(corpus.located() for corpus in corpora))
        raise_repeated(files, again, sum(entry["docs"] for entry in holding), key=id_hash)


def _report(job: str, folder: Path, shards: list[dict[str, Any]], redone: int, started: float) -> None:
    """The job's one line: what the bar showed on a terminal, said once on a log as well."""
    docs = sum(entry["docs"] for entry in shards)
    print(f"{job}: {len(shards)} shards, {redone} run, {len(shards) - redone} already done; {docs} documents in "
          f"{time.monotonic() - started:.1f} s ({folder / MANIFEST})", file=sys.stderr)
