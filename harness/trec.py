"""TREC run and qrels files: strict readers, streaming atomic writers.

Conventions (those of trec_eval, stated once here and tested in tests/test_trec.py):

- Run lines are `qid Q0 docid rank score tag`, qrels lines `qid iter docid grade`, fields
  separated by any whitespace. Blank lines are skipped; any other line with the wrong
  number of fields, a non-numeric score or a non-integer grade is an error naming the
  file, the line number and the problem.
- The rank column is read for validation only and otherwise ignored: the order of a
  ranking is score descending, ties broken by docid descending (trec_eval's order).
- A (qid, docid) pair seen twice in a run: the first occurrence is kept and the
  duplicate counted (the CAsT 2021 protocol); `strict=True` makes it an error instead.
- A (qid, docid) pair judged twice in a qrels file is an error: trec_eval refuses it too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.atomic import atomic_write
from harness.errors import InputError, open_input


@dataclass
class Run:
    """A ranking per query, as the evaluator needs it: {qid: {docid: score}}."""

    name: str
    scores: dict[str, dict[str, float]]
    duplicates: int = 0  # (qid, docid) repeats dropped while reading
    path: Path | None = None

    def ranked(self, qid: str, depth: int | None = None) -> list[tuple[str, float]]:
        """Canonical order: score descending, then docid descending (as trec_eval)."""
        ranking = sorted(self.scores.get(qid, {}).items(), key=_canonical_key)
        return ranking if depth is None else ranking[:depth]

    def cut(self, depth: int | None) -> "Run":
        """The run limited to its top `depth` documents per query (trec_eval -M)."""
        if depth is None or all(len(ranking) <= depth for ranking in self.scores.values()):
            return self
        cut = {qid: dict(self.ranked(qid, depth)) if len(ranking) > depth else ranking
               for qid, ranking in self.scores.items()}
        return Run(self.name, cut, self.duplicates, self.path)

    def to_documents(self, separator: str) -> "Run":
        """Passage run -> document run by MaxP (see `maxp`)."""
        documents = {qid: dict(maxp(self.ranked(qid), separator)) for qid in self.scores}
        return Run(self.name, documents, self.duplicates, self.path)


def passage_document(passage_id: str, separator: str) -> str:
    """The document of a passage id `<docid><separator><n>`; ids without that suffix are
    already document ids (docids may themselves contain the separator, e.g. WAPO uuids)."""
    head, sep, tail = passage_id.rpartition(separator)
    return head if sep and tail.isdigit() else passage_id


def maxp(ranking: Iterable[tuple[str, float]], separator: str) -> list[tuple[str, float]]:
    """Document ranking from a best-first passage ranking: each document takes the score of
    its best passage, i.e. its first occurrence (the CAsT 2021 de-duplication)."""
    documents: dict[str, float] = {}
    for passage_id, score in ranking:
        documents.setdefault(passage_document(passage_id, separator), score)
    return list(documents.items())


def _canonical_key(item: tuple[str, float]) -> tuple[float, _Desc]:
    docid, score = item
    return (-score, _Desc(docid))


@dataclass(frozen=True, order=False)
class _Desc:
    """Wraps a string so that sorting ascending orders it descending."""

    value: str

    def __lt__(self, other: "_Desc") -> bool:
        return self.value > other.value


@dataclass
class Qrels:
    """Graded judgments: {qid: {docid: grade}}."""

    name: str
    judgments: dict[str, dict[str, int]] = field(default_factory=dict)
    path: Path | None = None


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Numbered, whitespace-split, non-blank lines; a missing file is an InputError."""
    number = 0
    with open_input(path) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if fields:
                    yield number, fields
        except UnicodeDecodeError as error:
            raise InputError(path, f"not UTF-8 text ({error.reason})", line=number + 1) from None


def iter_run_lines(path: str | Path) -> Iterator[tuple[int, str, str, int, float, str]]:
    """Validated (line number, qid, docid, rank, score, tag) tuples, streaming."""
    path = Path(path)
    for number, fields in _lines(path):
        yield (number, *_parse_run_fields(path, number, fields))


