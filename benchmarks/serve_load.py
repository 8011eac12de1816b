"""Leaderboard server load: many teams submitting at once, against the same uploads sent one
at a time (the competitor: a server that is only ever asked by one client).

    .venv/bin/python benchmarks/serve_load.py [--teams 10] [--per-team 5]

A real `harness serve` process on 127.0.0.1 with a fresh SQLite database receives
teams x per-team distinct real runs (iKAT 2023 JSON and TREC files from the shipped qrels,
alternating), all at once; a second fresh server receives them sequentially. Prints stored
and scored throughput and the upload latency percentiles (p50/p90/p99) of both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.serve_support import (  # noqa: E402
    ServerProcess, make_uploads, submit_concurrently, team_token, wait_scored, write_config,
)


def measure(folder: Path, uploads, workers: int | None) -> dict[str, float]:
    config = write_config(folder, teams=len({u.team for u in uploads}), quota=len(uploads))
    with ServerProcess(config) as server:
        started = time.perf_counter()
        answers = submit_concurrently(server.url, uploads, workers)
        stored = time.perf_counter() - started
        failed = [a for a in answers if a.status != 202]
        if failed:
            raise SystemExit(f"{len(failed)} uploads were not accepted: {[a.status for a in failed]}")
        wait_scored(server.url, {a.id: team_token(a.upload.team) for a in answers}, timeout=1800)
        scored = time.perf_counter() - started
    p50, p90, p99 = np.percentile([a.seconds for a in answers], [50, 90, 99])
    return {"stored/s": len(uploads) / stored, "scored/s": len(uploads) / scored, "p50": p50, "p90": p90, "p99": p99}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=10)
    parser.add_argument("--per-team", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-load-") as folder:
        folder = Path(folder)
        uploads = make_uploads(folder / "runs", args.teams, args.per_team)
        n = len(uploads)
        results = {
            f"concurrent ({n} at once)": measure(folder / "concurrent", uploads, None),
            "sequential (one at a time)": measure(folder / "sequential", uploads, 1),
        }
    print(f"{n} submissions from {args.teams} teams on 127.0.0.1 (SQLite)")
    print(f"{'mode':28} {'stored/s':>9} {'scored/s':>9} {'p50 s':>7} {'p90 s':>7} {'p99 s':>7}")
    for mode, r in results.items():
        print(f"{mode:28} {r['stored/s']:9.2f} {r['scored/s']:9.2f} {r['p50']:7.2f} {r['p90']:7.2f} {r['p99']:7.2f}")
    concurrent, sequential = results.values()
    print(f"concurrent / sequential stored throughput: {concurrent['stored/s'] / sequential['stored/s']:.2f}x")


if __name__ == "__main__":
    main()
