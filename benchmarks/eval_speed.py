"""Evaluation speed: `harness eval` on many runs vs one trec_eval process per run.

    .venv/bin/python benchmarks/eval_speed.py [--copies 20] [--trec-eval PATH]

Runs: the five CAsT 2021 organiser document runs, each copied --copies times under new
names. harness: one `harness eval` process over all runs. Competitor: the trec_eval binary
(--trec-eval, $TREC_EVAL or `trec_eval` on PATH), one process per run with the same
measures (-c -M1000 -l2). Without a binary, pytrec_eval (trec_eval's C code in-process, one
evaluator per run) stands in and is named as such. Prints wall times and the ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QRELS = REPO / "qrels" / "cast" / "trec-cast-qrels-docs.2021.qrel"
RUNS = sorted((REPO / "data" / "cast" / "2021" / "baselines" / "document_runs").glob("*.run"))
HARNESS_MEASURES = ["P(rel=2)@10", "AP(rel=2)@1000", "RR(rel=2)", "R(rel=2)@1000"]
TREC_EVAL_MEASURES = ["P.10", "map", "recip_rank", "recall.1000"]


def time_harness(runs: list[Path]) -> float:
    harness = Path(sys.executable).with_name("harness")
    start = time.perf_counter()
    subprocess.run([str(harness), "eval", "--qrels", str(QRELS), "--run", *map(str, runs), "--depth", "1000",
                    "--measures", *HARNESS_MEASURES, "--format", "csv"], check=True, capture_output=True)
    return time.perf_counter() - start


def time_trec_eval_binary(binary: str, runs: list[Path]) -> float:
    measures = [arg for measure in TREC_EVAL_MEASURES for arg in ("-m", measure)]
    start = time.perf_counter()
    for run in runs:
        subprocess.run([binary, "-c", "-M1000", "-l2", *measures, str(QRELS), str(run)], check=True,
                       capture_output=True)
    return time.perf_counter() - start


def time_pytrec_eval(runs: list[Path]) -> float:
    import pytrec_eval

    start = time.perf_counter()
    with open(QRELS) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    for run in runs:
        with open(run) as handle:
            parsed = pytrec_eval.parse_run(handle)
        pytrec_eval.RelevanceEvaluator(qrels, {"P.10", "map", "recip_rank", "recall.1000"}, relevance_level=2).evaluate(parsed)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--trec-eval", default=os.environ.get("TREC_EVAL") or shutil.which("trec_eval"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runs = []
        for copy in range(args.copies):
            for run in RUNS:
                target = Path(folder) / f"{run.stem}_{copy}.run"
                shutil.copyfile(run, target)
                runs.append(target)
        harness_seconds = time_harness(runs)
        if args.trec_eval:
            competitor, seconds = f"trec_eval binary ({args.trec_eval}), one process per run", \
                time_trec_eval_binary(args.trec_eval, runs)
        else:
            competitor, seconds = "pytrec_eval in-process (no trec_eval binary found)", time_pytrec_eval(runs)
    print(f"{len(runs)} runs x {len(HARNESS_MEASURES)} measures, CAsT 2021 document qrels")
    print(f"{'harness eval (one process)':<60} {harness_seconds:8.2f} s")
    print(f"{competitor:<60} {seconds:8.2f} s")
    print(f"ratio harness / competitor: {harness_seconds / seconds:.2f} (<= 1.0 means harness is not slower)")


if __name__ == "__main__":
    main()
