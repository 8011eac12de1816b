"""`harness index CORPUS --output DIR`: a Lucene index (positions, docvectors, raw) via Anserini."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.cli import add_output
from harness.retrieve.lucene import build_index, built, default_threads
from harness.corpus.readers import open_documents
from harness.corpus.segment import Textless


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus",
        help="JSONL or TREC file, a ClueWeb22 txt folder or file, irds:<ir_datasets id>, or benchmark:<name> "
        "(e.g. benchmark:ikat2023)",
    )
    add_output(parser, required=True, type=Path, help="index folder to create")
    parser.add_argument("--threads", type=int, default=default_threads(), help="indexing threads (default: all cores)")
    parser.add_argument("--force", action="store_true", help="replace an existing index")


def run(args: argparse.Namespace) -> int:
    # a child JVM whatever the size: progress from its log, and Ctrl-C stops it at once
    started = time.perf_counter()
    corpus = open_documents(args.corpus)
    textless = Textless(corpus)
    out = build_index(corpus, args.out, threads=args.threads, force=args.force, in_process=False, textless=textless)
    print(built(out, started, textless), file=sys.stderr)
    return 0
