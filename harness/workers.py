"""Process pools that end by letting their workers finish, never by killing them.

`multiprocessing.Pool.terminate()` (what leaving `with Pool(...)` calls) kills workers that
may be halfway through sending a result: the parent's result thread then waits for the rest
of that message for ever, and the command hangs after a Ctrl-C (one `harness segment` in 75
did, with its large batches of passages). A pool from `process_pool` instead stops feeding
tasks, lets each worker skip what it has not started and finish what it has (a long task may
end early: `stopping()`), and joins it.

Its workers ignore Ctrl-C, which a terminal sends to the whole process group: the parent
decides, and no worker prints a KeyboardInterrupt traceback of its own. SIGINT stays blocked
from the fork until a worker ignores it, so none is caught in between.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing.context
import multiprocessing.pool
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_stop: Any = None  # in a worker: its pool's stop event, set once the parent stops the pool


def _start(stop: Any, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    global _stop
    _stop = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
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


class StoppablePool:
    """`imap` and `map` of a pool whose tasks are skipped once it stops (their results, None,
    are never read: the caller is leaving)."""

    def __init__(self, pool: multiprocessing.pool.Pool, stop: Any):
        self._pool, self._stop = pool, stop

    def imap(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """Results in order; `items` is read as workers need them, and no further once stopped."""
        return self._pool.imap(functools.partial(_unless_stopped, function), _fed(items, self._stop))

    def map(self, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        return self._pool.map(functools.partial(_unless_stopped, function), items, chunksize=1)


@contextlib.contextmanager
def process_pool(
    context: multiprocessing.context.BaseContext, processes: int,
    initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = (),
) -> Iterator[StoppablePool]:
    """`processes` workers of `context`, each set up by `initializer(*initargs)` if given; on leaving,
    for whatever reason, they finish the task at hand and exit."""
    stop = context.Event()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = context.Pool(processes, _start, (stop, initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:
        yield StoppablePool(pool, stop)
    finally:
        stop.set()
        pool.close()
        try:
            pool.join()
        finally:
            pool.terminate()  # nothing left to kill: it drops the pool's exit handler
