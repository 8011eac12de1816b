"""Markdown tables: leaderboard with significance marks, comparisons, breakdowns, arena, and
the sectioned leaderboard of a `harness run` (`run_leaderboard`): the one Markdown renderer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import counted, verb
from harness.evaluate import printed
from harness.report.arena import Arena
from harness.report.breakdown import Breakdown, one_query_groups, repeats_queries
from harness.report.compare import Leaderboard, group_legend
from harness.report.model import Report


def table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    """A pipe table; `align` holds one 'l' or 'r' per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---" if a == "l" else "--:" for a in align]
    lines = [header, rule, *[[str(cell) for cell in row] for row in rows]]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines) + "\n"


@dataclass(frozen=True)
class Row:
    """One run of a `harness run` leaderboard: its label cells and its mean per measure."""

    cells: Sequence[str]
    measures: Sequence[str]
    means: Mapping[str, float]
    marks: Mapping[str, str] = field(default_factory=dict)  # measure -> significance marks, e.g. "▲a"
    counts: Sequence[str] = ()  # measures summed over the queries (NumRet...): whole numbers, as trec_eval prints them


@dataclass(frozen=True)
class Section:
    """One benchmark and task: a heading, quoted notes, lines about the qrels, and its runs."""

    heading: str
    notes: Sequence[str]
    qrels: Sequence[str]
    rows: Sequence[Row]
    legend: str = ""  # what the marks mean, below the table


def run_leaderboard(title: str, sections: Sequence[Section], header: Sequence[str]) -> str:
    """`# title`, then per section its heading, notes and qrels lines, and one row per run with
    the best value of each measure in bold (when there is more than one run), its marks after
    it, and the section's legend below."""
    return "\n".join([f"# {title}\n", *(_section(section, header) for section in sections)])


def _section(section: Section, header: Sequence[str]) -> str:
    rows = section.rows
    measures = list(dict.fromkeys(m for row in rows for m in row.measures))
    lines = [f"## {section.heading}", ""]
    for note in section.notes:
        lines += [f"> {note}", ""]
    lines += [*section.qrels, ""]
    best = {m: max(row.means[m] for row in rows if m in row.means) for m in measures}
    cells = []
    for row in rows:
        values = []
        for measure in measures:
            value = row.means.get(measure)
            text = "–" if value is None else printed(value, measure in row.counts)
            text = f"**{text}**" if value is not None and len(rows) > 1 and value == best[measure] else text
            values.append(text + row.marks.get(measure, ""))
        cells.append([*row.cells, *values])
    align = "l" * len(header) + "r" * len(measures)
    legend = f"\n{section.legend}\n" if section.legend else ""
    return "\n".join(lines) + "\n" + table([*header, *measures], cells, align=align) + legend


def leaderboard_rows(board: Leaderboard, untested: dict[str, dict[str, float]] | None = None
                     ) -> tuple[list[str], list[list[str]]]:
    """Rank (equal means share one: Leaderboard.ranks), run (baselines lettered), then 'mean marks' per
    measure, then any untested measure."""
    untested = untested or {}
    header = ["rank", "run", *board.measures, *untested]
    rows, ranks = [], board.ranks()
    for run in board.ranked_runs:
        name = f"{run} ({board.letter(run)})" if run in board.baselines else run
        means = [printed(board.summaries[run, m].mean, m in board.scores.counts) + board.marks(run, m)
                 for m in board.measures]
        rows.append([str(ranks[run]), name, *means,
                     *[f"{values[run]:.4f}" for values in untested.values()]])
    return header, rows


def comparison_rows(board: Leaderboard, measures: Sequence[str] = ()) -> tuple[list[str], list[list[str]]]:
    """A row per comparison, of `measures` (default: every measure the board has)."""
    header = ["run", "baseline", "measure", "Δ mean", f"{board.confidence:.0%} CI", "Cohen's d", "p",
              f"p ({board.correction})", "win/tie/loss"]
    rows = [
        [c.run, f"{c.baseline} ({board.letter(c.baseline)})", c.measure,
         printed(c.difference, c.measure in board.scores.counts, "+"),
         _interval(c.ci_low, c.ci_high, c.measure in board.scores.counts),
         defined(c.effect_size, "+.2f"), defined(c.p_value, ".4g"),
         defined(c.p_adjusted, ".4g") + (" *" if board.significant(c) else ""), f"{c.wins}/{c.ties}/{c.losses}"]
        for run in board.ranked_runs for m in measures or board.measures for c in board.comparisons_of(run, m)
    ]
    return header, rows


def defined(value: float, spec: str) -> str:
    """A statistic as `spec` formats it, or n/a where it is undefined (nan: one query, no spread)."""
    return "n/a" if math.isnan(value) else format(value, spec)


def _interval(low: float, high: float, count: bool) -> str:
    """A difference's interval: to 4 decimals, a count's (a sum over the queries) to 1; n/a if none."""
    spec = f"+.{1 if count else 4}f"
    return "n/a" if math.isnan(low) else f"[{low:{spec}}, {high:{spec}}]"


def breakdown_rows(breakdown: Breakdown) -> tuple[list[str], list[list[str]]]:
    """A row per group: its queries and each run's mean, marked as the leaderboard marks them where the
    groups are tested (Breakdown.tests), the baselines lettered."""
    runs, tests = list(breakdown.means), breakdown.tests
    board = next(iter(tests.values()), None)
    header = [breakdown.name, "queries", *[f"{r} ({board.letter(r)})" if board and r in board.baselines else r
                                           for r in runs]]
    rows = [[str(g), str(breakdown.counts[g]),
             *[f"{breakdown.means[r][g]:.4f}" + (tests[g].marks(r, breakdown.measure) if g in tests else "")
               for r in runs]]
            for g in breakdown.groups]
    return header, rows


