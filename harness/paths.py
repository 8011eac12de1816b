"""Where the shipped benchmark files live.

The repo ships the topics, qrels and small corpora its default benchmark and tests use
(as Anserini ships its topics and qrels). `HARNESS_DATA` / `HARNESS_QRELS` point elsewhere,
e.g. at a full copy of the upstream files.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """Topic files and small corpora, laid out as their upstream repositories lay them out."""
    return Path(os.environ.get("HARNESS_DATA", REPO_ROOT / "data"))


def qrels_root() -> Path:
    return Path(os.environ.get("HARNESS_QRELS", REPO_ROOT / "qrels"))


def cache_root() -> Path:
    """Derived artefacts (indexes, embeddings, segmented corpora) that can be rebuilt."""
    return Path(os.environ.get("HARNESS_CACHE", REPO_ROOT / ".cache"))
