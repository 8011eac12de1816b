"""What the Python API takes and gives: runs and qrels from files, `Run`s, `Qrels` or pandas
DataFrames, and evaluations as DataFrames (`harness.evaluate(...)`, harness/api.py).

Runs are TREC run files, `harness.trec.Run`s or DataFrames with `qid`, `docno` (or `doc_id`)
and `score` columns (a PyTerrier result frame); qrels are a qrels file, a `Qrels` or a
DataFrame with `qid`, `docno`/`doc_id` and `label`/`relevance`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from harness.errors import HarnessError
from harness.trec import GRADE_LIMIT, Qrels, Run, keep_highest, read_run

if TYPE_CHECKING:
    import pandas as pd

RunLike = Union[str, Path, Run, "pd.DataFrame"]
QrelsLike = Union[str, Path, Qrels, "pd.DataFrame"]


class Frames(NamedTuple):
    """`per_query`: one row per run and query (every judged query, as trec_eval -c), a column
    per measure; `aggregate`: one row per run, the means."""

    per_query: "pd.DataFrame"
    aggregate: "pd.DataFrame"


def _column(frame: "pd.DataFrame", what: str, *names: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise HarnessError(f"the {what} DataFrame needs a column {' or '.join(map(repr, names))}; "
                       f"it has {list(frame.columns)}")


def _frame(value: Any, what: str, expected: str) -> "pd.DataFrame":
    if not hasattr(value, "columns"):
        raise HarnessError(f"{what}: got {type(value).__name__}; expected {expected}")
    return value


def _ids(frame: "pd.DataFrame", column: str, what: str) -> "pd.Series":
    """The column as strings; a missing value (NaN, None) would become the id 'nan'."""
    values = frame[column]
    missing = values.isna()
    if missing.any():
        raise HarnessError(f"the {what} DataFrame has no {column} at row {_plain(missing.idxmax())!r} (NaN or None)")
    return values.astype(str)


def _first_bad(frame: "pd.DataFrame", bad: "pd.Series", column: str, qid: str, docno: str) -> str:
    """The first flagged row's value of `column`, and where it is."""
    row = bad.idxmax()
    value, at_qid, at_docno = (_plain(frame.at[row, name]) for name in (column, qid, docno))
    return f"{column} {value!r} at row {_plain(row)!r} (qid {at_qid!r}, {docno} {at_docno!r})"


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (its repr is `np.int64(1)`)."""
    return value.item() if hasattr(value, "item") else value


def as_run(run: RunLike, name: str | None = None) -> Run:
    if isinstance(run, Run):
        return run
    if isinstance(run, (str, Path)):
        return read_run(run, name=name)
    import numpy as np
    import pandas as pd

    run = _frame(run, "a run", "a TREC run file, a harness.trec.Run or a DataFrame (qid, docno, score)")
    qid, docno = _column(run, "run", "qid", "query_id"), _column(run, "run", "docno", "doc_id")
    score = _column(run, "run", "score")
    values = pd.to_numeric(run[score], errors="coerce").astype(float)
    bad = ~np.isfinite(values.to_numpy())
    if bad.any():  # as a run file's `nan`, `inf` or text score: trec_eval and Python would order them differently
        bad = pd.Series(bad, index=run.index)
        raise HarnessError(f"the run DataFrame's {_first_bad(run, bad, score, qid, docno)} is not a finite number")
    scores: dict[str, dict[str, float]] = {}
    duplicates = 0
    for q, d, s in zip(_ids(run, qid, "run"), _ids(run, docno, "run"), values):
        ranking = scores.setdefault(q, {})
        if d in ranking:  # a repeated (qid, docno), counted as read_run counts a run file's
            duplicates += 1
            keep_highest(ranking, d, s)
        else:
            ranking[d] = s
    return Run(name or "run", scores, duplicates)


def as_qrels(qrels: QrelsLike) -> Qrels:
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, Path)):
        from harness.topics import read_qrels_spec

        return read_qrels_spec(qrels)
    import pandas as pd

    qrels = _frame(qrels, "qrels", "a qrels file, a harness.trec.Qrels or a DataFrame (qid, docno, label)")
    qid, docno = _column(qrels, "qrels", "qid", "query_id"), _column(qrels, "qrels", "docno", "doc_id")
    label = _column(qrels, "qrels", "label", "relevance")
    if qrels.empty:
        raise HarnessError("the qrels DataFrame is empty: no judgments")
    grades = pd.to_numeric(qrels[label], errors="coerce")
    whole = grades.notna() & (grades == grades.round()) & (grades >= -GRADE_LIMIT) & (grades < GRADE_LIMIT)
    if not whole.all():  # astype(int) would fail deep in pandas, or cut 1.5 to 1 without a word
        bad = ~whole
        raise HarnessError(f"the qrels DataFrame's {_first_bad(qrels, bad, label, qid, docno)} is not an integer grade")
    judgments: dict[str, dict[str, int]] = {}
    for q, d, grade in zip(_ids(qrels, qid, "qrels"), _ids(qrels, docno, "qrels"), grades.astype(int)):
        judged = judgments.setdefault(q, {})
        if d in judged:  # as read_qrels: which of the two grades counts is not the harness's to guess
            raise HarnessError(f"the qrels DataFrame judges document {d!r} twice for query {q!r}")
        judged[d] = grade
    return Qrels("DataFrame", judgments)  # named so in warnings: "the qrels DataFrame"


def run_list(runs: RunLike | Sequence[RunLike] | dict[str, RunLike]) -> list[Run]:
    """One run, a list of them, or {name: run}."""
    if isinstance(runs, dict):
        return [as_run(run, name) for name, run in runs.items()]
    if isinstance(runs, (str, Path, Run)) or hasattr(runs, "columns"):
        return [as_run(runs)]
    if not isinstance(runs, Iterable):
        raise HarnessError(f"runs: got {type(runs).__name__}; expected a run (file, Run or DataFrame), "
                           "a list of runs or {name: run}")
    return [as_run(run) for run in runs]


def frames(evaluations: Iterable[Any], **labels: Sequence[Any]) -> Frames:
    """Evaluations as DataFrames; `labels` adds columns (one value per evaluation) in front."""
    import pandas as pd

    evaluations = list(evaluations)
    rows, means = [], []
    for index, evaluation in enumerate(evaluations):
        front = {key: values[index] for key, values in labels.items()}
        front["run"] = evaluation.run_name
        qids = next(iter(evaluation.per_query.values()), {})
        rows += [{**front, "qid": qid, **{m: evaluation.per_query[m][qid] for m in evaluation.measures}}
                 for qid in qids]
        means.append({**front, **evaluation.means, "queries": evaluation.num_queries})
    return Frames(pd.DataFrame(rows), pd.DataFrame(means))
