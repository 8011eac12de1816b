"""The Markdown leaderboard of a `harness run`: one section per benchmark and task, one row
per run, the best value of each measure in bold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.report.markdown import table

if TYPE_CHECKING:
    from harness.runner.runner import Outcome


def render(outcomes: Sequence["Outcome"], title: str) -> str:
    sections: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes:
        experiment = outcome.run.experiment
        sections.setdefault((experiment.topics, experiment.task), []).append(outcome)
    parts = [f"# {title}\n"]
    for (topics, task), rows in sections.items():
        parts.append(_section(topics, task, rows))
    return "\n".join(parts)


def _section(topics: str, task: str, rows: list["Outcome"]) -> str:
    measures = list(dict.fromkeys(m for row in rows for m in row.evaluation.measures))
    lines = [f"## {topics} — {task}", ""]
    for note in dict.fromkeys(row.run.experiment.note for row in rows if row.run.experiment.note):
        lines += [f"> {note}", ""]
    for qrels_name, judged, depth in dict.fromkeys(
        (row.qrels.name, len(row.qrels.judgments), row.evaluation.depth) for row in rows
    ):
        lines.append(f"Qrels `{qrels_name}`: {judged} judged queries; evaluated to depth {depth}; "
                     "a judged query missing from a run scores 0.")
    lines.append("")
    best = {m: max(row.evaluation.means[m] for row in rows if m in row.evaluation.means) for m in measures}
    cells = []
    for row in rows:
        values = []
        for measure in measures:
            value = row.evaluation.means.get(measure)
            text = "–" if value is None else f"{value:.4f}"
            values.append(f"**{text}**" if value is not None and len(rows) > 1 and value == best[measure] else text)
        cells.append([row.run.tag, row.run.strategy or "–", row.run.retriever.label, *values])
    header = ["run", "strategy", "retriever", *measures]
    return "\n".join(lines) + "\n" + table(header, cells, align="lll" + "r" * len(measures))
