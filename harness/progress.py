"""Progress bars that draw only on a terminal.

On a log or a pipe (`make demo > log`, CI) every refresh of a bar is a line of its own, so
there a bar is off and a long job says once, when it ends, what it did instead.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

# What a run makes on first use in less is no long job to account for (a PTKB task's dozens of
# per-conversation statement indexes, built in 0.0 s each, were a line each on the demo's log).
SAID_FROM_S = 1.0


def progress_bar(desc: str, unit: str, *, total: int | None = None, file: TextIO | None = None,
                 shown: bool = True, **options: Any) -> tqdm:
    """A tqdm bar on `file` (default: stderr as it is now) that draws only where `file` is a
    terminal (tqdm's disable=None), and never when not `shown`; closing it disables it, so a
    caller that prints its own line on a non-terminal reads `disable` before."""
    return tqdm(total=total, desc=desc, unit=unit, file=file or sys.stderr, disable=None if shown else True,
                **options)


def written(what: str, out: Path, started: float, tail: str = "") -> str:
    """`WHAT written to OUT in N s`: the line a job that wrote `out`, begun at `started`
    (time.perf_counter), ends with, `tail` after it."""
    return f"{what} written to {out} in {time.perf_counter() - started:.1f} s{tail}"


def say_made(what: str, out: Path, started: float, note: str = "") -> None:
    """Say on stderr, terminal or not, what a run made on first use and kept (an index, its
    BM25 export, a corpus's vectors) when it took SAID_FROM_S or more, or has a `note`: on a log
    the run's own line times its ranking alone, and this one says where the set-up went."""
    if time.perf_counter() - started >= SAID_FROM_S or note:
        print(written(what, out, started, f" (once: later runs reuse it){note}"), file=sys.stderr)
