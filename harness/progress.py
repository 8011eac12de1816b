"""Progress bars that draw only on a terminal.

On a log or a pipe (`make demo > log`, CI) every refresh of a bar is a line of its own, so
there a bar is off and a long job says once, when it ends, what it did instead.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm


def progress_bar(desc: str, unit: str, *, total: int | None = None, file: TextIO | None = None,
                 shown: bool = True, **options: Any) -> tqdm:
    """A tqdm bar on `file` (default: stderr as it is now) that draws only where `file` is a
    terminal (tqdm's disable=None), and never when not `shown`; closing it disables it, so a
    caller that prints its own line on a non-terminal reads `disable` before."""
    return tqdm(total=total, desc=desc, unit=unit, file=file or sys.stderr, disable=None if shown else True,
                **options)
