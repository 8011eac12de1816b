"""`harness arena`: Elo and Bradley-Terry ratings (with bootstrap intervals) from pairwise
votes, win rates, and, given dialogues, satisfaction rates and their correlation."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.atomic import atomic_write
from harness.cli import add_format, add_output, number_in
from harness.errors import HarnessError, counted, verb
from harness.paths import output_format, refuse_overwriting
from harness.report import arena as arena_lib
from harness.report.arena import Arena, EloSettings
from harness.report.formats import arena_csv, arena_dict
from harness.report.markdown import arena_markdown, arena_rows, correlation_rows, win_rate_rows
from harness.report.stats import SEED_MAX
from harness.topics.crsarena import read_dialogues


ARENA_FORMATS = ("table", "csv", "json", "md")
BOOTSTRAP = 1000  # resamples of the percentile intervals by default, and the fewest not warned of
# at K = the Elo scale one vote can move the odds between two systems tenfold; K 100000 overflowed a float
K_MAX = int(EloSettings.scale)
ARENA_SUFFIXES = {"txt": "table", "markdown": "md"}  # an --output suffix -> the format it names, besides their own


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # several files after one option, or the option repeated
    parser.add_argument("--votes", action="extend", nargs="+", required=True, metavar="CSV",
                        help="vote file(s) (session_id,user_id,crs1,crs2,vote): applied one after the "
                        "other in the order given")
    parser.add_argument("--dialogues", action="extend", nargs="+", default=[], metavar="JSON",
                        help="CRSArena-Dial dialogue file(s): satisfaction rate per system")
    add_format(parser, ARENA_FORMATS, help="an aligned text table, CSV or JSON (the ratings), or Markdown (default: "
               "as --output's suffix says, .csv .json .md (.markdown), .txt or .table for the table; the table on "
               "stdout or to a name without a suffix)")
    add_output(parser, stdout=True, help="write here (atomically) instead of stdout")
    parser.add_argument("--seed", type=number_in(0, SEED_MAX, whole=True), default=42, help="bootstrap seed (default 42)")
    parser.add_argument("--bootstrap", type=number_in(1, math.inf, whole=True), default=BOOTSTRAP,
                        help=f"bootstrap resamples of the Bradley-Terry intervals (default {BOOTSTRAP}; fewer are "
                        "warned of)")
    parser.add_argument("--initial", type=number_in(-math.inf, math.inf), default=1000.0,
                        help="initial Elo rating (default 1000)")
    parser.add_argument("--k", type=number_in(0, K_MAX, open_low=True), default=16.0,
                        help=f"Elo K factor, above 0 and at most {K_MAX} (default 16)")
    parser.add_argument("--ties", choices=sorted(arena_lib.TIE_CONVENTIONS), default="half",
                        help="Bradley-Terry: a tie is half a win for each side, or dropped (default half)")


def refuse_given_twice(vote_files: Sequence[str], dialogue_files: Sequence[str]) -> None:
    """A vote or dialogue file given twice (as a run given twice to compare) would count its votes
    or dialogues twice: refused, before any work."""
    for files in (vote_files, dialogue_files):
        given = [Path(path).resolve() for path in files]
        if twice := next((path for index, path in enumerate(files) if given[index] in given[:index]), None):
            raise HarnessError(f"{twice} is given twice")


def build_arena(
    vote_files: Sequence[str], dialogue_files: Sequence[str], seed: int, resamples: int,
    settings: EloSettings = EloSettings(), ties: str = "half",
) -> Arena:
    """The ratings of `harness arena` and `harness compare --arena-votes` (which refuse a file given
    twice before any work: refuse_given_twice); votes repeated (a copy of a file, rows pasted twice),
    systems' names that differ only in case or have no dialogues, and too few resamples are warned of."""
    if resamples < 1:
        raise HarnessError(f"bootstrap resamples must be positive, not {resamples}")
    votes = [vote for path in vote_files for vote in arena_lib.read_votes(path)]
    conversations = [c for path in dialogue_files for c in read_dialogues(path)]
    if repeats := arena_lib.repeated_votes(votes):
        vote, first = repeats[0]
        n = len(repeats)
        print(f"warning: {counted(n, 'vote')} {verb(n, 'repeats', 'repeat')} an earlier vote's session_id, user_id, "
              f"systems and vote (the first: {vote.where}, as {first.where}), and {verb(n, 'is', 'are')} counted "
              "again: is a file given "
              "under two names, or are rows pasted twice?", file=sys.stderr)
    for warning in arena_lib.name_warnings(votes, conversations):
        print(f"warning: {warning}", file=sys.stderr)
    if resamples < BOOTSTRAP:
        print(f"warning: {counted(resamples, 'bootstrap resample')}: a 95% percentile interval wants {BOOTSTRAP} or "
              "more (Efron & Tibshirani 1993); from fewer than 40 its 2.5% tails hold no resample, and it may not "
              "even hold the rating", file=sys.stderr)
    return arena_lib.arena(votes, conversations=conversations, settings=settings, ties=ties,
                           resamples=resamples, seed=seed, sources=[Path(p).name for p in vote_files])


def _is_number(cell: str) -> bool:
    """A number, a percentage, an interval '[a, b]', or a win rate with its votes '0.50 (2)'."""
    try:
        float(re.sub(r" \(\d+\)$", "", cell).strip("[]%").split(",")[0])
        return True
    except ValueError:
        return cell == "-"


def _plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned text columns: numbers (and intervals) to the right, text to the left; a blank cell
    (a system without dialogues has no satisfaction) leaves its column a number's."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    numeric = [all(_is_number(str(r[i])) for r in rows if str(r[i])) for i in range(len(header))]
    return "\n".join(
        "  ".join(str(c).rjust(widths[i]) if numeric[i] else str(c).ljust(widths[i]) for i, c in enumerate(row))
        for row in [header, *rows]
    ) + "\n"


def render(arena: Arena, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(arena_dict(arena), indent=2) + "\n"
    if fmt == "csv":
        return arena_csv(arena)
    if fmt == "md":
        return arena_markdown(arena)
    text = _plain_table(*arena_rows(arena)) + "\n" + arena.legend() + "\n\n" + _plain_table(*win_rate_rows(arena))
    if arena.correlations:
        text += "\n" + _plain_table(*correlation_rows(arena))
    return text


def run(args: argparse.Namespace) -> int:
    refuse_given_twice(args.votes, args.dialogues)
    refuse_overwriting([*args.votes, *args.dialogues], [("--output", args.out)])
    # --format, else as --output's suffix says (ratings.csv: csv), else the table; another suffix: said before any work
    fmt = output_format(args.format, args.out, ARENA_FORMATS, "table", ARENA_SUFFIXES)
    arena = build_arena(args.votes, args.dialogues, args.seed, args.bootstrap,
                        EloSettings(initial=args.initial, k=args.k), args.ties)
    text = render(arena, fmt)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    with atomic_write(args.out) as handle:
        handle.write(text)
    print(f"ratings written to {args.out}", file=sys.stderr)
    return 0
