"""Where bm25's compiled kernels (numba) are cached: NUMBA_CACHE_DIR if set, else the harness's
cache folder, never the package's folder (site-packages in a wheel); with no writable place,
compiled in memory, the same scores, no traceback. Each test imports a copy of the package in
a child process (a fresh numba, compiling: seconds)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.retrieve.lucene_scorer import LuceneIndex, LuceneScorer, block_starts

REPO_ROOT = Path(__file__).resolve().parent.parent
# the child loads this file by its path (tests/ is a package whose parent would put the checkout's
# harness first on the path), imports the package copy, and prints its hits
CHILD = ("import importlib.util, json, sys\n"
         "spec = importlib.util.spec_from_file_location('kernel_cache_test', sys.argv[1])\n"
         "test = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(test)\n"
         "from harness.retrieve import _lucene_kernels\n"
         "print(json.dumps({'module': _lucene_kernels.__file__, 'hits': test.synthetic_hits()}))\n")


def synthetic_hits() -> dict[str, dict[str, float]]:
    """BM25's top 50 of three queries over 20,000 random documents (three windows of postings)."""
    from harness.retrieve._lucene_kernels import block_bounds

    random = np.random.default_rng(23)
    documents, terms = 20_000, 40
    lists = [np.sort(random.choice(documents, size=random.integers(50, 5000), replace=False)) for _ in range(terms)]
    postings = np.concatenate(lists).astype(np.int32)
    freqs = random.integers(1, 9, size=len(postings)).astype(np.uint16)
    norms = random.integers(1, 120, size=documents).astype(np.uint8)
    starts = np.concatenate(([0], np.cumsum([len(p) for p in lists]))).astype(np.int64)
    big_freqs = np.zeros((0, 2), dtype=np.int64)
    max_tf, min_norm = block_bounds(starts, block_starts(starts), postings, freqs, big_freqs, norms)
    index = LuceneIndex(
        docids=np.array([f"d{i}" for i in range(documents)], dtype=object),
        id_rank=np.arange(documents, dtype=np.int32),
        norms=norms, vocabulary={f"t{t}": t for t in range(terms)}, starts=starts, postings=postings, freqs=freqs,
        big_freqs=big_freqs, block_starts=block_starts(starts), block_max_tf=max_tf, block_min_norm=min_norm,
        doc_count=documents, sum_total_term_freq=int(freqs.sum()),
        length_table=np.arange(1, 257, dtype=np.float32))
    queries = {"q1": {"t1": 1.0, "t7": 1.0, "t30": 1.0}, "q2": {"t2": 1.0, "t3": 0.5}, "q3": {"t9": 2.0}}
    return {qid: dict(hits) for qid, hits in LuceneScorer(index, 0.9, 0.4).search(queries, k=50).items()}


def package_copy(tmp_path: Path) -> Path:
    """A copy of the harness package in a folder of its own, without the checkout's bytecode."""
    root = tmp_path / "site"
    shutil.copytree(REPO_ROOT / "harness", root / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return root


def hits_in_child(site: Path, **env: str) -> dict[str, dict[str, float]]:
    """`synthetic_hits()` run in a fresh process importing the package in `site`, with this environment
    (no NUMBA_ setting inherited)."""
    base = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "HARNESS_CACHE"))}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, __file__], capture_output=True, text=True, cwd=site.parent,  # not the checkout
        env={**base, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1", **env})
    assert child.returncode == 0, child.stderr[-2000:]
    found = json.loads(child.stdout)
    assert Path(found["module"]).is_relative_to(site)
    return found["hits"]


def cached_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.nb[ic]"))


@pytest.mark.slow  # compiles the kernels in a child process
def test_kernels_with_no_writable_cache_compile_in_memory_and_score_the_same(tmp_path):
    """An installed package run by a user who can write neither there nor in a HOME (`docker
    --user`): numba's own choice raised "cannot cache function ... no locator available" at import."""
    site = package_copy(tmp_path)
    (site / "harness" / "retrieve" / "__pycache__").write_text("")  # the package folder: no cache there (even for root)
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # nothing can be made below a file, whoever runs the test
    hits = hits_in_child(site, HOME=str(blocked / "home"), XDG_CACHE_HOME=str(blocked / "xdg"),
                         HARNESS_CACHE=str(blocked / "cache"))
    assert hits == json.loads(json.dumps(synthetic_hits()))
    assert len(hits) == 3 and all(len(ranked) == 50 for ranked in hits.values())


@pytest.mark.slow  # compiles the kernels in a child process
def test_kernels_are_cached_under_harness_cache_not_in_the_package(tmp_path):
    site, cache = package_copy(tmp_path), tmp_path / "cache"
    hits_in_child(site, HOME=str(tmp_path / "home"), HARNESS_CACHE=str(cache))
    assert cached_files(cache / "numba")
    assert not cached_files(site)


@pytest.mark.slow  # compiles the kernels in a child process
def test_kernels_are_cached_in_numba_cache_dir_when_set(tmp_path):
    site, cache, numba_cache = package_copy(tmp_path), tmp_path / "cache", tmp_path / "numba"
    hits_in_child(site, HOME=str(tmp_path / "home"), HARNESS_CACHE=str(cache), NUMBA_CACHE_DIR=str(numba_cache))
    assert cached_files(numba_cache)
    assert not cached_files(cache) and not cached_files(site)
