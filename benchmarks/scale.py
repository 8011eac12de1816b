"""How segment, index, encode and search grow with the collection, at 1 and 2 Ray workers,
and what 116.8M passages (the iKAT ClueWeb22-B collection) would cost.

    .venv/bin/python benchmarks/scale.py [--sizes 10000,100000] [--workers 1,2] [--sample 256]

Corpora are built from the shipped real text only: every sentence (BlingFire) of the iKAT
2023 passages and PragmatiCQA spans, shuffled and joined into documents of 5-20 sentences
(seeded; no invented vocabulary). Each stage runs as its own command, timed by wall clock,
with the peak summed RSS of its process tree (driver, Ray's processes and workers) sampled
every 0.2 s:

- segment: `harness segment --engine ray --workers W --splitter fast --shard-docs 5000`;
- index: `harness index` (Anserini, one JVM; W indexing threads: BM25 is not sharded);
- encode: `harness encode --engine ray --workers W` on the first --sample passages (CPU),
  Ray and model start-up included; measured on the first size only (cost per passage);
- search: 100 real iKAT/PragmatiCQA queries, k=1000, exact sharded search over one vector per
  passage, one shard searcher per worker. Encoding every passage on 2 CPU cores would take
  hours, so these vectors are the encoded sample's, each with Gaussian noise (sd 0.05 per
  dimension) and re-normalised: search cost depends on count and dimension, not content.
  Recall@1000 of IVF-PQ against exact search is measured on the same vectors (so it is
  indicative only: real passages cluster more than noisy copies of a sample).

The growth exponent of a stage is the slope of log(time) over log(passages) between the
sizes; the extrapolation to 116.8M passages scales the largest size's time by that slope
(and linearly, for comparison) and states its hardware assumptions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TARGET_PASSAGES = 116_838_987
SOURCES = ("ikat2023:test", "ikat2023:train", "pragmaticqa:train", "pragmaticqa:val", "pragmaticqa:test")


def real_sentences() -> list[str]:
    import blingfire

    from harness import topics
    from harness.corpus.segment import document_text, prepare

    found = set()
    for name in SOURCES:
        for document in topics.load(name).corpus.documents():
            for sentence in blingfire.text_to_sentences(prepare(document_text(document))).split("\n"):
                if len(sentence) > 20:
                    found.add(sentence)
    return sorted(found)


def build_corpus(path: Path, documents: int, sentences: list[str], seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for number in range(documents):
            text = " ".join(rng.choice(sentences) for _ in range(rng.randint(5, 20)))
            handle.write(json.dumps({"id": f"scale-{number:08d}", "contents": text}) + "\n")


def measure(command: list[str], work_seconds=None) -> tuple[float, float, float]:
    """(wall seconds, peak summed RSS of the process tree in GiB, seconds of the stage's own
    work: `work_seconds(stdout)`, else the wall time); fails loudly on errors."""
    import ray  # noqa: F401  (puts the psutil Ray bundles on the path)
    import psutil

    started = time.monotonic()
    # Ray runs its workers at niceness 15; on a machine shared with other work that measures
    # the other work, so here they run at the driver's priority
    env = {**os.environ, "RAY_worker_niceness": "0"}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                peak[0] = max(peak[0], total)
            except psutil.Error:
                pass
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err[-3000:]}")
    wall = time.monotonic() - started
    return wall, peak[0] / 2**30, work_seconds(out) if work_seconds else wall


def manifest_seconds(folder: Path):
    """The shards' own time, from the manifest (Ray and driver start-up excluded)."""
    return lambda _: json.loads((folder / "manifest.json").read_text())["seconds"]


def harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", *args]


def real_queries(limit: int = 100) -> list[str]:
    from harness import topics

    texts = []
    for name in ("ikat2023:test", "pragmaticqa:val"):
        for conversation in topics.load(name).conversations:
            texts.extend(t.manual_rewrite or t.utterance for t in conversation.turns)
    return [t for t in texts if t.strip()][:limit]


