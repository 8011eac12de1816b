"""`harness segment CORPUS --output FILE`: official iKAT / TREC DL passages as JSONL."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.cli import add_output, number_in
from harness.corpus.segment import SPLITTERS, Textless, segment_corpus
from harness.corpus.readers import open_documents
from harness.paths import refuse_overwriting
from harness.registry import INT_LIMIT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus", help="JSONL or TREC file, a ClueWeb22 txt folder or file, irds:<ir_datasets id>, or benchmark:<name>"
    )
    add_output(parser, required=True, type=Path, help="passages JSONL to write (id, contents, md5)")
    parser.add_argument(
        "--splitter",
        default="spacy",
        help=f"sentence splitter: {', '.join(SPLITTERS.names())}; spacy:MODEL picks an installed spaCy model or model folder "
        "(default spacy = en_core_web_sm 3.8.0 senter, the reference)",
    )
    parser.add_argument("--processes", type=number_in(1, INT_LIMIT, whole=True), default=None,
                        help="worker processes (default: all cores)")
    from harness.compute.engines import add_engine_arguments
    from harness.scale.segment import SHARD_DOCS

    add_engine_arguments(parser, SHARD_DOCS)  # sharded and resumable with --engine ray or --shard-docs


def run(args: argparse.Namespace) -> int:
    from harness.compute.engines import engine_spec, start_engine

    started = time.perf_counter()
    spec = engine_spec(args)
    refuse_overwriting([args.corpus] if Path(args.corpus).is_file() else [], [("--output", args.out)])
    corpus = open_documents(args.corpus)
    textless = Textless(corpus)
    if spec.name == "local" and args.shard_docs is None:
        count = segment_corpus(corpus, args.out, splitter=args.splitter, processes=args.processes, textless=textless)
    else:
        from harness.scale.segment import segment_sharded

        engine = start_engine(spec)
        try:
            count = segment_sharded(corpus, args.out, engine, splitter=args.splitter, shard_docs=args.shard_docs,
                                    processes=args.processes, textless=textless)
        finally:
            engine.close()
    print(f"{count} passages written to {args.out} in {time.perf_counter() - started:.1f} s{textless.note()}",
          file=sys.stderr)
    return 0
