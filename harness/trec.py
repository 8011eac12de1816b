"""The shared vocabulary (`Hit`, `Ranking`, `Run`, `Qrels`), defined once for every layer,
and TREC run and qrels files: strict readers, a streaming atomic writer.

A ranking has one shape from retriever to score: a retriever answers a `Run` ({qid:
`Ranking`}, each best first), fusion, re-ranking and PTKB ranking take and give `Run`s, the
runner streams one into a run file with `write_run`, and the evaluator scores that file read
back (`read_run`), so what is scored is what is submitted. DataFrames exist only at the
Python API's edge (harness.evaluate.frames, harness.retrieve.plugins).

Conventions (those of trec_eval, stated once here and tested in tests/test_trec_files.py):

- Run lines are `qid Q0 docid rank score tag`, qrels lines `qid iter docid grade`, fields
  separated by ASCII whitespace (C's isspace: a no-break space, and 0x1C-0x1F, which
  Python's str.split splits at, are part of an id, as in trec_eval), lines ending at `\n`
  only. A NUL byte in a line is an error (trec_eval reads its files as C strings and crashes on it). Text after a run line's sixth field is ignored, as
  trec_eval ignores it (NIST's own test/results.trunc has some); `Run.trailing` counts such lines. Blank lines are skipped, and so are comments: a
  run line whose first non-blank character is `#`, a qrels line starting with `#`. Any
  other line with the wrong number of fields, a non-numeric score or a non-integer grade is
  an error naming the file, the line number and the problem.
- A score is a plain, finite decimal or scientific number in ASCII (`SCORE`): `12`, `-0.5`,
  `.5`, `1e-3`. Anything trec_eval's atof would read differently from Python's float is
  refused: `1_0` (atof reads 1, float 10), `inf`, `nan`, `1e400`, `0x1p3`, non-ASCII digits.
  A grade and a rank are ASCII integers (`INTEGER`) for the same reason (atol reads `1_0`
  as 1 and `١` as 0).
- A file starting with a byte-order mark is refused: trec_eval reads it as part of the
  first query id.
- The rank column is read for validation only and otherwise ignored: the order of a
  ranking is score descending, ties broken by docid descending (trec_eval's order).
- A (qid, docid) pair seen twice in a run: its highest-scored occurrence is kept (the
  first, in a run written in rank order: the CAsT 2021 protocol) and the duplicate counted.
  That is the copy `trec_eval -M` keeps when the other falls below its depth; with both
  above, trec_eval refuses the file. `strict=True` makes any duplicate an error.
- A (qid, docid) pair judged twice in a qrels file is an error: trec_eval refuses it too.
"""

from __future__ import annotations

import heapq
import json
import math
import re
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter
from pathlib import Path
from stat import S_ISREG
from typing import Any, NamedTuple

from harness.atomic import atomic_write
from harness.errors import COMPRESSED, HarnessError, InputError, TextInput, decompressed, open_input, shown, shown_id


# one way to split each string (the digits before a point, then the point and those after it), so a
# refused score costs time linear in its length: `[0-9]+\.?[0-9]*` tried every split of a digit run
SCORE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER = re.compile(r"[+-]?[0-9]+")
GRADE_LIMIT = 2**31  # grades are C ints in trec_eval and pytrec_eval
_ASCII_FIELDS = re.compile(r"[^ \t\n\r\f\v]+")  # split at C's isspace, as trec_eval splits
# what a written field must not hold: C's isspace, 0x1C-0x1F, which Python's str.split (so
# pytrec_eval's and ir-measures' readers) splits at, though trec_eval keeps them inside an id,
# and NUL, which ends a line for trec_eval (and which the readers here refuse)
_SEPARATOR = re.compile(r"[\x00 \t\n\r\f\v\x1c-\x1f]")


def file_stem(path: str | Path) -> str:
    """The name a run (or qrels) file gives what it holds: its file name without its suffix,
    a compressed file's without both (r.run.gz: r, as r.run), so compressing a run keeps its name."""
    path = Path(path)
    return (path.with_suffix("") if path.suffix in COMPRESSED else path).stem


def looks_like_run_line(fields: Sequence[str]) -> bool:
    """Whether a line's fields read as a TREC run line ('qid Q0 docid rank score tag'): said
    where one is given in place of another kind of file."""
    return len(fields) >= 6 and fields[3].isdigit()