def write_vector_shards(folder: Path, sample: np.ndarray, count: int, shard: int = 50_000) -> None:
    """`harness encode`'s layout (shard-NNNNN.npy/.ids + manifest) for `count` noisy copies."""
    rng = np.random.default_rng(0)
    entries = []
    for index, start in enumerate(range(0, count, shard)):
        rows = np.arange(start, min(count, start + shard))
        vectors = sample[rows % len(sample)] + rng.normal(0, 0.05, (len(rows), sample.shape[1]))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        np.save(folder / f"shard-{index:05d}.npy", vectors)
        (folder / f"shard-{index:05d}.ids").write_text("".join(f"p{row}\n" for row in rows))
        entries.append({"index": index, "count": len(rows),
                        "files": {f"shard-{index:05d}.ids": "", f"shard-{index:05d}.npy": ""}})
    (folder / "manifest.json").write_text(json.dumps({"shards": entries}))


def search_stage(folder: Path, queries: Path, workers: int, k: int) -> None:
    """Run in a subprocess: shard searchers on a Ray engine, 100 queries, k hits each."""
    from harness.scale.encode import vector_shards
    from harness.compute.engines import EngineSpec, start_engine
    from harness.scale.search import ShardSearcher, shard_groups

    engine = start_engine(EngineSpec("ray", workers=workers))
    shards = vector_shards(folder, json.loads((folder / "manifest.json").read_text()))
    searchers = [engine.hold(ShardSearcher, group, None, None) for group in shard_groups(shards, workers)]
    vectors = np.load(queries)
    engine.get([s.call("search", vectors[:1], 1) for s in searchers])  # loaded
    started = time.monotonic()
    engine.get([s.call("search", vectors, k) for s in searchers])
    print(json.dumps({"search_s": time.monotonic() - started}))
    engine.close()


