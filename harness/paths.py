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


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a plain file name inside a folder (None if it can): no separator,
    not '.' or '..', not hidden (dot names are the harness's temp files), no whitespace."""
    if not name or any(c.isspace() for c in name):
        return "must be non-empty and contain no whitespace"
    if "/" in name or "\\" in name or "\0" in name:
        return "must be a plain file name, without '/' or '\\'"
    if name.startswith("."):
        return "must not start with '.'"
    return None


def file_in(folder: Path, name: str) -> Path:
    """`folder/name`, refused (HarnessError) unless it is a plain name that stays inside
    `folder`: every output path derived from a user's string goes through here."""
    from harness.errors import HarnessError

    problem = name_problem(name)
    path = Path(folder) / name
    if problem is None and path.resolve().parent != Path(folder).resolve():
        problem = "resolves outside its folder"
    if problem:
        raise HarnessError(f"{name!r} cannot name a file in {folder}: it {problem}")
    return path
