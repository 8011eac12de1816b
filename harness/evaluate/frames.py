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
from harness.trec import Qrels, Run, read_qrels, read_run

if TYPE_CHECKING:
    import pandas as pd

RunLike = Union[str, Path, Run, "pd.DataFrame"]
QrelsLike = Union[str, Path, Qrels, "pd.DataFrame"]


class Frames(NamedTuple):
    """`per_query`: one row per run and query (every judged query, as trec_eval -c), a column
    per measure; `aggregate`: one row per run, the means."""

    per_query: "pd.DataFrame"
    aggregate: "pd.DataFrame"


def _column(frame: "pd.DataFrame", *names: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise HarnessError(f"the DataFrame needs a column {' or '.join(map(repr, names))}; it has {list(frame.columns)}")


def as_run(run: RunLike, name: str | None = None) -> Run:
    if isinstance(run, Run):
        return run
    if isinstance(run, (str, Path)):
        return read_run(run, name=name)
    qid, docno, score = _column(run, "qid", "query_id"), _column(run, "docno", "doc_id"), _column(run, "score")
    scores: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run[qid].astype(str), run[docno].astype(str), run[score].astype(float)):
        scores.setdefault(q, {}).setdefault(d, s)  # a repeated (qid, docno) keeps its first score, as read_run
    return Run(name or "run", scores)


def as_qrels(qrels: QrelsLike) -> Qrels:
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, Path)):
        return read_qrels(qrels)
    qid, docno = _column(qrels, "qid", "query_id"), _column(qrels, "docno", "doc_id")
    label = _column(qrels, "label", "relevance")
    judgments: dict[str, dict[str, int]] = {}
    for q, d, grade in zip(qrels[qid].astype(str), qrels[docno].astype(str), qrels[label].astype(int)):
        judgments.setdefault(q, {})[d] = grade
    return Qrels("qrels", judgments)


def run_list(runs: RunLike | Sequence[RunLike] | dict[str, RunLike]) -> list[Run]:
    """One run, a list of them, or {name: run}."""
    if isinstance(runs, dict):
        return [as_run(run, name) for name, run in runs.items()]
    if isinstance(runs, (str, Path, Run)) or hasattr(runs, "columns"):
        return [as_run(runs)]
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
