"""Lucene indexes built with Anserini's IndexCollection, as the iKAT organisers build theirs.

The corpus is dumped as JsonCollection shards (title and text as one `contents` field) and
indexed (positions, docvectors and raw documents stored) by IndexCollection: inside the
running JVM for corpora up to `IN_PROCESS_DOCS` documents (a benchmark's many tiny PTKB
indexes pay no JVM start each), else by a child JVM whose log feeds a progress bar; both inside a
hidden build folder next to the target, renamed into place only when Anserini reports
success. A folder under the
target's name is therefore always a finished index; an interrupted build leaves at most a
`.NAME.building.PID.*` folder, removed when the interruption lets Python run, else (a kill)
by the next build beside it (atomic.temp_folder: no lock holds it). Two processes building one
index take turns: the second waits for the first's, then uses it. The Java child is killed with its
parent (PR_SET_PDEATHSIG), so it never runs on orphaned.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import deque
from collections.abc import Callable
from pathlib import Path

from harness import jsonl
from harness.atomic import OutputError, build_once, check_outputs, output_problem
from harness.corpus import Corpus, unique_ids
from harness.corpus.readers import FileCorpus
from harness.corpus.segment import Textless, document_text
from harness.errors import HarnessError
from harness.paths import CACHE_HINT, cache_root
from harness.progress import progress_bar, say_made, written
from harness.retrieve.java import (anserini_jar, die_with_parent, ensure_jvm, java_command, java_env, java_home,
                                   path_problem)

# Anserini indexes one file per thread: shards keep every thread busy on large corpora.
SHARD_DOCS = 50_000
# Written last into a finished index: what was indexed, for `cached_index` and for people.
MANIFEST = "harness-index.json"
# Up to this many documents, IndexCollection runs inside this process's JVM, with the same options.
IN_PROCESS_DOCS = 10_000
INDEX_COLLECTION = "io.anserini.index.IndexCollection"
_INDEXED = re.compile(r"([\d,]+) documents indexed")


def default_threads() -> int:
    return os.cpu_count() or 1


def build_index(
    corpus: Corpus, out: Path, threads: int | None = None, force: bool = False, in_process: bool | None = None,
    textless: Textless | None = None,
) -> Path:
    """Index `corpus` into `out`; refuses to replace a finished index unless `force`, and any
    other folder always (`_irreplaceable`).
    `in_process`: IndexCollection in this process's JVM (default: for small corpora).
    Documents whose text is empty are counted in `textless`; a corpus of only those is an error.
    A second process building the same `out` waits for the first (atomic.temp_folder), then finds it there."""
    out = Path(out)
    check_outputs(out, folder=True)  # a file in the way, or nowhere to build: said before Java starts
    if (problem := path_problem(out)) is not None:
        raise HarnessError(problem)
    _index(corpus, out, f"building {out}", lambda: None, threads, force, in_process, textless)
    return out


def _index(corpus: Corpus, out: Path, doing: str, finished: Callable[[], Path | None], threads: int | None,
           force: bool, in_process: bool | None, textless: Textless | None) -> float | None:
    """build_index's and cached_index's steps (atomic.build_once: `finished()` an index found at
    `out`): when the build began, None where the index was found."""
    def build(building: Path) -> tuple[Path, None]:
        _check_replaceable(out, corpus, force)
        return _build(corpus, building, threads, in_process, textless), None

    return build_once(out.resolve(), doing, finished, build)[1]  # resolved: `.` has no name to build beside


def _check_replaceable(out: Path, corpus: Corpus, force: bool) -> None:
    if out.exists() or out.is_symlink():
        if why := _irreplaceable(out, corpus):
            raise HarnessError(f"{out} already exists and {why}: give another folder")
        if not force:
            raise HarnessError(f"{out} already exists; pass --force to rebuild it")


def _build(corpus: Corpus, building: Path, threads: int | None, in_process: bool | None,
           textless: Textless | None) -> Path:
    """Index `corpus` in the build folder `building`: the index folder in it, to rename into place."""
    threads = threads or default_threads()
    java_home(), anserini_jar()  # finds Java and Anserini before any work is done
    dump = building / "jsonl"  # next to the index, not in a possibly small /tmp
    dump.mkdir()
    textless = Textless(corpus) if textless is None else textless
    count = _dump_jsonl(corpus, dump, textless)
    if count == 0:
        raise textless.nothing_left("index") if textless.count else HarnessError(
            f"corpus {corpus.name} has no documents to index")
    arguments = _index_options(threads) + ["-input", str(dump), "-index", str(building / "index")]
    if (count <= IN_PROCESS_DOCS) if in_process is None else in_process:
        indexed = _index_in_jvm(arguments, building / "index")
    else:
        indexed = _run_java(java_command(INDEX_COLLECTION) + arguments, count)
    manifest = {"corpus": corpus.name, "fingerprint": corpus.fingerprint, "documents": indexed}
    (building / "index" / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return building / "index"


def _irreplaceable(out: Path, corpus: Corpus) -> str | None:
    """Why --force may not replace the existing `out`, or None: only an index goes (a folder
    holding this module's manifest or Lucene's segments_N, or an empty one), never the folder
    of the corpus being indexed nor the one the command runs in (rmtree would take them)."""
    if out.is_symlink():
        return "is a link"
    here = out.resolve()
    inputs = [*corpus.paths, *([corpus.folder] if corpus.folder else [])] if isinstance(corpus, FileCorpus) else []
    for path in inputs:
        if path.resolve().is_relative_to(here):
            return f"holds the corpus being indexed ({path})"
    if Path.cwd().is_relative_to(here):
        return "holds the current folder"
    if not ((here / MANIFEST).is_file() or is_index(here) or not any(here.iterdir())):
        return f"is not an index (no {MANIFEST} or segments_N file in it), so --force does not replace it"
    return None


def cached_index(corpus: Corpus, threads: int | None = None) -> Path:
    """The corpus's index under cache_root()/indexes/<fingerprint>, built on first use; a build
    of a second or more says on stderr, as `harness index` does, where it went and how long it
    took (progress.say_made)."""
    out = cache_root() / "indexes" / corpus.fingerprint
    if (problem := path_problem(out)) is not None:  # Java builds and reads it
        raise HarnessError(problem)
    if (out / MANIFEST).is_file():
        return out
    if (problem := output_problem(out, folder=True)) is not None:  # a read-only clone's .cache, say
        raise OutputError(f"cannot write {out}: {problem}; {CACHE_HINT}")
    textless = Textless(corpus)
    started = _index(corpus, out, f"building the index of {corpus.name} in {out}",
                     lambda: out if (out / MANIFEST).is_file() else None, threads, False, None, textless)
    if started is not None:
        say_made(f"{indexed(out)} of {corpus.name}", out, started, textless.note())
    return out


def built(out: Path, started: float, textless: Textless) -> str:
    """The line `harness index` ends with, as a run's own index says it (`cached_index`): its
    documents, where, how long, those skipped."""
    return written(indexed(out), out, started, textless.note())


def indexed(out: Path) -> str:
    """`index of N documents`: what the finished index `out` holds, from its manifest."""
    return f"index of {json.loads((out / MANIFEST).read_text(encoding='utf-8'))['documents']} documents"


def _dump_jsonl(corpus: Corpus, folder: Path, textless: Textless) -> int:
    """Write the corpus as JsonCollection shards, those whose text is empty passed over (into
    `textless`); returns the number of documents. An id given twice is an error as soon as the
    block holding it is read, before it is written and before Lucene indexes anything
    (harness.corpus.unique_ids)."""
    count = 0
    handle = None
    documents = textless.passed_over(unique_ids(corpus, corpus.documents()))
    try:
        for document in progress_bar(f"dump {corpus.name}", " docs", iterable=documents):
            if count % SHARD_DOCS == 0:
                if handle:
                    handle.close()
                handle = open(folder / f"shard{count // SHARD_DOCS:05d}.jsonl", "w", encoding="utf-8")
            handle.write(json.dumps({"id": document.id, "contents": document_text(document)}) + "\n")
            count += 1
    finally:
        if handle:
            handle.close()
    return count


def is_index(path: str | Path) -> bool:
    """A Lucene index folder (it holds a segments_N file)."""
    path = Path(path)
    return path.is_dir() and any(path.glob("segments_*"))


def stored_texts(index: str | Path, ids: set[str]) -> dict[str, str]:
    """The stored text of each of `ids` in a Lucene index, looked up by id: its stored
    `contents` field, else the `contents` of its stored raw JSON document (as IndexCollection
    keeps it with -storeRaw), else the raw text; ids without a stored text are left out."""
    ensure_jvm(Path(index))
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(index))
    found: dict[str, str] = {}
    for docid in ids:
        document = searcher.doc(docid)
        if document is None:
            continue
        text = document.contents()
        if text is None and (raw := document.raw()) is not None:
            try:
                record = jsonl.loads(raw)
            except json.JSONDecodeError:
                record = None
            text = record.get("contents", raw) if isinstance(record, dict) else raw
        if text is not None:
            found[docid] = text
    searcher.close()
    return found


def _index_options(threads: int) -> list[str]:
    """IndexCollection as the iKAT organisers run it (their ikat_tools.py create_index)."""
    return [
        "-collection", "JsonCollection",
        "-generator", "DefaultLuceneDocumentGenerator",
        "-threads", str(threads),
        "-storePositions", "-storeDocvectors", "-storeRaw",
    ]  # fmt: skip


def _index_in_jvm(arguments: list[str], index: Path) -> int:
    """IndexCollection.main in this process's JVM (quiet: its log would go to our stdout);
    returns documents indexed."""
    ensure_jvm()
    from jnius import JavaException, autoclass

    try:
        autoclass(INDEX_COLLECTION).main(arguments + ["-quiet"])
        reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(str(index))
    except JavaException as error:
        raise HarnessError(f"Anserini IndexCollection failed: {error}") from None
    try:
        return reader.numDocs()
    finally:
        reader.close()


def _run_java(command: list[str], total: int) -> int:
    """Run IndexCollection with a progress bar fed by its log; returns documents indexed."""
    log: deque[str] = deque(maxlen=20)
    indexed = 0
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
        preexec_fn=die_with_parent, env=java_env(),
    ) as java, progress_bar("index", " docs", total=total) as progress:
        try:
            for line in java.stdout:
                log.append(line.rstrip())
                match = _INDEXED.search(line)
                if match:
                    indexed = int(match.group(1).replace(",", ""))
                    progress.update(indexed - progress.n)
            java.wait()
        finally:
            if java.poll() is None:
                java.kill()
    if java.returncode != 0 or "Total" not in " ".join(log):
        tail = " | ".join(line for line in log if line.strip())[-1500:]
        raise HarnessError(f"Anserini IndexCollection failed (exit {java.returncode}): {tail}")
    return indexed
