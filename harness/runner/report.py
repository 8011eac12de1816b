"""The report of a `harness run`: per experiment, its runs tested against the experiment's
first run (paired t-test, Holm-corrected over runs x measures), Judged@10 beside the
measures, and the scores by turn depth; written as one self-contained HTML file.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from harness.atomic import atomic_write
from harness.report import breakdown as bd
from harness.report.compare import Leaderboard, leaderboard
from harness.report.model import Report
from harness.runner.runner import JUDGED

if TYPE_CHECKING:
    from harness.runner.runner import Outcome


def groups(outcomes: Sequence["Outcome"]) -> dict[str, list["Outcome"]]:
    """Outcomes by experiment, in config order."""
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.run.experiment.name, []).append(outcome)
    return grouped


def tested(outcomes: Sequence["Outcome"]) -> Leaderboard:
    """The runs against the first one, Holm-corrected over the whole family."""
    return leaderboard([o.evaluation for o in outcomes], [outcomes[0].evaluation.run_name], correction="holm")


def experiment_report(outcomes: Sequence["Outcome"]) -> Report:
    experiment = outcomes[0].run.experiment
    board = tested(outcomes)
    report = Report(board, title=experiment.name)
    report.untested = {JUDGED: {o.evaluation.run_name: o.judged for o in outcomes}}
    depths = bd.depths_from_topics(outcomes[0].benchmark.conversations)
    report.breakdowns = [bd.breakdown(board.scores, m, depths, bd.DEPTH) for m in board.measures]
    return report


def write_html(outcomes: Sequence["Outcome"], path: str | Path, title: str) -> Path:
    from harness.report.html import page, sections

    body = []
    for name, members in groups(outcomes).items():
        experiment = members[0].run.experiment
        report = experiment_report(members)
        body.append(f"<hr><h2>{escape(name)}: {escape(experiment.topics)}, {escape(experiment.task)}</h2>")
        if experiment.note:
            body.append(f"<p class='legend'>{escape(experiment.note)}</p>")
        body += sections(report, h="h3")
    with atomic_write(path, "wb") as handle:
        handle.write(page(title, body))
    return Path(path)
