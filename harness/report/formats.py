"""The output formats a report (harness.report.model) is written in, registered here, all four.

Each format is a function `Report -> bytes` registered by name (`md`, `csv`, `json`,
`html`); `write_report` writes through `atomic_write`. Markdown and HTML are rendered by
their own modules, which know nothing of this registry.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from harness.atomic import atomic_write
from harness.paths import output_format
from harness.evaluate import csv_statistic, csv_value, json_number, json_value
from harness.registry import Registry
from harness.report import html, markdown
from harness.report.arena import Arena
from harness.report.compare import Comparison, Leaderboard, group_legend
from harness.report.model import Report

Formatter = Callable[[Report], bytes]
FORMATS: Registry[Formatter] = Registry("report format")
FORMATS.add("md", markdown.as_markdown, "Markdown: the leaderboard, comparisons and breakdowns as tables")
FORMATS.add("html", html.as_html, "a self-contained HTML page: the Markdown report's tables, with plots")


FORMAT_HELP = ("Markdown, a self-contained HTML page with plots, CSV, or JSON (default: as --output's suffix says, "
               ".md (.markdown) .html (.htm) .csv .json, .txt for Markdown; Markdown on stdout or to a name "
               "without a suffix)")
# an --output suffix -> the format it names, besides the formats' own names (report.csv: csv)
SUFFIXES = {"htm": "html", "markdown": "md", "txt": "md"}


def report_format(fmt: str | None, out: str | Path | None) -> str:
    """The format a report command writes (output_format): Markdown by default."""
    return output_format(fmt, str(out) if out else None, FORMATS.names(), "md", SUFFIXES)


def write_report(report: Report, fmt: str, path: str | Path | None) -> bytes:
    """Render `report` as `fmt`; write it atomically to `path` when given. Returns the bytes."""
    content = FORMATS.get(fmt)(report)
    if path is not None:
        with atomic_write(path, "wb") as out:
            out.write(content)
    return content


# compare's CSV columns: a row leaves those that are not its kind's empty
_CSV_COLUMNS = ("kind", "run", "measure", "baseline", "value", "ci_low", "ci_high", "effect_size", "p_value",
                "p_adjusted", "significant", "wins", "ties", "losses", "group", "queries", "rank")


@FORMATS.register("csv", "CSV: a row per run and measure, per comparison and per group of a breakdown")
def as_csv(report: Report) -> bytes:
    """One row per run and measure (kind 'mean') and per comparison (kind 'vs baseline'), then
    what the other formats show beside and below the leaderboard: a measure outside the tests
    (kind 'untested': Judged@10), a run's mean over conversations (kind 'mean over
    conversations') and a breakdown's mean per group (kind 'by <name>': 'by turn depth', 'by
    type', with its `group` and `queries`), and where the groups are tested (Breakdown.tests) their
    comparisons (kind 'vs baseline by <name>'); after the report's notes (and what --fill moved)
    as '#' lines. The breakdown's columns come after the leaderboard's, so theirs keep their places, and
    `rank` last: the run's rank (Leaderboard.ranks), on its mean of the first measure, which ranks.
    Arena ratings have columns of their own: `harness arena --format csv`."""
    board = report.leaderboard
    ranks = board.ranks()
    out = io.StringIO()
    out.writelines(f"# {note}\n" for note in report.notes + (report.fill_moves.lines() if report.fill_moves else []))
    writer = csv.DictWriter(out, _CSV_COLUMNS, restval="", lineterminator="\n")  # a cell not given is empty
    writer.writeheader()
    for run in board.ranked_runs:
        for measure in board.measures:
            s = board.summaries[run, measure]
            count = measure in board.scores.counts
            writer.writerow({"kind": "mean", "run": run, "measure": measure, "value": csv_value(s.mean, count),
                             "ci_low": csv_statistic(s.ci_low), "ci_high": csv_statistic(s.ci_high),
                             "rank": ranks[run] if measure == board.measures[0] else ""})
            writer.writerows({"kind": "vs baseline", **_comparison_cells(board, c)}
                             for c in board.comparisons_of(run, measure))
    for measure, means in report.untested.items():
        writer.writerows({"kind": "untested", "run": run, "measure": measure, "value": csv_value(means[run], False)}
                         for run in board.ranked_runs)
    for measure, means in report.conversation_means.items():
        writer.writerows({"kind": "mean over conversations", "run": run, "measure": measure,
                          "value": csv_value(means[run], False)} for run in board.ranked_runs)
    for b in report.breakdowns:
        writer.writerows({"kind": f"by {b.name}", "run": run, "measure": b.measure,
                          "value": csv_value(b.means[run][group], False), "group": group, "queries": b.counts[group]}
                         for group in b.groups for run in board.ranked_runs)
        writer.writerows({"kind": f"vs baseline by {b.name}", **_comparison_cells(tests, c), "group": group,
                          "queries": b.counts[group]}
                         for group, tests in b.tests.items() for run in board.ranked_runs
                         for c in tests.comparisons_of(run, b.measure))
    return out.getvalue().encode()


def _comparison_cells(board: Leaderboard, c: Comparison) -> dict[str, object]:
    """A comparison's CSV cells, run to losses: the leaderboard's (kind 'vs baseline') and a group's."""
    return {"run": c.run, "measure": c.measure, "baseline": c.baseline,
            "value": csv_value(c.difference, c.measure in board.scores.counts), "ci_low": csv_statistic(c.ci_low),
            "ci_high": csv_statistic(c.ci_high), "effect_size": csv_statistic(c.effect_size),
            "p_value": csv_statistic(c.p_value), "p_adjusted": csv_statistic(c.p_adjusted),
            "significant": int(board.significant(c)), "wins": c.wins, "ties": c.ties, "losses": c.losses}


def _comparisons_json(board: Leaderboard, measures: list[str]) -> list[dict]:
    """The board's comparisons on `measures` as JSON has them: an undefined statistic (one query; Cohen's d
    without spread) is nan, which strict JSON has no word for: null."""
    return [{**{key: json_number(value) for key, value in asdict(c).items()},
             "difference": json_value(c.difference, c.measure in board.scores.counts),
             "significant": board.significant(c)} for c in board.comparisons if c.measure in measures]


def arena_dict(arena: Arena) -> dict:
    """system -> {elo, bt, ci_low, ci_high, votes[, satisfaction]}, ranked."""
    systems = {}
    for r in arena.ratings:
        entry = {"elo": r.elo, "bt": r.bt, "ci_low": r.ci_low, "ci_high": r.ci_high, "votes": r.votes}
        if r.satisfaction is not None:
            entry["satisfaction"] = r.satisfaction
        systems[r.system] = entry
    return systems


def arena_csv(arena: Arena) -> str:
    """The ratings as arena_dict has them, one row per system, ranked; satisfaction empty for a
    system without dialogues, and its column only where dialogues were given."""
    systems = arena_dict(arena)
    columns = ["elo", "bt", "ci_low", "ci_high", "votes"]
    if any(r.satisfaction is not None for r in arena.ratings):
        columns.append("satisfaction")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "system", *columns])
    writer.writerows([rank, system, *(entry.get(c, "") for c in columns)]
                     for rank, (system, entry) in enumerate(systems.items(), start=1))
    return out.getvalue()


