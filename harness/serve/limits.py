"""Bounded work per request: what one client may make the server read, wait for and retry.

- `BodyLimit`: an ASGI middleware counting each request's body while it is read (chunked or
  not), against its route's limit: past it, 413; a body that stops arriving for the
  client timeout, 408. Nothing is read before the count says it may be.
- `HeadTimeoutH11`: uvicorn's h11 protocol, closing a connection whose request head is not
  complete within the client timeout (uvicorn itself waits for ever: a slow-header client
  would hold its connection).
- `Window`: per key (team, address), how many events (rejected uploads) fell in the last
  hour; `Backoff`: per address, failed logins and bearer tokens, doubling the wait after
  each failure past the first few.
- `RedactTokens`: a log filter taking `token=...` out of uvicorn's access lines.

All of it is per process: with PostgreSQL and several processes each keeps its own counts.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable

from fastapi import HTTPException
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_KEYS = 100_000  # addresses and teams remembered; the least recently seen are forgotten
HOUR = 3600.0


class BodyLimit:
    """ASGI middleware: `limit_of(method, path)` (bytes, and what they are for, said in the 413)
    of body at most, each chunk within `timeout()` seconds of the last. Raised as HTTPException
    from the app's own read, so the route answers it (413, 408) as it answers every other refusal;
    a body its Content-Length says is over the limit is answered at once, unread, by
    `refuse(scope, status, detail)` (the app's refusal: a page to a browser, JSON to a script)."""

    def __init__(self, app, limit_of: Callable[[str, str], tuple[int, str]], timeout: Callable[[], float],
                 refuse: Callable[[dict, int, str], Awaitable[Callable]]) -> None:
        self.app, self.limit_of, self.timeout, self.refuse = app, limit_of, timeout, refuse

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit, purpose = self.limit_of(scope["method"], scope["path"])
        over = f"the request body is larger than the {size(limit)} allowed here{purpose}"
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            answer = await self.refuse(scope, 413, over)
            await answer(scope, receive, send)
            return
        read, done = 0, False

        async def limited() -> dict:
            nonlocal read, done
            if done:  # after the body: the app waits for a disconnect, for as long as it likes
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout())
            except asyncio.TimeoutError:
                raise HTTPException(408, f"the request body stopped arriving for {self.timeout():g} s") from None
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                done = not message.get("more_body", False)
                if read > limit:
                    raise HTTPException(413, over)
            return message

        await self.app(scope, limited, send)


def size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"


class HeadTimeoutH11(H11Protocol):
    """Closes a connection that has not sent a whole request head `head_timeout` seconds
    after it opened or after its last answer (a byte now and then does not extend it)."""

    head_timeout = 20.0  # set by `harness serve` from the config

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def _arm(self) -> None:
        self._answers = getattr(self, "_answers", -1) + 1
        self.loop.call_later(self.head_timeout, self._head_overdue, self._answers)

    def _head_overdue(self, answers: int) -> None:
        idle = self.cycle is None or self.cycle.response_complete  # no request is being answered
        if answers == self._answers and idle and not self.transport.is_closing():
            self.transport.close()


class Window:
    """Events per key in a sliding hour; thread-safe."""

    def __init__(self, per_hour: int) -> None:
        self.per_hour = per_hour
        self._events: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, key: str) -> float:
        """Seconds until `key` may try again (0: now)."""
        with self._lock:
            events = self._recent(key)
            return 0.0 if len(events) < self.per_hour else events[0] + HOUR - time.monotonic()

    def add(self, key: str) -> None:
        with self._lock:
            self._recent(key).append(time.monotonic())
            _forget_oldest(self._events)

    def _recent(self, key: str) -> deque[float]:
        events = self._events.setdefault(key, deque())
        self._events.move_to_end(key)
        while events and events[0] < time.monotonic() - HOUR:
            events.popleft()
        return events


class Backoff:
    """Failed attempts per address: the first `free` cost nothing, each one after doubles the
    wait before the next (1 s, 2 s, 4 s ... at most `longest`); a success clears it."""

    def __init__(self, free: int = 5, longest: float = 300.0) -> None:
        self.free, self.longest = free, longest
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, address: str) -> float:
        with self._lock:
            count, last = self._failures.get(address, (0, 0.0))
        if count < self.free:
            return 0.0
        return max(0.0, last + min(2.0 ** (count - self.free), self.longest) - time.monotonic())

    def failed(self, address: str) -> int:
        """Count a failure; the address's failures in a row, this one included."""
        with self._lock:
            count, last = self._failures.pop(address, (0, 0.0))
            if time.monotonic() - last > HOUR:  # an hour without failures starts afresh
                count = 0
            self._failures[address] = (count + 1, time.monotonic())
            _forget_oldest(self._failures)
            return count + 1

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)


def _forget_oldest(table: OrderedDict) -> None:
    while len(table) > MAX_KEYS:
        table.popitem(last=False)


def too_many(seconds: float, detail: str) -> HTTPException:
    return HTTPException(429, detail, headers={"Retry-After": str(max(1, round(seconds)))})


# a parameter's name stops at the next `?` too, so that each character is read once per URL (a name
# that could hold `?` was read again from every `?` in it: n² time on a URL of `?`s, which anyone may send)
_TOKEN = re.compile(r"((?:^|[?&;])[^=&;?]*token=)[^&;#\s]*", re.IGNORECASE)


def redact(text: str) -> str:
    """A URL with the value of every `...token=` parameter replaced by `***`."""
    return _TOKEN.sub(r"\1***", text)


class RedactTokens(logging.Filter):
    """uvicorn's access line is `%s - "%s %s HTTP/%s" %d` with the path and query third."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            record.args = (*record.args[:2], redact(record.args[2]), *record.args[3:])
        return True
