"""Progress bars draw on a terminal only: on a log or a pipe each refresh would be a line."""

from __future__ import annotations

import io

from harness.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_draws_on_a_terminal_only_and_only_when_shown():
    drawn = {}
    for name, stream, shown in [("terminal", Terminal(), True), ("log", io.StringIO(), True),
                                ("terminal, not shown", Terminal(), False)]:
        with progress_bar("work", " docs", total=3, file=stream, shown=shown) as bar:
            bar.update(3)
        drawn[name] = "3/3" in stream.getvalue()
    assert drawn == {"terminal": True, "log": False, "terminal, not shown": False}
