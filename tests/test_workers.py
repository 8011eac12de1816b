"""harness.workers: a pool ends by letting its workers finish the task at hand, never by killing
one halfway through sending its result (which hung the parent for ever)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.workers import process_pool

_folder: Path | None = None


def _start(folder: str) -> None:
    global _folder
    _folder = Path(folder)


def _slow_task(number: int) -> bytes:
    assert _folder is not None
    (_folder / str(number)).touch()
    time.sleep(0.05)
    return bytes(1 << 20)  # a result larger than a pipe holds: sent in pieces


def _interrupted_task(number: int) -> str:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the signal is handled (or ignored) by now
    return f"worker {number} alive"


def test_a_pool_left_while_workers_send_large_results_ends_where_pool_terminate_hung():
    """Left after two of fifty 16 MB results, Pool's terminate() hung at once, every time
    (its result thread waiting for the rest of a message a killed worker had begun)."""
    script = textwrap.dedent("""
        import multiprocessing
        from harness.workers import process_pool

        def big(number):
            return bytes(16 << 20)

        with process_pool(multiprocessing.get_context("fork"), 2) as pool:
            for number, _ in enumerate(pool.imap(big, range(50))):
                if number == 2:
                    break
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_pool_left_by_ctrl_c_runs_no_task_that_had_not_started(tmp_path):
    context = multiprocessing.get_context("fork")
    with pytest.raises(KeyboardInterrupt):
        with process_pool(context, 2, _start, (str(tmp_path),)) as pool:
            for _ in pool.imap(_slow_task, range(100)):
                raise KeyboardInterrupt
    assert len(list(tmp_path.iterdir())) < 20  # those at hand when it stopped, not the 100


def test_workers_ignore_a_ctrl_c_the_terminal_sends_them_too(tmp_path):
    context = multiprocessing.get_context("fork")
    with process_pool(context, 2, _start, (str(tmp_path),)) as pool:
        assert pool.map(_interrupted_task, range(4)) == [f"worker {n} alive" for n in range(4)]


def test_a_pool_run_to_its_end_gives_every_result_in_order(tmp_path):
    context = multiprocessing.get_context("fork")
    with process_pool(context, 2, _start, (str(tmp_path),)) as pool:
        assert list(pool.imap(len, [b"a" * n for n in range(50)])) == list(range(50))
