"""Dense retrieval speed on this machine, against named competitors, on real shipped text.

    .venv/bin/python benchmarks/dense_speed.py [--passages 384] [--sizes 100000,500000] [--k 1000]

Text: iKAT 2023 provenance passages (data/ikat/2023/data/*_psg_text.jsonl) and iKAT 2023
utterances (raw and resolved) as queries. Figures printed side by side:

- encoding: passages/s through the harness (chunked, cached) vs one plain
  sentence-transformers `encode_document` call on the same texts;
- cache: seconds to read the cached vectors vs to encode them;
- queries: utterances/s encoded;
- exact top-k search: queries/s for numpy vs faiss IndexFlatIP (and torch), on the real
  passage vectors and on larger matrices made of jittered copies of them (the shipped
  passages are too few to show how search scales).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.corpus import Corpus, Document
from harness.paths import data_root
from harness.retrieve.dense import SEARCH_BACKENDS
from harness.retrieve.embeddings import load_encoder, passage_text, passage_vectors

IKAT = data_root() / "ikat" / "2023" / "data"


def ikat_documents(limit: int) -> list[Document]:
    documents = []
    for path in sorted(IKAT.glob("*_psg_text.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                documents.append(Document(f"{record['doc_id']}:{record['passage_id']}", record["passage_text"].strip()))
    return documents[:limit]


def ikat_utterances() -> list[str]:
    texts = []
    for path in sorted(IKAT.glob("*_topics.json")):
        for topic in json.loads(path.read_text(encoding="utf-8")):
            for turn in topic["turns"]:
                texts += [turn["utterance"], turn.get("resolved_utterance") or turn["utterance"]]
    return texts


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def jittered_copies(vectors: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = vectors[rng.integers(0, len(vectors), size)]
    rows = rows + rng.normal(0, 0.02, rows.shape).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def search_rates(matrix: np.ndarray, queries: np.ndarray, k: int) -> dict[str, float]:
    rates = {}
    for name in ("numpy", "faiss", "torch"):
        search, build_seconds = timed(SEARCH_BACKENDS.get(name), matrix)
        search(queries[:8], min(k, len(matrix)))  # warm up
        _, seconds = timed(search, queries, min(k, len(matrix)))
        rates[name] = len(queries) / seconds
        rates[f"{name} build s"] = build_seconds
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=384, help="iKAT passages to encode (894 shipped)")
    parser.add_argument("--sizes", default="100000,500000", help="larger corpus sizes for the search comparison")
    parser.add_argument("--k", type=int, default=1000)
    args = parser.parse_args()

    documents = ikat_documents(args.passages)
    corpus = Corpus("ikat2023-psg", lambda: iter(documents))
    utterances = ikat_utterances()
    encoder, load_seconds = timed(load_encoder)
    encoder.encode_documents([passage_text(d) for d in documents[:8]])  # warm up
    print(f"model: {encoder.path} (max_length {encoder.max_length}), device {encoder.model.device}, "
          f"loaded in {load_seconds:.1f}s; {len(documents)} passages, {len(utterances)} utterances\n")

    with tempfile.TemporaryDirectory() as cache:
        passages, encode_seconds = timed(passage_vectors, corpus, encoder, cache_dir=Path(cache))
        _, plain_seconds = timed(
            encoder.model.encode_document, [passage_text(d) for d in documents], batch_size=encoder.batch_size
        )
        cached, read_seconds = timed(passage_vectors, corpus, encoder, cache_dir=Path(cache))
        assert cached.from_cache and np.array_equal(cached.vectors, passages.vectors)
    ours, plain = len(documents) / encode_seconds, len(documents) / plain_seconds
    print("encoding passages          harness   sentence-transformers   ratio")
    print(f"  passages/s                {ours:7.1f}   {plain:21.1f}   {ours / plain:5.2f}")
    print(f"cache: read in {read_seconds:.3f}s vs encoded in {encode_seconds:.1f}s "
          f"({encode_seconds / read_seconds:.0f}x faster)\n")

    query_vectors, query_seconds = timed(encoder.encode_queries, utterances)
    print(f"encoding queries: {len(utterances) / query_seconds:.1f} utterances/s\n")

    print(f"exact top-{args.k} search, queries/s   numpy     faiss     torch   numpy/faiss")
    sizes = [len(passages.vectors)] + [int(size) for size in args.sizes.split(",") if size]
    for size in sizes:
        matrix = passages.vectors if size == len(passages.vectors) else jittered_copies(passages.vectors, size)
        rates = search_rates(matrix, query_vectors, args.k)
        label = f"{size:>9,} passages" + ("" if matrix is passages.vectors else " (jittered copies)")
        print(f"  {label:<34} {rates['numpy']:8.0f}  {rates['faiss']:8.0f}  {rates['torch']:8.0f}   "
              f"{rates['numpy'] / rates['faiss']:5.2f}")


if __name__ == "__main__":
    main()
