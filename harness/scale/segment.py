"""Sharded segmentation: `harness segment CORPUS --out OUT --engine ray` (or `--shard-docs N`).

Shards go to OUT.shards/ (shard-00000.jsonl, ..., manifest.json); OUT is then their
concatenation in shard order, so it is byte-identical to what one process writes.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from harness.atomic import atomic_write
from harness.compute.engines import Engine
from harness.corpus import Corpus, HashSet
from harness.corpus.segment import Textless, iter_passages, passage_line
from harness.scale.shards import ShardResult, ShardTask, outputs, plan, run_shards, source_key

SHARD_DOCS = 10_000


def segment_shard(task: ShardTask) -> ShardResult:
    """Segment one shard into its own JSONL file (written atomically); its documents whose text
    is empty are passed over and counted, as `harness segment` unsharded does."""
    name = f"{task.stem}.jsonl"
    seen = HashSet()
    textless = Textless(None)  # said by the driver, which has the corpus
    docs = count = 0
    digest = hashlib.sha256()
    with atomic_write(Path(task.folder) / name) as handle:
        for passages in iter_passages(textless.passed_over(task.documents(seen)), task.settings["splitter"],
                                      task.settings.get("processes") or 1):
            for passage in passages:
                line = passage_line(passage)
                digest.update(line.encode("utf-8"))
                handle.write(line)
            docs += 1
            count += len(passages)
    return task.result(docs + textless.count, count, {name: digest.hexdigest()}, seen,
                       (textless.count, textless.first))


def shards_folder(out: Path) -> Path:
    return out.parent / f"{out.name}.shards"


def segment_sharded(
    corpus: Corpus, out: Path, engine: Engine, *, splitter: str = "spacy", shard_docs: int | None = None,
    processes: int | None = None, textless: Textless | None = None,
) -> int:
    """Segment shard by shard on `engine`, then write OUT; returns the passage count. Documents
    whose text is empty are counted in `textless`, the first found again in the corpus (as
    segment_corpus counts them); a corpus of only those is an error, and OUT is not written."""
    from harness.corpus.segment import get_splitter

    get_splitter(splitter)  # a bad name or a missing model fails here, before any shard
    folder = shards_folder(out)
    settings = {"splitter": splitter, "shard_docs": shard_docs or SHARD_DOCS}
    # worker processes per local shard: a speed setting, not part of the output's identity
    task_settings = {**settings, "processes": processes if engine.workers == 1 else 1}
    tasks = plan(corpus, folder, task_settings, settings["shard_docs"])
    manifest = run_shards(engine, "segment", segment_shard, tasks, folder, settings, source_key(corpus))
    textless = Textless(corpus) if textless is None else textless
    _count_textless(manifest["shards"], textless)
    if not manifest["count"] and textless.count:
        raise textless.nothing_left("segment")
    with atomic_write(out, "wb") as handle:
        for entry in manifest["shards"]:
            for name in outputs(entry):
                with open(folder / name, "rb") as shard:
                    shutil.copyfileobj(shard, handle, 1 << 20)
    return manifest["count"]


def _count_textless(shards: list[dict[str, Any]], textless: Textless) -> None:
    """The shards' documents with empty text, added to `textless`: their count, and the first
    one's ordinal in the corpus (the documents of the shards before it, which are in corpus order)."""
    before = 0
    for entry in shards:
        if entry.get("skipped") and textless.first is None:
            textless.first = before + entry["first_skipped"]
        textless.count += entry.get("skipped", 0)
        before += entry["docs"]
