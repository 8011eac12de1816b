"""`harness encode CORPUS --output DIR`: passage embeddings as sharded .npy files and a manifest."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.atomic import check_outputs
from harness.cli import add_output, number_in
from harness.compute.engines import add_engine_arguments
from harness.registry import INT_LIMIT
from harness.scale.encode import SHARD_DOCS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus", help="passages to encode: JSONL (e.g. `harness segment` output), "
                        "irds:<ir_datasets id> or benchmark:<name>")
    add_output(parser, required=True, type=Path, help="folder for shard-NNNNN.npy/.ids and manifest.json (a dense "
               "retriever's `index:` searches them)")
    parser.add_argument("--model", default=None, help="local sentence-transformers folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16"], help="stored vector type")
    count = number_in(1, INT_LIMIT, whole=True)  # 0 and -4 failed mid-run, leaving an empty --output
    parser.add_argument("--batch-size", type=count, default=32, help="passages per model batch (GPUs: 256 or more)")
    parser.add_argument("--max-length", type=count, default=None, help="tokens per passage (default: the model's)")
    add_engine_arguments(parser, SHARD_DOCS)


def run(args: argparse.Namespace) -> int:
    from harness.retrieve.embeddings import load_encoder
    from harness.scale.encode import encode_sharded
    from harness.compute.engines import engine_spec, start_engine
    from harness.corpus.readers import open_documents

    spec = engine_spec(args)
    check_outputs(args.out, folder=True)  # before the model loads
    corpus = open_documents(args.corpus)
    encoder = load_encoder(args.model, max_length=args.max_length, batch_size=args.batch_size)
    engine = start_engine(spec)
    try:
        manifest = encode_sharded(corpus, encoder, args.out, engine, dtype=args.dtype, shard_docs=args.shard_docs)
    finally:
        engine.close()
    print(f"{manifest['count']} passage vectors in {len(manifest['shards'])} shards written to {args.out}",
          file=sys.stderr)
    return 0
