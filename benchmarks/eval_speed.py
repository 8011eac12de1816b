"""Evaluation speed: `harness eval` against trec_eval (built with -O2) and pytrec_eval.

    .venv/bin/python benchmarks/eval_speed.py [--scale 1.0] [--repeat 3] [--trec-eval PATH]

Three workloads, each from files on disk to the aggregate values nDCG@10, AP, RR and
R@1000 at depth 1000 (trec_eval -c -M1000 -m ndcg_cut.10 -m map -m recip_rank -m recall.1000):

- big: one run of 10,000 queries x 1,000 documents (10M lines);
- many: 100 runs of 150 queries x 1,000 (150k lines each); trec_eval runs one process per
  run, one after another; harness one `harness eval` over all, pytrec_eval one process;
- deep: one run of 200 queries x 10,000 documents, evaluated to depth 1,000.

Queries are copies of the real CAsT 2019-2022 queries (qid `<cast qid>.<copy>`) with their
real judgments; a run ranks a random share of each query's judged documents among unjudged
ones shaped like them, with scores of two decimals (so many ties, written in no particular
order within a tie), and leaves 1% of the judged queries out and answers 1% unjudged ones
(trec_eval -c). --scale shrinks the query counts and the number of runs (for trying it out).

Each tool runs as its own process, the tools interleaved, --repeat times (default 3); the
table gives the medians of wall time and peak memory (max RSS of the process and its
children; for 100 trec_eval processes, the largest). Each is started by a small C launcher
built here (`maxrss`), which forks it: a process this script starts directly (vfork) counts
this script's own peak in its max RSS, which Linux keeps across exec (35 MB: every tool
under it read so). pytrec_eval parses the files with its
own `parse_qrel` / `parse_run`; it has no -M, so on the deep run it is handed each query's
top 1,000 in trec_eval's order. Values are compared as trec_eval prints them (4 decimals),
every run. The last line is the verdict:

    eval speedup vs trec_eval: <X>x (10M lines), <Y>x (100 runs), <Z>x (deep); values equal: <yes|no>
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAST_QRELS = [REPO / "qrels" / "cast" / name for name in
              ("2019qrels.txt", "2020qrels.txt", "trec-cast-qrels-docs.2021.qrel", "cast2022.qrel")]
HARNESS_MEASURES = ["nDCG@10", "AP", "RR", "R@1000"]
TREC_EVAL_MEASURES = {"ndcg_cut_10": "nDCG@10", "map": "AP", "recip_rank": "RR", "recall_1000": "R@1000"}
DEPTH = 1000
MAXRSS = Path("maxrss")  # the launcher, built by main()


@dataclass
class Workload:
    name: str  # as in the verdict line
    label: str  # as in the table
    qrels: Path
    runs: list[Path]


# --- the workloads ----------------------------------------------------------------------------


def cast_judgments() -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = {}
    for path in CAST_QRELS:
        for line in path.read_text(encoding="utf-8").splitlines():
            qid, _, docid, grade = line.split()
            judged.setdefault(qid, {})[docid] = int(grade)
    return judged


def query_ids(count: int, templates: list[str]) -> list[tuple[str, str]]:
    """(qid, the CAsT query it copies) for `count` queries."""
    return [(f"{templates[i % len(templates)]}.{i // len(templates)}", templates[i % len(templates)])
            for i in range(count)]


def write_qrels(path: Path, queries: list[tuple[str, str]], judged: dict[str, dict[str, int]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for qid, template in queries:
            out.writelines(f"{qid} 0 {docid} {grade}\n" for docid, grade in judged[template].items())


def write_run(path: Path, queries: list[tuple[str, str]], judged: dict[str, dict[str, int]], depth: int,
              rng: random.Random) -> None:
    """One ranking of `depth` documents per query: a random share (up to half) of its judged
    documents among unjudged ones shaped like them; two-decimal scores, ties in random order."""
    hex_digits = "0123456789abcdef"
    with path.open("w", encoding="utf-8") as out:
        for qid, template in queries:
            pool = sorted(judged[template])
            chosen = set(rng.sample(pool, min(len(pool), int(depth * rng.random() * 0.5), depth)))
            while len(chosen) < depth:
                model = rng.choice(pool)
                chosen.add(model[:-6] + "".join(rng.choices(hex_digits, k=6)))
            docids = list(chosen)
            rng.shuffle(docids)
            scores = sorted((round(rng.uniform(0, 30), 2) for _ in docids), reverse=True)
            out.writelines(f"{qid} Q0 {docid} {rank} {score:.2f} bench\n"
                           for rank, (docid, score) in enumerate(zip(docids, scores), start=1))


def workload(folder: Path, name: str, label: str, queries: int, depth: int, runs: int, seed: int,
             judged: dict[str, dict[str, int]]) -> Workload:
    """qrels of `queries` queries; `runs` runs, each leaving out 1% of them and answering 1% unjudged ones."""
    folder.mkdir(parents=True, exist_ok=True)
    templates = sorted(judged)
    everything = query_ids(queries + max(1, queries // 100), templates)
    judged_queries, unjudged = everything[:queries], everything[queries:]
    qrels = folder / "qrels.txt"
    paths = [folder / f"run{n:03d}.txt" for n in range(runs)]
    if not qrels.exists():
        write_qrels(qrels, judged_queries, judged)
    for number, path in enumerate(paths):
        if not path.exists():
            rng = random.Random(seed * 1000 + number)
            answered = [q for q in judged_queries if rng.random() >= 0.01] + unjudged
            write_run(path.with_suffix(".tmp"), answered, judged, depth, rng)
            path.with_suffix(".tmp").rename(path)
    return Workload(name, label, qrels, paths)


# --- the tools ---------------------------------------------------------------------------------


def built_trec_eval(folder: Path) -> Path:
    """trec_eval from ../shared/reference/trec_eval ($HARNESS_SHARED), built with -O2."""
    shared = Path(os.environ.get("HARNESS_SHARED", REPO.parent / "shared"))
    source = shared / "reference" / "trec_eval"
    if not source.is_dir():
        raise SystemExit(f"no trec_eval sources at {source}: pass --trec-eval or set HARNESS_SHARED")
    build = folder / "trec_eval-src"
    shutil.copytree(source, build)
    # CC, not CFLAGS: the Makefile's CFLAGS carry its include path and version define
    subprocess.run(["make", "-s", "-C", str(build), "CC=cc -O2"], check=True, capture_output=True)
    return build / "trec_eval"


LAUNCHER = r"""
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {  /* maxrss FILE COMMAND...: runs COMMAND, writes its max RSS (KiB) to FILE */
    pid_t child = fork();
    if (child == 0) { execvp(argv[2], argv + 2); _exit(127); }
    int status;
    struct rusage usage;
    if (child < 0 || wait4(child, &status, 0, &usage) < 0) return 126;
    FILE *out = fopen(argv[1], "w");
    if (!out) return 126;
    fprintf(out, "%ld\n", usage.ru_maxrss);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"""


def built_launcher(folder: Path) -> Path:
    """The launcher that measures a command's own peak memory (see the module's docstring)."""
    (folder / "maxrss.c").write_text(LAUNCHER)
    subprocess.run(["cc", "-O2", "-o", str(folder / "maxrss"), str(folder / "maxrss.c")], check=True)
    return folder / "maxrss"


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak memory (MB: max RSS of the process and the children it waited for) and stdout."""
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        peak = Path(folder) / "maxrss"
        start = time.perf_counter()
        done = subprocess.run([str(MAXRSS), str(peak), *command], stdout=out, stderr=err)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(command[:3])} ... failed: {err.read().decode()[-800:]}")
        out.seek(0)
        return seconds, int(peak.read_text()) / 1024, out.read().decode()