def looks_like_qrels_line(fields: Sequence[str]) -> bool:
    """Whether a line's fields read as a qrels line ('qid iter docid grade'): said where a
    qrels file is given in place of a run, or first, as trec_eval takes it."""
    return len(fields) == 4 and INTEGER.fullmatch(fields[3]) is not None


def field_ok(text: str) -> bool:
    """`text` may be a field of a TREC line: non-empty, no whitespace that would split it, no NUL."""
    return bool(text) and not _SEPARATOR.search(text)


class Hit(NamedTuple):
    """One ranked document and its score: a (docid, score) pair with names."""

    docid: str
    score: float


# One query's ranking, best first: [Hit(docid, score), ...] (a run file's lines for one qid).
# Where a ranking is taken in, any (docid, score) pairs do.
Ranking = Sequence[Hit]


class Kept(NamedTuple):
    """What a `Run` keeps of one best-first ranking (`kept_ranking`)."""

    scores: dict[str, float]  # {docid: score}, a repeated document at its first (best) score
    dropped: int  # the repeats dropped
    first_repeat: str | None  # the first document the ranking gave again, for a message naming it


def kept_ranking(ranking: Iterable[tuple[str, float]]) -> Kept:
    """What a `Run` keeps of a best-first ranking, as `read_run` keeps it. A {docid: score}
    mapping is read as its pairs (iterating it would give the docids alone)."""
    pairs = (list(ranking.items()) if isinstance(ranking, Mapping)
             else ranking if isinstance(ranking, (list, tuple)) else list(ranking))
    kept = dict(pairs)
    if len(kept) == len(pairs):
        return Kept(kept, 0, None)
    kept, first = {}, None  # dict() kept a repeat's last score; the first is the best
    for docid, score in pairs:
        if docid not in kept:
            kept[docid] = score
        elif first is None:
            first = docid
    return Kept(kept, len(pairs) - len(kept), first)


def keep_highest(ranking: dict[str, float], docid: str, score: float) -> None:
    """A document given again for a query (`docid` is in `ranking`) in a run read in any order
    keeps its highest score (this module's rule for a repeated pair), for a run file's lines
    (`read_run`) and a DataFrame's rows (harness.evaluate.frames). Called on a repeat alone, so
    the loops over every line stay flat."""
    if score > ranking[docid]:
        ranking[docid] = score


