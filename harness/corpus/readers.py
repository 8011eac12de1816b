"""Corpus readers: JSONL dumps, TREC text/web files, ClueWeb22 text records, ir_datasets ids,
and (registered a layer up, by harness.topics) `benchmark:NAME[:SPLIT]`, the corpus a topic
adapter builds.

`open_corpus(spec)` picks the reader from the spec's form: an explicit `FORMAT:` prefix
(`irds:msmarco-passage`, `jsonl:dump.txt`), else the first
registered format that claims the path (by suffix, then by sniffing the first line).
Every reader streams: a corpus is re-read from disk each time its documents are iterated.
"""

from __future__ import annotations

import hashlib
import html
import inspect
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import jsonl
from harness.corpus import Corpus, Document
from harness.errors import HarnessError, InputError, open_input, other_form
from harness.paths import file_sha256
from harness.registry import Param, Registry, answering, instances_of, object_origin, summary_of
from harness.trec import Qrels, add_judgment


@dataclass(frozen=True)
class CorpusFormat:
    open: Callable[[str], Corpus]
    # For a spec without a FORMAT: prefix: does this format recognise it?
    claims: Callable[[str], bool]


# harness.topics registers `benchmark:` (topics sit above corpora; harness/_assembly.py)
CORPUS_FORMATS: Registry[CorpusFormat] = Registry("corpus format", group="harness.corpus_formats",
                                                   summary=lambda corpus_format: summary_of(corpus_format.open))


@CORPUS_FORMATS.adapter
def _plugin_format(name: str, obj: object) -> CorpusFormat:
    """A plug-in's format is a CorpusFormat, whose `open` is checked to answer a Corpus."""
    found = instances_of(CORPUS_FORMATS.kind, CorpusFormat)(name, obj)
    opens = answering(CORPUS_FORMATS.kind, "open(spec)", "a harness.corpus.Corpus", lambda c: isinstance(c, Corpus))
    return replace(found, open=opens(name, found.open))


def open_corpus(spec: str) -> Corpus:
    """The corpus a spec names, `FORMAT:` first; else the first format that claims it, the built-ins
    before the plug-ins (an installed one that cannot be loaded, or whose name two packages register,
    is not asked: it is an error only where its `FORMAT:` is given, not for a path no other claims)."""
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in CORPUS_FORMATS.names():  # a plug-in that cannot be loaded says why
        return _opened(prefix, os.path.expanduser(rest))  # `jsonl:~/x`: the shell expands `~` at a word's start only
    built_ins = CORPUS_FORMATS.built_ins()
    for name in [*built_ins, *(name for name in CORPUS_FORMATS.names() if name not in built_ins)]:
        try:
            claims = CORPUS_FORMATS.get(name).claims
        except HarnessError:  # a plug-in that cannot be loaded: said where its NAME: is given
            continue
        if claims(spec):
            return _opened(name, spec)
    known = ", ".join(f"{name}:" for name in CORPUS_FORMATS)
    if not Path(spec).exists():
        close = other_form(spec)
        raise HarnessError(f"corpus file {spec} does not exist{close}" if close
                           else f"corpus {spec!r} is neither an existing file nor a spec starting with {known}")
    kind = "folder" if Path(spec).is_dir() else "file"
    raise HarnessError(f"cannot tell the format of corpus {kind} {spec}; prefix it with one of {known}")


def _opened(name: str, spec: str) -> Corpus:
    """The corpus format `name`'s corpus of `spec`, a plug-in's keyed by its code too (`keyed_by_reader`):
    the package registering it and the code of its `open` and `claims`, with the modules they import
    (object_origin: the entry point's own object is a CorpusFormat, whose class is the harness's, not the
    plug-in's code; `open` unwrapped from the check of its answer: _plugin_format)."""
    corpus_format = CORPUS_FORMATS.get(name)
    return keyed_by_reader(corpus_format.open(spec), CORPUS_FORMATS.origin(name), lambda: {
        part: object_origin(inspect.unwrap(getattr(corpus_format, part)), by_name=True) for part in ("open", "claims")})


