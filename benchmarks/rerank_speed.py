"""Cross-encoder re-ranking by the harness on a GPU and the CPU, against plain sentence-transformers.

    .venv/bin/python benchmarks/rerank_speed.py [--model DIR] [--depth 50] [--batch-sizes 32,128,512]
                                                [--gpu-turns 332] [--cpu-turns 8]

Pairs: iKAT 2023 test turns (their manual rewrites) with the top `--depth` of the 894 shipped
provenance passages by the harness's dense retriever, computed once; the rerank stage re-scores
that fixed first stage, so only re-ranking is timed. Model: `--model` a local cross-encoder
folder, else the shipped MiniLM with a seeded untrained head (as tests/test_rerank.py builds
it): meaningless scores, the cost of cross-encoder/ms-marco-MiniLM-L6-v2. Figures, each the
pairs/s of one timed pass after a warm-up:

- the harness's rerank stage (`RerankRetriever.search`: passage texts, pairs, scoring, sorting)
  at each batch size, and under float16 `torch.autocast`, on the GPU where torch sees one;
- one plain sentence-transformers `CrossEncoder.predict` call on the same pairs at its default
  batch size (32);
- agreement: the first `--cpu-turns` turns re-ranked on the CPU and the GPU: rankings identical,
  and the largest score difference.

Ends with one line: `rerank: GPU <X> pairs/s at batch <B> (<Y>x sentence-transformers' default),
float16 <F>; CPU <C> pairs/s; GPU vs CPU rankings identical <n>/<m>` (no GPU: the CPU figure only).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import topics
from harness.compute.engines import usable_cores
from harness.retrieve import SearchQuery, build
from harness.retrieve.embeddings import default_model_path
from harness.retrieve.rerank import RerankRetriever, load_cross_encoder
from harness.trec import Run


class FixedFirstStage:
    """A first stage that answers with a run computed beforehand, so that only re-ranking is timed."""

    def __init__(self, run: Run):
        self.run = run

    def search(self, queries, k: int) -> Run:
        return Run.of({query.qid: self.run[query.qid][:k] for query in queries})


def seeded_cross_encoder(folder: Path) -> Path:
    """The shipped MiniLM with an untrained scoring head drawn from seed 0 (tests/test_rerank.py's)."""
    import torch
    from sentence_transformers import CrossEncoder

    bert = folder / "bert"
    bert.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(default_model_path() / name, bert / name)
    torch.manual_seed(0)
    CrossEncoder(str(bert), num_labels=1, local_files_only=True, device="cpu").save(str(folder / "cross"))
    return folder / "cross"


def reranker(benchmark, first: Run, model: str, device: str, batch_size: int, depth: int,
             threads: int | None = None) -> RerankRetriever:
    return RerankRetriever(benchmark.corpus, FixedFirstStage(first), load_cross_encoder(model, device=device),
                           depth=depth, batch_size=batch_size, threads=threads)


def timed_search(stage: RerankRetriever, queries: list[SearchQuery], depth: int, autocast: bool = False) -> tuple[Run, float]:
    import torch

    half = torch.autocast("cuda", dtype=torch.float16) if autocast else contextlib.nullcontext()
    with half:
        stage.search(queries[:4], depth)  # warm-up
        start = time.perf_counter()
        run = stage.search(queries, depth)
    return run, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a local cross-encoder folder (default: seeded MiniLM, see above)")
    parser.add_argument("--depth", type=int, default=50, help="first-stage hits re-scored per turn")
    parser.add_argument("--batch-sizes", default="32,128,512", help="GPU batch sizes")
    parser.add_argument("--gpu-turns", type=int, default=332)
    parser.add_argument("--cpu-turns", type=int, default=8)
    args = parser.parse_args()
    import torch

    benchmark = topics.load("ikat2023")
    turns = [turn for turn in benchmark.turns if turn.manual_rewrite]
    queries = [SearchQuery(turn.qid, turn.manual_rewrite) for turn in turns]
    with tempfile.TemporaryDirectory() as folder:
        model = args.model or str(seeded_cross_encoder(Path(folder)))
        first = build("dense", corpus=benchmark.corpus, cache_dir=str(Path(folder) / "vectors")).search(queries, args.depth)
        few = queries[:args.cpu_turns]
        # the stage sets torch's threads while it scores, and back after: torch.get_num_threads() here is not its count
        threads = usable_cores()  # (the stage's own default: the cores this process may use)
        stage = reranker(benchmark, first, model, "cpu", 32, args.depth, threads)
        cpu_run, seconds = timed_search(stage, few, args.depth)
        cpu = len(few) * args.depth / seconds
        print(f"CPU ({threads} torch threads), batch 32, {len(few)} turns x {args.depth}: {cpu:.0f} pairs/s")
        gpu = "no GPU"
        if torch.cuda.is_available():
            gpu = gpu_table(benchmark, first, model, queries[:args.gpu_turns], args, cpu_run)
    print(f"rerank: {gpu}; CPU {cpu:.0f} pairs/s")


def gpu_table(benchmark, first: Run, model: str, queries: list[SearchQuery], args, cpu_run: Run) -> str:
    import torch

    pairs_total = len(queries) * args.depth
    print(f"GPU: {torch.cuda.get_device_name()}, {len(queries)} turns x {args.depth} = {pairs_total} pairs")
    print("  batch   harness p/s   float16 p/s")
    rates = {}
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        stage = reranker(benchmark, first, model, "cuda", batch_size, args.depth)
        run, seconds = timed_search(stage, queries, args.depth)
        _, half_seconds = timed_search(stage, queries, args.depth, autocast=True)
        rates[batch_size] = (pairs_total / seconds, pairs_total / half_seconds, run)
        print(f"  {batch_size:5d}   {rates[batch_size][0]:11.0f}   {rates[batch_size][1]:11.0f}")
    plain = load_cross_encoder(model, device="cuda")
    texts = stage._texts({hit.docid for query in queries for hit in first[query.qid]})
    pairs = [(query.text, texts[hit.docid]) for query in queries for hit in first[query.qid][:args.depth]]
    plain.predict(pairs[:128], activation_fn=torch.nn.Identity())
    start = time.perf_counter()
    plain.predict(pairs, activation_fn=torch.nn.Identity())
    plain_rate = pairs_total / (time.perf_counter() - start)
    print(f"  plain sentence-transformers CrossEncoder.predict, batch 32: {plain_rate:.0f} p/s")
    best = max(rates, key=lambda size: rates[size][0])
    gpu_run = rates[32][2] if 32 in rates else rates[best][2]
    few = list(cpu_run.scores)
    same = sum([h.docid for h in gpu_run[qid]] == [h.docid for h in cpu_run[qid]] for qid in few)
    worst = max(abs(a.score - b.score) for qid in few for a, b in zip(sorted(gpu_run[qid]), sorted(cpu_run[qid])))
    print(f"  GPU vs CPU on {len(few)} turns: rankings identical {same}/{len(few)}, largest score difference {worst:.1e}")
    return (f"GPU {rates[best][0]:.0f} pairs/s at batch {best} ({rates[best][0] / plain_rate:.2f}x "
            f"sentence-transformers' default), float16 {rates[best][1]:.0f}; GPU vs CPU rankings identical "
            f"{same}/{len(few)}")

if __name__ == "__main__":
    main()
