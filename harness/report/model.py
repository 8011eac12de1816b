"""What a report holds: a leaderboard, breakdowns and arena ratings. Every format renders
this one record (harness.report.formats)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.evaluate.moved import FillMoves
from harness.report.arena import Arena
from harness.report.breakdown import Breakdown
from harness.report.compare import Leaderboard


@dataclass
class Report:
    leaderboard: Leaderboard
    breakdowns: list[Breakdown] = field(default_factory=list)
    # measure -> run -> mean over conversations of each conversation's mean over turns
    conversation_means: dict[str, dict[str, float]] = field(default_factory=dict)
    arena: Arena | None = None
    title: str = "Run comparison"
    # measures shown beside the tested ones but outside the test family (e.g. Judged@10): name -> run -> mean
    untested: dict[str, dict[str, float]] = field(default_factory=dict)
    # lines every format prints under the title (e.g. where filled-in labels came from)
    notes: list[str] = field(default_factory=list)
    # with --fill: the leaderboard cells the filled labels moved, and the runs' order before and after
    fill_moves: FillMoves | None = None
