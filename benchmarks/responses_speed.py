"""Response evaluation speed: the 23 CONE-RAG runs (iKAT 2024, human nuggets) judged by the
offline baseline (`minilm`) and scored, cold (empty judge cache) and from the cache, beside
nuggetizer's own metric function on the same assignments.

    HARNESS_SHARED=../shared .venv/bin/python benchmarks/responses_speed.py [--runs 23] [--turns 79] [--rounds 3] [--cache DIR]

- cold: a fresh cache folder (or `--cache DIR`, kept: a second call measures the first pass
  from that cache, and says how many texts it encoded); MiniLM loads, encodes every nugget and response sentence once
  and judges every (nugget, response) pair; judgments/s counts pairs over the whole wall time
  (reading, judging, scoring);
- cached: the same evaluation again in a new process state (the judge reads its cache, loads
  no model); the fastest of `--rounds`;
- competitor: nuggetizer.core.metrics.calculate_global_metrics over the assignment records
  the cached evaluation wrote, per run (scoring only: it reads no file and judges nothing);
  the ratio says what reading, judging from the cache and the harness's extra scores cost on
  top of the bare arithmetic.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from harness.responses.baseline import MiniLMJudge
from harness.responses.evaluation import evaluate_runs
from harness.responses.nuggets import read_bank
from harness.responses.readers import read_responses


def cone_rag() -> Path:
    root = Path(os.environ.get("HARNESS_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    folder = root / "data/ikat/2024/cone-rag/resources"
    if not folder.is_dir():
        sys.exit(f"no CONE-RAG resource at {folder}; set HARNESS_SHARED to the shared folder")
    return folder


def load(runs: int, turns: int):
    folder = cone_rag()
    found = (read_responses(folder / "participant_resources/automatic_responses.json")
             + read_responses(folder / "participant_resources/manual_responses.json"))[:runs]
    kept = sorted(found[0].responses)[:turns]
    for run in found:
        for turn in list(run.responses):
            if turn not in kept:
                del run.responses[turn]
    return found, read_bank(folder / "human_resources/gold_nuggets_human.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=23)
    parser.add_argument("--turns", type=int, default=79)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", help="the judge cache folder (default: a fresh temporary one)")
    args = parser.parse_args()
    from nuggetizer.core.metrics import calculate_global_metrics

    with tempfile.TemporaryDirectory() as fresh:
        cache = args.cache or fresh
        started = time.perf_counter()
        runs, bank = load(args.runs, args.turns)
        judge = MiniLMJudge(cache_dir=Path(cache))
        cold = evaluate_runs(runs, bank, judge)
        cold_s = time.perf_counter() - started
        print(f"{len(runs)} runs, {len(cold.turns)} turns, {cold.judgments} judgments, "
              f"{judge.encoded} texts encoded")
        print(f"first pass (MiniLM loads, encodes, judges, scores; cold when it encoded every text): {cold_s:.1f} s, "
              f"{cold.judgments / cold_s:.0f} judgments/s")
        cached_s, records = [], None
        for _ in range(args.rounds):
            started = time.perf_counter()
            runs, bank = load(args.runs, args.turns)
            cached = evaluate_runs(runs, bank, MiniLMJudge(cache_dir=Path(cache)))
            cached_s.append(time.perf_counter() - started)
            records = cached.records
        assert cached.per_turn().equals(cold.per_turn()), "the cached evaluation differs from the cold one"
        best = min(cached_s)
        print(f"from the cache (reads the files, judges from the cache, scores): {best:.2f} s "
              f"(rounds: {', '.join(f'{s:.2f}' for s in cached_s)}), {cached.judgments / best:.0f} judgments/s")
        timings = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            for run in cached.runs:
                calculate_global_metrics([r for r in records if r["run_id"] == run])
            timings.append(time.perf_counter() - started)
        print(f"nuggetizer's calculate_global_metrics on the same assignments (scoring only): {min(timings):.3f} s; "
              f"harness from cache / nuggetizer = {best / min(timings):.1f}x")


if __name__ == "__main__":
    main()
