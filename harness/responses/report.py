"""Response runs as a harness report: the leaderboard of per-turn scores with paired tests
(harness.report.compare: Holm-corrected by default), breakdowns by turn depth and
conversation, and the judge named on every page (a baseline judge says so)."""

from __future__ import annotations

import json
from dataclasses import replace
from html import escape
from typing import TYPE_CHECKING

from harness.errors import HarnessError, counted
from harness.report import breakdown as bd
from harness.report.compare import leaderboard
from harness.report.model import Report
from harness.report.stats import Resampling
from harness.responses.evaluation import ResponseEvaluation, run_scores
from harness.responses.scores import mean

if TYPE_CHECKING:
    import pandas as pd

# how a board of response runs compares them, for this report and the hosted board alike: over
# turns (the legend's word), each run's mean as nuggetizer takes it
BOARD = {"unit": ("turn", "turns"), "mean": mean}


def _judges(evaluation: ResponseEvaluation) -> dict[str, dict]:
    """task ("nuggets", "citations") -> that judge's provenance."""
    return evaluation.judge if evaluation.citations else {"nuggets": evaluation.judge}


def judge_label(evaluation: ResponseEvaluation) -> str:
    """The judge as every output names it; the offline judge is called a baseline, also when
    its assignments are replayed from a file (`file:` with the sidecar --assignments-out wrote)."""
    provenance = _judges(evaluation)["nuggets"]
    made = provenance.get("source_provenance") or provenance
    name = provenance.get("judge", "?")
    if made is not provenance:
        name += f", recorded from {made.get('judge', '?')}"
    if "baseline" in made.get("kind", ""):
        return f"{name} (offline baseline, not calibrated against people)"
    return f"{name} ({made['model']})" if made.get("model") else name


def provenance_notes(evaluation: ResponseEvaluation) -> list[str]:
    """Who made the labels behind the scores, one line per task (the JSON has the full records)."""
    from harness.judge.base import provenance_line

    lines = []
    for task, record in _judges(evaluation).items():
        line = f"{task} judged by: {provenance_line(record)}"  # a file's recorded maker too (source_provenance)
        if record.get("questions"):  # where its prompt's {question} came from (harness.responses.questions)
            line += "; {question} from: " + ", ".join(f"{source} ({counted(count, 'turn')})"
                                                       for source, count in record["questions"].items())
        if record.get("file") and not record.get("source_provenance"):  # replayed from a file without a sidecar
            line += "; no provenance sidecar: who made the assignments, and when, is not recorded"
        lines.append(line)
    return lines


def build_report(evaluation: ResponseEvaluation, baselines: list[str] | None = None, *, test: str = "paired-t",
                 correction: str = "holm", alpha: float = 0.05, resampling: Resampling = Resampling()) -> Report:
    board = leaderboard(run_scores(evaluation), baselines, test=test, correction=correction, alpha=alpha,
                        resampling=resampling, **BOARD)
    report = Report(board, title=f"Response evaluation, judge: {judge_label(evaluation)}")
    if evaluation.citations:
        means = evaluation.aggregate().set_index("run")["support_precision"]
        report.untested = {"support_precision": {run: float(means[run]) for run in evaluation.runs}}
    try:
        depths, conversations = bd.depths(board.scores.qids), bd.conversations(board.scores.qids)
    except HarnessError:
        return report  # turn ids without a depth (TREC RAG topics): no breakdown
    report.breakdowns = [bd.breakdown(board.scores, m, depths, bd.DEPTH, BOARD["mean"]) for m in board.measures]
    report.conversation_means = {m: bd.conversation_means(board.scores, m, conversations, BOARD["mean"])
                                 for m in board.measures}
    report.breakdowns.append(bd.breakdown(board.scores, board.measures[0], conversations, bd.CONVERSATION,
                                          BOARD["mean"]))
    return report


def notes(evaluation: ResponseEvaluation) -> list[str]:
    return [f"Judge: {judge_label(evaluation)}.", *provenance_notes(evaluation), f"Nugget importance: {evaluation.rule}.",
            f"{len(evaluation.turns)} evaluated turns ({evaluation.test_set}); a turn a run does not answer scores 0.",
            *evaluation.notes]


def _records(frame: pd.DataFrame) -> list[dict]:
    """The rows as JSON values: every float exact, as nuggetizer and the leaderboard write it
    (pandas' to_json rounds to 15 decimals: 1/3 was 0.333333333333333), NaN as null."""
    from harness.evaluate import json_number

    return [{key: json_number(value) for key, value in row.items()} for row in frame.to_dict("records")]


def render(evaluation: ResponseEvaluation, report: Report, fmt: str, per_turn: bool = False) -> bytes:
    """The report as md, csv, json or html, with the judge, the rules and the notes."""
    from harness.report import html, markdown
    from harness.report.formats import FORMATS

    if fmt == "html":
        body = ["<p class='legend'>" + "<br>".join(escape(n) for n in notes(evaluation)) + "</p>",
                *html.sections(report)]
        return html.page(report.title, body)
    if fmt == "md":
        return markdown.as_markdown(report) + ("\n## Notes\n\n" + "".join(f"- {n}\n" for n in notes(evaluation))).encode()
    if fmt == "json":
        document = json.loads(FORMATS.get("json")(report))
        document.update({"judge": evaluation.judge, "nugget_rule": evaluation.rule, "notes": evaluation.notes,
                         "turns": evaluation.turns,
                         "aggregate": _records(evaluation.aggregate())})
        if per_turn:
            document["per_turn"] = _records(evaluation.per_turn())
        return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    return FORMATS.get(fmt)(replace(report, notes=[*report.notes, *notes(evaluation)]))  # csv: '#' lines
