"""Evaluation speed: `harness eval` on many runs vs one trec_eval process per run.

    .venv/bin/python benchmarks/eval_speed.py [--copies 20] [--trec-eval PATH]

Runs: the five CAsT 2021 organiser document runs, each copied --copies times under new
names. harness: one `harness eval` process over all runs. Competitor: the trec_eval binary
(--trec-eval, $TREC_EVAL or `trec_eval` on PATH), one process per run with the same
measures (-c -M1000 -l2). Without a binary, pytrec_eval (trec_eval's C code in-process, one
evaluator per run) stands in and is named as such. Prints wall times and the ratio.

Then one large run (--big-lines, default 2,000,000 lines: 200 queries x 10,000 documents,
docids drawn from the CAsT 2021 qrels and made up): `harness eval --depth 1000` against
trec_eval -c -M1000, built from ../shared/reference/trec_eval ($HARNESS_SHARED) when no
binary is given; wall time and peak memory (max RSS) of each process, and their ratios.
"""

from __future__ import annotations

import argparse
import os
import random
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


def measure(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{command[0]} failed: {child.stderr.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def write_big_run(path: Path, lines: int, queries: int = 200) -> None:
    judged: dict[str, list[str]] = {}
    for line in QRELS.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _ = line.split()
        judged.setdefault(qid, []).append(docid)
    qids = sorted(judged)[:queries]
    per_query = lines // len(qids)
    rng = random.Random(14)
    with open(path, "w", encoding="utf-8") as out:
        for qid in qids:
            docids = (judged[qid] + [f"unjudged_D{n}" for n in range(per_query)])[:per_query]
            scores = sorted((rng.random() * 40 for _ in docids), reverse=True)
            rng.shuffle(docids)
            out.writelines(f"{qid} Q0 {d} {r} {s:.6f} big\n" for r, (d, s) in enumerate(zip(docids, scores), 1))


def built_trec_eval(folder: Path) -> str | None:
    shared = Path(os.environ.get("HARNESS_SHARED", REPO.parent / "shared"))
    source = shared / "reference" / "trec_eval"
    if not source.is_dir():
        return None
    copy = folder / "trec_eval-src"
    shutil.copytree(source, copy)
    subprocess.run(["make", "-C", str(copy)], check=True, capture_output=True)
    return str(copy / "trec_eval")


def big_run(binary: str | None, lines: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        binary = binary or built_trec_eval(Path(folder))
        if binary is None:
            print("big run: skipped (no trec_eval binary and no ../shared/reference/trec_eval)")
            return
        run = Path(folder) / "big.run"
        write_big_run(run, lines)
        harness = [sys.executable, "-m", "harness.cli", "eval", "--qrels", str(QRELS), "--run", str(run),
                   "--depth", "1000", "--measures", *HARNESS_MEASURES, "--format", "csv"]
        reference = [binary, "-c", "-M1000", "-l2", *[a for m in TREC_EVAL_MEASURES for a in ("-m", m)],
                     str(QRELS), str(run)]
        (h_s, h_mb), (t_s, t_mb) = measure(harness), measure(reference)
    print(f"big run: {lines:,} lines, harness eval --depth 1000 {h_s:.2f} s {h_mb:.0f} MB; "
          f"trec_eval -M1000 {t_s:.2f} s {t_mb:.0f} MB; ratios time {h_s / t_s:.2f} memory {h_mb / t_mb:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--trec-eval", default=os.environ.get("TREC_EVAL") or shutil.which("trec_eval"))
    parser.add_argument("--big-lines", type=int, default=2_000_000, help="lines of the large run (0: skip it)")
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
    if args.big_lines:
        big_run(args.trec_eval, args.big_lines)


if __name__ == "__main__":
    main()
