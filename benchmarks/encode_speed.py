"""Passage encoding across CPU cores and on a GPU, against plain sentence-transformers.

    .venv/bin/python benchmarks/encode_speed.py [--workers 1,2] [--per-worker 128]
                                                [--gpu-passages 20000] [--batch-sizes 32,128,512]
                                                [--gpu-workers 1,2,4,8] [--sentences FILE]

Text: passages of 3-8 real sentences (seeded), drawn from every sentence of the shipped iKAT
2023 passages and PragmatiCQA spans (`benchmarks/scale.py`'s sentences; `--sentences` reads
them from a file, one per line, lzma-compressed if it ends in .xz, for a machine without
BlingFire). Model: the default encoder (all-MiniLM-L6-v2). Figures, each the passages/s of
one timed pass after a warm-up:

- CPU: the harness with W encoder workers (one batch and one torch thread each) on
  `--per-worker` x W passages, against one plain sentence-transformers `encode_document`
  call with torch's own threads over all cores, on the same passages (the first 512);
- GPU, where torch sees one: the harness with each number of worker threads (each tokenises
  its batch while another's runs), and with float16 by `torch.autocast` (as `harness encode
  --dtype float16` runs there), against plain `encode_document` at each batch size, on the
  same `--gpu-passages` passages;
- agreement: the smallest cosine between GPU and CPU vectors of every shipped iKAT passage,
  and between batch sizes; whether dense runs over those passages (iKAT utterances as
  queries, all passages ranked) are the same on both devices.

Ends with one line: `encode: CPU <W> workers <X>x one worker ...; GPU ... <Y>x
sentence-transformers ...; GPU vs CPU min cosine <C>` (no GPU: the CPU half only).
"""

from __future__ import annotations

import argparse
import dataclasses
import lzma
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import topics
from harness.corpus import Corpus, Document
from harness.retrieve import SearchQuery
from harness.retrieve.embeddings import Encoder, encode_all, load_encoder, passage_text, torch_threads
from harness.retrieve.dense import DenseRetriever

sys.path.insert(0, str(Path(__file__).parent))
from dense_speed import ikat_utterances  # noqa: E402
from scale import real_sentences  # noqa: E402

PLAIN_SAMPLE = 512


def sentences_from(path: str | None) -> list[str]:
    if path is None:
        return real_sentences()
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def passages(sentences: list[str], count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(sentences) for _ in range(rng.randint(3, 8))) for _ in range(count)]


def rate(function, count: int) -> float:
    start = time.perf_counter()
    function()
    return count / (time.perf_counter() - start)


def harness_vectors(encoder: Encoder, texts: list[str]) -> np.ndarray:
    return encode_all(encoder, iter(Document(str(i), text) for i, text in enumerate(texts)))[1]


def plain_vectors(encoder: Encoder, texts: list[str], batch_size: int) -> np.ndarray:
    encoder.model.max_seq_length = encoder.max_length
    with torch_threads(None):  # every core, as a plain call gets by default
        return encoder.model.encode_document(texts, batch_size=batch_size, normalize_embeddings=encoder.normalize,
                                             show_progress_bar=False)


def cpu_table(texts: list[str], workers: list[int], per_worker: int) -> dict[int, float]:
    print(f"CPU, {len(texts[:per_worker * max(workers)])} passages at most, batch 32")
    print("  workers   passages   harness p/s   vs 1 worker")
    rates: dict[int, float] = {}
    for count in workers:
        encoder = load_encoder(device="cpu", threads=count)
        sample = texts[:per_worker * count]
        harness_vectors(encoder, texts[-32 * count:])  # warm-up: every worker loads its model copy
        rates[count] = rate(lambda: harness_vectors(encoder, sample), len(sample))
        print(f"  {count:7d}   {len(sample):8d}   {rates[count]:11.1f}   {rates[count] / rates[workers[0]]:9.2f}x")
    encoder = load_encoder(device="cpu")
    sample = texts[:PLAIN_SAMPLE]
    plain_vectors(encoder, texts[-32:], 32)
    plain = rate(lambda: plain_vectors(encoder, sample, 32), len(sample))
    best = max(rates, key=rates.get)
    print(f"  plain sentence-transformers, one call, {encoder.workers} torch threads, {len(sample)} passages: "
          f"{plain:.1f} p/s; harness with {best} workers {rates[best] / plain:.2f}x\n")
    return rates


