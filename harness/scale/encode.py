"""Sharded passage encoding: `harness encode CORPUS --out DIR [--engine ray]`.

DIR holds shard-NNNNN.npy (vectors, the chosen dtype, corpus order) and shard-NNNNN.ids
(one passage id a line) per shard, and manifest.json with each shard's count and sha256.
Shards are cut at multiples of the encoder's chunk (8 batches), the unit the one-machine
cache encodes in, so the vectors equal those of the local cache bit for bit on the same
hardware. On a GPU the model runs in float16 when float16 vectors are asked for.
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.compute.engines import Engine
from harness.corpus import Corpus, HashSet
from harness.errors import HarnessError, command
from harness.registry import check_given
from harness.retrieve.embeddings import (DTYPE, Encoder, cache_folder, cache_key, chunk_size, encode_all,
                                          load_encoder)
from harness.scale.shards import (MANIFEST, ShardResult, ShardTask, intact, outputs, plan, read_manifest, run_shards,
                                  source_key, write_hashed)

SHARD_DOCS = 8192


def encoder_settings(encoder: Encoder, dtype: str) -> dict[str, Any]:
    """What a worker needs to load the same encoder, and what changes the vectors."""
    return {
        "model": str(encoder.path.resolve()),
        "model_identity": encoder.identity,
        "max_length": encoder.max_length,
        "normalize": encoder.normalize,
        "batch_size": encoder.batch_size,
        "dtype": dtype,
    }


def _half_precision(on: bool) -> contextlib.AbstractContextManager:
    if not on:
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cuda", dtype=torch.float16)


def encode_shard(task: ShardTask) -> ShardResult:
    settings = task.settings
    # a Ray task gets OMP_NUM_THREADS = its CPUs: one torch thread per CPU it holds, not per core of
    # the node (the vectors do not depend on the thread count)
    threads = int(os.environ["OMP_NUM_THREADS"]) if os.environ.get("OMP_NUM_THREADS", "").isdigit() else None
    encoder = load_encoder(settings["model"], max_length=settings["max_length"], normalize=settings["normalize"],
                           batch_size=settings["batch_size"], threads=threads)
    # float16 on a GPU by autocast: the model object is shared (queries are encoded by it too)
    # and must stay float32
    with _half_precision(encoder.device == "cuda" and settings["dtype"] == "float16"):
        seen = HashSet()
        ids, vectors = encode_all(encoder, task.documents(seen), dtype=settings["dtype"])
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    folder = Path(task.folder)
    files = {
        f"{task.stem}.npy": write_hashed(folder / f"{task.stem}.npy", buffer.getvalue()),
        f"{task.stem}.ids": write_hashed(folder / f"{task.stem}.ids", "".join(f"{i}\n" for i in ids).encode()),
    }
    return task.result(len(ids), len(ids), files, seen)


def encode_sharded(
    corpus: Corpus, encoder: Encoder, folder: Path, engine: Engine, *, dtype: str = "float32",
    shard_docs: int | None = None,
) -> dict[str, Any]:
    """Encode every shard not already done; returns the manifest."""
    check_given("encode_sharded", (DTYPE,), dtype=dtype)
    settings = {**encoder_settings(encoder, dtype), "shard_docs": shard_docs or SHARD_DOCS}
    tasks = plan(corpus, folder, settings, settings["shard_docs"], align=chunk_size(encoder))
    return run_shards(engine, "encode", encode_shard, tasks, folder, settings, source_key(corpus))


# encoder_settings' keys that change the vectors, by the dense parameter that sets each
SETTING_PARAMS = {"model_identity": "model", "max_length": "max_length", "normalize": "normalize",
                  "batch_size": "batch_size", "dtype": "dtype"}


def encoded_manifest(folder: Path, corpus: Corpus | None, encoder: Encoder, dtype: str) -> dict[str, Any]:
    """The manifest of the vectors `harness encode` wrote to `folder`, once they are those this
    encoder would make from `corpus` (None: searched as they are). Else an error naming the dense
    parameter and both values: searched, they would rank by other vectors than the run's
    parameters say. Nothing is encoded again (a mismatch is the user's to resolve)."""
    again = (f"encode it again ({command('harness', 'encode', 'CORPUS', '--output', folder)}: only missing or changed "
             "shards are redone)")
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("job") != "encode" or not intact(folder, manifest, "encode"):
        raise HarnessError(f"dense.index: {folder} holds no finished `harness encode` output ({MANIFEST} of "
                           f"another job, unfinished, of a corpus changed while it ran, or a shard file changed "
                           f"since): {again}")
    made, wanted = manifest["settings"], encoder_settings(encoder, dtype)
    for setting, param in SETTING_PARAMS.items():
        if made.get(setting) != wanted[setting]:
            then, now = made.get(param), wanted[param]  # the model by its folder, whose files differ
            files = " (its files since changed)" if then == now else ""
            raise HarnessError(f"dense.{param}: {folder} holds vectors encoded with {param} {then!r}{files}, "
                               f"this retriever encodes with {now!r}: give {param}: {then}, or {again}")
    if corpus is not None and source_key(corpus) != manifest["source"]:
        raise HarnessError(f"dense.index: {folder} holds the vectors of another corpus than {corpus.name}, or of it "
                           f"before it changed (a file's path, size or mtime differs): search the corpus it was "
                           f"encoded from, or {again}")
    return manifest


@dataclass(frozen=True)
class VectorShard:
    offset: int  # corpus row of its first vector
    count: int
    vectors: str  # .npy path
    ids: str


def vector_shards(folder: Path, manifest: dict[str, Any]) -> list[VectorShard]:
    shards, offset = [], 0
    for entry in manifest["shards"]:
        names = sorted(outputs(entry))  # .ids, .npy
        shards.append(VectorShard(offset, entry["count"], str(folder / names[1]), str(folder / names[0])))
        offset += entry["count"]
    return shards


def sharded_cache_folder(cache_dir: Path, corpus: Corpus, encoder: Encoder, dtype: str, shard_docs: int) -> Path:
    return cache_folder(cache_dir, corpus.name, {**cache_key(corpus.fingerprint, encoder, dtype),
                                                 "shards": shard_docs})
