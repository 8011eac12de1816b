"""Runs and qrels as columns (numpy and Arrow arrays): the fast route from large TREC files
to trec_eval's numbers.

A file in the common form (fields separated by single spaces, ranks written as plain
digits, finite scores, no comment, no carriage return) is parsed by pyarrow's CSV reader on
all cores, one chunk of the file while the previous one is checked and looked up in the
qrels. Any other file, and every malformed one, is read by the exact readers of
`harness.trec`, which define what a file means and which error names its line: the fast
route takes only the files it can tell it reads as they do, and gives the same rows (the
same duplicates dropped, the same count of them).
"""

from __future__ import annotations

from collections import deque
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from harness.errors import COMPRESSED
from harness.evaluate.coverage import TOP
from harness.trec import Qrels, Run, canonical_order, field_ok, file_stem, read_qrels, read_run

if TYPE_CHECKING:
    import pyarrow as pa

NONPOOL = -1  # a retrieved document the qrels do not judge for its query (trec_eval's RELVALUE_NONPOOL)
UNJUDGED = -2  # judged below 0: in the pool but unjudged (trec_eval's RELVALUE_UNJUDGED)
CHUNK = 32 << 20  # bytes of a file parsed at once, while the previous chunk is processed
BLOCK = 2 << 20  # pyarrow's parallel unit within a chunk
T = TypeVar("T")


class _NotFast(Exception):
    """The file is outside the common form: read it with the exact reader."""


class _Unordered(Exception):
    """A run that cannot be put into trec_eval's order chunk by chunk (a query written in two
    places or across chunks, scores rising within a query, a document maybe repeated): read
    it again by _fast_run, which sees the whole run."""


