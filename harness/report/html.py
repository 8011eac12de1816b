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
from harness.report.compare import Leaderboard, group_legend
from harness.report.model import Report

BASELINE_COLOURS = ("#888888", "#444444")  # baselines in grey, the other runs in the default cycle
# matplotlib's default cycle without its grey, which marks baselines
RUN_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
LONG_NAME = 20  # a table cell's name longer than this may break anywhere (see STYLE)
FEW_QUERIES = 10  # a turn depth with fewer queries is drawn hollow and dotted: its mean is noise

# numbers never wrap (a p-value and its star stay on one line); a long name (a `harness run` tag,
# in a row or as a column header) may break anywhere, so that its table still fits the window
STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
td { white-space: nowrap; } td.l { white-space: normal; } .long { overflow-wrap: anywhere; }
th { background: #eef; } .l { text-align: left; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
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


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int = 1, caption: str = "") -> str:
    """An HTML table whose first `text_columns` columns are left-aligned (the rest numbers)."""
    def cell(tag: str, index: int, value: object) -> str:
        text = str(value)
        long = len(text) > LONG_NAME and (index < text_columns or tag == "th")
        classes = " ".join(name for name, on in (("l", index < text_columns), ("long", long)) if on)
        attribute = f" class='{classes}'" if " " in classes else f" class={classes}" if classes else ""
        return f"<{tag}{attribute}>{escape(text)}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def run_colours(board: Leaderboard) -> dict[str, str]:
    """One colour per run for every plot of a report: baselines grey, the other runs the
    default cycle in the order they were given (not ranked, so a colour never moves)."""
    others = [run for run in board.scores.runs if run not in board.baselines]
    colours = {run: RUN_COLOURS[i % len(RUN_COLOURS)] for i, run in enumerate(others)}
    colours.update({run: BASELINE_COLOURS[i % 2] for i, run in enumerate(board.baselines)})
    return {run: colours[run] for run in board.scores.runs}


def mean_bars(board: Leaderboard) -> str:
    """Grouped bars: per measure, each run's mean with its confidence interval (one axes: fast)."""
    runs = board.ranked_runs
    colours = run_colours(board)
    figure = _figure(min(14, 3 + 1.4 * len(board.measures)), 4)
    axes = figure.add_subplot()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        s = [board.summaries[run, m] for m in board.measures]
        axes.bar([m + i * width for m in range(len(s))], [x.mean for x in s], width,
                 yerr=[[x.mean - x.ci_low for x in s], [x.ci_high - x.mean for x in s]], capsize=2,
                 color=colours[run],
                 label=f"{run} (baseline)" if run in board.baselines else run)
    axes.set_xticks([m + 0.4 - width / 2 for m in range(len(board.measures))], board.measures, fontsize=8)
    axes.set_title(f"mean with {board.confidence:.0%} confidence interval", fontsize=9)
    figure.legend(fontsize=7, loc="outside right upper")
    return _png(figure, "mean of each run per measure, with confidence intervals")


