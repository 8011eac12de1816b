"""The numpy BM25 route gives pyserini's hits exactly: same docids, same order, same float
scores, for every iKAT 2023 test turn (manual and raw), BM25 and BM25+RM3, at k=1000."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness import topics
from harness.corpus import Corpus, Document
from harness.errors import HarnessError
from harness.retrieve import SearchQuery, build, lucene_scorer
from harness.retrieve.bm25 import _read_index
from harness.retrieve.lucene import build_index
from harness.retrieve._lucene_kernels import adjust_ties
from harness.retrieve.lucene_scorer import ID_FIELD
from harness.registry import INT_LIMIT
from harness.runner.config import load_config

CORPORA = ("ikat2023:test", "ikat2023:train")  # the 894 passages the demo's iKAT experiment searches


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """Built by Lucene in the JVM (seconds): the tests that take it are marked java and slow."""
    documents = ikat_passages()
    corpus = Corpus("ikat2023-passages", lambda: iter(documents))
    return str(build_index(corpus, tmp_path_factory.mktemp("lucene") / "ikat2023", threads=2))


@pytest.fixture(scope="module")
def turns() -> list[SearchQuery]:
    """Every iKAT 2023 test turn, its manual rewrite and its raw utterance."""
    queries = []
    for conversation in topics.load("ikat2023:test").conversations:
        for turn in conversation.turns:
            queries.append(SearchQuery(f"{turn.qid}/manual", turn.manual_rewrite))
            queries.append(SearchQuery(f"{turn.qid}/raw", turn.utterance))
    return queries


def assert_same_hits(index: str, queries: list[SearchQuery], **params) -> None:
    fast = build("bm25", corpus=None, index=index, **params)
    assert fast.scorer is not None, "the numpy route did not take this index"
    lucene = build("bm25", corpus=None, index=index, backend="pyserini", **params)
    ours, theirs = fast.search(queries, k=1000), lucene.search(queries, k=1000)
    differ = [q.qid for q in queries if ours[q.qid] != theirs[q.qid]]
    assert not differ, f"{len(differ)} of {len(queries)} rankings differ, first {differ[0]}"
    assert sum(map(len, ours.values())) > 100 * len(queries)  # deep rankings, not empty ones


@pytest.mark.slow
@pytest.mark.java
def test_bm25_equals_pyserini_on_every_ikat2023_test_turn(index, turns):
    assert len(turns) == 664
    assert_same_hits(index, turns)


@pytest.mark.slow
@pytest.mark.java
def test_bm25_rm3_equals_pyserini_on_every_ikat2023_test_turn(index, turns):
    assert_same_hits(index, turns, rm3=True)


@pytest.mark.slow
@pytest.mark.java
def test_pruning_window_by_window_changes_no_hit(index, turns):
    """Block-max MaxScore over windows of 32 passages (28 windows instead of one), at depths
    where the k-th score rises early and prunes most: still pyserini's hits."""
    fast = build("bm25", corpus=None, index=index)
    fast.scorer.window = 32
    lucene = build("bm25", corpus=None, index=index, backend="pyserini")
    for k in (1, 10, 100):
        assert fast.search(turns, k) == lucene.search(turns, k), f"k={k}"
    fast_rm3 = build("bm25", corpus=None, index=index, rm3=True)
    fast_rm3.scorer.window = 32
    lucene_rm3 = build("bm25", corpus=None, index=index, backend="pyserini", rm3=True)
    assert fast_rm3.search(turns[:100], 10) == lucene_rm3.search(turns[:100], 10)


@pytest.mark.java
@pytest.mark.slow  # builds the module's index (a JVM) and compiles the kernels
def test_bm25s_preload_compiles_every_kernel_a_search_runs(index, turns):
    """After the preload (run on one posting), searching a real export compiles nothing more:
    the types the preload passes are the search's, read-only memory maps included."""
    from harness.retrieve import RETRIEVERS, _lucene_kernels

    RETRIEVERS.declaration("bm25").preload()
    kernels = (_lucene_kernels.top_candidates, _lucene_kernels.adjust_ties, _lucene_kernels.block_bounds)
    compiled = [len(kernel.signatures) for kernel in kernels]
    assert all(compiled)
    build("bm25", corpus=None, index=index).search(turns[:4], k=10)
    assert [len(kernel.signatures) for kernel in kernels] == compiled