@dataclass
class QrelsTable:
    """Judgments as sorted columns: one row per (query, document), keyed query-major."""

    name: str
    qids: list[str]  # sorted (trec_eval's order); a query's number is its index
    docids: "pa.Array"  # the distinct judged documents; a document's number is its index
    keys: np.ndarray  # int64, query * len(docids) + document, ascending
    grades: np.ndarray  # int64, aligned with keys
    path: Path | None = None
    _qrels: Qrels | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_qrels(cls, qrels: Qrels) -> "QrelsTable":
        qids = sorted(qrels.judgments)
        documents: dict[str, int] = {}
        query = np.repeat(np.arange(len(qids), dtype=np.int64), [len(qrels.judgments[qid]) for qid in qids])
        document = np.array([documents.setdefault(docid, len(documents))
                             for qid in qids for docid in qrels.judgments[qid]], dtype=np.int64)
        grades = np.array([grade for qid in qids for grade in qrels.judgments[qid].values()], dtype=np.int64)
        key = query * max(len(documents), 1) + document
        order = np.argsort(key, kind="stable")
        return cls(qrels.name, qids, _strings(list(documents)), key[order], grades[order], qrels.path, qrels)

    @property
    def qrels(self) -> Qrels:
        """The same judgments as {qid: {docid: grade}} (built on first use)."""
        if self._qrels is None:
            docids = self.docids.to_pylist()
            judgments: dict[str, dict[str, int]] = {qid: {} for qid in self.qids}
            width = max(len(docids), 1)
            for key, grade in zip(self.keys.tolist(), self.grades.tolist()):
                judgments[self.qids[key // width]][docids[key % width]] = grade
            self._qrels = Qrels(self.name, judgments, self.path)
        return self._qrels

    def grades_by_query(self) -> dict[str, list[int]]:
        """Each judged query's grades, in qids' order (built once per qrels)."""
        if "by_query" not in self._cache:
            starts = np.searchsorted(self.query, np.arange(len(self.qids) + 1)).tolist()
            grades = self.grades.tolist()
            self._cache["by_query"] = {qid: grades[start:end] for qid, start, end in zip(self.qids, starts, starts[1:])}
        return self._cache["by_query"]

    def folded_docids(self) -> tuple[set[str], set[str]]:
        """The judged documents' ids as written and case-folded (built once per qrels)."""
        if "folded" not in self._cache:
            written = set(self.docids.to_pylist())
            self._cache["folded"] = written, {docid.casefold() for docid in written}
        return self._cache["folded"]

    @property
    def query(self) -> np.ndarray:
        """Each judgment's query number."""
        if "query" not in self._cache:
            self._cache["query"] = self.keys // max(len(self.docids), 1)
        return self._cache["query"]

    def numbers(self, qids: list[str]) -> np.ndarray:
        """The query number of each qid, -1 for a query these qrels do not judge."""
        if "numbers" not in self._cache:
            self._cache["numbers"] = {qid: number for number, qid in enumerate(self.qids)}
        known = self._cache["numbers"]
        return np.array([known.get(qid, -1) for qid in qids], dtype=np.int32)

    def prepare(self) -> None:
        """Fill the lookup caches now, before threads share them."""
        self.numbers([])
        if self._fingerprint_set() is not None and "documents" not in self._cache:
            self._cache["documents"] = (self.keys % max(len(self.docids), 1)).astype(np.int32)  # of each judgment
        self._rows_of(np.empty(0, np.int64))

    def __getstate__(self) -> dict:
        """Pickled for worker processes without the dict form, which is rebuilt there if needed."""
        return {**self.__dict__, "_qrels": None, "_cache": {}}

    def grades_of(self, query: np.ndarray, docids: "pa.ChunkedArray", hashes: np.ndarray | None = None,
                  queries: np.ndarray | None = None) -> np.ndarray:
        """The grade of each (query number, document) pair, NONPOOL where not judged and
        UNJUDGED where graded below 0; query -1 (a query the qrels lack) is never judged.
        `queries`: the query numbers in `query`, if the caller knows them.

        Looked up by 64-bit fingerprint of the pair (`hashes`: the documents' `_hashes`),
        each match then confirmed by comparing the ids; by the ids themselves where the
        qrels' own fingerprints collide or none are given."""
        import pyarrow.compute as pc

        grades = np.full(len(query), NONPOOL, dtype=np.int32)
        keys = self._fingerprint_set()
        if hashes is None or keys is None or "documents" not in self._cache:
            document = _numpy(pc.index_in(docids, value_set=self.docids), null=-1).astype(np.int64)
            found = np.flatnonzero((document >= 0) & (query >= 0))
            self._grade(grades, found, query[found].astype(np.int64) * max(len(self.docids), 1) + document[found])
            return grades
        # the judgments of the queries at hand only: the lookup table is built anew on every call
        if queries is None:
            present = np.zeros(len(self.qids) + 1, dtype=bool)
            present[query + 1] = True
            queries = np.flatnonzero(present[1:])
        judgments = self._rows_of(queries[queries >= 0])
        wanted = _numpy(keys)[judgments]
        fingerprints = _pair_fingerprints(hashes, query)
        found, position = _lookup(fingerprints, wanted)
        judgment = judgments[position]
        document = self._cache["documents"][judgment]
        same = pc.equal(docids.take(_arrow(found)), self.docids.take(_arrow(document)))
        if len(found) and not pc.all(same).as_py():  # a fingerprint shared by two ids: those rows by their ids
            differ = _numpy(pc.indices_nonzero(pc.invert(same)))
            grades[found[differ]] = self.grades_of(query[found[differ]], docids.take(_arrow(found[differ])))
            keep = np.ones(len(found), dtype=bool)
            keep[differ] = False
            found, judgment = found[keep], judgment[keep]
        grade = self.grades[judgment]
        grades[found] = np.where(grade >= 0, grade, UNJUDGED)
        return grades

    def _rows_of(self, queries: np.ndarray) -> np.ndarray:
        """The judgment rows of these query numbers (ascending)."""
        if "bounds" not in self._cache:
            self._cache["bounds"] = np.searchsorted(self.query, np.arange(len(self.qids) + 1))
        bounds = self._cache["bounds"]
        return range_rows(bounds[queries], bounds[queries + 1] - bounds[queries])

    def _grade(self, grades: np.ndarray, rows: np.ndarray, key: np.ndarray) -> None:
        """grades[rows] = the grade judged under each key, where there is one."""
        if not len(rows):
            return
        where = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        match = self.keys[where] == key
        grade = self.grades[where[match]]
        grades[rows[match]] = np.where(grade >= 0, grade, UNJUDGED)

    def _fingerprint_set(self) -> "pa.Array | None":
        """The judgments' (query, document) fingerprints as an Arrow lookup set, aligned with
        keys; None if two of them collide (then ids are compared instead)."""
        if "fingerprints" not in self._cache:
            width = max(len(self.docids), 1)
            hashes = _hashes(self.docids)
            keys = None
            if hashes is not None:
                fingerprints = _pair_fingerprints(hashes[self.keys % width], self.query)
                ordered = np.sort(fingerprints)
                keys = None if (ordered[1:] == ordered[:-1]).any() else _arrow(fingerprints)
            self._cache["fingerprints"] = keys
        return self._cache["fingerprints"]


@dataclass
class RunTable:
    """A run as columns, one row per (query, document), duplicates already dropped."""

    name: str
    qids: list[str]  # the run's queries in order of first appearance; a query's number is its index
    query: np.ndarray  # int32 query number per row
    score: np.ndarray | None  # float64; None when `ordered` (no longer needed)
    docids: "pa.ChunkedArray"  # of every row; none when `ordered`
    duplicates: int = 0
    path: Path | None = None
    grades: np.ndarray | None = None  # per row, from `judged_by` (see QrelsTable.grades_of)
    judged_by: QrelsTable | None = None
    trailing: int = 0  # lines with text after the sixth field (read by the exact reader, see harness.trec)
    ordered: bool = False  # rows already in trec_eval's order for `judged_by` (see _ranked_run), docids not kept
    top: "pa.Table | None" = None  # when ordered: query, score and docid of each query's first TOP rows (see _top_rows)

    @classmethod
    def from_run(cls, run: Run) -> "RunTable":
        import pyarrow as pa

        qids = list(run.scores)
        query = np.repeat(np.arange(len(qids), dtype=np.int32), [len(run.scores[qid]) for qid in qids])
        docids = _strings([docid for ranking in run.scores.values() for docid in ranking])
        scores = np.array([score for ranking in run.scores.values() for score in ranking.values()], dtype=np.float64)
        return cls(run.name, qids, query, scores, pa.chunked_array([docids]), run.duplicates, run.path,
                   trailing=run.trailing)

    def judged(self, qrels: QrelsTable) -> np.ndarray:
        """Each row's grade in `qrels` (NONPOOL / UNJUDGED as in QrelsTable.grades_of)."""
        if self.grades is None or self.judged_by is not qrels:
            if self.ordered:
                raise ValueError(f"run {self.name!r} was read for other qrels, keeping no docid")
            self.grades, self.judged_by = qrels.grades_of(self.query_in(qrels), self.docids), qrels
        return self.grades

    def docids_of(self, rows: np.ndarray) -> "pa.ChunkedArray":
        """The docids of these rows (kept unless `ordered`)."""
        if self.ordered:
            raise ValueError(f"run {self.name!r}: its docids were not kept while reading")
        return self.docids.take(_arrow(rows))

    def top_docids(self) -> list[str]:
        """The docids of every query's top rows (its first TOP, ties at the cut too), in no order."""
        return (self.top if self.ordered else self._top()).column("docid").to_pylist()

    def top_ranked(self, depth: int) -> dict[str, list[str]]:
        """Each query's first `depth` (at most TOP) docids in trec_eval's order."""
        assert depth <= TOP
        top = self.top if self.ordered else self._top()
        query = _numpy(top.column("query")).tolist()
        scores = _numpy(top.column("score")).tolist()
        rankings: dict[str, list[tuple[str, float]]] = {}
        for number, score, docid in zip(query, scores, top.column("docid").to_pylist()):
            rankings.setdefault(self.qids[number], []).append((docid, score))
        return {qid: [docid for docid, _ in canonical_order(ranking)[:depth]] for qid, ranking in rankings.items()}

    def _top(self) -> "pa.Table":
        """`top` of a run read keeping every docid."""
        import pyarrow as pa

        rows = None if in_rank_order(self.query, self.score, starts_of(self.query)) else \
            np.lexsort((-self.score, self.query))
        query, score = (self.query, self.score) if rows is None else (self.query[rows], self.score[rows])
        picked = _top_rows(score, starts_of(query))
        picked = picked if rows is None else rows[picked]
        return pa.table({"query": _arrow(self.query[picked]), "score": _arrow(self.score[picked]),
                         "docid": self.docids.take(_arrow(picked))})

    def query_in(self, qrels: QrelsTable) -> np.ndarray:
        """Each row's query number in `qrels` (-1 for a query it does not judge)."""
        return qrels.numbers(self.qids)[self.query]


# --- the readers ------------------------------------------------------------------------------


def spare_memory() -> None:
    """For a process that reads large files through this module: no transparent huge pages
    (where the OS hands them out unasked, each array freed and allocated again costs the
    zeroing of 2 MB pages: a third of the time on a 10M-line run), and arrays up to 8 MB
    taken from the reusable heap rather than mapped anew (and faulted in) for each file.
    Process-wide, so called by `harness eval` and its workers only, not by the library;
    Linux (glibc) only."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)  # the C library, already in the process
        libc.prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
        libc.mallopt(-3, 8 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def read_qrels_table(path: str | Path, *, name: str | None = None) -> QrelsTable:
    """A qrels file as a QrelsTable: the common form through pyarrow, anything else (comments,
    tabs, a malformed line, a repeated judgment) through `harness.trec.read_qrels`; `irds:ID`,
    an ir_datasets dataset's qrels, and `benchmark:NAME[:SPLIT]`, a benchmark's own (read_qrels_spec)."""
    from harness.corpus.readers import irds_id
    from harness.topics import benchmark_hint, benchmark_qrels_name, read_qrels_spec

    if irds_id(path) is not None or benchmark_qrels_name(path) is not None or benchmark_hint(path):
        return QrelsTable.from_qrels(read_qrels_spec(path))
    path = Path(path)
    try:
        return _fast_qrels(path, name or file_stem(path))
    except _NotFast:
        return QrelsTable.from_qrels(read_qrels(path, name=name))


def read_run_table(path: str | Path, *, strict: bool = False, depth: int | None = None, name: str | None = None,
                   qrels: QrelsTable | None = None, all_docids: bool = False) -> RunTable:
    """A run file as a RunTable, looked up in `qrels` while it is read; unless `all_docids`,
    a run written query by query in rank order is put into trec_eval's order while it is
    read, keeping no docid (see _ranked_run): memory and time. A file outside the common
    form is read by `harness.trec.read_run` (streamed to `depth` per query)."""
    path = Path(path)
    try:
        if qrels is not None and not all_docids:
            try:
                return _ranked_run(path, name or file_stem(path), qrels)
            except _Unordered:
                pass
        return _fast_run(path, name or file_stem(path), strict, qrels)
    except _NotFast:
        table = RunTable.from_run(read_run(path, strict=strict, depth=depth, name=name))
        if qrels is not None:
            table.judged(qrels)
        return table


@dataclass
class _RunChunk:
    """What a worker thread makes of one chunk of a run file."""

    queries: list[tuple[list[str], np.ndarray]]  # per pyarrow block: its distinct qids, each row's index into them
    score: np.ndarray
    docids: list  # pyarrow string arrays
    fingerprints: np.ndarray  # of (qid, docid), for finding repeats
    grades: np.ndarray | None


def _run_types() -> dict:
    import pyarrow as pa

    return {"qid": pa.dictionary(pa.int32(), pa.string()), "q0": pa.binary(), "docid": pa.string(),
            "rank": pa.binary(), "score": pa.float64(), "tag": pa.binary()}


def _run_columns(table: "pa.Table") -> tuple[list[tuple[list[str], np.ndarray]], np.ndarray, "pa.ChunkedArray"]:
    """A parsed chunk of a run checked for the common form: per pyarrow block its distinct
    qids and each row's index into them, the scores, the docids."""
    for column in ("q0", "docid", "tag"):
        for chunk in table.column(column).chunks:
            _check_bytes(chunk)
    for chunk in table.column("rank").chunks:
        _check_digits(chunk)
    score = _numpy(table.column("score"))
    if not np.isfinite(score).all():
        raise _NotFast
    return [(_qids(chunk), _numpy(chunk.indices)) for chunk in table.column("qid").chunks], score, table.column("docid")


@dataclass
class _RankedChunk:
    """A chunk of whole queries in trec_eval's order, as a worker thread leaves it."""

    qids: list[str]  # its queries, in file order
    sizes: np.ndarray  # the documents of each
    grades: np.ndarray  # int32, query by query in trec_eval's order (see QrelsTable.grades_of)
    top: "pa.Table"  # see RunTable.top; query numbers counted within the chunk


def _ranked_run(path: Path, name: str, qrels: QrelsTable) -> RunTable:
    """The common case in one pass, keeping no docid: a run written query by query in rank
    order, each document once. Chunks are cut between queries, so each worker puts its own
    queries into trec_eval's order (ties among differing grades by docid); _Unordered for
    any other run."""
    import pyarrow as pa

    qrels.prepare()

    def work(table: pa.Table) -> _RankedChunk:
        queries, score, docid = _run_columns(table)
        if not len(score):
            raise _NotFast  # no line: the exact reader says what the file holds
        numbers: dict[str, int] = {}
        query = np.concatenate([np.array([numbers.setdefault(qid, len(numbers)) for qid in qids], np.int32)[indices]
                                for qids, indices in queries])
        starts = starts_of(query)
        if not in_rank_order(query, score, starts):
            raise _Unordered
        hashes = _hashes(docid)
        fingerprints = _pair_fingerprints(hashes, query)
        fingerprints.sort()
        if (fingerprints[1:] == fingerprints[:-1]).any():  # maybe a repeated document
            raise _Unordered
        qids = list(numbers)  # in file order, as each is written in one place
        judged = qrels.numbers(qids)
        docid = docid.combine_chunks()  # one copy: pyarrow's take on a chunked array copies every chunk
        grades = qrels.grades_of(judged[query], docid, hashes, judged)
        moved = tie_order(score, starts, grades, lambda rows: docid.take(_arrow(rows)))
        if moved is not None:
            members, order = moved
            grades[members] = grades[order]
        top = _top_rows(score, starts)
        return _RankedChunk(qids, np.diff(np.append(starts, len(query))), grades,
                            pa.table({"query": _arrow(query[top]), "score": _arrow(score[top]),
                                      "docid": docid.take(_arrow(top))}))

    qids, sizes, grades, tops = [], [], [], []
    for part in _parallel(path, _run_types(), work, by_query=True):
        tops.append(part.top.set_column(0, "query", _arrow(_numpy(part.top.column("query")) + len(qids))))
        qids += part.qids
        sizes.append(part.sizes)
        grades.append(part.grades)
    if not qids:
        raise _NotFast  # empty: the exact reader says so
    if len(set(qids)) < len(qids):  # a query written in two places, or longer than a chunk
        raise _Unordered
    query = np.repeat(np.arange(len(qids), dtype=np.int32), np.concatenate(sizes))
    return RunTable(name, qids, query, None, pa.chunked_array([], pa.string()), path=path,
                    grades=np.concatenate(grades), judged_by=qrels, ordered=True, top=pa.concat_tables(tops))


def _top_rows(score: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The first TOP rows of each query (rows in rank order, `starts` where each query begins),
    and the rows tied with its TOP-th: those that may be its top TOP in trec_eval's order."""
    ends = np.append(starts[1:], len(score))
    changes = np.append(np.flatnonzero(score[1:] != score[:-1]) + 1, len(score))
    last = starts + np.minimum(ends - starts, TOP) - 1
    to = np.minimum(changes[np.searchsorted(changes, last, side="right")], ends)  # through the TOP-th's ties
    return range_rows(starts, to - starts)


def range_rows(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The rows start, start + 1, ..., start + size - 1 of each range, one range after another."""
    return np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())


def _fast_run(path: Path, name: str, strict: bool, qrels: QrelsTable | None) -> RunTable:
    """Any run in the common form, every docid kept: the repeats dropped (as the exact reader
    does), its rows in file order."""
    import pyarrow as pa

    if qrels is not None:
        qrels.prepare()

    def work(table: pa.Table) -> _RunChunk:
        queries, score, docid = _run_columns(table)
        hashes = _hashes(docid)
        qid_hashes = np.concatenate([_qid_hashes(qids)[indices] for qids, indices in queries])
        grades = None
        if qrels is not None:
            judged = np.concatenate([qrels.numbers(qids)[indices] for qids, indices in queries])
            grades = qrels.grades_of(judged, docid, hashes)
        return _RunChunk(queries, score, docid.chunks, _pair_fingerprints(hashes, qid_hashes), grades)

    numbers: dict[str, int] = {}  # the run's queries, numbered in order of first appearance
    query, parts = [], []
    for part in _parallel(path, _run_types(), work):
        for qids, indices in part.queries:
            query.append(np.array([numbers.setdefault(qid, len(numbers)) for qid in qids], np.int32)[indices])
        parts.append(part)
    if not numbers:
        raise _NotFast  # empty: the exact reader says so
    run = RunTable(name, list(numbers), np.concatenate(query), _gather(parts, "score"),
                   pa.chunked_array([array for part in parts for array in part.docids], pa.string()), path=path,
                   grades=_gather(parts, "grades") if qrels is not None else None, judged_by=qrels)
    fingerprints = _gather(parts, "fingerprints")
    fingerprints.sort()  # in place: memory
    if (fingerprints[1:] == fingerprints[:-1]).any():  # maybe a repeated (qid, docid)
        repeated = _repeated(run)
        if repeated is not None:
            if strict:
                raise _NotFast  # the exact reader names the line
            _drop(run, repeated)
    return run


def starts_of(query: np.ndarray) -> np.ndarray:
    """Where each run of equal query numbers starts."""
    return np.concatenate([[0], np.flatnonzero(query[1:] != query[:-1]) + 1])


def in_rank_order(query: np.ndarray, score: np.ndarray, starts: np.ndarray) -> bool:
    """Each query's documents together, scores never rising within a query (trec_eval's
    order but for the order of tied documents): how runs are written."""
    heads = np.sort(query[starts])  # (np.unique would import numpy.ma: a tenth of a second)
    if (heads[1:] == heads[:-1]).any():
        return False
    rises = np.flatnonzero(score[1:] > score[:-1]) + 1
    return bool((starts[np.minimum(np.searchsorted(starts, rises), len(starts) - 1)] == rises).all())


def tie_order(score: np.ndarray, starts: np.ndarray, grades: np.ndarray,
              docids_of: Callable[[np.ndarray], "pa.Array | pa.ChunkedArray"]) -> tuple[np.ndarray, np.ndarray] | None:
    """trec_eval's order within each group of equal scores of a query (docid descending),
    where the group's grades differ (elsewhere the order of tied documents cannot change a
    value), for rows in rank order but for ties: (members, order) such that the rows at
    `members` take the places of the rows at `order`; None when nothing moves.
    `docids_of(rows)` gives the docids of those rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pairs = np.flatnonzero(score[1:] == score[:-1])  # document i ties with i + 1 ...
    boundary = np.minimum(np.searchsorted(starts, pairs + 1), len(starts) - 1)
    pairs = pairs[starts[boundary] != pairs + 1]  # ... of the same query
    differs = grades[pairs] != grades[pairs + 1]
    if not differs.any():
        return None
    group = np.cumsum(np.concatenate([[True], pairs[1:] != pairs[:-1] + 1])) - 1  # of each pair
    mixed = np.zeros(group[-1] + 1, dtype=bool)
    mixed[group[differs]] = True
    pairs, group = pairs[mixed[group]], group[mixed[group]]
    member = np.zeros(len(score), dtype=bool)
    member[pairs] = member[pairs + 1] = True
    members = np.flatnonzero(member)
    member_group = group[np.searchsorted(pairs, members, side="right") - 1]
    table = pa.table([_arrow(member_group), docids_of(members)], names=["group", "docid"])
    return members, members[_numpy(pc.sort_indices(table, sort_keys=[("group", "ascending"), ("docid", "descending")]))]


def _gather(parts: list[_RunChunk], name: str) -> np.ndarray:
    """One column of all the chunks, each chunk's part let go as it is copied (memory)."""
    if len(parts) == 1:
        return getattr(parts[0], name)
    whole = np.empty(sum(len(getattr(part, name)) for part in parts), getattr(parts[0], name).dtype)
    start = 0
    for part in parts:
        piece = getattr(part, name)
        whole[start:start + len(piece)] = piece
        start += len(piece)
        setattr(part, name, None)
    return whole


def _fast_qrels(path: Path, name: str) -> QrelsTable:
    import pyarrow as pa
    import pyarrow.compute as pc

    types = {"qid": pa.dictionary(pa.int32(), pa.string()), "iter": pa.binary(), "docid": pa.string(),
             "grade": pa.binary()}

    def work(table: pa.Table) -> tuple[list, list, list]:
        for column in ("iter", "docid"):
            for chunk in table.column(column).chunks:
                _check_bytes(chunk)
        return ([(_qids(chunk), _numpy(chunk.indices)) for chunk in table.column("qid").chunks],
                table.column("docid").chunks, [_grades(chunk) for chunk in table.column("grade").chunks])

    numbers: dict[str, int] = {}
    queries, docids, grades = [], [], []
    for blocks, docid, grade in _parallel(path, types, work):
        for qids, indices in blocks:
            queries.append(np.array([numbers.setdefault(qid, len(numbers)) for qid in qids], np.int64)[indices])
        docids.extend(docid)
        grades.extend(grade)
    if not numbers:
        raise _NotFast  # empty: the exact reader says so
    qids = sorted(numbers)
    sorted_number = np.empty(len(qids), dtype=np.int64)
    sorted_number[[numbers[qid] for qid in qids]] = np.arange(len(qids))
    encoded = pc.dictionary_encode(pa.chunked_array(docids, pa.string())).combine_chunks()
    key = sorted_number[np.concatenate(queries)] * max(len(encoded.dictionary), 1) + _numpy(encoded.indices)
    order = np.argsort(key)
    key = key[order]
    if (key[1:] == key[:-1]).any():
        raise _NotFast  # a repeated judgment: the exact reader names both lines
    return QrelsTable(name, qids, encoded.dictionary, key, np.concatenate(grades)[order], path)


def _parallel(path: Path, types: dict, work: Callable[["pa.Table"], T], by_query: bool = False) -> Iterator[T]:
    """`work` on each chunk of whole lines of the file (of whole queries, `by_query`, see
    _chunks), parsed by pyarrow (space-separated, no quoting), one chunk per core at a time;
    the results in file order. _NotFast for what pyarrow would read differently from the
    exact reader: a carriage return (a line end to pyarrow, whitespace to trec_eval), a
    byte-order mark, a line with another number of fields (the other separators of the
    exact reader are refused by the checks of each column)."""
    import pyarrow as pa
    import pyarrow.csv as csv
    from concurrent.futures import ThreadPoolExecutor

    if path.suffix in COMPRESSED:
        raise _NotFast
    options = (csv.ReadOptions(column_names=list(types), block_size=BLOCK, use_threads=False),
               csv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False),
               csv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                  quoted_strings_can_be_null=False))

    def task(view: mmap.mmap, start: int, end: int) -> T:
        if view.find(b"\r", start, end) >= 0:
            raise _NotFast
        try:
            table = csv.read_csv(pa.BufferReader(pa.py_buffer(memoryview(view)[start:end])), *options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise _NotFast from None
        _let_go(view, start, end)
        return work(table)

    chunks = _chunks(path, by_query)
    try:
        size = path.stat().st_size
    except OSError:
        raise _NotFast from None  # the exact reader names the problem
    if size <= CHUNK:  # one chunk: in this thread (threads are not free, and each keeps memory)
        yield from (task(view, start, end) for view, start, end in chunks)
        return
    workers = os.cpu_count() or 1
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        try:
            for view, start, end in chunks:
                pending.append(pool.submit(task, view, start, end))
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
    _give_back()


def _give_back() -> None:
    """Hand the memory freed by a large read back to the OS (pyarrow's pool and the C heap
    keep it for reuse otherwise), so that what follows starts from what is in use."""
    import ctypes
    import sys

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass


def _chunks(path: Path, by_query: bool = False) -> Iterator[tuple[mmap.mmap, int, int]]:
    """The file mapped into memory (no copy: the pages are the OS's file cache) and the bounds
    of its chunks of whole lines, about CHUNK bytes each, or, `by_query`, ending where a
    query's lines begin (in a run written query by query; but for a query longer than a
    chunk); _NotFast for a byte-order mark, a file that cannot be opened or is empty (the
    exact reader names it)."""
    try:
        with open(path, "rb") as handle:
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        raise _NotFast from None
    if hasattr(mmap, "MADV_SEQUENTIAL"):
        view.madvise(mmap.MADV_SEQUENTIAL)
    if view[:3] == b"\xef\xbb\xbf":
        raise _NotFast
    size, start = len(view), 0
    while start < size:
        end = size if start + CHUNK >= size else view.rfind(b"\n", start, start + CHUNK) + 1
        if end <= start:  # a line longer than a chunk
            end = view.find(b"\n", start) + 1 or size
        elif by_query and end < size:
            end = _last_query_start(view, start, end)
        yield view, start, end
        start = end


def _last_query_start(view: mmap.mmap, start: int, end: int) -> int:
    """Where the lines of the last query in view[start:end] (whole lines) begin, found by
    bisection over the lines (so for a run written query by query); `end` if it began
    before `start`."""

    def line_at(position: int) -> int:  # the start of the line holding `position`
        return max(view.rfind(b"\n", start, position) + 1, start)

    high = line_at(end - 1)  # a line of the last query ...
    head = view[high:view.find(b" ", high, end) + 1]  # ... which starts with its qid and a space
    if view[start:start + len(head)] == head:
        return end
    low = start  # a line of another query
    while True:
        middle = line_at((low + high) // 2)
        if middle == low:
            middle = view.find(b"\n", low, high) + 1
        if middle == high:
            return high
        if view[middle:middle + len(head)] == head:
            high = middle
        else:
            low = middle


def _let_go(view: mmap.mmap, start: int, end: int) -> None:
    """Unmap the whole pages of a parsed chunk, so that the file does not count in the
    process's memory (they stay in the OS's file cache)."""
    if hasattr(mmap, "MADV_DONTNEED"):
        first, last = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE, end // mmap.PAGESIZE * mmap.PAGESIZE
        if last > first:
            view.madvise(mmap.MADV_DONTNEED, first, last - first)


def _qids(chunk: "pa.DictionaryArray") -> list[str]:
    """A block's distinct query ids; one starting with '#' makes the line a comment to the exact reader."""
    qids = chunk.dictionary.to_pylist()
    if not all(field_ok(qid) and not qid.startswith("#") for qid in qids):
        raise _NotFast
    return qids


def _buffers(chunk: "pa.Array") -> tuple[np.ndarray, np.ndarray]:
    """A string or binary array's offsets (int32, one more than its length) and bytes."""
    offsets = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
    data = chunk.buffers()[2]
    return offsets, np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)


def _check_bytes(chunk: "pa.Array") -> None:
    """No empty field (two spaces in a row), no control character (every separator but the
    space, which pyarrow splits at, is one), and UTF-8 (checked by pyarrow for string columns,
    here for binary ones beyond ASCII)."""
    import pyarrow as pa

    offsets, data = _buffers(chunk)
    body = data[offsets[0]:offsets[-1]]
    if (offsets[1:] == offsets[:-1]).any() or body.min(initial=255) < 32:
        raise _NotFast
    if chunk.type == pa.binary() and body.max(initial=0) >= 128:
        try:
            chunk.cast(pa.string())
        except pa.ArrowInvalid:
            raise _NotFast from None


def _check_digits(chunk: "pa.Array") -> None:
    """Ranks written as plain ASCII digits (a sign, and what pyarrow would read as hex, go to the exact reader)."""
    offsets, data = _buffers(chunk)
    if (offsets[1:] == offsets[:-1]).any() or (data[offsets[0]:offsets[-1]] - np.uint8(48)).max(initial=0) > 9:
        raise _NotFast


def _grades(chunk: "pa.Array") -> np.ndarray:
    """Grades written as [-]digits within a C int (anything else goes to the exact reader)."""
    import pyarrow as pa

    offsets, data = _buffers(chunk)
    body = data[offsets[0]:offsets[-1]]
    if (offsets[1:] == offsets[:-1]).any() or ((body - np.uint8(48) > 9) & (body != ord("-"))).any():
        raise _NotFast
    try:
        grades = _numpy(chunk.cast(pa.string()).cast(pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise _NotFast from None
    if len(grades) and (grades.min() < -(2**31) or grades.max() >= 2**31):
        raise _NotFast
    return grades


# --- Arrow <-> numpy, without pandas ---------------------------------------------------------
# pyarrow imports pandas (a second or so on a busy machine) on its first conversion between
# Arrow and numpy arrays or Python lists; these go through the buffers instead.


def _numpy(array: "pa.Array | pa.ChunkedArray", null: int = 0) -> np.ndarray:
    """A numeric Arrow array's values (nulls as `null`), sharing its memory where it can."""
    import pyarrow as pa

    dtype = np.dtype(array.type.to_pandas_dtype())
    if isinstance(array, pa.ChunkedArray):
        parts = [_numpy(chunk, null) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.empty(0, dtype)
    values = np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * dtype.itemsize)
    if array.null_count:
        valid = np.unpackbits(np.frombuffer(array.buffers()[0], np.uint8), bitorder="little")
        values = np.where(valid[array.offset:array.offset + len(array)].astype(bool), values, null)
    return values


def _arrow(values: np.ndarray) -> "pa.Array":
    """A numeric or boolean numpy array as an Arrow array."""
    import pyarrow as pa

    if values.dtype == bool:
        return pa.Array.from_buffers(pa.bool_(), len(values),
                                     [None, pa.py_buffer(np.packbits(values, bitorder="little"))])
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _strings(values: list[str]) -> "pa.Array":
    """Python strings as an Arrow string array."""
    import pyarrow as pa

    encoded = [value.encode() for value in values]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(value) for value in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        return pa.Array.from_buffers(pa.large_string(), len(encoded),
                                     [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))])


# --- duplicates -------------------------------------------------------------------------------

_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9], dtype=np.uint64)
_MASK = 2**64 - 1