@FORMATS.register("json", "JSON: the leaderboard, comparisons, breakdowns and notes as one document")
def as_json(report: Report) -> bytes:
    board = report.leaderboard
    document = {
        "title": report.title,
        **({"notes": report.notes} if report.notes else {}),
        **({"untested": report.untested} if report.untested else {}),
        **({"fill_moves": report.fill_moves.as_dict()} if report.fill_moves else {}),
        "legend": board.legend(),
        "test": board.test,
        "correction": board.correction,
        "alpha": board.alpha,
        "confidence": board.confidence,
        "resamples": board.resampling.resamples,
        "seed": board.resampling.seed,
        "queries": len(board.scores.qids),
        "queries_per_measure": {**{m: board.queries(m) for m in board.measures}, **dict.fromkeys(board.undefined, 0)},
        "baselines": board.baselines,
        "ranks": board.ranks(),  # by the first measure, equal means sharing a rank (1, 1, 3)
        "runs": {
            run: {m: {"mean": json_value(s.mean, m in board.scores.counts), "ci_low": json_number(s.ci_low),
                      "ci_high": json_number(s.ci_high), "marks": board.marks(run, m)}
                  for m in board.measures for s in [board.summaries[run, m]]}
            for run in board.ranked_runs
        },
        "comparisons": _comparisons_json(board, board.measures),
        "conversation_means": report.conversation_means,
        "breakdowns": [
            {"name": b.name, "measure": b.measure, "unassigned": b.unassigned,
             "groups": [{"group": g, "queries": b.counts[g], **{run: b.means[run][g] for run in b.means},
                         **({"marks": {run: b.tests[g].marks(run, b.measure) for run in b.means},
                             "comparisons": _comparisons_json(b.tests[g], [b.measure])} if g in b.tests else {})}
                        for g in b.groups],
             **({"legend": group_legend(b.tests, b.name)} if b.tests else {})}
            for b in report.breakdowns
        ],
    }
    if report.arena is not None:
        document["arena"] = {
            "systems": arena_dict(report.arena),
            "legend": report.arena.legend(),
            "correlations": [asdict(c) for c in report.arena.correlations],
            "win_rates": {f"{a} vs {b}": rate for (a, b), rate in report.arena.win_rates.rate.items()},
            "win_rate_votes": {f"{a} vs {b}": votes for (a, b), votes in report.arena.win_rates.games.items()},
        }
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
