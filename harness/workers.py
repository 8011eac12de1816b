"""Process pools that end by letting their workers finish, never by killing them mid-message.

`multiprocessing.Pool.terminate()` (what leaving `with Pool(...)` calls) kills workers that
may be halfway through sending a result: the parent's result thread then waits for the rest
of that message for ever, and the command hangs after a Ctrl-C (one `harness segment` in 75
did, with its large batches of passages). A pool from `process_pool` instead stops feeding
tasks, lets each worker skip what it has not started and finish what it has (a long task may
end early: `stopping()`), and joins it. A second Ctrl-C while they finish ends them at once.

A worker that dies (killed, e.g. for want of memory) takes its task with it: Pool starts another
and waits for that task's result for ever. Here it is an error, whether the pool is running or
being left, and only then is the pool terminated.

Its workers ignore Ctrl-C, which a terminal sends to the whole process group: the parent
decides, and no worker prints a KeyboardInterrupt traceback of its own. SIGINT stays blocked
from the fork until a worker ignores it, so none is caught in between.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import multiprocessing.context
import multiprocessing.pool
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harness.errors import HarnessError

POLL_S = 0.2  # how often a waiting parent looks for a dead worker
_stop: Any = None  # in a worker: its pool's stop event, set once the parent stops the pool


def _start(stop: Any, started: Any, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    global _stop
    _stop = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    with started.get_lock():  # one more than the pool's size: a worker died and Pool replaced it
        started.value += 1
    if initializer is not None:
        initializer(*initargs)


def stopping() -> bool:
    """In a worker: its pool is being left. A long task may return early; its result is not read."""
    return _stop is not None and _stop.is_set()


def _unless_stopped(function: Callable[[Any], Any], item: Any) -> Any:
    return None if stopping() else function(item)


def _fed(items: Iterable[Any], stop: Any) -> Iterator[Any]:
    for item in items:
        if stop.is_set():
            return
        yield item


class WorkerDied(HarnessError):
    def __init__(self) -> None:
        super().__init__("a worker process ended before its task was done (killed, e.g. for want of memory?): "
                         "run again with fewer worker processes or more memory")


class StoppablePool:
    """`imap` and `map` of a pool whose tasks are skipped once it stops (their results, None,
    are never read: the caller is leaving); a worker's death is a WorkerDied, not a wait for ever."""

    def __init__(self, pool: multiprocessing.pool.Pool, stop: Any, started: Any, processes: int):
        self._pool, self._stop, self._started, self._processes = pool, stop, started, processes

    def check(self) -> None:
        if self._started.value > self._processes:
            raise WorkerDied

    def imap(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Results in order; `items` is read as workers need them, and no further once stopped."""
        results = self._pool.imap(functools.partial(_unless_stopped, function), _fed(items, self._stop))
        while True:
            try:
                yield results.next(POLL_S)
            except StopIteration:
                return
            except multiprocessing.TimeoutError:
                self.check()

    def map(self, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        results = self._pool.map_async(functools.partial(_unless_stopped, function), items, chunksize=1)
        while not results.ready():
            results.wait(POLL_S)
            self.check()
        return results.get()

    def leave(self) -> None:
        """Stop, let the workers finish what they hold, and join them; a dead worker's task
        is never finished: then, and on a second Ctrl-C, they are terminated."""
        self._stop.set()
        self._pool.close()
        joined = threading.Thread(target=self._pool.join, daemon=True)
        joined.start()
        try:
            while joined.is_alive() and self._started.value <= self._processes:
                joined.join(POLL_S)
        finally:
            self._pool.terminate()  # once joined, nothing left to kill: it drops the pool's exit handler


@contextlib.contextmanager
def process_pool(
    context: multiprocessing.context.BaseContext, processes: int,
    initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = (),
) -> Iterator[StoppablePool]:
    """`processes` workers of `context`, each set up by `initializer(*initargs)` if given; on leaving,
    for whatever reason, they finish the task at hand and exit."""
    stop, started = context.Event(), context.Value("i", 0)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = context.Pool(processes, _start, (stop, started, initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    stoppable = StoppablePool(pool, stop, started, processes)
    try:
        yield stoppable
    finally:
        stoppable.leave()