@dataclass(eq=False)
class Run(Mapping[str, Ranking]):
    """Rankings per query: what a retriever answers, what a run file holds, what is scored.

    Stored as {qid: {docid: score}}, each query's documents in the order they were ranked
    (or read); as a mapping, `run[qid]` is that ranking as Hits. Two runs are equal when
    they rank the same documents with the same scores in the same order."""

    name: str
    scores: dict[str, dict[str, float]]
    duplicates: int = 0  # (qid, docid) repeats dropped while reading
    path: Path | None = None
    trailing: int = 0  # lines with text after the sixth field (ignored, as trec_eval does)
    repeated: tuple[str, str] | None = None  # the first (qid, docid) repeat dropped, for a message naming it

    @classmethod
    def of(cls, rankings: Mapping[str, Iterable[tuple[str, float]]], name: str = "run") -> "Run":
        """From best-first (docid, score) rankings. A document repeated within a ranking keeps
        its first (best) score and is counted in `duplicates`, as `read_run` keeps it; the
        first repeat is `repeated` (a plug-in answering a document twice is told which)."""
        return cls.of_kept({qid: kept_ranking(ranking) for qid, ranking in rankings.items()}, name)

    @classmethod
    def of_kept(cls, rankings: Mapping[str, Kept], name: str = "run") -> "Run":
        """From rankings as `kept_ranking` keeps them, made where they were found (a
        retriever's worker threads: on the caller's thread they took 10% of a BM25 search;
        a plug-in's answer, cut to k after its repeats are dropped)."""
        repeated = next(((qid, kept.first_repeat) for qid, kept in rankings.items() if kept.first_repeat is not None),
                        None)
        return cls(name, {qid: kept.scores for qid, kept in rankings.items()},
                   sum(kept.dropped for kept in rankings.values()), repeated=repeated)

    def __getitem__(self, qid: str) -> list[Hit]:
        return list(map(Hit._make, self.scores[qid].items()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def __contains__(self, qid: object) -> bool:
        return qid in self.scores

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        return ((self.name, self.duplicates, self.path, self.trailing) == (other.name, other.duplicates, other.path,
                                                                            other.trailing)
                and self.scores.keys() == other.scores.keys()
                and all(list(ranking.items()) == list(other.scores[qid].items())
                        for qid, ranking in self.scores.items()))

    def pairs(self, qid: str, depth: int | None = None) -> Iterator[tuple[str, float]]:
        """The query's top `depth` (docid, score) pairs in ranked order (none for a query the
        run lacks), without making Hits: what `write_run` streams."""
        return islice(self.scores.get(qid, {}).items(), depth)

    def ranked(self, qid: str, depth: int | None = None) -> list[tuple[str, float]]:
        """Canonical order: score descending, then docid descending (as trec_eval)."""
        ranking = canonical_order(self.scores.get(qid, {}).items())
        return ranking if depth is None else ranking[:depth]

    def to_documents(self, separator: str) -> "Run":
        """Passage run -> document run by MaxP (see `maxp`)."""
        documents = {qid: dict(maxp(self.ranked(qid), separator)) for qid in self.scores}
        return Run(self.name, documents, self.duplicates, self.path, self.trailing)


# A document id ending in a whole uuid (8-4-4-4-12 hex digits), as CAsT's WAPO ids do: its
# last group may be all digits, which must not be read as a passage number.
_UUID_END = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def passage_document(passage_id: str, separator: str) -> str:
    """The document of a passage id `<docid><separator><n>`; ids without that suffix are
    already document ids. Docids may themselves contain the separator: a WAPO uuid such as
    `WAPO_627b180c-85ae-11e1-abb4-839961045500` is kept whole, though its last group is digits."""
    if _UUID_END.search(passage_id):
        return passage_id
    head, sep, tail = passage_id.rpartition(separator)
    return head if sep and tail.isdigit() else passage_id


def maxp(ranking: Iterable[tuple[str, float]], separator: str) -> list[tuple[str, float]]:
    """Document ranking from a best-first passage ranking: each document takes the score of
    its best passage, i.e. its first occurrence (the CAsT 2021 de-duplication)."""
    documents: dict[str, float] = {}
    for passage_id, score in ranking:
        documents.setdefault(passage_document(passage_id, separator), score)
    return list(documents.items())


def canonical_order(items: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, ties by docid descending (strcmp order, which
    for UTF-8 is code point order, as Python compares strings). Two stable sorts."""
    by_docid = sorted(items, key=itemgetter(0), reverse=True)
    by_docid.sort(key=_negated_score)
    return by_docid


def _negated_score(item: tuple[str, float]) -> float:
    return -item[1]


@dataclass
class Qrels:
    """Graded judgments: {qid: {docid: grade}}."""

    name: str
    judgments: dict[str, dict[str, int]] = field(default_factory=dict)
    path: Path | None = None

    def grades_by_query(self) -> dict[str, list[int]]:
        """Each judged query's grades, the queries sorted (trec_eval's order)."""
        return {qid: list(self.judgments[qid].values()) for qid in sorted(self.judgments)}


def _fields(line: str) -> list[str]:
    """A line's fields, split at ASCII whitespace only, C's isspace (str.split also splits at
    U+00A0 and other Unicode spaces, and at the ASCII separators 0x1C-0x1F, which trec_eval
    keeps inside an id): str.split where it splits the same, on a line without those."""
    return line.split() if _split_as_c(line) else _ASCII_FIELDS.findall(line)


def _split_as_c(line: str) -> bool:
    """Whether str.split() splits `line` at C's isspace alone: an ASCII line without 0x1C-0x1F."""
    return line.isascii() and "\x1c" not in line and "\x1d" not in line and "\x1e" not in line and "\x1f" not in line


def _open(path: Path) -> TextInput:
    """A TREC file: lines end at `\n` only (a lone `\r` is whitespace to trec_eval), and a
    byte-order mark is kept, to be refused by _bom_check."""
    return open_input(path, newline="\n", encoding="utf-8")


def _bom_check(path: Path, number: int, fields: list[str]) -> None:
    if number == 1 and fields and fields[0].startswith("\ufeff"):
        raise InputError(path, "starts with a byte-order mark (U+FEFF), which trec_eval reads as part of the "
                               "first query id: save the file without it", line=1)


def _nul_check(path: Path, number: int, line: str) -> None:
    if "\x00" in line:
        raise InputError(path, "holds a NUL byte, where trec_eval's C strings end: it miscounts the file's lines "
                               "and overruns its memory (a crash); remove it", line=number)


def qrels_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Numbered, split, non-blank, non-comment qrels lines (a comment starts with `#`, as in
    trec_eval's qrels reader); a missing file is an InputError, and so is a NUL byte."""
    with _open(path) as handle:
        for number, line in enumerate(handle, start=1):
            fields = _fields(line)
            _bom_check(path, number, fields)
            if fields and not line.startswith("#"):
                _nul_check(path, number, line)
                yield number, fields


_HEADER_WORDS = {"qid", "query", "query_id", "topic", "q0", "iter", "docid", "docno", "doc_id", "rank", "score",
                 "tag", "run", "rel", "relevance", "label", "grade", "judgment", "text", "turn_id", "rewrite",
                 "utterance"}


def looks_like_header(fields: list[str]) -> bool:
    """Whether a first line reads as column names rather than data (two or more of the usual
    ones): pandas and spreadsheets write one, and TREC-style files have none."""
    return sum(field.lower() in _HEADER_WORDS for field in fields) >= 2


# `harness run`'s record of a run is some KB (its per-query scores included): a larger JSON file,
# an iKAT submission of hundreds of MB, is not parsed to learn that it is none
RECORD_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class RunRecord:
    """What `harness run`'s record of a run (<tag>.json, written beside <tag>.run: provenance and
    scores) tells one who gave it for the run: the run's file name, tag, topics and task."""

    run: str  # the run's file name, as written beside the record
    tag: str
    topics: str | None  # the config's topics spec (ikat2023:test); None where the record has none
    task: str | None
    k: int | None = None  # the documents a query the run was asked for (the config's k); None where not recorded
    retriever: Mapping[str, Any] = field(default_factory=dict)  # the config's {name, params}: a re-ranker's depth


def recorded_run(data: bytes) -> RunRecord | None:
    """`data` as `harness run`'s record of a run, recognised by its keys (tag, run, hashes); None
    for any other bytes (an iKAT submission, a TREC run)."""
    if len(data) > RECORD_MAX_BYTES or b'"hashes"' not in data:  # the key, written as JSON writes it
        return None
    try:
        record = json.loads(data)
    except ValueError:  # UnicodeDecodeError too
        return None
    if not (isinstance(record, dict) and {"tag", "run", "hashes"} <= record.keys() and isinstance(record["run"], str)):
        return None
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    topics, task, k, retriever = config.get("topics"), config.get("task"), config.get("k"), config.get("retriever")
    return RunRecord(record["run"], str(record["tag"]), topics if isinstance(topics, str) else None,
                     task if isinstance(task, str) else None, k if type(k) is int and k > 0 else None,
                     retriever if isinstance(retriever, dict) else {})


def recorded_run_of(path: Path) -> RunRecord | None:
    """recorded_run of a file's bytes, decompressed as every reader takes them (a record gzipped to
    send it is one too); None where it cannot be read, or is too large to be a record, and for what is
    no regular file: a pipe (`/dev/stdin`, `<(...)`) read here would leave its reader nothing to read."""
    try:
        found = path.stat()
        if not S_ISREG(found.st_mode) or found.st_size > RECORD_MAX_BYTES:
            return None
        with decompressed(path) as handle:
            return recorded_run(handle.read(RECORD_MAX_BYTES + 1))
    except (OSError, EOFError, zlib.error):  # EOFError, zlib.error: a damaged compressed stream
        return None


def record_of_run(run: str | Path) -> RunRecord | None:
    """`harness run`'s record of a run file given, where it is beside it as `harness run` writes them
    (<tag>.json beside <tag>.run) and names that file; None for any other run."""
    path = Path(run)
    if not path.name.endswith(".run"):
        return None
    record = recorded_run_of(path.with_name(path.name.removesuffix(".run") + ".json"))
    return record if record is not None and record.run == path.name else None


def record_beside(record: RunRecord, given: Path) -> Path | None:
    """The run that a record given as `given` names, where it is beside it (as `harness run` writes it)."""
    beside = given.parent / record.run
    return beside if beside.is_file() else None


def not_a_run(record: RunRecord, given: Path | None, verb: str | None = "give", instead_of: str = "a run") -> str:
    """The one sentence said wherever `harness run`'s record is given for a run (or for `instead_of`): what
    it is, and the run to `verb` instead (verb None: the caller says what to do), by its path where it is
    beside `given`; `given` None for an upload, of which the server cannot see the submitter's disk."""
    said = f"this is `harness run`'s record of {record.run} (its provenance and scores), not {instead_of}"
    if verb is None:
        return said
    beside = record_beside(record, given) if given is not None else None
    if beside is not None:
        return f"{said}: {verb} {beside} instead"
    return f"{said}: {verb} that run instead" + (" (it is not beside this record)" if given is not None else "")


def _looks_like(path: Path, number: int, fields: list[str], kind: str) -> str:
    """What a line that is not a TREC `kind` line looks like it is, and what to do: the
    classic mistakes (a header row, a CSV file, a qrels without its iteration column, a run
    given as qrels or the other way round). '' when it looks like none of them."""
    line = " ".join(fields)
    if number == 1 and fields[:1] and fields[0][:1] in ("{", "["):
        cure = ": `harness ikat to-trec` writes a TREC run of an iKAT submission" if kind == "run" else ""
        return f": the file looks like JSON, not TREC {kind} lines{cure}"
    if "," in line:
        return (f": the line is comma-separated (a CSV file?); TREC {kind} files separate fields by spaces or tabs, "
                "with no header: write it with sep=' ', e.g. pandas' to_csv(path, sep=' ', header=False, index=False)")
    if number == 1 and looks_like_header(fields):
        return f": line 1 looks like a header row ({shown(line)}); TREC {kind} files have none: delete it"
    if kind == "qrels" and len(fields) == 3 and INTEGER.fullmatch(fields[2]):
        return (": this looks like 'qid docid grade' without the iteration column trec_eval requires; add 0 as the "
                "second field, e.g. awk '{print $1, 0, $2, $3}'")
    if kind == "qrels" and len(fields) >= 6:
        return ": this looks like a run line ('qid Q0 docid rank score tag'): is a run file given as the qrels?"
    if kind == "run" and looks_like_qrels_line(fields):
        return ": this looks like a qrels line ('qid iter docid grade'): is the qrels file given as a run?"
    if kind == "run" and len(fields) == 3 and INTEGER.fullmatch(fields[2]):
        return (": this looks like 'qid docid rank' (an MS MARCO run); write it as a TREC run, the score falling as "
                "the rank rises, e.g. awk '{print $1, \"Q0\", $2, $3, -$3, \"myrun\"}'")
    if kind == "run" and len(fields) == 5 and INTEGER.fullmatch(fields[3]) and SCORE.fullmatch(fields[4]):
        return (": this looks like 'qid Q0 docid rank score' without the run tag (the 6th field); add one, "
                "e.g. awk '{print $0, \"myrun\"}'")
    return ""


def _spaced_docid(fields: list[str]) -> str | None:
    """The document id a run line of more than 6 fields reads as when its extra words belong to
    the id ('Panic Room', an item's name): the words up to the first rank and score followed by a
    tag, which may hold words of its own ('my tag': the line, with 'Q0' and 'tag', read as a header)."""
    return next((" ".join(fields[2:at]) for at in range(4, len(fields) - 2)
                 if INTEGER.fullmatch(fields[at]) and SCORE.fullmatch(fields[at + 1])), None)


def _whitespace_problem(fields: list[str]) -> str:
    """Why a run line of more than 6 fields whose rank is no integer was refused: said before the
    rank, which is only a word of a document id that holds whitespace."""
    spaced = _spaced_docid(fields)
    read_as = (f"{shown_id(spaced)} is read as docid {shown_id(fields[2])} and rank {shown(fields[3])}, which is "
               "not an integer" if spaced else f"rank {shown(fields[3])} is not an integer")
    return (f"{len(fields)} fields where a run line has 6 (qid Q0 docid rank score tag): a document id cannot hold "
            f"whitespace ({read_as}); give each document by its id as the corpus and the qrels write it (one word)")


def _parse_run_fields(path: Path, number: int, fields: list[str]) -> tuple[str, str, int, float, str]:
    _bom_check(path, number, fields)
    _nul_check(path, number, " ".join(fields))
    if number == 1 and fields[0][:1] == "{" and (record := recorded_run_of(path)) is not None:
        raise InputError(path, not_a_run(record, path))  # the file, not its line 1, is the mistake
    if len(fields) < 6:
        raise InputError(path, f"expected 6 fields 'qid Q0 docid rank score tag', found {len(fields)}"
                               + _looks_like(path, number, fields, "run"), line=number)
    qid, _, docid, rank, score, tag = fields[:6]  # trec_eval ignores the rest of the line
    if not INTEGER.fullmatch(rank):
        hint = _looks_like(path, number, fields, "run")
        if len(fields) > 6 and (not hint or _spaced_docid(fields)):
            raise InputError(path, _whitespace_problem(fields), line=number)
        raise InputError(path, f"rank {shown(rank)} is not an integer" + hint, line=number)
    if not SCORE.fullmatch(score) or not math.isfinite(float(score)):
        problem = "is not finite" if _is_float(score) and not math.isfinite(float(score)) else "is not a number"
        raise InputError(
            path,
            f"score {shown(score)} {problem}: expected a plain decimal or scientific number such as 12.5 or 1e-3",
            line=number,
        )
    return qid, docid, int(rank), float(score), tag


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_run(
    path: str | Path, *, strict: bool = False, name: str | None = None, depth: int | None = None
) -> Run:
    """Read a run for evaluation; with `depth`, only the top `depth` documents of each query
    (canonical order) are kept while streaming, so memory follows the depth evaluated, not
    the file (the result holds what `Run.ranked(qid, depth)` of the whole run holds).
    """
    path = Path(path)
    read = _read_scores(path, depth if not strict else None, strict)
    if read is None:  # a query repeats a document: keeping its first occurrence needs every line
        read = _read_scores(path, None, strict)
    scores, duplicates, trailing = read
    if not scores:
        raise InputError(path, "empty run: no result lines")
    if depth is not None:  # the whole run was read (strict, or a repeated document)
        scores = {qid: dict(canonical_order(ranking.items())[:depth]) if len(ranking) > depth else ranking
                  for qid, ranking in scores.items()}
    return Run(name or file_stem(path), scores, duplicates, path, trailing)


def _read_scores(path: Path, depth: int | None, strict: bool) -> tuple[dict[str, dict[str, float]], int, int] | None:
    """({qid: {docid: score}}, duplicates dropped, lines with trailing fields): every document, or with `depth` the top
    `depth` per query, from a min-heap of (score, docid) per query (the largest pairs are the
    canonical top: score descending, docid descending). With `depth`, a repeated document
    gives None, and besides the heaps only 8 bytes per line are held (each docid's hash).

    Parsing dominates evaluating large runs, so the loop is flat: one split per line and
    cheap checks; any anomaly re-parses the line with `_parse_run_fields`, which raises the
    precise error. Runs come grouped by query, so a query is looked up once per group.
    """
    rankings: dict[str, Any] = {}  # {qid: {docid: score}}, or {qid: heap} with depth
    hashes: dict[str, array] = {}
    duplicates = trailing = 0
    push, replace = heapq.heappush, heapq.heapreplace
    current = None
    ascii_fields = _ASCII_FIELDS.findall
    with _open(path) as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split() if line.isascii() and "\x1c" not in line and "\x1d" not in line and \
                "\x1e" not in line and "\x1f" not in line else ascii_fields(line)  # _fields, inlined
            try:
                qid, _, docid, rank, score, _tag = fields
                value = float(score)
                # finite x gives x - x == 0.0; inf and nan give nan, which is truthy. An
                # ASCII float without '_' that is finite is exactly what SCORE matches. The
                # first character of a comment ('#') or of a byte-order mark is checked below.
                if value - value or "_" in score or not score.isascii() or not (rank.isdigit() and rank.isascii()) \
                        or qid[0] in "#\ufeff" or "\x00" in line:
                    raise ValueError
            except ValueError:
                if not fields or fields[0][0] == "#":
                    continue  # a blank line or a comment
                qid, docid, _, value, _ = _parse_run_fields(path, number, fields)  # or the precise error
                trailing += len(fields) > 6
            if qid != current:
                current, ranking = qid, rankings.get(qid)
                if ranking is None:
                    ranking = rankings[qid] = {} if depth is None else []
                if depth is not None:
                    remember = hashes.setdefault(qid, array("q")).append
                    # the lowest score that may still enter the full heap
                    floor = ranking[0][0] if len(ranking) >= depth else -math.inf
            if depth is None:
                if docid in ranking:
                    if strict:
                        raise InputError(path, f"document {shown_id(docid)} appears twice for query {shown_id(qid)}",
                                         line=number)
                    duplicates += 1
                    keep_highest(ranking, docid, value)
                else:
                    ranking[docid] = value
                continue
            remember(hash(docid))
            if value >= floor:
                if len(ranking) < depth:
                    push(ranking, (value, docid))
                elif (value, docid) > ranking[0]:
                    replace(ranking, (value, docid))
                if len(ranking) >= depth:
                    floor = ranking[0][0]
    if depth is None:
        return rankings, duplicates, trailing
    if any(len(set(seen)) != len(seen) for seen in hashes.values()):
        return None
    return {qid: {docid: score for score, docid in heap} for qid, heap in rankings.items()}, 0, trailing


def read_qrels(path: str | Path, *, name: str | None = None) -> Qrels:
    path = Path(path)
    judgments: dict[str, dict[str, int]] = {}
    seen_at: dict[tuple[str, str], int] = {}
    for number, fields in qrels_lines(path):
        if len(fields) != 4:
            raise InputError(path, f"expected 4 fields 'qid iter docid grade', found {len(fields)}"
                                   + _looks_like(path, number, fields, "qrels"), line=number)
        qid, _, docid, grade = fields
        if not INTEGER.fullmatch(grade):
            raise InputError(path, f"grade {shown(grade)} is not an integer"
                             + _looks_like(path, number, fields, "qrels"), line=number)
        key = (qid, docid)
        first = f" (first on line {seen_at[key]})" if key in seen_at else ""
        if problem := add_judgment(judgments, qid, docid, int(grade), first=first):
            raise InputError(path, problem, line=number)
        seen_at[key] = number
    if not judgments:
        raise InputError(path, "empty qrels: no judgment lines")
    return Qrels(name or file_stem(path), judgments, path)


def add_judgment(judgments: dict[str, dict[str, int]], qid: str, docid: str, grade: object, *,
                 first: str = "") -> str | None:
    """Adds a judgment, or says which of a qrels file's rules it breaks (a whole grade in C's int
    range, each document judged once a query; `first` says where it was): one check for each
    source of judgments, a file or an ir_datasets dataset."""
    if not isinstance(grade, int) or isinstance(grade, bool):
        return f"grade {shown(grade)} is not an integer"
    if not -GRADE_LIMIT <= grade < GRADE_LIMIT:
        return (f"grade {grade} is out of range ({-GRADE_LIMIT} to {GRADE_LIMIT - 1}): "
                "pytrec_eval would wrap it around, scoring the query 0, or fail")
    judged = judgments.setdefault(qid, {})
    if docid in judged:
        return f"document {shown_id(docid)} judged twice for query {shown_id(qid)}{first}"
    judged[docid] = grade
    return None


def qrels_text(qrels: Qrels) -> str:
    """The judgments as a qrels file (`qid 0 docid grade`), queries and documents in sorted
    order, so that the same judgments are always the same bytes (`harness run` writes derived
    and restricted qrels this way, and rewrites nothing that did not change)."""
    lines = []
    for qid in sorted(qrels.judgments):
        for docid, grade in sorted(qrels.judgments[qid].items()):
            if not (field_ok(qid) and field_ok(docid)):
                raise HarnessError(f"qrels {qrels.name}: query {shown_id(qid)}, document {shown_id(docid)}: an id "
                                   "is empty or holds whitespace or a NUL byte, which would break a qrels line")
            lines.append(f"{qid} 0 {docid} {grade}\n")
    return "".join(lines)


def format_score(score: float) -> str:
    return f"{score:.6f}"


def printed_below(previous: float) -> str:
    """The score printed just below `previous` (a printed score as read back): one unit of the
    last decimal below, or where six decimals cannot tell floats apart (from 2**32 on) the
    first float below whose print reads back lower; below the most negative float, none: the
    tie is kept."""
    value = round(previous - 1e-6, 6)
    while float(text := format_score(value)) >= previous:
        value = math.nextafter(min(value, previous), -math.inf)
    return text if math.isfinite(value) else format_score(previous)


def write_run(
    path: str | Path,
    rankings: Iterable[tuple[str, Iterable[tuple[str, float]]]],
    tag: str,
    printed: Callable[[float], str] | None = None,
    digest: Any = None,
    before_replace: Callable[[], object] | None = None,
) -> int:
    """Stream (qid, best-first [(docid, score), ...]) into a TREC run file, atomically.

    Only one query's ranking is held at a time. By default printed scores are made strictly
    decreasing within a query (a tie is printed just below its predecessor: `printed_below`),
    so that trec_eval's re-sort by score cannot reorder the file. With
    `printed`, each score is printed by it unchanged, ties kept: the rankings must then
    already be in canonical order (`canonical_order`). `digest` (a hashlib object) is updated
    with the bytes written, so that a caller recording the file's hash need not read it back.
    `before_replace` is called once the run is complete, before it replaces the file (atomic_write).
    Returns the number of lines written.
    """
    if not field_ok(tag):
        raise HarnessError(f"run tag {tag!r} must be non-empty and contain no whitespace or NUL byte")
    written = 0
    with atomic_write(path, "wb", before_replace=before_replace) as out:
        for qid, ranking in rankings:
            if not field_ok(qid):
                raise HarnessError(f"cannot write {path}: query id {shown_id(qid)} is empty or holds whitespace or a "
                                   "NUL byte, which would break a TREC run line")
            lines = []
            previous: float | None = None
            for rank, (docid, score) in enumerate(ranking, start=1):
                if not field_ok(docid):
                    raise HarnessError(f"cannot write {path}: query {shown_id(qid)}: document id {shown_id(docid)} is "
                                       "empty or holds whitespace or a NUL byte, which would break a TREC run line")
                if printed is not None:
                    lines.append(f"{qid} Q0 {docid} {rank} {printed(score)} {tag}\n")
                    continue
                text = format_score(round(score, 6))
                if previous is not None and float(text) >= previous:
                    text = printed_below(previous)
                previous = float(text)  # as trec_eval reads it back
                lines.append(f"{qid} Q0 {docid} {rank} {text} {tag}\n")
            block = "".join(lines).encode("utf-8")  # one query's lines, as written and hashed
            out.write(block)
            if digest is not None:
                digest.update(block)
            written += len(lines)
    return written


def _record_given_with(record: RunRecord, path: Path, other: str, files: Sequence[str]) -> str:
    """What is said of a record given with `other` of its name: given with the run beside it (runs/*), the
    .run files of the folder; with another record (x.json and x.json.gz), the run to give for both; else it
    is only to be dropped (its run may be `other`, from another folder)."""
    beside = record_beside(record, path)
    if beside is not None and beside.resolve() in {Path(each).resolve() for each in files}:
        return (not_a_run(record, path) + f" (of a folder of runs and their records, give the .run files: "
                f"{path.parent / '*.run'})")
    if other.endswith((".json", ".json.gz")) and recorded_run_of(Path(other)) is not None:
        return not_a_run(record, path) + f" ({other}, given too, is a record as well)"
    return not_a_run(record, path, None) + f", and its name is that of {other}, given too: drop it"


def refuse_shared_names(names: Sequence[str], files: Sequence[str] | None = None) -> None:
    """Runs are told apart by name, so two of one name are refused: the command line's run
    files (`files`, each named by its file name less the suffix: one system's runs from two
    output folders) before any is scored, naming both; the Python API's runs here, in `align`."""
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name not in seen:
            seen[name] = index
        elif files is None:
            raise HarnessError(f"two runs share the name {name}; rename one")
        elif Path(files[seen[name]]).resolve() == Path(files[index]).resolve():
            raise HarnessError(f"{files[index]} is given twice")
        else:
            pair = (files[seen[name]], files[index])
            for path, other in (pair, pair[::-1]):
                # `harness run`'s record: its advice, not 'rename one', which would score it
                if path.endswith((".json", ".json.gz")) and (record := recorded_run_of(Path(path))) is not None:
                    raise InputError(path, _record_given_with(record, Path(path), other, files))
            raise HarnessError(f"two runs share the name {name}: {files[seen[name]]} and {files[index]}; rename one "
                               "run file (its name, less the suffix, names the run)")
