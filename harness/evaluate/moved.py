"""What `--fill` changed in a table of means: the cells (run x measure) it moved, and whether
it reordered the runs. Without it a researcher ran eval twice and diffed the tables by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from harness.evaluate import Evaluation, json_value, printed
from harness.judge.agree import kendall_tau

SHOWN = 5  # the largest moves a text report lists; JSON gives them all


@dataclass(frozen=True)
class Move:
    run: str
    measure: str
    before: float  # the mean with the human labels alone
    after: float  # with the holes filled
    count: bool  # a count summed over the queries (printed whole)

    @property
    def difference(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class Reordering:
    """The runs' order by one measure before and after the fill."""
    measure: str
    changed: bool  # some pair of runs is ordered (or tied) otherwise
    tau: float  # Kendall's tau-b between the two orders (nan when every run ties on both sides)


@dataclass(frozen=True)
class FillMoves:
    runs: int
    cells: int  # runs x measures in the table
    moves: list[Move]  # the cells whose value changed, largest absolute move first (counts last)
    orders: list[Reordering]  # one per measure; none for a single run

    def lines(self, shown: int = SHOWN) -> list[str]:
        """A short text report: how many cells moved, the largest `shown`, and the runs' order."""
        cells = f"{self.cells} cell{'s' * (self.cells != 1)}"
        if not self.moves:
            lines = [f"the fill moved no cell (of {cells}, run x measure)"]
        else:
            lines = [f"the fill moved {len(self.moves)} of {cells} (run x measure)"
                     + ("; the largest:" if len(self.moves) > shown else ":")]
            rows = [[m.run, m.measure, f"{printed(m.before, m.count)} -> {printed(m.after, m.count)}",
                     printed(m.difference, m.count, "+")] for m in self.moves[:shown]]
            widths = [max(len(row[i]) for row in rows) for i in range(3)]
            lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
                      for row in rows]
            if len(self.moves) > shown:
                lines.append(f"  and {len(self.moves) - shown} more")
        if self.orders:
            changed = [o for o in self.orders if o.changed]
            runs = f"the order of the {self.runs} runs"
            if not changed:
                lines.append(f"{runs}: unchanged by every measure")
            else:
                lines.append(f"{runs} changed by " + ", ".join(f"{o.measure} (Kendall's tau {o.tau:.2f})"
                                                               for o in changed)
                             + ("; unchanged by the others" if len(changed) < len(self.orders) else ""))
        return lines

    def as_dict(self) -> dict:
        """The same for JSON output: every move, and each measure's order."""
        return {"runs": self.runs, "cells": self.cells, "moved": len(self.moves),
                "moves": [{"run": m.run, "measure": m.measure, "before": json_value(m.before, m.count),
                           "after": json_value(m.after, m.count), "difference": json_value(m.difference, m.count)}
                          for m in self.moves],
                "order": {o.measure: {"changed": o.changed, "kendall_tau": None if math.isnan(o.tau) else o.tau}
                          for o in self.orders}}


def fill_moves(before: Sequence[Evaluation], after: Sequence[Evaluation]) -> FillMoves:
    """The cells that differ between the same runs scored on the human labels alone (`before`)
    and with the holes filled (`after`), by the same code, over `after`'s measures (`before` may
    hold more): a cell is moved when its value differs at all (a nan on both sides is unchanged)."""
    measures = after[0].measures
    moves = [Move(a.run_name, m, b.means[m], a.means[m], m in a.counts)
             for b, a in zip(before, after) for m in measures
             if b.means[m] != a.means[m] and not (math.isnan(b.means[m]) and math.isnan(a.means[m]))]
    # counts (NumRelRet, ...) move by whole documents: listed after the means, so as not to crowd them out
    moves.sort(key=lambda move: (move.count, -abs(move.difference)))
    orders = [_reordering(m, [b.means[m] for b in before], [a.means[m] for a in after])
              for m in measures] if len(after) > 1 else []
    return FillMoves(len(after), len(after) * len(measures), moves, orders)


def _reordering(measure: str, before: list[float], after: list[float]) -> Reordering:
    def sign(x: float) -> int:
        return (x > 0) - (x < 0)

    pairs = [(i, j) for i in range(len(before)) for j in range(i + 1, len(before))]
    changed = any(sign(before[i] - before[j]) != sign(after[i] - after[j]) for i, j in pairs)
    return Reordering(measure, changed, kendall_tau(before, after))