def preload_config(tmp_path, retrievers: list, ptkb_methods: list = ()) -> Path:
    """A config of these retrievers on PragmatiCQA's raw turns and these iKAT PTKB methods."""
    experiments = [{"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": retrievers,
                    "measures": ["RR"]}]
    if ptkb_methods:
        experiments.append({"name": "ptkb", "task": "ptkb", "topics": "ikat2023:test", "retrievers": ptkb_methods,
                            "preset": "ptkb"})
    config = tmp_path / "preload.yaml"
    config.write_text(yaml.safe_dump({"output": str(tmp_path / "runs"), "experiments": experiments}), encoding="utf-8")
    return config


PYSERINI_BM25 = {"name": "bm25", "params": {"backend": "pyserini"}}
NUMPY_BM25 = {"name": "bm25", "params": {"backend": "numpy"}}


def test_bm25_on_the_pyserini_backend_loads_no_numba(tmp_path):
    """bm25's kernels serve its numpy route alone: a fresh process that reads a config whose
    bm25s all search through pyserini (alone, fused, ranking PTKB statements) and runs the
    preloads `harness run` would start has imported no numba."""
    fused = {"name": "rrf", "params": {"retrievers": [PYSERINI_BM25, {**PYSERINI_BM25, "label": "again"}]}}
    config = preload_config(tmp_path, [PYSERINI_BM25, fused], [PYSERINI_BM25])
    code = ("import sys\n"
            "from harness.runner.config import load_config\n"
            "from harness.runner.runner import preloading, preloads\n"
            "with preloading(preloads(load_config(sys.argv[1]).runs())):\n"
            "    pass\n"
            "print(*(name for name in ('numba', 'harness.retrieve._lucene_kernels') if name in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, check=True)
    assert found.stdout.split() == []


@pytest.mark.parametrize("retrievers, ptkb_methods", [
    (["bm25"], ()),
    ([{"name": "rrf", "params": {"retrievers": [PYSERINI_BM25, NUMPY_BM25]}}], ()),
    ([PYSERINI_BM25], ["bm25"]),
], ids=["default", "fused-with-pyserini", "ptkb"])
def test_bm25_on_the_numpy_backend_preloads_its_kernels(tmp_path, retrievers, ptkb_methods):
    """Wherever a bm25 searches by the numpy route, its preload (the kernels compiled) starts."""
    from harness.ikat.ptkb import METHODS
    from harness.retrieve import RETRIEVERS
    from harness.runner.runner import preloads

    runs = load_config(preload_config(tmp_path, retrievers, ptkb_methods)).runs()
    assert preloads(runs) == [(METHODS if ptkb_methods else RETRIEVERS).declaration("bm25").preload]


def ikat_passages() -> list[Document]:
    return [d for name in CORPORA for d in topics.load(name).corpus.documents()]


@pytest.mark.java
@pytest.mark.slow  # builds a second index: 5 s
def test_postings_are_exported_once_beside_the_index_and_again_for_a_new_commit(index, turns, tmp_path):
    copy = tmp_path / "ikat"
    shutil.copytree(index, copy)
    first = build("bm25", corpus=None, index=str(copy))
    export = tmp_path / "ikat.bm25-export"
    manifest = json.loads((export / lucene_scorer.EXPORT_MANIFEST).read_text())
    assert manifest["commit"] == lucene_scorer.commit_key(copy)
    written = (export / "docs.i32").stat().st_mtime_ns
    _read_index.cache_clear()
    build("bm25", corpus=None, index=str(copy))
    assert (export / "docs.i32").stat().st_mtime_ns == written  # reopened, not exported again

    documents = [*ikat_passages(), Document("added-0", "zebrafish aquarium lighting")]
    build_index(Corpus("ikat-plus-one", lambda: iter(documents)), copy, threads=1, force=True)
    changed = build("bm25", corpus=None, index=str(copy))
    assert json.loads((export / lucene_scorer.EXPORT_MANIFEST).read_text())["commit"] != manifest["commit"]
    query = [SearchQuery("q", "zebrafish aquarium")]
    assert changed.search(query, k=5)["q"][0].docid == "added-0"
    assert first.search(query, k=5)["q"] == []  # the export the first retriever mapped is still whole
    pyserini = build("bm25", corpus=None, index=str(copy), backend="pyserini")
    assert changed.search(turns[:20], k=100) == pyserini.search(turns[:20], k=100)


@pytest.mark.java
@pytest.mark.slow  # exports the index again: 25 s alone
def test_an_export_that_cannot_be_written_beside_the_index_goes_under_the_cache(index, turns, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "ikat"
    shutil.copytree(index, copy)
    (tmp_path / "ikat.bm25-export").write_text("a file in the way")
    retriever = build("bm25", corpus=None, index=str(copy))
    assert retriever.scorer is not None
    assert (lucene_scorer.export_folders(copy)[1] / lucene_scorer.EXPORT_MANIFEST).is_file()
    pyserini = build("bm25", corpus=None, index=str(copy), backend="pyserini")
    assert retriever.search(turns[:20], k=100) == pyserini.search(turns[:20], k=100)


@pytest.mark.java
@pytest.mark.slow
def test_an_export_made_on_first_use_says_where_and_how_long_once(index, tmp_path, monkeypatch, capsys):
    """As a corpus's own index does: on a log a big index's export is no ranking time (from SAID_FROM_S, a
    second; here none, so that the test's export is one)."""
    import harness.progress as progress

    monkeypatch.setattr(progress, "SAID_FROM_S", 0.0)
    copy = tmp_path / "ikat"
    shutil.copytree(index, copy)
    capsys.readouterr()
    build("bm25", corpus=None, index=str(copy))
    export = re.escape(str(tmp_path / "ikat.bm25-export"))
    assert re.fullmatch(rf"BM25 export of 894 documents written to {export} in \d+\.\d s "
                        r"\(once: later runs reuse it\)\n", capsys.readouterr().err)
    _read_index.cache_clear()
    build("bm25", corpus=None, index=str(copy))
    assert capsys.readouterr().err == ""


@pytest.mark.java
@pytest.mark.slow
def test_a_cut_short_export_file_is_named_and_the_search_goes_through_pyserini(index, turns, tmp_path, capsys):
    copy = tmp_path / "ikat"
    shutil.copytree(index, copy)
    build("bm25", corpus=None, index=str(copy))
    bounds = tmp_path / "ikat.bm25-export" / "block_max_tf.i32"
    bounds.write_bytes(bounds.read_bytes()[:-4])
    _read_index.cache_clear()
    retriever = build("bm25", corpus=None, index=str(copy))
    assert retriever.scorer is None
    assert "do not add up to the index's statistics" in capsys.readouterr().err
    pyserini = build("bm25", corpus=None, index=str(index), backend="pyserini")
    assert retriever.search(turns[:20], k=100) == pyserini.search(turns[:20], k=100)


@pytest.mark.java
@pytest.mark.slow
def test_term_frequencies_over_65535_score_exactly(tmp_path):
    """Frequencies are exported as 16 bits, the rare larger ones beside them, exactly."""
    documents = [Document("long", "aardvark " * 70_000 + "badger"), Document("short", "aardvark badger"),
                 Document("other", "badger " * 3)]
    index = build_index(Corpus("big-tf", lambda: iter(documents)), tmp_path / "index", threads=1)
    retriever = build("bm25", corpus=None, index=str(index))
    assert retriever.scorer.index.big_freqs.tolist() == [[0, 70_000]]
    queries = [SearchQuery("q1", "aardvark"), SearchQuery("q2", "aardvark badger")]
    pyserini = build("bm25", corpus=None, index=str(index), backend="pyserini")
    assert retriever.search(queries, k=10) == pyserini.search(queries, k=10)
    assert retriever.search(queries, k=10)["q1"][0].docid == "long"


@pytest.mark.java
@pytest.mark.slow
def test_an_index_with_deleted_documents_is_searched_by_pyserini(index, turns, tmp_path, capsys):
    """A real deletion (Lucene's IndexWriter.deleteDocuments, committed as a live-docs file):
    the numpy route would score the deleted passage, so pyserini searches instead."""
    from jnius import autoclass

    copy = tmp_path / "with-deletion"
    shutil.copytree(index, copy)
    deleted = build("bm25", corpus=None, index=index).search(turns[:1], k=1)[turns[0].qid][0].docid
    directory = autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(str(copy)).toPath())
    writer = autoclass("org.apache.lucene.index.IndexWriter")(
        directory, autoclass("org.apache.lucene.index.IndexWriterConfig")())
    term = autoclass("org.apache.lucene.index.Term")(ID_FIELD, deleted)
    writer.deleteDocuments(autoclass("org.apache.lucene.search.TermQuery")(term))
    writer.close()
    directory.close()

    retriever = build("bm25", corpus=None, index=str(copy))
    assert retriever.scorer is None
    assert f"bm25: searching {copy} through pyserini: the index has deleted documents" in capsys.readouterr().err
    found = retriever.search(turns[:20], k=100)
    assert deleted not in {hit.docid for hits in found.values() for hit in hits}
    assert found == build("bm25", corpus=None, index=str(copy), backend="pyserini").search(turns[:20], k=100)


def test_unknown_backend_is_one_line():
    with pytest.raises(HarnessError, match=re.escape("build('bm25').backend: expected one of 'numpy', 'pyserini', "
                                                     "got 'lucene'")):
        build("bm25", corpus=None, index="anything", backend="lucene")


def test_ties_are_adjusted_as_anserini_does():
    """ScoreTiesAdjusterReranker's own example: round to 1e-4, the second of a tie 1e-6 lower."""
    scores = np.array([23.439316, 22.087432, 22.087432, 21.602508], dtype=np.float32)
    expected = np.array([23.4393, 22.0874, 22.0874, 21.6025], dtype=np.float32)
    expected[2] -= np.float32(1e-6)
    assert adjust_ties(scores).tolist() == expected.tolist()


def test_near_ties_one_rounding_step_apart_count_as_ties():
    """Anserini compares the previous *adjusted* score with a gap of 1e-4f: scores one rounding
    step apart are lowered too, and a run's offsets keep growing."""
    scores = np.array([2.0003, 2.0002, 2.0002, 1.9], dtype=np.float32)
    adjusted = adjust_ties(scores)
    assert adjusted[1] < np.float32(2.0002) and adjusted[2] < adjusted[1]
    assert adjusted[3] == np.float32(1.9)


@pytest.mark.java
@pytest.mark.slow
def test_an_id_the_index_repeats_keeps_its_first_hit_and_is_counted(index):
    """As a run file's repeat is read (`Run.of`): the second document under the same external
    id drops out of the ranking, is counted in `duplicates` and named in `repeated`."""
    scorer = build("bm25", corpus=None, index=index).scorer
    query = {"electric": 1.0, "car": 1.0}
    found = scorer.search({"q": query}, 10)
    first, second = found["q"][0].docid, found["q"][1].docid
    docids = scorer.index.docids.copy()
    docids[docids == second] = first
    twins = lucene_scorer.LuceneScorer(replace(scorer.index, docids=docids), 0.9, 0.4).search({"q": query}, 10)
    assert twins["q"] == [hit for hit in found["q"] if hit.docid != second] and twins.duplicates == 1
    assert twins.repeated == ("q", first)  # named in `harness run`'s warning


@pytest.mark.java
@pytest.mark.slow
def test_a_depth_beyond_the_index_size_searches_without_allocating_for_it(index, turns):
    # the scorer kept a heap of k scores: a MemoryError at k = 10**10
    retriever = build("bm25", corpus=None, index=index)
    assert retriever._search_numpy(turns[:2], 10**10) == retriever._search_numpy(turns[:2], 10**6)
    assert retriever.search(turns[:2], k=INT_LIMIT) == retriever.search(turns[:2], k=10**6)
