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

from harness.workers import WorkerDied, process_pool

_folder: Path | None = None


def _start(folder: str) -> None:
    global _folder
    _folder = Path(folder)


def _slow_task(number: int) -> bytes:
    assert _folder is not None
    (_folder / str(number)).touch()
    time.sleep(0.05)
    return bytes(1 << 20)  # a result larger than a pipe holds: sent in pieces


def _killed_at_3(number: int) -> int:
    if number == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return number


def _interrupted_task(number: int) -> str:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the signal is handled (or ignored) by now
    return f"worker {number} alive"


@pytest.mark.slow  # 20 pools sending 16 MB results: 7 s
def test_a_pool_left_while_workers_send_large_results_ends_where_pool_terminate_hung():
    """Left after two of fifty 16 MB results, Pool's terminate() hung in about 1 try in 4 here
    (its result thread waiting for the rest of a message a killed worker had begun): 20 tries."""
    script = textwrap.dedent("""
        import multiprocessing
        from harness.workers import process_pool

        def big(number):
            return bytes(16 << 20)

        for _ in range(20):
            with process_pool(multiprocessing.get_context("fork"), 2) as pool:
                for number, _ in enumerate(pool.imap(big, range(50))):
                    if number == 2:
                        break
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("way", ["imap", "map"])
def test_a_worker_killed_mid_task_is_an_error_not_a_wait_for_ever(tmp_path, way):
    """Pool replaces a dead worker and waits for its task's result for ever."""
    context = multiprocessing.get_context("fork")
    with pytest.raises(WorkerDied, match="a worker process ended before its task was done"):
        with process_pool(context, 2, _start, (str(tmp_path),)) as pool:
            list(getattr(pool, way)(_killed_at_3, range(10)))


def test_a_pool_left_after_a_worker_died_is_not_waited_for_for_ever(tmp_path):
    """Leaving (here on an error of the caller's) waits for the tasks at hand: never the dead one's."""
    context = multiprocessing.get_context("fork")
    with pytest.raises(RuntimeError, match="the caller's"):
        with process_pool(context, 2, _start, (str(tmp_path),)) as pool:
            for result in pool.imap(_killed_at_3, range(10)):
                if result == 2:
                    time.sleep(0.5)  # task 3's worker is dead by now
                    raise RuntimeError("the caller's")


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
