"""The Markdown leaderboard of a `harness run`: one section per benchmark and task, one row
per run, the best value of each measure in bold, and ▲a / ▼a where a run is significantly
above / below the section's first run (a), paired t-test, Holm-corrected (runner/report.py).
The outcomes are turned into plain sections here; harness.report.markdown renders them, as
it renders every Markdown leaderboard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.report.markdown import Row, Section, run_leaderboard
from harness.runner.report import tested

if TYPE_CHECKING:
    from harness.runner.runner import Outcome

HEADER = ("run", "strategy", "retriever")


def render(outcomes: Sequence["Outcome"], title: str) -> str:
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes:
        experiment = outcome.run.experiment
        groups.setdefault((experiment.topics, experiment.task), []).append(outcome)
    return run_leaderboard(title, [_section(topics, task, rows) for (topics, task), rows in groups.items()], HEADER)


def _section(topics: str, task: str, rows: list["Outcome"]) -> Section:
    notes = list(dict.fromkeys(row.run.experiment.note for row in rows if row.run.experiment.note))
    qrels = [
        f"Qrels `{qrels_name}`: {judged} judged queries; evaluated to depth {depth}; "
        "a judged query missing from a run scores 0."
        for qrels_name, judged, depth in dict.fromkeys(
            (row.qrels.name, len(row.qrels.judgments), row.evaluation.depth) for row in rows
        )
    ]
    measures = rows[0].evaluation.measures
    comparable = len({row.qrels.name for row in rows}) == 1 and all(r.evaluation.measures == measures for r in rows)
    board = tested(rows) if len(rows) > 1 and comparable else None  # paired tests need the same queries
    cells = []
    for row in rows:
        name = f"{row.run.tag} (a)" if board and row is rows[0] else row.run.tag
        marks = {m: board.marks(row.evaluation.run_name, m) for m in row.evaluation.measures} if board else {}
        cells.append(Row((name, row.run.strategy or "–", row.run.retriever.label), row.evaluation.measures,
                         row.evaluation.means, marks))
    return Section(f"{topics} — {task}", notes, qrels, cells, board.legend() if board else "")