def harness_tool(load: Workload) -> tuple[float, float, list[dict[str, str]]]:
    command = [sys.executable, "-m", "harness.cli", "eval", "--qrels", str(load.qrels), "--run",
               *map(str, load.runs), "--measures", *HARNESS_MEASURES, "--depth", str(DEPTH), "--format", "json"]
    seconds, megabytes, out = timed(command)
    document = json.loads(out)
    return seconds, megabytes, [{m: f"{document[run.stem][m]:.4f}" for m in HARNESS_MEASURES} for run in load.runs]


def trec_eval_tool(binary: Path, load: Workload) -> tuple[float, float, list[dict[str, str]]]:
    measures = ["-m", "ndcg_cut.10", "-m", "map", "-m", "recip_rank", "-m", "recall.1000"]
    total, peak, values = 0.0, 0.0, []
    for run in load.runs:
        seconds, megabytes, out = timed([str(binary), "-c", f"-M{DEPTH}", *measures, str(load.qrels), str(run)])
        total, peak = total + seconds, max(peak, megabytes)
        printed = {fields[0]: fields[2] for fields in map(str.split, out.splitlines())}
        values.append({ours: printed[theirs] for theirs, ours in TREC_EVAL_MEASURES.items()})
    return total, peak, values


PYTREC_EVAL = """
import json, sys, pytrec_eval
qrels_path, depth, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
with open(qrels_path) as handle:
    qrels = pytrec_eval.parse_qrel(handle)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank", "recall.1000"})
means = []
for path in runs:
    with open(path) as handle:
        run = pytrec_eval.parse_run(handle)
    if any(len(ranking) > depth for ranking in run.values()):  # no -M: the top `depth`, in trec_eval's order
        run = {qid: dict(sorted(ranking.items(), key=lambda item: (item[1], item[0]), reverse=True)[:depth])
               for qid, ranking in run.items()}
    results = evaluator.evaluate(run)
    means.append({m: sum(results.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels)
                  for m in ("ndcg_cut_10", "map", "recip_rank", "recall_1000")})
print(json.dumps(means))
"""