def keyed_by_reader(corpus: Corpus, origin: dict | None, code: Callable[[], dict[str, dict]]) -> Corpus:
    """`corpus` keyed by the plug-in that read it (`Corpus.reader`), as a retriever's runs are keyed:
    `origin` is the plug-in's (Registry.origin: its package's name and version; None for a built-in,
    whose corpus is left as it is), `code` the origins of the code that read the documents, by part
    (a corpus format's `open` and `claims`, a benchmark's adapter). A reader the corpus already names
    (a plug-in format the plug-in opened it with) is kept beside it."""
    if origin is None:
        return corpus
    package = {key: origin[key] for key in ("entry_point", "distribution", "version", "python") if key in origin}
    within = {"within": corpus.reader} if corpus.reader is not None else {}
    reader = {**package, "code": {part: _code_only(each) for part, each in code().items()}, **within}
    return replace(corpus, reader=json.dumps(reader, sort_keys=True, default=str))


def _code_only(origin: dict) -> dict:
    """A reader's code as its corpus's fingerprint holds it: its module's sha256 and helpers', not
    the values its functions capture (a compiled pattern is no plain value: keyed by one, its
    corpus had a new fingerprint in every process, indexed again at each run); what the reader
    reads besides its code is its `known_fingerprint`'s to cover. Code with no source to read
    keeps its never-resumed token: a changed version is not told apart."""
    if "sha256" not in origin:
        return origin
    return {key: origin[key] for key in ("module", "sha256", "helpers") if key in origin}


def open_documents(spec: str) -> Corpus:
    """`open_corpus` for a command that reads every document (segment, index, encode, the
    --passages of ikat from-trec and responses eval): a corpus holding none (an empty or blank
    file) is an InputError naming its file, not an empty output."""
    corpus = open_corpus(spec)
    if isinstance(corpus, FileCorpus) and next(iter(corpus.documents()), None) is None:  # irds: is never empty
        raise InputError(corpus.paths[0] if len(corpus.paths) == 1 else spec, "holds no document: nothing to read")
    return corpus


# -- file-backed corpora -------------------------------------------------------------------


@dataclass(frozen=True)
class FileCorpus(Corpus):
    """A corpus read from files: its fingerprint is the sha256 of its file's bytes (for a
    folder, over each file's path and sha256), computed on first use (hashing is far cheaper
    than parsing) and, for big files, read back from the digest memo (paths.file_sha256)."""

    paths: tuple[Path, ...] = ()
    folder: Path | None = None

    @property
    def content_fingerprint(self) -> str:
        if self.known_fingerprint is None:
            if self.folder is None:
                (path,) = self.paths
                fingerprint = file_sha256(path)
            else:
                digest = hashlib.sha256()
                for path in self.paths:
                    digest.update(f"{path.relative_to(self.folder)}\0{file_sha256(path)}\n".encode())
                fingerprint = digest.hexdigest()
            object.__setattr__(self, "known_fingerprint", fingerprint)
        return self.known_fingerprint


def _existing(spec: str) -> Path:
    path = Path(spec)
    if not path.is_file():
        raise HarnessError(f"corpus file {spec} does not exist{other_form(path)}")
    return path


def _first_line(spec: str) -> str:
    try:
        with open_input(Path(spec)) as handle:
            for line in handle:
                if line.strip():
                    return line.strip()
    except (OSError, UnicodeDecodeError, EOFError, ValueError, InputError):
        pass
    return ""


def _file_corpus(path: Path, parse: Callable[..., Iterator[Any]]) -> FileCorpus:
    """`parse(path)` yields the file's documents, `parse(path, located=True)` (document, (path, line)) pairs."""
    return FileCorpus(name=path.name, documents=lambda: parse(path), paths=(path,),
                      read_located=lambda: parse(path, located=True))


# -- JSONL ---------------------------------------------------------------------------------

_ID_KEYS = ("id", "docid", "doc_id", "_id")
_TEXT_KEYS = ("contents", "text", "body", "passage_text")
# iKAT's passage files (the 2023 provenance pools): a passage is `doc_id` + `passage_id`, its
# id in runs and qrels `<doc_id>:<passage_id>` (as `ikat validate --passages` reads them), its
# passage_text printed between newlines, which are not its text (benchmark:ikat2023 strips them)
_PASSAGE_KEYS = ("doc_id", "passage_id")


