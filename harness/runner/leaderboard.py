"""The Markdown leaderboard of a `harness run`: one section per family of comparable runs
(runner/report.py families(): same topics, task, qrels, measures, depth and MaxP), one row per run,
the best value of each measure in bold, and ▲a / ▼a where a run is significantly above /
below the section's first run (a), paired t-test, Holm-corrected, as in report.html; under
the table, the warnings `harness run` gives on reading a run (no judged document in its top
10s: why it scores 0) and on runs of other depths side by side (depth_warnings). The outcomes
are turned into plain sections here; harness.report.markdown renders them, as it renders every
Markdown leaderboard."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.atomic import atomic_write
from harness.evaluate import qrels_name, reading_warnings
from harness.report.markdown import Row, Section, run_leaderboard
from harness.runner.report import families, family_name, family_notes, tested, unscored_note

if TYPE_CHECKING:
    from harness.runner.runner import Outcome

HEADER = ("run", "strategy", "retriever")


def render(outcomes: Sequence["Outcome"], title: str, deep: dict[int, str]) -> str:
    """The board; `deep`: depth_warnings(outcomes), each under the last table of the runs it names."""
    grouped = families(outcomes)
    headings = [f"{rows[0].run.experiment.topics} — {rows[0].run.experiment.task}" for rows in grouped]
    # topics and task shared by several families (other qrels or measures): named by experiment too
    headings = [f"{h} ({family_name(rows)})" if headings.count(h) > 1 else h for h, rows in zip(headings, grouped)]
    sections = [_section(heading, rows, deep.get(index))
                for index, (heading, rows) in enumerate(zip(headings, grouped))]
    board = run_leaderboard(title, sections, HEADER)
    for note in (unscored_note(outcomes), code_note(outcomes)):
        board = board if note is None else f"{board}\n{note}\n"
    return board


def code_note(outcomes: Sequence["Outcome"]) -> str | None:
    """Which runs other harness code made, where the board's runs come from more than one: a
    harness update keeps finished runs (the resume key leaves the code out), so one board can
    compare runs its built-ins made differently. Runs whose JSON records no code were made before
    runs recorded it: by older code than those that do, but not known to be one code, or another,
    among themselves; they are named apart, and alone (a board of such runs only) say nothing."""
    made: dict[str, tuple[str, list[str]]] = {}  # by the code's hash: a commit touching no code is one code
    unrecorded: list[str] = []
    for outcome in outcomes:
        if outcome.code_sha256 is None:
            unrecorded.append(outcome.run.tag)
        else:
            made.setdefault(outcome.code_sha256, (outcome.code, []))[1].append(outcome.run.tag)
    notes = []
    if len(made) > 1:
        each = "; ".join(f"{', '.join(tags)} by {code}" for code, tags in made.values())
        notes.append(f"these runs were made by different harness code ({each})")
    if unrecorded and made:
        count = len(unrecorded)
        others = f" ({next(iter(made.values()))[0]})" if len(made) == 1 else ""
        notes.append(f"{count} run{'s' * (count != 1)} record{'s' * (count == 1)} no harness code "
                     f"({', '.join(unrecorded)}): made before runs recorded it, by older code than the others'{others}")
    return f"Note: {'; '.join(notes)}; `harness run --force` remakes them." if notes else None


def write(outcomes: Sequence["Outcome"], output: Path, title: str, deep: dict[int, str]) -> tuple[str, Path]:
    """The leaderboard rendered and written (atomically) to OUTPUT/leaderboard.md, as
    `harness run` and `harness.run(..., leaderboard=True)` write it (`deep`: render's)."""
    board = render(outcomes, title, deep)
    path = output / "leaderboard.md"
    with atomic_write(path) as handle:
        handle.write(board)
    return board, path


def _section(heading: str, rows: list["Outcome"], depths: str | None) -> Section:
    first = rows[0]
    notes = family_notes(rows)
    given = first.run.experiment.qrels  # a `qrels:` file, copied into the output folder: both named
    copied = f", a copy of {given}" if isinstance(given, Path) and first.qrels_file != given else ""
    written = f" ({first.qrels_file}{copied})" if first.qrels_file is not None else ""  # for `harness compare --qrels`
    qrels = [f"Qrels `{first.qrels.name}`{written}: {len(first.qrels.judgments)} judged queries; evaluated to depth "
             f"{first.evaluation.depth}; a judged query missing from a run scores 0."]
    board = tested(rows) if len(rows) > 1 else None
    cells = []
    for row in rows:
        name = f"{row.run.tag} (a)" if board and row is first else row.run.tag
        marks = {m: board.marks(row.evaluation.run_name, m) for m in row.evaluation.measures} if board else {}
        cells.append(Row((name, row.run.strategy or "–", row.run.retriever.label), row.evaluation.measures,
                         row.evaluation.means, marks, row.evaluation.counts))
    # what the zeros do not say (ids the qrels never judge), under the table, as the command line warns it
    warnings = [f"Warning: {warning}" for row in rows
                for warning in reading_warnings(row.evaluation, qrels_name(row.qrels))]
    if depths is not None:  # runs ranked to other depths in this table or those above it on the same topics
        warnings.append(f"Warning: {depths}.")
    return Section(heading, notes, qrels, cells, "\n\n".join([*([board.legend()] if board else []), *warnings]))