def pytrec_eval_tool(load: Workload) -> tuple[float, float, list[dict[str, str]]]:
    seconds, megabytes, out = timed([sys.executable, "-c", PYTREC_EVAL, str(load.qrels), str(DEPTH),
                                     *map(str, load.runs)])
    return seconds, megabytes, [{ours: f"{means[theirs]:.4f}" for theirs, ours in TREC_EVAL_MEASURES.items()}
                                for means in json.loads(out)]


# --- the comparison ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the query counts and runs (e.g. 0.1)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trec-eval", type=Path, help="a trec_eval binary (default: built here with -O2)")
    parser.add_argument("--data", type=Path, help="keep the generated files here and reuse them (default: a temp dir)")
    parser.add_argument("--only", nargs="+", choices=["big", "many", "deep"], help="run only these workloads")
    args = parser.parse_args()
    global MAXRSS
    with tempfile.TemporaryDirectory() as scratch:
        MAXRSS = built_launcher(Path(scratch))
        data = args.data or Path(scratch) / "data"
        binary = args.trec_eval or built_trec_eval(Path(scratch))
        judged = cast_judgments()
        size = lambda n: max(2, round(n * args.scale))  # noqa: E731
        loads = [workload(data / "big", "10M lines", f"one run, {size(10_000):,} queries x 1,000",
                          size(10_000), 1000, 1, 1, judged),
                 workload(data / "many", "100 runs", f"{size(100)} runs of {150 * 1000:,} lines",
                          150, 1000, size(100), 2, judged),
                 workload(data / "deep", "deep", f"one run, {size(200)} queries x 10,000 (depth 1,000)",
                          size(200), 10_000, 1, 3, judged)]
        loads = [load for load, key in zip(loads, ("big", "many", "deep")) if not args.only or key in args.only]
        tools = {"harness eval": harness_tool, "trec_eval -O2": lambda load: trec_eval_tool(binary, load),
                 "pytrec_eval": pytrec_eval_tool}
        rows, speedups, equal = [], [], True
        for load in loads:
            times: dict[str, list[float]] = {tool: [] for tool in tools}
            memory: dict[str, list[float]] = {tool: [] for tool in tools}
            for _ in range(args.repeat):  # interleaved: a drift in the machine's speed hits every tool
                results = {}
                for tool, measure in tools.items():
                    seconds, megabytes, values = measure(load)
                    times[tool].append(seconds)
                    memory[tool].append(megabytes)
                    results[tool] = values
                for tool, values in results.items():
                    if values != results["trec_eval -O2"]:
                        equal = False
                        print(f"{load.name}: {tool} differs from trec_eval: "
                              f"{next(v for v, t in zip(values, results['trec_eval -O2']) if v != t)} vs "
                              f"{next(t for v, t in zip(values, results['trec_eval -O2']) if v != t)}")
            medians = {tool: (statistics.median(times[tool]), statistics.median(memory[tool])) for tool in tools}
            rows.append((load, medians))
            speedups.append(medians["trec_eval -O2"][0] / medians["harness eval"][0])
    print(f"\nmedian of {args.repeat}, interleaved; wall seconds and peak memory (max RSS)")
    header = ["workload", *tools, "harness vs trec_eval", "harness vs pytrec_eval"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for load, medians in rows:
        cells = [f"{seconds:.2f} s, {megabytes / 1024:.2f} GB" if megabytes >= 1024 else f"{seconds:.2f} s, {megabytes:.0f} MB"
                 for seconds, megabytes in medians.values()]
        harness = medians["harness eval"][0]
        print(f"| {load.label} | " + " | ".join(cells) +
              f" | {medians['trec_eval -O2'][0] / harness:.2f}x | {medians['pytrec_eval'][0] / harness:.2f}x |")
    named = dict(zip((load.name for load, _ in rows), speedups))
    figures = ", ".join(f"{named[name]:.2f}x ({name})" if name in named else f"-x ({name})"
                        for name in ("10M lines", "100 runs", "deep"))
    print(f"eval speedup vs trec_eval: {figures}; values equal: {'yes' if equal else 'no'}")


if __name__ == "__main__":
    main()