def group_comparison_rows(breakdown: Breakdown) -> tuple[list[str], list[list[str]]]:
    """The paired comparisons' table within each group of a tested breakdown, on its measure."""
    header = comparison_rows(next(iter(breakdown.tests.values())))[0]
    rows = [[str(group), *row] for group, board in breakdown.tests.items()
            for row in comparison_rows(board, [breakdown.measure])[1]]
    return [breakdown.name, *header], rows


def unassigned_note(breakdown: Breakdown) -> str:
    """The compared queries the breakdown's mapping leaves out ('' when it covers them all)."""
    if not breakdown.unassigned:
        return ""
    left = breakdown.unassigned
    return (f"{counted(left, 'compared query', 'compared queries')} {verb(left)} no {breakdown.name} and "
            f"{verb(left, 'is', 'are')} left out.")


def left_out_note(breakdown: Breakdown) -> str:
    """Why a conversation table is not shown (breakdown.repeats_queries), and where its rows are ('' if shown)."""
    if not repeats_queries(breakdown):
        return ""
    return (f"Not shown: {one_query_groups(breakdown)} of the {len(breakdown.groups)} conversations hold one "
            "compared query, so their rows would repeat the per-query scores; --format csv or json lists every "
            "conversation.")


def arena_rows(arena: Arena) -> tuple[list[str], list[list[str]]]:
    with_satisfaction = any(r.satisfaction is not None for r in arena.ratings)
    header = ["rank", "system", "Elo", "Bradley-Terry", "95% CI", "votes"] + (["satisfied"] if with_satisfaction else [])
    rows = []
    for rank, r in enumerate(arena.ratings, start=1):
        row = [str(rank), r.system, f"{r.elo:.0f}", f"{r.bt:.0f}", f"[{r.ci_low:.0f}, {r.ci_high:.0f}]", str(r.votes)]
        if with_satisfaction:
            row.append("" if r.satisfaction is None else f"{r.satisfaction:.1%}")
        rows.append(row)
    return header, rows


def win_rate_rows(arena: Arena) -> tuple[list[str], list[list[str]]]:
    """Row system's win rate over the column system (ties = 1/2) with the pair's votes beside it: a
    1.00 from one vote is not one from twenty; columns are ranks."""
    systems = [r.system for r in arena.ratings]
    rates = arena.win_rates
    header = ["win rate (votes), row over column", *[str(i) for i in range(1, len(systems) + 1)]]
    rows = [[f"{i} {a}", *[f"{rates.rate[a, b]:.2f} ({rates.games[a, b]})" if (a, b) in rates.rate else "-"
                          for b in systems]] for i, a in enumerate(systems, start=1)]
    return header, rows


def correlation_rows(arena: Arena) -> tuple[list[str], list[list[str]]]:
    header = ["rating vs satisfaction", "systems", "Spearman ρ", "p", "Kendall τ", "p"]
    rows = [[c.rating, str(c.systems), f"{c.spearman:.3f}", f"{c.spearman_p:.3g}", f"{c.kendall:.3f}",
             f"{c.kendall_p:.3g}"] for c in arena.correlations]
    return header, rows


def arena_markdown(arena: Arena) -> str:
    parts = [table(*arena_rows(arena)), f"\n{arena.legend()}\n\n", table(*win_rate_rows(arena))]
    if arena.correlations:
        parts += ["\n", table(*correlation_rows(arena))]
    return "".join(parts)


def as_markdown(report: Report) -> bytes:
    board = report.leaderboard
    parts = [f"# {report.title}\n\n", *(f"{note}\n\n" for note in report.notes), table(*leaderboard_rows(board, report.untested),
                                            align="rl" + "r" * (len(board.measures) + len(report.untested))),
             f"\n{board.legend()}\n"]
    if report.fill_moves is not None:
        parts += ["\n## What the fill moved\n\n```\n", *(f"{line}\n" for line in report.fill_moves.lines()), "```\n"]
    if report.conversation_means:
        measures = list(report.conversation_means)
        rows = [[run, *[f"{report.conversation_means[m][run]:.4f}" for m in measures]] for run in board.ranked_runs]
        parts += ["\n## Mean over conversations (each conversation's turns averaged first)\n\n",
                  table(["run", *measures], rows)]
    if board.comparisons:  # a single run has none, and the legend says so
        parts += ["\n## Paired comparisons\n\n", table(*comparison_rows(board), align="lllrlrrrr")]
    for b in report.breakdowns:
        if repeats_queries(b):
            parts.append(f"\n## {b.measure} by {b.name}\n\n{left_out_note(b)}\n")
            continue
        parts += [f"\n## {b.measure} by {b.name}\n\n", table(*breakdown_rows(b))]
        if b.unassigned:
            parts.append(f"\n{unassigned_note(b)}\n")
        if b.tests:
            parts += [f"\n### Paired comparisons within each {b.name}\n\n",
                      table(*group_comparison_rows(b), align="llllrlrrrr"), f"\n{group_legend(b.tests, b.name)}\n"]
    if report.arena is not None:
        parts += ["\n## Arena ratings\n\n", arena_markdown(report.arena)]
    return "".join(parts).encode()
