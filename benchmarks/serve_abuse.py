"""Leaderboard server under abuse: each attack shape of issue 28 replayed on 127.0.0.1 against
a fresh `harness serve` process, printing per shape the server's peak memory growth, the time
to the (last) answer, the answers, and the worst `/health` latency while it ran. The board
shape scores 40 runs first (not timed), then one more, and times 20 page loads at once.

    .venv/bin/python benchmarks/serve_abuse.py                       # this checkout's server
    .venv/bin/python benchmarks/serve_abuse.py --tree /tmp/serve-before   # another checkout's

The competitor is the same shapes against another checkout's server (e.g. main's, in a
`git worktree add --detach /tmp/serve-before main`). Sizes are bounded for a shared machine:
the upload limit is 16 MiB (--limit-mb, at most 64) and no request body is larger than
64 MiB; the slow-client shape waits at most 25 s. On main's server, skip "at the limit"
(--skip): a {}-list of the limit's size ran for minutes and GBs there. Memory is the server's VmHWM after /proc/PID/clear_refs, minus its RSS
before the shape (Linux).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.serve_support import (  # noqa: E402
    TASK, ServerProcess, make_uploads, submit_concurrently, team_token, wait_scored, write_config,
)

LIMIT_MB = 16
MiB = 1 << 20
SUBMIT = f"/api/tasks/{TASK}/submissions"
PART = b'--b\r\nContent-Disposition: form-data; name="file"; filename="run.trec"\r\n\r\n'  # the file never ends


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


class Probe:
    """/health every 0.1 s in a thread, keeping the worst latency (a timeout counts as 30 s)."""

    def __init__(self, url: str) -> None:
        self.url, self.worst, self._stop = url, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import httpx

        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                httpx.get(f"{self.url}/health", timeout=30)
            except httpx.HTTPError:
                pass
            self.worst = max(self.worst, time.perf_counter() - started)
            self._stop.wait(0.1)

    def __enter__(self) -> "Probe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def post_upload(url: str, data: bytes, name: str = "run.json", timeout: float = 300) -> str:
    import httpx

    try:
        answer = httpx.post(f"{url}{SUBMIT}", files={"file": (name, data)}, timeout=timeout,
                            headers={"Authorization": f"Bearer {team_token('team0')}"})
        return str(answer.status_code)
    except httpx.HTTPError as problem:
        return type(problem).__name__


def chunked(url: str, path: str, total: int, headers: dict[str, str], head: bytes = b"") -> str:
    """A body of `total` bytes in 1 MiB chunks, without Content-Length (chunked)."""
    import httpx

    def body():
        yield head
        sent = len(head)
        while sent < total:
            yield b"x" * MiB
            sent += MiB

    try:
        return str(httpx.post(f"{url}{path}", content=body(), headers=headers, timeout=300).status_code)
    except httpx.HTTPError as problem:
        return type(problem).__name__


def json_amplification(url: str, size: int) -> list[str]:
    head = b'{"run_name": "r", "run_type": "automatic", "turns": ['
    return [post_upload(url, head + b"{}," * ((size - len(head)) // 3) + b"{}]}")]


def emoji_uploads(url: str, size: int, count: int = 10) -> list[str]:
    data = b'{"run_name": "\xf0\x9f\x98\x80' + b"a" * (size - 100) + b'", "turns": 1}'
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: post_upload(url, data), range(count)))


def slow_clients(url: str, port: int, count: int = 50, wait: float = 25) -> list[str]:
    sockets = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        connection.settimeout(0.05)
        sockets.append(connection)
    deadline, open_ = time.monotonic() + wait, set(range(count))
    while open_ and time.monotonic() < deadline:
        for index in list(open_):
            try:
                sockets[index].sendall(b"X")  # a byte now and then
                if sockets[index].recv(1) == b"":
                    open_.discard(index)
            except socket.timeout:
                pass
            except OSError:
                open_.discard(index)
        time.sleep(1)
    for connection in sockets:
        connection.close()
    return [f"{count - len(open_)} of {count} closed"]


def wrong_tokens(url: str, count: int = 50) -> list[str]:
    import httpx

    codes = [httpx.get(f"{url}/api/submissions/x", headers={"Authorization": f"Bearer guess{i}"}, timeout=30).status_code
             for i in range(count)]
    return [f"{codes.count(401)}x401 {codes.count(429)}x429"]


def scored_runs(url: str, folder: Path, runs: int = 40) -> None:
    """Setting up the board shape: `runs` scored runs, the board seen once."""
    import httpx

    uploads = make_uploads(folder / "runs", teams=1, per_team=runs + 1, seed=500)
    answers = submit_concurrently(url, uploads[:runs], workers=4)
    wait_scored(url, {a.id: team_token("team0") for a in answers}, timeout=600)
    httpx.get(f"{url}/tasks/{TASK}", timeout=600)


def board_after_a_score(url: str, folder: Path, loads: int = 20) -> list[str]:
    """One more run scored, then `loads` anonymous page loads at once."""
    import httpx

    last = submit_concurrently(url, make_uploads(folder / "last", teams=1, per_team=1, seed=900), workers=1)
    wait_scored(url, {last[0].id: team_token("team0")}, timeout=600)
    with ThreadPoolExecutor(loads) as pool:
        codes = list(pool.map(lambda _: httpx.get(f"{url}/tasks/{TASK}", timeout=600).status_code, range(loads)))
    return [f"{codes.count(200)}x200"]


def shapes(folder: Path, limit: int):
    big_login = {"Content-Type": "application/x-www-form-urlencoded"}
    upload = {"Authorization": f"Bearer {team_token('team0')}", "Content-Type": "multipart/form-data; boundary=b"}
    return {
        "json {} x turns, 1 MiB": lambda s: json_amplification(s.url, MiB),
        "json {} x turns, 4 MiB": lambda s: json_amplification(s.url, 4 * MiB),
        "json {} x turns, at the limit": lambda s: json_amplification(s.url, limit - 100),
        "chunked upload, 64 MiB": lambda s: [chunked(s.url, SUBMIT, 64 * MiB, upload, PART)],
        "POST /login, 64 MiB": lambda s: [chunked(s.url, "/login", 64 * MiB, big_login)],
        "10 emoji uploads at the limit": lambda s: emoji_uploads(s.url, limit),
        "nesting 200k deep": lambda s: [post_upload(s.url, b"[" * 200_000 + b"]" * 200_000)],
        "integer of 100k digits": lambda s: [post_upload(s.url, b'{"turns": [], "n": ' + b"7" * 100_000 + b"}")],
        "50 wrong tokens": lambda s: wrong_tokens(s.url),
        "50 slow-header clients": lambda s: slow_clients(s.url, s.port),
        "board: 20 loads after a score": lambda s: board_after_a_score(s.url, folder),
    }


SETUP = {"board: 20 loads after a score": lambda server, folder: scored_runs(server.url, folder)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose server is measured")
    parser.add_argument("--only", nargs="*", help="shape names (substrings) to run")
    parser.add_argument("--skip", nargs="*", default=(), help="shape names (substrings) not to run")
    parser.add_argument("--limit-mb", type=int, default=LIMIT_MB, help=f"upload limit (default {LIMIT_MB}, at most 64)")
    args = parser.parse_args()
    limit_mb = min(args.limit_mb, 64)
    rows = []
    with tempfile.TemporaryDirectory(prefix="serve-abuse-") as folder:
        folder = Path(folder)
        for number, (name, run) in enumerate(shapes(folder, limit_mb * MiB).items()):
            if args.only and not any(part in name for part in args.only) or any(part in name for part in args.skip):
                continue
            config = write_config(folder / f"s{number}", quota=100, max_upload_mb=limit_mb)
            with ServerProcess(config, tree=args.tree.resolve()) as server:
                pid = server.process.pid
                if name in SETUP:
                    SETUP[name](server, folder)
                time.sleep(1)
                before = status_kb(pid, "VmRSS")
                Path(f"/proc/{pid}/clear_refs").write_text("5")
                with Probe(server.url) as probe:
                    started = time.perf_counter()
                    answers = run(server)
                    seconds = time.perf_counter() - started
                growth = (status_kb(pid, "VmHWM") - before) / 1024
                alive = server.process.poll() is None
            rows.append((name, growth, seconds, probe.worst, " ".join(sorted(set(answers))) + ("" if alive else " DIED")))
            print(json.dumps({"shape": name, "MiB": round(growth), "s": round(seconds, 2), "health_s": round(probe.worst, 2),
                              "answers": answers}), file=sys.stderr)
    print(f"server: {args.tree.resolve()} (upload limit {limit_mb} MiB)")
    print(f"{'shape':32} {'peak +MiB':>9} {'answer s':>9} {'/health s':>9}  answers")
    for name, growth, seconds, worst, answers in rows:
        print(f"{name:32} {growth:9.0f} {seconds:9.2f} {worst:9.2f}  {answers}")


if __name__ == "__main__":
    main()