def _first_key(record: dict, keys: tuple[str, ...]) -> str | None:
    return next((key for key in keys if key in record), None)


def _json_objects(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file (harness.jsonl)."""
    for number, record in jsonl.read(path):
        if not isinstance(record, dict):
            raise InputError(path, "expected a JSON object per line", line=number)
        yield number, record


def _jsonl_documents(path: Path, located: bool = False) -> Iterator[Any]:
    for number, record in _json_objects(path):
        passage = "passage_id" in record and "doc_id" in record  # an iKAT passage: one look-up on the common path
        id_key = " and ".join(_PASSAGE_KEYS) if passage else _first_key(record, _ID_KEYS)
        text_key = _first_key(record, _TEXT_KEYS)
        if id_key is None or text_key is None:
            raise InputError(
                path,
                f"expected an id field ({'/'.join(_ID_KEYS)}, or {' and '.join(_PASSAGE_KEYS)}) and a text field "
                f"({'/'.join(_TEXT_KEYS)}); found {sorted(record)}",
                line=number,
            )
        docid = _passage_id(record, path, number) if passage else record[id_key]
        if not isinstance(docid, (str, int)) or not str(docid).strip():
            raise InputError(path, f"{id_key} must be a non-empty string", line=number)
        text, title = record[text_key], record.get("title")
        if not isinstance(text, str) or not (title is None or isinstance(title, str)):
            raise InputError(path, f"{text_key} and title must be strings", line=number, record=str(docid))
        text = text.strip() if text_key == "passage_text" else text
        document = Document(id=str(docid), contents=text, title=title or None)
        yield (document, (path, number)) if located else document


def _claims_jsonl(spec: str) -> bool:
    if not Path(spec).is_file():
        return False
    if re.search(r"\.jsonl?(\.gz)?$", spec):
        return True
    return _first_line(spec).startswith("{")


def _passage_id(record: dict, path: Path, number: int) -> str:
    """An iKAT passage's id, `<doc_id>:<passage_id>`."""
    parts = [record[key] for key in _PASSAGE_KEYS]
    if not all(isinstance(part, (str, int)) and str(part).strip() for part in parts):
        raise InputError(path, f"{' and '.join(_PASSAGE_KEYS)} must be non-empty strings", line=number)
    return ":".join(map(str, parts))


CORPUS_FORMATS.add(
    "jsonl", CorpusFormat(open=lambda spec: _file_corpus(_existing(spec), _jsonl_documents), claims=_claims_jsonl),
    "JSON lines, a document a line: an id (id, docid, doc_id or _id; an iKAT passage's doc_id and passage_id, "
    "as doc_id:passage_id) and a text (contents, text, body or passage_text)",
    [Param("PATH", str, desc="the file")],
)


# -- TREC text / TREC web ------------------------------------------------------------------

# Each element is found by its opener, then the first closer after it, as `OPENER.*?CLOSER` (re.S | re.I) finds
# it, but in linear time (`_elements`): the pattern scans to the document's end for each opener with no closer.
_DOCNO = re.compile(r"<(DOCNO)>", re.I), {"docno": re.compile(r"</DOCNO>", re.I)}
_DOCHDR = re.compile(r"<(DOCHDR)>", re.I), {"dochdr": re.compile(r"</DOCHDR>", re.I)}
_TITLE = re.compile(r"<(TITLE)>", re.I), {"title": re.compile(r"</TITLE>", re.I)}
_INVISIBLE = re.compile(r"<(script|style)\b", re.I), {name: re.compile(rf"</{name}\s*>", re.I)
                                                      for name in ("script", "style")}
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def _elements(text: str, opener: re.Pattern[str], closers: dict[str, re.Pattern[str]]
              ) -> Iterator[tuple[int, int, int, int]]:
    """The start and end of each element of `text`, and of the text inside it: an `opener`, then the first
    closer after it of the name its group matched (lower-cased), each after the one before. An opener with no
    closer after it is left as text, and so is every later one of its name (no closer follows them either),
    which a pattern's `.*?` scanned to the end of the text for again, each: a 240 KB document of unclosed
    `<script` openers took a minute."""
    unclosed: set[str] = set()
    position = 0
    while (opened := opener.search(text, position)) is not None:
        name = opened.group(1).lower()
        closed = None if name in unclosed else closers[name].search(text, opened.end())
        if closed is None:
            unclosed.add(name)
            position = opened.start() + 1
            continue
        yield opened.start(), closed.end(), opened.end(), closed.start()
        position = closed.end()


def _without(text: str, element: tuple[re.Pattern[str], dict[str, re.Pattern[str]]]) -> str:
    """`text` with each `element` (`_elements`) replaced by a space."""
    parts, kept = [], 0
    for start, end, _, _ in _elements(text, *element):
        parts += [text[kept:start], " "]
        kept = end
    return "".join(parts) + text[kept:]


def _visible_text(markup: str) -> str:
    """Text of a TREC/HTML fragment: tags and scripts dropped, entities decoded. Tags end by the
    text's last `>`: after it, each `<` would scan to the end again for one (quadratic)."""
    text = _without(markup, _INVISIBLE)
    last = text.rfind(">") + 1
    text = _TAG.sub(" ", text[:last]) + text[last:]
    return _SPACE.sub(" ", html.unescape(text)).strip()


def _trec_document(path: Path, start_line: int, block: str) -> Document:
    docnos = [block[start:end].strip() for _, _, start, end in _elements(block, *_DOCNO)]
    if len(docnos) != 1 or not docnos[0]:
        raise InputError(path, f"expected one non-empty <DOCNO> in the <DOC>, found {len(docnos)}", line=start_line)
    body = _without(_without(block, _DOCNO), _DOCHDR)
    found = next(_elements(body, *_TITLE), None)  # the first
    title = None if found is None else body[found[2]:found[3]]
    if found is not None:
        body = body[: found[0]] + " " + body[found[1] :]
    return Document(
        id=docnos[0],
        contents=_visible_text(body),
        title=_visible_text(title) or None if title is not None else None,
    )


def _trec_documents(path: Path, located: bool = False) -> Iterator[Any]:
    block: list[str] | None = None
    start = 0
    with open_input(path) as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            opens = stripped.upper().startswith("<DOC>")
            if block is None:
                if not opens:
                    if stripped:
                        raise InputError(path, f"expected <DOC>, found {stripped[:40]!r}", line=number)
                    continue
                block, start, line = [], number, stripped[5:]
            elif opens:
                raise InputError(path, f"<DOC> opened at line {start} is not closed before this <DOC>", line=number)
            if line.rstrip().upper().endswith("</DOC>"):
                block.append(line.rstrip()[:-6])
                document = _trec_document(path, start, "".join(block))
                yield (document, (path, start)) if located else document
                block = None
            else:
                block.append(line)
    if block is not None:
        raise InputError(path, "<DOC> is never closed with </DOC>", line=start)


def _claims_trec(spec: str) -> bool:
    return Path(spec).is_file() and _first_line(spec).upper().startswith("<DOC>")


CORPUS_FORMATS.add(
    "trec", CorpusFormat(open=lambda spec: _file_corpus(_existing(spec), _trec_documents), claims=_claims_trec),
    "TREC text or web files: <DOC> records with a <DOCNO>", [Param("PATH", str, desc="the file")],
)


# -- ClueWeb22 text records (the iKAT collection) ----------------------------------------------

_CLUEWEB22_FILE = re.compile(r"\.json(\.gz|\.bz2)?$")


def _clueweb22_files(spec: str) -> list[Path]:
    """The record files of a ClueWeb22 `txt` folder (any depth), in path order; or one file."""
    path = Path(spec)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise HarnessError(f"ClueWeb22 corpus {spec} is neither a folder nor a file")
    files = sorted(p for p in path.rglob("*") if p.is_file() and _CLUEWEB22_FILE.search(p.name))
    if not files:
        raise HarnessError(f"ClueWeb22 folder {spec} holds no .json, .json.gz or .json.bz2 files")
    return files


def _clueweb22_documents(files: list[Path], located: bool = False) -> Iterator[Any]:
    """`Clean-Text` whole, title line included, as the iKAT organisers segment it."""
    for path in files:
        for number, record in _json_objects(path):
            if not all(isinstance(record.get(key), str) for key in ("ClueWeb22-ID", "Clean-Text")):
                raise InputError(path, "expected a ClueWeb22 record with string ClueWeb22-ID and Clean-Text",
                                 line=number)
            document = Document(id=record["ClueWeb22-ID"], contents=record["Clean-Text"])
            yield (document, (path, number)) if located else document


def _clueweb22_corpus(spec: str) -> Corpus:
    files, path = _clueweb22_files(spec), Path(spec)
    return FileCorpus(name=path.name, documents=lambda: _clueweb22_documents(files), paths=tuple(files),
                      folder=path if path.is_dir() else None, read_located=lambda: _clueweb22_documents(files, True))


def _claims_clueweb22(spec: str) -> bool:
    path = Path(spec)
    if path.is_dir():
        return any(_CLUEWEB22_FILE.search(p.name) for p in path.rglob("*") if p.is_file())
    return path.is_file() and '"ClueWeb22-ID"' in _first_line(spec)


CORPUS_FORMATS.add("clueweb22", CorpusFormat(open=_clueweb22_corpus, claims=_claims_clueweb22),
                   "ClueWeb22 text records (the iKAT collection)",
                   [Param("PATH", str, desc="a record file, or a folder of them")])


# -- ir_datasets -----------------------------------------------------------------------------

_IRDS_TEXT_FIELDS = ("text", "body", "passage", "contents")
_ALL_SOURCES_FAILED = "All download sources failed"  # ir_datasets' RuntimeError when no source of a file answers
_RETRY_LINES = ("download error", "Download failed")  # its log lines on each failed try


@dataclass(frozen=True)
class DatasetCorpus(Corpus):
    """An ir_datasets dataset's documents: ir_datasets fetches them on first read, unless it has them."""


def _irds_dataset(dataset_id: str, has: str) -> Any:
    """The ir_datasets dataset, which has `has` (docs, qrels); ids under harness/ are the benchmarks."""
    import ir_datasets

    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise HarnessError(f"ir_datasets has no dataset {dataset_id!r}") from None
    if not getattr(dataset, f"has_{has}")():
        raise HarnessError(f"ir_datasets dataset {dataset_id!r} has no {'documents' if has == 'docs' else has}")
    return dataset


def _not_fetched(dataset_id: str, what: str, error: RuntimeError | OSError) -> HarnessError:
    """The one line for the `what` (documents, qrels) of a dataset ir_datasets could not fetch
    or read; any other error is re-raised as it is (a bug is not a failed download)."""
    import ir_datasets

    if failed := _failed_download(error):
        return HarnessError(f"irds:{dataset_id}: ir_datasets has not downloaded its {what} and could not fetch them "
                            f"({failed}); fetch them once online (any command reading irds:{dataset_id} does) into "
                            f"ir_datasets' folder, IR_DATASETS_HOME ({ir_datasets.util.home_path()})")
    if isinstance(error, OSError):  # a file it reads, missing (as a failed download leaves it) or unreadable
        return HarnessError(f"ir_datasets could not read the {what} of {dataset_id!r} ({type(error).__name__}: "
                            f"{str(error)[:200]}): it downloads them on first use, which needs the network and "
                            "access to their source; fetch them once where there is both")
    raise error


def _irds_corpus(dataset_id: str) -> Corpus:
    dataset = _irds_dataset(dataset_id, "docs")

    def documents() -> Iterator[Document]:
        with _retry_lines_held():
            try:
                for doc in dataset.docs_iter():
                    field = next((name for name in _IRDS_TEXT_FIELDS if hasattr(doc, name)), None)
                    text = getattr(doc, field) if field else doc.default_text()
                    yield Document(id=doc.doc_id, contents=text, title=getattr(doc, "title", None) or None)
            except (RuntimeError, OSError) as error:  # OSError: requests' errors too
                raise HarnessError(f"{_not_fetched(dataset_id, 'documents', error)}, or give a local copy "
                                   "(jsonl:FILE, trec:FILE)") from None

    # ir_datasets ids name fixed, checksummed content: the id is the fingerprint's key.
    fingerprint = hashlib.sha256(f"irds:{dataset_id}".encode()).hexdigest()
    return DatasetCorpus(name=dataset_id, documents=documents, known_fingerprint=fingerprint)


def irds_id(spec: str | Path) -> str | None:
    """ID of `irds:ID` where a qrels file is expected; None for a path (a file of that name too)."""
    return spec[len("irds:"):] if isinstance(spec, str) and spec.startswith("irds:") and not Path(spec).exists() \
        else None


def irds_qrels(dataset_id: str) -> Qrels:
    """An ir_datasets dataset's qrels (query_id, doc_id, relevance), held to a qrels file's rules
    by read_qrels' own check (add_judgment): datasets are read through ir_datasets. Named by the
    id, its slashes dashes (`harness-ikat2023-test`), as a file is by its stem."""
    dataset = _irds_dataset(dataset_id, "qrels")
    judgments: dict[str, dict[str, int]] = {}
    with _retry_lines_held():
        try:
            for qrel in dataset.qrels_iter():
                qid, docid, grade = str(qrel.query_id), str(qrel.doc_id), qrel.relevance
                if problem := add_judgment(judgments, qid, docid, grade):
                    raise InputError(f"irds:{dataset_id}", problem, record=f"{qid} 0 {docid} {grade}")
        except (RuntimeError, OSError) as error:
            raise _not_fetched(dataset_id, "qrels", error) from None
    if not judgments:
        raise HarnessError(f"irds:{dataset_id}: empty qrels: no judgments")
    return Qrels(dataset_id.replace("/", "-"), judgments)


def _failed_download(error: Exception) -> str | None:
    """Each source ir_datasets tried and how it failed (`host: ConnectionError`), where the error
    is its failed download: the RuntimeError naming every source's failure, or a lone source's
    requests error; None for any other error (a bug, a disk's), which is not one."""
    import requests

    if isinstance(error, RuntimeError) and len(error.args) == 2 and error.args[0] == _ALL_SOURCES_FAILED:
        failures = [(getattr(source, "url", None), failure) for source, failure in error.args[1]]
    elif isinstance(error, requests.RequestException):
        failures = [(getattr(error.request, "url", None), error)]
    else:
        return None
    return ", ".join(f"{urlsplit(url).netloc or url if url else 'its source'}: {_cause(failure)}"
                     for url, failure in failures)


def _cause(failure: BaseException) -> str:
    """The failure's kind, urllib3's reason where requests wraps one (NameResolutionError: offline)."""
    reason = getattr(failure.args[0], "reason", None) if failure.args else None
    return type(reason if isinstance(reason, BaseException) else failure).__name__


@contextmanager
def _retry_lines_held() -> Iterator[None]:
    """ir_datasets' line on each failed try of each source held back while a dataset is read
    (offline, one a try): the error that follows sums them up."""
    logger, retries = logging.getLogger("ir_datasets"), _RetryLines()  # the logger it logs every line to
    logger.addFilter(retries)
    try:
        yield
    finally:
        logger.removeFilter(retries)


class _RetryLines(logging.Filter):
    """Drops ir_datasets' line on each failed download try: the error names every source's failure,
    and a try that fails before another succeeds is no news."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_RETRY_LINES)


def first_document(corpus: Corpus) -> Document | None:
    """The corpus's first document, read to check it before any run (a file's field names, an
    ir_datasets dataset's documents there or fetchable)."""
    return next(iter(corpus.documents()), None)


CORPUS_FORMATS.add("irds", CorpusFormat(open=_irds_corpus, claims=lambda spec: False),
                   "the documents of an ir_datasets dataset", [Param("ID", str, desc="the ir_datasets id")])
