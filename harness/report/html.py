"""A self-contained HTML report: one file, inline CSS, plots embedded as base64 PNG.

Nothing is fetched when it is opened (no scripts, fonts or stylesheets from elsewhere), so
it can be mailed or archived as is. matplotlib is imported only when a report is drawn,
and draws on its own Figure objects (Agg canvas, no pyplot state).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from html import escape

from harness.report import breakdown as breakdowns
from harness.report import markdown
from harness.report.arena import Arena
from harness.report.breakdown import Breakdown
from harness.report.compare import Leaderboard
from harness.report.model import Report

BASELINE_COLOURS = ("#888888", "#444444")  # baselines in grey, the other runs in the default cycle

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #eef; } .l { text-align: left; }
p.legend { font-size: 0.85em; color: #444; max-width: 60em; }
img { max-width: 100%; display: block; margin: 1em 0; }
"""


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _png(figure, alt: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int = 1) -> str:
    """An HTML table whose first `text_columns` columns are left-aligned (the rest numbers)."""
    def cell(tag: str, index: int, value: object) -> str:
        return f"<{tag}{' class=l' if index < text_columns else ''}>{escape(str(value))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def mean_bars(board: Leaderboard) -> str:
    """Grouped bars: per measure, each run's mean with its confidence interval (one axes: fast)."""
    runs = board.ranked_runs
    figure = _figure(min(14, 3 + 1.4 * len(board.measures)), 4)
    axes = figure.add_subplot()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        s = [board.summaries[run, m] for m in board.measures]
        axes.bar([m + i * width for m in range(len(s))], [x.mean for x in s], width,
                 yerr=[[x.mean - x.ci_low for x in s], [x.ci_high - x.mean for x in s]], capsize=2,
                 color=BASELINE_COLOURS[board.baselines.index(run) % 2] if run in board.baselines else None,
                 label=f"{run} (baseline)" if run in board.baselines else run)
    axes.set_xticks([m + 0.4 - width / 2 for m in range(len(board.measures))], board.measures, fontsize=8)
    axes.set_title(f"mean with {board.confidence:.0%} confidence interval", fontsize=9)
    figure.legend(fontsize=7, loc="outside right upper")
    return _png(figure, "mean of each run per measure, with confidence intervals")


def depth_curves(items: Sequence[Breakdown]) -> str:
    columns = min(3, len(items))
    rows = -(-len(items) // columns)
    figure = _figure(4 * columns, 0.8 + 3 * rows)
    for index, b in enumerate(items):
        axes = figure.add_subplot(rows, columns, index + 1)
        for run, means in b.means.items():
            axes.plot(b.groups, [means[g] for g in b.groups], marker="o", markersize=3, label=run)
        axes.set_xlabel("turn depth", fontsize=8)
        axes.set_title(b.measure, fontsize=9)
    figure.legend(*axes.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=7)
    return _png(figure, "mean score by turn depth, one line per run")


def heat_map(b: Breakdown) -> str:
    runs = list(b.means)
    grid = [[b.means[run][g] for g in b.groups] for run in runs]
    figure = _figure(min(14, 2 + 0.22 * len(b.groups)), 1.2 + 0.35 * len(runs))
    axes = figure.add_subplot()
    image = axes.imshow(grid, aspect="auto", cmap="viridis", vmin=0)
    axes.set_yticks(range(len(runs)), runs, fontsize=7)
    axes.set_xticks(range(len(b.groups)), [str(g) for g in b.groups], rotation=90, fontsize=6)
    axes.set_xlabel(b.name, fontsize=8)
    figure.colorbar(image, ax=axes, label=b.measure)
    return _png(figure, f"{b.measure} per {b.name} and run")


def group_bars(b: Breakdown) -> str:
    runs = list(b.means)
    figure = _figure(8, 3.5)
    axes = figure.add_subplot()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        axes.bar([g + i * width for g in range(len(b.groups))], [b.means[run][g] for g in b.groups],
                 width, label=run)
    axes.set_xticks([g + 0.4 - width / 2 for g in range(len(b.groups))], [str(g) for g in b.groups])
    axes.set_title(f"{b.measure} by {b.name}", fontsize=9)
    axes.legend(fontsize=7)
    return _png(figure, f"{b.measure} by {b.name}")


def arena_plots(arena: Arena) -> str:
    ratings = arena.ratings[::-1]
    figure = _figure(11, 0.8 + 0.4 * len(ratings))
    left, right = figure.subplots(1, 2)
    y = range(len(ratings))
    left.errorbar([r.bt for r in ratings], y, xerr=[[r.bt - r.ci_low for r in ratings], [r.ci_high - r.bt for r in ratings]],
                  fmt="o", capsize=3, label="Bradley-Terry (95% CI)")
    left.plot([r.elo for r in ratings], y, "s", label="Elo")
    left.set_yticks(list(y), [r.system for r in ratings], fontsize=7)
    left.legend(fontsize=7)
    left.set_title("ratings", fontsize=9)
    systems = [r.system for r in arena.ratings]
    grid = [[arena.win_rates.rate.get((a, b), float("nan")) for b in systems] for a in systems]
    from matplotlib import colormaps

    image = right.imshow(grid, cmap=colormaps["RdBu"].with_extremes(bad="#dddddd"), vmin=0, vmax=1)
    right.set_xticks(range(len(systems)), systems, rotation=90, fontsize=6)
    right.set_yticks(range(len(systems)), systems, fontsize=6)
    right.set_title("win rate of row over column (ties = 1/2; grey: never met)", fontsize=9)
    figure.colorbar(image, ax=right)
    return _png(figure, "arena ratings and win-rate matrix")


def as_html(report: Report) -> bytes:
    board = report.leaderboard
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(report.title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{escape(report.title)}</h1>",
        "<h2>Leaderboard</h2>", _table(*markdown.leaderboard_rows(board), text_columns=2),
        f"<p class='legend'>{escape(board.legend())}</p>", mean_bars(board),
    ]
    if report.conversation_means:
        measures = list(report.conversation_means)
        rows = [[run, *[f"{report.conversation_means[m][run]:.4f}" for m in measures]] for run in board.ranked_runs]
        parts += ["<h2>Mean over conversations</h2><p class='legend'>Each conversation's turns are averaged "
                  "first, then the conversations.</p>", _table(["run", *measures], rows)]
    parts += ["<h2>Paired comparisons</h2>", _table(*markdown.comparison_rows(board), text_columns=3)]
    depth = [b for b in report.breakdowns if b.name == breakdowns.DEPTH]
    if depth:
        parts += ["<h2>Score by turn depth</h2>", depth_curves(depth)]
        parts += [_table(*markdown.breakdown_rows(b)) for b in depth[:1]]
    for b in report.breakdowns:
        if b.name == breakdowns.CONVERSATION:
            parts += [f"<h2>{escape(b.measure)} per conversation</h2>", heat_map(b)]
        elif b.name != breakdowns.DEPTH:
            parts += [f"<h2>{escape(b.measure)} by {escape(b.name)}</h2>", group_bars(b),
                      _table(*markdown.breakdown_rows(b))]
    if report.arena is not None:
        arena = report.arena
        parts += ["<h2>Arena ratings</h2>", _table(*markdown.arena_rows(arena), text_columns=2),
                  f"<p class='legend'>{escape(arena.legend())}</p>", arena_plots(arena)]
        if arena.correlations:
            parts.append(_table(*markdown.correlation_rows(arena)))
    parts.append("</body></html>\n")
    return "".join(parts).encode()