def _hashes(docids: "pa.ChunkedArray | pa.Array") -> np.ndarray | None:
    """A 64-bit hash of each id, from its length and all its bytes, 8 at a time: equal ids
    always share one, so distinct hashes prove ids distinct, and equal ones are compared
    exactly. None for ids the reader did not make (large strings)."""
    import pyarrow as pa

    chunks = docids.chunks if isinstance(docids, pa.ChunkedArray) else [docids]
    if any(chunk.type != pa.string() for chunk in chunks):
        return None
    parts = []
    for chunk in chunks:
        offsets, data = _buffers(chunk)
        if len(data) < 8:
            data = np.concatenate([data, np.zeros(8, np.uint8)])
        words = np.ndarray((len(data) - 7,), np.uint64, data, 0, (1,))  # the 8 bytes from each position
        start = offsets[:-1].astype(np.int64)
        length = np.diff(offsets).astype(np.int64)
        # the first 8 bytes; of an id shorter than that, its bytes alone (near the buffer's
        # end, from the word that ends there)
        hashes = words[np.minimum(start, len(data) - 8)]
        short = np.flatnonzero(length < 8)
        if len(short):
            at = np.minimum(start[short], len(data) - 8)
            keep = ((8 - length[short]) * 8).astype(np.uint64)
            hashes[short] = (hashes[short] >> ((start[short] - at) * 8).astype(np.uint64)) << keep >> keep
        hashes *= _MIX[0]
        hashes += length.astype(np.uint64)
        # then the 8 bytes from each further multiple of 8 within the id, the last such word
        # ending where the id ends: the ids longer than 8 bytes, fewer at each step
        where = np.flatnonzero(length > 8)
        first = start[where]
        last = first + length[where] - 8
        word = 1
        while len(where):
            value = words[np.minimum(first + 8 * word, last)]
            value *= _multiplier(word)
            hashes[where] += value
            longer = last - first > 8 * word
            if not longer.all():
                where, first, last = where[longer], first[longer], last[longer]
            word += 1
        parts.append(hashes)
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def _multiplier(word: int) -> np.uint64:
    """An odd 64-bit constant for each word of an id (splitmix64 of its position)."""
    z = (word + 1) * 0x9E3779B97F4A7C15 % 2**64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 % 2**64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB % 2**64
    return np.uint64((z ^ (z >> 31)) | 1)