def depth_curves(items: Sequence[Breakdown], colours: dict[str, str], baselines: Sequence[str] = (),
                 counted: bool = True) -> str:
    """Mean per turn depth, a line per run in its report colour; depths with fewer than
    FEW_QUERIES queries are hollow points on dotted lines, and every depth shows its count
    unless not `counted` (a hosted board whose qrels are hidden: it told which turns are judged)."""
    from matplotlib.lines import Line2D

    columns = min(3, len(items))
    rows = -(-len(items) // columns)
    figure = _figure(12 if columns == 3 else 8, 1.0 + 3 * rows)  # one or two plots: 8 in wide, not 4
    for index, b in enumerate(items):
        axes = figure.add_subplot(rows, columns, index + 1)
        positions = range(len(b.groups))
        few = [b.counts[g] < FEW_QUERIES for g in b.groups]
        for run, means in b.means.items():
            values = [means[g] for g in b.groups]
            axes.plot(positions, values, ":", color=colours[run], linewidth=1)  # solid only between
            axes.plot(positions, [float("nan") if few[i] else v for i, v in enumerate(values)], "-",  # full depths
                      color=colours[run])
            for hollow in (False, True):  # one artist per kind of point, not one per point (drawing time)
                points = [i for i in positions if few[i] == hollow]
                axes.plot(points, [values[i] for i in points], "o", markersize=4, color=colours[run],
                          markerfacecolor="white" if hollow else colours[run])
        axes.set_xticks(list(positions), [str(g) for g in b.groups], fontsize=7)
        axes.set_xlabel("turn depth", fontsize=8)
        if counted:
            counts = axes.secondary_xaxis("top")  # queries per depth, above the plot
            counts.set_xticks(list(positions), [str(b.counts[g]) for g in b.groups], fontsize=6,
                              rotation=90 if len(b.groups) > 12 else 0)
            counts.set_xlabel("queries", fontsize=7)
        axes.set_title(b.measure, fontsize=9)
    handles = [Line2D([], [], color=colour, marker="o", label=f"{run} (baseline)" if run in baselines else run)
               for run, colour in colours.items()]
    handles.append(Line2D([], [], color="black", linestyle=":", marker="o", markerfacecolor="white",
                          label=f"fewer than {FEW_QUERIES} queries"))
    _fitting_legend(figure, handles, most_columns=3)
    return _png(figure, "mean score by turn depth, one line per run; hollow points: few queries")


def _fitting_legend(figure, handles: list, most_columns: int) -> None:
    """A legend below the plots in as many columns (up to `most_columns`) as fit the figure's
    width: a wider one is cut off on both sides."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    for columns in range(min(most_columns, len(handles)), 0, -1):
        legend = figure.legend(handles=handles, loc="outside lower center", ncols=columns, fontsize=7)
        if columns == 1 or legend.get_window_extent(renderer).width <= figure.bbox.width:
            return
        legend.remove()


def heat_map(b: Breakdown) -> str:
    runs = list(b.means)
    grid = [[b.means[run][g] for g in b.groups] for run in runs]
    # room for the run names (7 pt: about 0.06 in a character) and the colour bar beside the cells
    names = 0.06 * max(map(len, runs))
    figure = _figure(min(14 + names, 2 + names + 0.22 * len(b.groups)), 1.2 + 0.35 * len(runs))
    axes = figure.add_subplot()
    image = axes.imshow(grid, aspect="auto", cmap="viridis", vmin=0)
    axes.set_yticks(range(len(runs)), runs, fontsize=7)
    axes.set_xticks(range(len(b.groups)), [str(g) for g in b.groups], rotation=90, fontsize=6)
    axes.set_xlabel(b.name, fontsize=8)
    figure.colorbar(image, ax=axes, label=b.measure)
    return _png(figure, f"{b.measure} per {b.name} and run")


def group_bars(b: Breakdown, colours: dict[str, str]) -> str:
    runs = list(b.means)
    figure = _figure(8, 3.5)
    axes = figure.add_subplot()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        axes.bar([g + i * width for g in range(len(b.groups))], [b.means[run][g] for g in b.groups],
                 width, label=run, color=colours[run])
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


def page(title: str, body: Sequence[str]) -> bytes:
    """The one-file HTML document around report sections."""
    head = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>")
    return (head + "".join(body) + "</body></html>\n").encode()


def sections(report: Report, h: str = "h2") -> list[str]:
    """The report's tables and plots, under `h` headings (a run report nests them per family of comparable runs)."""
    board = report.leaderboard
    colours = run_colours(board)
    untested = (f"<p class='legend'>{escape(', '.join(report.untested))}: shown beside the measures, not tested.</p>"
                if report.untested else "")
    parts = [
        *(f"<p class='legend'>{escape(note)}</p>" for note in report.notes),
        f"<{h}>Leaderboard</{h}>", _table(*markdown.leaderboard_rows(board, report.untested), text_columns=2),
        f"<p class='legend'>{escape(board.legend())}</p>", untested, mean_bars(board),
    ]
    if report.fill_moves is not None:
        moved = "\n".join(report.fill_moves.lines())
        parts += [f"<{h}>What the fill moved</{h}>", f"<pre>{escape(moved)}</pre>"]
    if report.conversation_means:
        measures = list(report.conversation_means)
        rows = [[run, *[f"{report.conversation_means[m][run]:.4f}" for m in measures]] for run in board.ranked_runs]
        parts += [f"<{h}>Mean over conversations</{h}><p class='legend'>Each conversation's turns are averaged "
                  "first, then the conversations.</p>", _table(["run", *measures], rows)]
    if board.comparisons:
        parts += [f"<{h}>Paired comparisons</{h}>", _table(*markdown.comparison_rows(board), text_columns=3)]
    depth = [b for b in report.breakdowns if b.name == breakdowns.DEPTH]
    if depth:
        parts += [f"<{h}>Score by turn depth</{h}>", depth_curves(depth, colours, board.baselines)]
        parts += [_table(*markdown.breakdown_rows(b), caption=f"{b.measure} by turn depth: mean per run")
                  for b in depth[:1]]
        parts += [_unassigned(depth[0])]
    for b in report.breakdowns:
        if breakdowns.repeats_queries(b):
            parts += [f"<{h}>{escape(b.measure)} per conversation</{h}>",
                      f"<p class='legend'>{escape(markdown.left_out_note(b))}</p>"]
        elif b.name == breakdowns.CONVERSATION:
            parts += [f"<{h}>{escape(b.measure)} per conversation</{h}>", heat_map(b), _unassigned(b)]
        elif b.name != breakdowns.DEPTH:
            parts += [f"<{h}>{escape(b.measure)} by {escape(b.name)}</{h}>", group_bars(b, colours),
                      _table(*markdown.breakdown_rows(b)), _unassigned(b)]
            if b.tests:
                parts += [_table(*markdown.group_comparison_rows(b), text_columns=4,
                                 caption=f"Paired comparisons within each {b.name}"),
                          f"<p class='legend'>{escape(group_legend(b.tests, b.name))}</p>"]
    if report.arena is not None:
        arena = report.arena
        parts += [f"<{h}>Arena ratings</{h}>", _table(*markdown.arena_rows(arena), text_columns=2),
                  f"<p class='legend'>{escape(arena.legend())}</p>", arena_plots(arena)]
        if arena.correlations:
            parts.append(_table(*markdown.correlation_rows(arena)))
    return parts


def _unassigned(breakdown: Breakdown) -> str:
    """The Markdown report's note of the compared queries a breakdown leaves out, as a legend."""
    note = markdown.unassigned_note(breakdown)
    return f"<p class='legend'>{escape(note)}</p>" if note else ""


def as_html(report: Report) -> bytes:
    return page(report.title, sections(report))
