"""Corpora: streams of documents, re-iterable, with a content fingerprint for caches.

Never the whole corpus in memory: `Corpus.documents()` opens a fresh stream each call.

Elsewhere (harness/_assembly.py): the `benchmark:` corpus format is harness.topics's, which knows the benchmarks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError, InputError
from harness.trec import field_ok

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Document:
    id: str
    contents: str
    title: str | None = None


@dataclass(frozen=True)
class Corpus:
    name: str
    documents: Callable[[], Iterator[Document]] = field(compare=False)
    # Known up front for file-backed corpora (hash of the file); else computed by one pass. It covers
    # what the documents are read from, not the code reading them (`reader`, added by the harness).
    known_fingerprint: str | None = None
    # the documents with where each starts, (file, line) or None; unset: nowhere (Corpus.located)
    read_located: Callable[[], Iterator[tuple[Document, tuple[Path, int] | None]]] | None = field(
        default=None, compare=False)
    # What read the documents where a plug-in did, a corpus format or a benchmark bringing its corpus (its
    # package, version and code: readers.keyed_by_reader); None for a built-in's, whose code is the harness's.
    reader: str | None = None

    @property
    def fingerprint(self) -> str:
        """The key for indexes, embedding caches and runs: the documents' (`content_fingerprint`),
        and the plug-in code that read them, where one did: a file's sha256 alone would keep the
        index and the runs of a reader since changed."""
        if self.reader is None:  # a built-in format's: the documents' alone, as before readers were keyed
            return self.content_fingerprint
        return hashlib.sha256(f"{self.content_fingerprint}\0{self.reader}".encode()).hexdigest()

    @property
    def content_fingerprint(self) -> str:
        """sha256 over ids, titles and texts, unless known up front (`known_fingerprint`)."""
        if self.known_fingerprint is not None:
            return self.known_fingerprint
        digest = hashlib.sha256()
        for document in self.documents():
            for part in (document.id, document.title or "", document.contents):
                digest.update(part.encode("utf-8"))
                digest.update(b"\0")
        object.__setattr__(self, "known_fingerprint", digest.hexdigest())
        return self.known_fingerprint

    def located(self) -> Iterator[tuple[Document, tuple[Path, int] | None]]:
        """Each document with the file and line it starts at (None: not read from a file)."""
        if self.read_located is not None:
            return self.read_located()
        return ((document, None) for document in self.documents())


# a look-up of texts by document id (a Lucene index's stored documents), searched as a corpus is
TextLookup = Callable[[set[str]], dict[str, str]]


def find_texts(sources: Iterable[Corpus | TextLookup], wanted: set[str],
               text: Callable[[Document], str] = lambda document: document.contents) -> dict[str, str]:
    """The text of each `wanted` id that the sources hold, searched in turn, each (one pass over
    a corpus, read until all are found, or one look-up) for the ids not found yet: the first
    source holding an id gives its text, as a run searching several corpora as one (a config's
    `corpus:` list) ranks them. `text` makes a corpus document's text (a judge's: its title too)."""
    return {id_: found for id_, (_, found) in find_sourced_texts(sources, wanted, text).items()}


def find_sourced_texts(sources: Iterable[Corpus | TextLookup], wanted: set[str],
                       text: Callable[[Document], str] = lambda document: document.contents
                       ) -> dict[str, tuple[int, str]]:
    """find_texts' texts, each with the index of the source that gave it: which corpus holds a
    passage, known from the one search (`harness judge`'s note on passages of other splits)."""
    found: dict[str, tuple[int, str]] = {}
    for index, source in enumerate(sources):
        missing = wanted - found.keys()
        if not missing:
            break
        if not isinstance(source, Corpus):
            found.update((id_, (index, looked_up)) for id_, looked_up in source(missing).items())
            continue
        for document in source.documents():
            if document.id in missing and document.id not in found:
                found[document.id] = index, text(document)
                if len(found) == len(wanted):
                    break
    return found


def unique_ids(corpus: Corpus, documents: Iterable[Document], key: Callable[[str], int] = hash,
               seen: HashSet | None = None) -> Iterator[Document]:
    """`documents` (the corpus's, read to build an index) passed through, an id given twice
    an error naming where as soon as the block holding it is read (_ID_BLOCK documents, fewer
    where their texts are long), before any of that block is passed on (before a dense index
    encodes it): an index would hold both documents, and a ranking keep the id once, at the
    higher of their scores (Run.of), whichever document the qrels judged under it (pyserini's
    BM25 and dense; the numpy BM25 refuses such an index and falls back to pyserini). Holds 8
    bytes a document, a 64-bit hash of its id (the ids of ClueWeb22-B's 117M passages would
    take gigabytes as strings); where a hash repeats, the corpus is read again up to there, to
    tell a repeated id from two ids sharing a hash, and to say where. `key` hashes an id
    (id_hash where the hashes are kept for a check across processes); `seen`, where given,
    holds the hash of every id passed (HashSet.all), hashed once for both checks."""
    import numpy as np  # here: not a cost of every `import harness`

    seen = HashSet() if seen is None else seen
    read = 0
    for block in _blocks(documents):
        ids = [document.id for document in block]  # walked once for the hashes, once for field_ok
        again = seen.add(np.fromiter(map(key, ids), np.int64, len(ids)))
        read += len(block)
        if not all(map(field_ok, ids)):
            raise_unwritable(corpus, read)
        if again:
            raise_repeated(corpus, again, read, key=key)
        yield from block


_ID_BLOCK = 16384  # ids checked at once: a repeat is said at most this many documents after it is read
_BLOCK_TEXT = 16 << 20  # characters of text a block holds at most (16,384 web documents: hundreds of MB)


def _blocks(documents: Iterable[Document]) -> Iterator[list[Document]]:
    """`documents` in lists of _ID_BLOCK, or fewer where their texts pass _BLOCK_TEXT."""
    block: list[Document] = []
    size = 0
    for document in documents:
        block.append(document)
        size += len(document.contents)
        if len(block) == _ID_BLOCK or size >= _BLOCK_TEXT:
            yield block
            block, size = [], 0
    if block:
        yield block


def raise_repeated(corpus: Corpus, repeated: set[int], read: int, key: Callable[[str], int] = hash) -> None:
    """The error for the first id read twice among the corpus's first `read` documents whose
    hashes (by `key`) are `repeated`; nothing when those hashes are shared by different ids."""
    first: dict[str, tuple[int, tuple[Path, int] | None]] = {}  # id of a repeated hash -> where it came first
    for ordinal, (document, where) in enumerate(islice(corpus.located(), read)):
        if key(document.id) not in repeated:
            continue
        if document.id not in first:
            first[document.id] = ordinal, where
            continue
        earlier, where_first = first[document.id]
        consequence = "an index would hold both documents under one id, and a ranking give it the higher of their scores"
        if where is None or where_first is None:
            raise HarnessError(f"corpus {corpus.name}: document id {document.id!r} is given twice, as documents "
                               f"{earlier + 1:,} and {ordinal + 1:,}; {consequence}")
        place = f"line {where_first[1]}" if where_first[0] == where[0] else f"{where_first[0]}:{where_first[1]}"
        raise InputError(where[0], f"document id {document.id!r} again (first at {place}); {consequence}",
                         line=where[1])


def raise_unwritable(corpus: Corpus, read: int) -> None:
    """The error for the first id among the corpus's first `read` documents that no TREC run
    line can hold: said where the corpus is read, not when a run is written after the search."""
    for document, where in islice(corpus.located(), read):
        if field_ok(document.id):
            continue
        problem = (f"document id {document.id!r} is empty or holds whitespace or a NUL byte, which a TREC run "
                   f"line cannot hold")
        if where is None:
            raise HarnessError(f"corpus {corpus.name}: {problem}")
        raise InputError(where[0], problem, line=where[1])


def id_hash(document_id: str) -> int:
    """A 64-bit hash of an id that every process gives alike (Python's hash() of a str is
    salted per process): for ids checked where they are read by several workers."""
    return int.from_bytes(hashlib.blake2b(document_id.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class HashSet:
    """A set of 64-bit hashes as sorted arrays whose sizes at least halve, one to the next (a
    new block merges with every one not bigger than it): 8 bytes a hash (16 while the biggest
    merge runs; a Python set of ints takes about 60), a lookup a binary search per array."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []

    def add(self, hashes: np.ndarray) -> set[int]:
        """Adds `hashes`; returns those among them that were in already, or came twice in them."""
        import numpy as np

        block = np.sort(hashes)
        if not len(block):  # an empty file's: no empty run, where a lookup would clip to a last element it lacks
            return set()
        again = set(block[1:][block[1:] == block[:-1]].tolist())
        for run in self.runs:
            at = np.minimum(np.searchsorted(run, block), len(run) - 1)
            again.update(block[run[at] == block].tolist())
        while self.runs and len(self.runs[-1]) <= len(block):
            block = np.concatenate((self.runs.pop(), block))
            block.sort(kind="stable")  # two sorted runs: merged in linear time
        self.runs.append(block)
        return again

    def all(self) -> np.ndarray:
        """Every hash added, sorted, repeats kept (int64)."""
        import numpy as np

        return np.sort(np.concatenate(self.runs)) if self.runs else np.zeros(0, np.int64)
