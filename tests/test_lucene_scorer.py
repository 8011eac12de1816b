"""The numpy BM25 route gives pyserini's hits exactly: same docids, same order, same float
scores, for every iKAT 2023 test turn (manual and raw), BM25 and BM25+RM3, at k=1000."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from harness import topics
from harness.corpus import Corpus
from harness.errors import HarnessError
from harness.retrieve import SearchQuery, build, lucene_scorer
from harness.retrieve.bm25 import _read_index
from harness.retrieve.lucene import build_index
from harness.retrieve.lucene_scorer import ID_FIELD, _adjust_ties

CORPORA = ("ikat2023:test", "ikat2023:train")  # the 894 passages the demo's iKAT experiment searches


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    documents = [d for name in CORPORA for d in topics.load(name).corpus.documents()]
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


@pytest.mark.java
def test_an_index_numpy_does_not_read_is_searched_by_pyserini(index, turns, monkeypatch, capsys):
    monkeypatch.setattr(lucene_scorer, "MAX_POSTINGS", 10)
    _read_index.cache_clear()
    try:
        retriever = build("bm25", corpus=None, index=index)
    finally:
        _read_index.cache_clear()
    assert retriever.scorer is None
    assert f"bm25: searching {index} through pyserini:" in capsys.readouterr().err
    pyserini = build("bm25", corpus=None, index=index, backend="pyserini")
    assert retriever.search(turns[:20], k=100) == pyserini.search(turns[:20], k=100)


@pytest.mark.java
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
    with pytest.raises(HarnessError, match="bm25 backend must be one of numpy, pyserini, not 'lucene'"):
        build("bm25", corpus=None, index="anything", backend="lucene")


def test_ties_are_adjusted_as_anserini_does():
    """ScoreTiesAdjusterReranker's own example: round to 1e-4, the second of a tie 1e-6 lower."""
    scores = np.array([23.439316, 22.087432, 22.087432, 21.602508], dtype=np.float32)
    expected = np.array([23.4393, 22.0874, 22.0874, 21.6025], dtype=np.float32)
    expected[2] -= np.float32(1e-6)
    assert _adjust_ties([scores]) == [expected.tolist()]


def test_near_ties_one_rounding_step_apart_count_as_ties():
    """Anserini compares the previous *adjusted* score with a gap of 1e-4f: scores one rounding
    step apart are lowered too, and a run's offsets keep growing."""
    scores = np.array([2.0003, 2.0002, 2.0002, 1.9], dtype=np.float32)
    adjusted = _adjust_ties([scores])[0]
    assert adjusted[1] < np.float32(2.0002) and adjusted[2] < adjusted[1]
    assert adjusted[3] == np.float32(1.9)