def _qid_hashes(qids: list[str]) -> np.ndarray:
    return np.array([hash(qid) & _MASK for qid in qids], np.uint64)


def _lookup(fingerprints: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where fingerprints equal one of `wanted` (distinct): (those positions, the index in
    `wanted` of each). Most documents are not judged: a table of the wanted fingerprints'
    top bits (8 slots a fingerprint: about one in nine others passes) leaves few for
    pyarrow to look up."""
    import pyarrow.compute as pc

    bits = max(16, len(wanted).bit_length() + 3)
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[wanted >> shift] = True
    maybe = np.flatnonzero(table[fingerprints >> shift])
    index = _numpy(pc.index_in(_arrow(fingerprints[maybe]), value_set=_arrow(wanted)), null=-1)
    return maybe[index >= 0], index[index >= 0]


def _pair_fingerprints(hashes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The fingerprint of each (query number, id) pair."""
    return hashes + query.astype(np.uint64) * _MIX[2]


def _repeated(run: RunTable) -> np.ndarray | None:
    """The rows to drop as repeats of a (query, document) seen with a higher (or an equal,
    earlier) score, or None when every pair is distinct."""
    fingerprints = _pair_fingerprints(_hashes(run.docids), _qid_hashes(run.qids)[run.query])
    order = np.argsort(fingerprints, kind="stable")
    same = fingerprints[order[1:]] == fingerprints[order[:-1]]
    marked = np.zeros(len(fingerprints), dtype=bool)
    marked[order[1:][same]] = marked[order[:-1][same]] = True
    candidates = np.flatnonzero(marked)
    docids = run.docids.take(_arrow(candidates)).to_pylist()
    best: dict[tuple[int, str], int] = {}
    drop = []
    for row, docid in zip(candidates.tolist(), docids):  # in file order
        key = (int(run.query[row]), docid)
        kept = best.get(key)
        if kept is None:
            best[key] = row
        elif run.score[row] > run.score[kept]:
            drop.append(kept)
            best[key] = row
        else:
            drop.append(row)
    return np.array(sorted(drop), dtype=np.int64) if drop else None


def _drop(run: RunTable, rows: np.ndarray) -> None:
    keep = np.ones(len(run.query), dtype=bool)
    keep[rows] = False
    run.query, run.score = run.query[keep], run.score[keep]
    run.docids = run.docids.filter(_arrow(keep))
    if run.grades is not None:
        run.grades = run.grades[keep]
    run.duplicates = len(rows)