def gpu_table(texts: list[str], batch_sizes: list[int], worker_counts: list[int]) -> tuple[int, float, float]:
    import torch

    print(f"GPU: {torch.cuda.get_device_name()}, {len(texts)} passages; harness p/s by worker threads "
          f"(* the default, {load_encoder(device='cuda').workers}), float16 by autocast with the default")
    print("  batch" + "".join(f"   {w} worker{'s' if w > 1 else ' '}" for w in worker_counts)
          + "   float16   sentence-transformers   default / s-t")
    best = (0, 0.0, 0.0)
    for batch_size in batch_sizes:
        encoder = load_encoder(device="cuda", batch_size=batch_size)
        variants = {w: dataclasses.replace(encoder, workers=w) for w in worker_counts}
        for variant in variants.values():  # warm-up: every worker thread loads its model copy
            harness_vectors(variant, texts[-2 * variant.workers * batch_size:])
        plain_vectors(encoder, texts[-batch_size:], batch_size)
        rates = {w: rate(lambda: harness_vectors(variant, texts), len(texts)) for w, variant in variants.items()}
        with torch.autocast("cuda", dtype=torch.float16):
            half = rate(lambda: harness_vectors(encoder, texts), len(texts))
        plain = rate(lambda: plain_vectors(encoder, texts, batch_size), len(texts))
        ours = rates.get(encoder.workers) or rate(lambda: harness_vectors(encoder, texts), len(texts))
        print(f"  {batch_size:5d}" + "".join(f"   {rates[w]:7.0f}{'*' if w == encoder.workers else ' '}"
                                             for w in worker_counts)
              + f"   {half:7.0f}   {plain:21.0f}   {ours / plain:13.2f}x")
        if ours > best[1]:
            best = (batch_size, ours, ours / plain)
    print()
    return best


def agreement(batch_sizes: list[int]) -> float:
    """Smallest cosine of GPU against CPU vectors over every shipped iKAT passage."""
    import torch

    documents = list(topics.load("ikat2023").corpus.documents())
    texts = [passage_text(document) for document in documents]
    cpu = harness_vectors(load_encoder(device="cpu"), texts)
    print(f"agreement on the {len(texts)} shipped iKAT 2023 passages (unit vectors: cosine = dot)")
    lowest = 1.0
    by_batch = {}
    for batch_size in batch_sizes:
        by_batch[batch_size] = harness_vectors(load_encoder(device="cuda", batch_size=batch_size), texts)
        cosine = float(np.min(np.sum(by_batch[batch_size] * cpu, axis=1)))
        lowest = min(lowest, cosine)
        print(f"  GPU batch {batch_size:4d} vs CPU batch 32: min cosine {cosine:.9f} (1 - {1 - cosine:.1e})")
    first, last = batch_sizes[0], batch_sizes[-1]
    cosine = float(np.min(np.sum(by_batch[first] * by_batch[last], axis=1)))
    print(f"  GPU batch {last} vs GPU batch {first}: min cosine {cosine:.9f}")
    encoder = load_encoder(device="cuda", batch_size=first)
    one = harness_vectors(dataclasses.replace(encoder, workers=1), texts)
    same = "identical" if np.array_equal(one, by_batch[first]) else "DIFFERENT"
    print(f"  GPU 1 worker vs {encoder.workers} workers: {same}")
    with torch.autocast("cuda", dtype=torch.float16):
        half = harness_vectors(encoder, texts)
    cosine = float(np.min(np.sum(half * cpu, axis=1) / np.linalg.norm(half, axis=1)))
    print(f"  GPU float16 (autocast) vs CPU: min cosine {cosine:.6f}")
    corpus = Corpus("ikat2023-shipped", lambda: iter(documents))
    queries = [SearchQuery(str(i), text) for i, text in enumerate(ikat_utterances())]
    runs = {}
    for device in ("cpu", "cuda"):
        with tempfile.TemporaryDirectory() as cache:  # each device encodes (the cache key has no device)
            retriever = DenseRetriever(corpus, load_encoder(device=device), dtype="float32", backend=None,
                                       cache_dir=Path(cache))
            runs[device] = retriever.search(queries, len(documents))
    same = sum(runs["cpu"][q.qid] == runs["cuda"][q.qid] for q in queries)
    same_ids = sum([h.docid for h in runs["cpu"][q.qid]] == [h.docid for h in runs["cuda"][q.qid]] for q in queries)
    print(f"  dense runs, {len(queries)} utterances, all {len(documents)} passages ranked: "
          f"{same_ids} rankings identical, {same} identical with scores\n")
    return lowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="CPU encoder workers to time")
    parser.add_argument("--per-worker", type=int, default=128, help="passages encoded per CPU worker")
    parser.add_argument("--gpu-passages", type=int, default=20000)
    parser.add_argument("--batch-sizes", default="32,128,512", help="GPU batch sizes")
    parser.add_argument("--gpu-workers", default="1,2,4,8", help="GPU worker threads to time")
    parser.add_argument("--sentences", help="sentences, one per line (.xz: lzma), instead of splitting the data")
    args = parser.parse_args()
    import torch

    workers = [int(w) for w in args.workers.split(",")]
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    texts = passages(sentences_from(args.sentences), max(args.gpu_passages, args.per_worker * max(workers) + 512))
    cpu = cpu_table(texts, workers, args.per_worker)
    top = max(workers)
    verdict = f"encode: CPU {top} workers {cpu[top] / cpu[workers[0]]:.2f}x {workers[0]} ({cpu[top]:.0f} passages/s)"
    if torch.cuda.is_available():
        batch_size, ours, ratio = gpu_table(texts[:args.gpu_passages], batch_sizes,
                                              [int(w) for w in args.gpu_workers.split(",")])
        cosine = agreement(batch_sizes)
        verdict += (f"; GPU {ours:.0f} passages/s at batch {batch_size}, {ratio:.2f}x sentence-transformers, "
                    f"{ours / cpu[top]:.0f}x CPU; GPU vs CPU min cosine {cosine:.7f}")
    else:
        verdict += "; no GPU"
    print(verdict)


if __name__ == "__main__":
    main()