def _parse_run_fields(path: Path, number: int, fields: list[str]) -> tuple[str, str, int, float, str]:
    if len(fields) != 6:
        raise InputError(
            path, f"expected 6 fields 'qid Q0 docid rank score tag', found {len(fields)}", line=number
        )
    qid, _, docid, rank, score, tag = fields
    try:
        rank_value = int(rank)
    except ValueError:
        raise InputError(path, f"rank {rank!r} is not an integer", line=number) from None
    try:
        score_value = float(score)
    except ValueError:
        raise InputError(path, f"score {score!r} is not a number", line=number) from None
    if not math.isfinite(score_value):
        raise InputError(path, f"score {score!r} is not finite", line=number)
    return qid, docid, rank_value, score_value, tag


def read_run(path: str | Path, *, strict: bool = False, name: str | None = None) -> Run:
    """Read a whole run for evaluation.

    Evaluating many large runs is dominated by this parse, so the loop is written flat: one
    split per line and cheap checks; any anomaly re-parses that line with
    `_parse_run_fields`, which raises the precise error.
    """
    path = Path(path)
    scores: dict[str, dict[str, float]] = {}
    duplicates = 0
    with open_input(path) as handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                try:
                    qid, _, docid, rank, score, _tag = fields
                    value = float(score)
                    # finite x gives x - x == 0.0; inf and nan give nan, which is truthy
                    if value - value or not rank.lstrip("-").isdigit():
                        raise ValueError
                except ValueError:
                    if not fields:
                        continue  # blank line
                    _parse_run_fields(path, number, fields)
                    raise
                ranking = scores.get(qid)
                if ranking is None:
                    ranking = scores[qid] = {}
                if docid in ranking:
                    if strict:
                        raise InputError(path, f"document {docid!r} appears twice for query {qid!r}", line=number)
                    duplicates += 1
                    continue
                ranking[docid] = value
        except UnicodeDecodeError as error:
            raise InputError(path, f"not UTF-8 text ({error.reason})", line=number + 1) from None
    if not scores:
        raise InputError(path, "empty run: no result lines")
    return Run(name or path.stem, scores, duplicates, path)


def read_qrels(path: str | Path, *, name: str | None = None) -> Qrels:
    path = Path(path)
    judgments: dict[str, dict[str, int]] = {}
    seen_at: dict[tuple[str, str], int] = {}
    for number, fields in _lines(path):
        if len(fields) != 4:
            raise InputError(
                path, f"expected 4 fields 'qid iter docid grade', found {len(fields)}", line=number
            )
        qid, _, docid, grade = fields
        try:
            grade_value = int(grade)
        except ValueError:
            raise InputError(path, f"grade {grade!r} is not an integer", line=number) from None
        key = (qid, docid)
        if key in seen_at:
            raise InputError(
                path, f"document {docid!r} judged twice for query {qid!r} (first on line {seen_at[key]})",
                line=number,
            )
        seen_at[key] = number
        judgments.setdefault(qid, {})[docid] = grade_value
    if not judgments:
        raise InputError(path, "empty qrels: no judgment lines")
    return Qrels(name or path.stem, judgments, path)


def format_score(score: float) -> str:
    return f"{score:.6f}"


def write_run(
    path: str | Path,
    rankings: Iterable[tuple[str, Sequence[tuple[str, float]]]],
    tag: str,
) -> int:
    """Stream (qid, best-first [(docid, score), ...]) into a TREC run file, atomically.

    Only one query's ranking is held at a time. Printed scores are made strictly
    decreasing within a query (a tie is printed one unit of the last decimal below its
    predecessor), so that trec_eval's re-sort by score cannot reorder the file. Returns
    the number of lines written.
    """
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag {tag!r} must be non-empty and contain no whitespace")
    written = 0
    with atomic_write(path) as out:
        for qid, ranking in rankings:
            previous: float | None = None
            for rank, (docid, score) in enumerate(ranking, start=1):
                printed = round(score, 6)
                if previous is not None and printed >= previous:
                    printed = round(previous - 1e-6, 6)
                previous = printed
                out.write(f"{qid} Q0 {docid} {rank} {format_score(printed)} {tag}\n")
                written += 1
    return written


def write_qrels(path: str | Path, judgments: Iterable[tuple[str, str, int]]) -> None:
    """Stream (qid, docid, grade) triples into a qrels file, atomically."""
    with atomic_write(path) as out:
        for qid, docid, grade in judgments:
            out.write(f"{qid} 0 {docid} {grade}\n")