def recall_ivfpq(folder: Path, queries: np.ndarray, k: int) -> float:
    from harness.scale.encode import vector_shards
    from harness.scale.search import ShardSearcher

    shards = vector_shards(folder, json.loads((folder / "manifest.json").read_text()))
    exact = ShardSearcher(shards, None, None).search(queries, k)
    approx = ShardSearcher(shards, "ivfpq", k).search(queries, k)
    return float(np.mean([len(set(a[1].tolist()) & set(e[1].tolist())) / len(e[1]) for a, e in zip(approx, exact)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="documents per corpus, comma-separated")
    parser.add_argument("--workers", default="1,2", help="Ray worker counts, comma-separated")
    parser.add_argument("--sample", type=int, default=256,
                        help="passages encoded per run (CPU), in two shards (cut at multiples of 128: 8 batches of 16)")
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp folder)")
    parser.add_argument("--_search", nargs=3, metavar=("FOLDER", "QUERIES", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._search:
        folder, queries, workers = args._search
        search_stage(Path(folder), Path(queries), int(workers), args.k)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    worker_counts = [int(w) for w in args.workers.split(",")]
    work = args.work or Path(tempfile.mkdtemp(prefix="harness-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    sentences = real_sentences()
    print(f"{len(sentences)} real sentences; scratch {work}", file=sys.stderr)

    from harness.retrieve.embeddings import load_encoder

    query_vectors = load_encoder().encode_queries(real_queries())
    np.save(work / "queries.npy", query_vectors)
    rows = []
    for size in sizes:
        corpus = work / f"corpus-{size}.jsonl"
        build_corpus(corpus, size, sentences)
        row: dict = {"docs": size}
        for workers in worker_counts:
            passages = work / f"passages-{size}-{workers}.jsonl"
            row[f"segment_{workers}"] = measure(harness(
                "segment", str(corpus), "--output", str(passages), "--splitter", "fast", "--engine", "ray",
                "--workers", str(workers), "--shard-docs", "5000"), manifest_seconds(Path(f"{passages}.shards")))
        row["passages"] = sum(1 for _ in open(passages, encoding="utf-8"))
        row["passages_file"] = str(passages)
        for workers in worker_counts:
            row[f"index_{workers}"] = measure(harness(
                "index", str(passages), "--output", str(work / f"index-{size}-{workers}"), "--threads", str(workers)))
        if not rows:  # encoding cost per passage does not depend on the corpus size: measured once
            sample = work / "sample.jsonl"
            with open(passages, encoding="utf-8") as source, open(sample, "w", encoding="utf-8") as out:
                out.writelines(line for _, line in zip(range(args.sample), source))
            for workers in worker_counts:
                vectors = work / f"vectors-{workers}"
                row[f"encode_{workers}"] = measure(harness(
                    "encode", str(sample), "--output", str(vectors), "--engine", "ray", "--workers", str(workers),
                    "--batch-size", "16", "--shard-docs", str(max(1, args.sample // 2))), manifest_seconds(vectors))
            encoded = np.concatenate([np.load(p) for p in sorted(vectors.glob("shard-*.npy"))]).astype(np.float32)
        else:
            row.update({f"encode_{workers}": rows[0][f"encode_{workers}"] for workers in worker_counts})
        search_folder = work / f"search-{size}"
        search_folder.mkdir(exist_ok=True)
        write_vector_shards(search_folder, encoded, row["passages"])
        for workers in worker_counts:
            command = [sys.executable, __file__, "--k", str(args.k), "--_search", str(search_folder),
                       str(work / "queries.npy"), str(workers)]
            row[f"search_{workers}"] = measure(command, lambda out: json.loads(out.splitlines()[-1])["search_s"])
        row["recall_ivfpq"] = recall_ivfpq(search_folder, query_vectors, args.k)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    report(rows, worker_counts, args.sample, len(query_vectors))


def report(rows: list[dict], worker_counts: list[int], sample: int, queries: int) -> None:
    stages = ("segment", "index", "encode", "search")
    print("Cells: the stage's own seconds / the command's wall seconds (peak GiB of its process tree).")
    print("| docs | passages | workers | " + " | ".join(stages) + " | IVF-PQ R@1000 |")
    print("|---|---|---|" + "---|" * (len(stages) + 1))
    for row in rows:
        for workers in worker_counts:
            cells = []
            for stage in stages:
                wall, peak, own = row[f"{stage}_{workers}"]
                cells.append(f"{own:.1f} / {wall:.1f} ({peak:.2f})")
            print(f"| {row['docs']:,} | {row['passages']:,} | {workers} | " + " | ".join(cells)
                  + f" | {row['recall_ivfpq']:.3f} |")
    top = worker_counts[-1]
    first, last = rows[0], rows[-1]
    scale = TARGET_PASSAGES / last["passages"]
    print(f"\nGrowth (slope of log time over log passages, {top} workers) and {TARGET_PASSAGES:,} passages:")
    for stage in ("segment", "index", "search"):
        own = last[f"{stage}_{top}"][2]
        slope = (math.log(own / first[f"{stage}_{top}"][2]) / math.log(last["passages"] / first["passages"])
                 if len(rows) > 1 else float("nan"))
        if stage == "search":
            print(f"- search: exponent {slope:.2f}; linear: {own * scale / queries:,.1f} s per query (k=1000) "
                  f"on {top} workers, float32 shards memory-mapped (here all in the page cache)")
        else:
            print(f"- {stage}: exponent {slope:.2f}; linear: {own * scale / 3600:,.1f} h on {top} workers "
                  f"({own * scale * top / 3600:,.0f} core-hours)")
    for workers in worker_counts:
        rate = sample / first[f"encode_{workers}"][2]
        print(f"- encode, {workers} CPU worker(s): {rate:.1f} passages/s (worker model load included); "
              f"{TARGET_PASSAGES / rate * workers / 3600:,.0f} CPU core-hours")
    print(f"- storage: vectors {TARGET_PASSAGES * 384 * 4 / 1e9:,.0f} GB float32, {TARGET_PASSAGES * 384 * 2 / 1e9:,.0f} "
          f"GB float16; IVF-PQ codes {TARGET_PASSAGES * 48 / 1e9:,.1f} GB; passages JSONL "
          f"{os.path.getsize(last['passages_file']) / last['passages'] * TARGET_PASSAGES / 1e9:,.0f} GB")
    print("Assumptions: measured on 2 shared CPU cores (load from other work), no GPU, 24 GiB RAM; "
          "linear in passages beyond the measured sizes; BlingFire sentences (spaCy is slower); "
          "MiniLM-L6, 384 dimensions.")


if __name__ == "__main__":
    main()
