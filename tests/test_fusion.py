"""Fusion rules on hand-checked rankings, then fusion built from a config over real retrievers."""

from __future__ import annotations

import re

import pytest

from harness.errors import HarnessError
from harness.retrieve import Hit, SearchQuery, build, shared_retrievers
from harness.retrieve.fusion import linear, linear_fusion, min_max, reciprocal_rank_fusion, rrf
from tests.conftest import CAST2021_PASSAGE_RUNS, SMALL, SMALL_QUERIES as QUERIES, ikat_corpus, shared_cache


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(docid, score) for docid, score in pairs]


def ranked(*docids: str) -> list[Hit]:
    """A best-first list whose scores RRF ignores."""
    return [Hit(docid, 100.0 - rank) for rank, docid in enumerate(docids)]


def as_pairs(fused: list[Hit]) -> list[tuple[str, float]]:
    return [(hit.docid, pytest.approx(hit.score, abs=1e-9)) for hit in fused]


# -- reciprocal rank fusion ---------------------------------------------------------------------


def test_rrf_sums_one_over_k_plus_rank():
    fused = reciprocal_rank_fusion([ranked("d1", "d2", "d3"), ranked("d3", "d1", "d4")], k=60)
    # d1: 1/61 + 1/62 = 0.0325225, d3: 1/63 + 1/61 = 0.0322665, d2: 1/62, d4: 1/63
    assert as_pairs(fused) == [
        ("d1", 0.0325224749),
        ("d3", 0.0322664585),
        ("d2", 0.0161290323),
        ("d4", 0.0158730159),
    ]


def test_rrf_k_is_the_rank_constant():
    fused = reciprocal_rank_fusion([ranked("a", "b"), ranked("b", "c")], k=0)
    # a: 1/1, b: 1/2 + 1/1, c: 1/2
    assert as_pairs(fused) == [("b", 1.5), ("a", 1.0), ("c", 0.5)]


def test_rrf_ignores_scores_and_counts_a_repeated_docid_at_its_best_rank():
    fused = reciprocal_rank_fusion([hits(("x", 0.1), ("x", 9.0), ("y", 5.0))], k=60)
    assert as_pairs(fused) == [("x", 1 / 61), ("y", 1 / 63)]


def test_a_limit_keeps_the_best_of_the_same_fused_list():
    rankings = [ranked("a", "b", "c"), ranked("c", "d", "a")]
    assert reciprocal_rank_fusion(rankings, k=0, limit=2) == reciprocal_rank_fusion(rankings, k=0)[:2]
    assert linear_fusion(rankings, [0.5, 0.5], limit=1) == linear_fusion(rankings, [0.5, 0.5])[:1]


def test_ties_break_by_docid_whatever_the_order_of_the_retrievers():
    first = reciprocal_rank_fusion([ranked("b", "a"), ranked("a", "b")], k=60)
    second = reciprocal_rank_fusion([ranked("a", "b"), ranked("b", "a")], k=60)
    assert [hit.docid for hit in first] == [hit.docid for hit in second] == ["a", "b"]


# -- normalised linear interpolation --------------------------------------------------------------


def test_min_max_maps_each_ranking_to_zero_one_and_all_equal_to_one():
    assert min_max(hits(("d1", 10.0), ("d2", 6.0), ("d3", 2.0))) == {"d1": 1.0, "d2": 0.5, "d3": 0.0}
    assert min_max(hits(("d1", -3.0), ("d2", -3.0))) == {"d1": 1.0, "d2": 1.0}
    assert min_max([]) == {}


def test_min_max_of_scores_spanning_more_than_a_float_holds_is_finite_and_exact():
    """1e308 - (-1e308) overflows to inf, which made every normalised score nan or 0."""
    wide = hits(("top", 1e308), ("mid", 0.0), ("upper", 5e307), ("bottom", -1e308))
    assert min_max(wide) == {"top": 1.0, "mid": 0.5, "upper": 0.75, "bottom": 0.0}
    fused = linear_fusion([wide, hits(("mid", 2.0), ("top", 1.0))], weights=[0.5, 0.5])
    assert as_pairs(fused) == [("mid", 0.75), ("top", 0.5), ("upper", 0.375), ("bottom", 0.0)]


def test_linear_weights_normalised_scores_and_a_missing_document_scores_zero():
    first = hits(("d1", 10.0), ("d2", 6.0), ("d3", 2.0))  # normalised: d1 1, d2 0.5, d3 0
    second = hits(("d3", 0.9), ("d4", 0.5), ("d1", 0.1))  # normalised: d3 1, d4 0.5, d1 0
    fused = linear_fusion([first, second], weights=[0.3, 0.7])
    # d3: 0.3*0 + 0.7*1; d4: (absent) 0 + 0.7*0.5; d1: 0.3*1 + 0.7*0; d2: 0.3*0.5 + (absent) 0
    assert as_pairs(fused) == [("d3", 0.7), ("d4", 0.35), ("d1", 0.3), ("d2", 0.15)]


def test_linear_ties_break_by_docid():
    fused = linear_fusion([hits(("z", 2.0), ("m", 1.0)), hits(("m", 2.0), ("z", 1.0))], weights=[0.5, 0.5])
    assert as_pairs(fused) == [("m", 0.5), ("z", 0.5)]


# -- fusion built from a config over real dense retrievers -----------------------------------------



@pytest.fixture(scope="module")
def sub_configs(tmp_path_factory):
    cache = shared_cache(tmp_path_factory)
    # Two real, different dense retrievers: full passages, and only their first 32 tokens.
    return [{"name": "dense", "cache_dir": cache}, {"name": "dense", "max_length": 32, "cache_dir": cache}]


@pytest.mark.model
@pytest.mark.slow
def test_rrf_from_config_fuses_each_sub_retriever_at_the_fusion_depth(sub_configs):
    fused = build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=5)
    results = fused.search(QUERIES, 3)
    for query in QUERIES:
        subs = [retriever.search(QUERIES, 5)[query.qid] for retriever in fused.retrievers]
        assert results[query.qid] == reciprocal_rank_fusion(subs, k=60)[:3]


@pytest.mark.model
@pytest.mark.slow
def test_fusion_asks_for_at_least_k_hits(sub_configs):
    fused = build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=2)
    assert all(len(found) == SMALL for found in fused.search(QUERIES, 100).values())


@pytest.mark.model
@pytest.mark.slow
def test_linear_from_config_uses_the_given_weights(sub_configs):
    fused = build("linear", corpus=ikat_corpus(SMALL), retrievers=sub_configs, weights=[0.2, 0.8])
    results = fused.search(QUERIES, 10)
    for query in QUERIES:
        subs = [retriever.search(QUERIES, 1000)[query.qid] for retriever in fused.retrievers]
        assert results[query.qid] == linear_fusion(subs, [0.2, 0.8])[:10]


@pytest.mark.java  # its BM25 starts the JVM
@pytest.mark.slow
def test_a_sub_retriever_given_by_its_name_alone_is_that_retriever_with_its_defaults():
    """`retrievers: [bm25, ...]` inside a fusion, as a config's own `retrievers:` take it."""
    corpus = ikat_corpus(SMALL)
    by_name = build("rrf", corpus=corpus, retrievers=["bm25", {"name": "bm25", "params": {"k1": 0.5}}])
    by_spec = build("rrf", corpus=corpus, retrievers=[{"name": "bm25"}, {"name": "bm25", "params": {"k1": 0.5}}])
    assert by_name.search(QUERIES, 5) == by_spec.search(QUERIES, 5)


def test_a_corpus_given_as_an_index_is_handed_to_every_sub_retriever(tmp_path):
    with pytest.raises(HarnessError, match=f"^dense.index: {re.escape(repr(str(tmp_path)))} holds no manifest.json "
                                           "of `harness encode`"):
        build("rrf", corpus=None, index=str(tmp_path),
              retrievers=[{"name": "dense"}, {"name": "dense", "label": "dense-2"}])


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("rrf", {}, re.escape("build('rrf'): retriever 'rrf' needs retrievers")),
        ("rrf", {"retrievers": [{"name": "dense"}]}, re.escape("build('rrf').retrievers: expected a list of 2 or more retriever names or specs")),
        ("rrf", {"retrievers": [{"k1": 0.9}, {"name": "dense"}]},
         re.escape("build('rrf').retrievers[0]: expected a retriever name or spec {name, params}, got {'k1': 0.9}")),
        ("rrf", {"retrievers": [{"name": "nope"}, {"name": "dense"}]}, "unknown retriever 'nope'"),
        ("rrf", {"retrievers": [{"name": "dense"}, {"name": "bm25"}], "k": -1}, re.escape("build('rrf').k: expected a number of 0 or more, got -1")),
        ("rrf", {"retrievers": [{"name": "dense"}, {"name": "bm25"}], "depth": 0}, re.escape("build('rrf').depth: expected an integer of 1 or more, got 0")),
        ("linear", {"retrievers": [{"name": "dense"}, {"name": "bm25"}], "weights": ["a", 1]}, re.escape("build('linear').weights: expected a list of numbers")),
        ("linear", {"retrievers": [{"name": "dense"}, {"name": "bm25"}], "weights": [1.0]}, re.escape("build('linear').weights: expected one value per entry of retrievers (2), got [1.0]")),
    ],
)
def test_a_bad_fusion_config_is_a_clear_error(name, params, message):
    with pytest.raises(HarnessError, match=message):
        build(name, corpus=ikat_corpus(SMALL), **params)


def counted(retriever, calls: list):
    """Record each search that reaches the real retriever behind the shared one (each batch
    of a run's batches is one: the record stands between, searching batch by batch)."""
    real = retriever.retriever

    class Recorded:
        def search(self, queries, k):
            calls.append((tuple(q.text for q in queries), k))
            return real.search(queries, k)

    retriever.retriever = Recorded()
    return retriever


@pytest.mark.model
@pytest.mark.slow
def test_shared_retrievers_build_once_per_parameters_and_corpus(sub_configs):
    with shared_retrievers():
        first = build(corpus=ikat_corpus(SMALL), **sub_configs[0])
        assert build(corpus=ikat_corpus(SMALL), **sub_configs[0]) is first
        assert build(corpus=ikat_corpus(SMALL), **sub_configs[1]) is not first
        assert build(corpus=ikat_corpus(SMALL + 1), **sub_configs[0]) is not first
    assert build(corpus=ikat_corpus(SMALL), **sub_configs[0]) is not first


@pytest.mark.model
@pytest.mark.slow
def test_a_fusion_after_its_component_runs_searches_only_what_they_did_not(sub_configs):
    unshared = build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=5).search(QUERIES, 5)
    calls: list = []
    texts = tuple(q.text for q in QUERIES)
    with shared_retrievers():
        component = counted(build(corpus=ikat_corpus(SMALL), **sub_configs[0]), calls)
        component.search(QUERIES, 5)
        fused = build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=5)
        assert fused.search(QUERIES, 5) == unshared
        assert calls == [(texts, 5)]  # the component's own search only
        renamed = [SearchQuery(f"other-{q.qid}", q.text) for q in QUERIES]
        assert list(component.search(renamed, 5)) == [q.qid for q in renamed]  # same texts, any qids
        component.search(QUERIES[:1], 5)  # part of a batch is another batch: searched as it comes
        component.search(QUERIES, 4)  # another depth is another question
        assert calls[1:] == [(texts[:1], 5), (texts, 4)]


@pytest.mark.model
@pytest.mark.slow
def test_shared_results_are_kept_only_within_the_hit_budget(sub_configs):
    calls: list = []
    with shared_retrievers(max_hits=0):
        component = counted(build(corpus=ikat_corpus(SMALL), **sub_configs[0]), calls)
        first = component.search(QUERIES, 5)
        assert component.search(QUERIES, 5) == first
        assert len(calls) == 2


@pytest.mark.model
@pytest.mark.slow
def test_a_runs_batches_answered_before_come_from_memory_and_the_others_are_searched_in_order(sub_configs):
    """The runner hands a run's batches over together (`search_batches`): a batch a component
    run answered is not searched again, the rest are, in order, with a fusion of two dense
    retrievers working ahead on both (the same rankings as batch by batch)."""
    from harness.retrieve import search_batches

    batches = [QUERIES, QUERIES[:1], QUERIES[1:]]
    one_by_one = [build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=5).search(batch, 5)
                  for batch in batches]
    calls: list = []
    with shared_retrievers():
        component = counted(build(corpus=ikat_corpus(SMALL), **sub_configs[0]), calls)
        component.search(QUERIES, 5)
        fused = build("rrf", corpus=ikat_corpus(SMALL), retrievers=sub_configs, depth=5)
        assert list(search_batches(fused, batches, 5)) == one_by_one
    texts = [tuple(q.text for q in batch) for batch in batches]
    assert calls == [(texts[0], 5), (texts[1], 5), (texts[2], 5)]


@pytest.mark.parametrize("fusion, settings, message", [
    (linear, {"weights": [10**400, 1]},
     "linear.weights: expected a list of numbers or null, got [an integer too large for a floating-point number, 1]"),
    (linear, {"weights": [1]}, "linear.weights: expected one value per entry of retrievers (2), got [1]"),
    (rrf, {"k": -1}, "rrf.k: expected a number of 0 or more, got -1"),
])
def test_a_fusion_called_from_python_checks_its_settings_as_a_config_is_checked(fusion, settings, message):
    """Before any retriever is built, in the config's words (a huge weight was an OverflowError)."""
    with pytest.raises(HarnessError) as caught:
        fusion(None, retrievers=["bm25", "dense"], **settings)
    assert str(caught.value) == message


@pytest.mark.java  # its BM25 starts the JVM
@pytest.mark.slow
def test_a_fusion_called_from_python_takes_numpy_settings_as_the_numbers_they_hold():
    import numpy as np

    with pytest.raises(HarnessError, match="rrf.depth: expected an integer of 1 or more, got 0"):
        rrf(None, retrievers=["bm25", "dense"], depth=np.int64(0))  # checked as the number it holds
    two = ["bm25", {"name": "bm25", "params": {"k1": 1.2}}]
    fused = linear(ikat_corpus(SMALL), retrievers=two, weights=np.array([0.5, 0.5]))
    assert fused.search(QUERIES, 5) == linear(ikat_corpus(SMALL), retrievers=two).search(QUERIES, 5)


def test_a_numpy_type_given_as_a_setting_is_an_error_at_its_key_not_a_traceback():
    import numpy as np

    with pytest.raises(HarnessError, match=r"linear\.weights: expected .*, got <class 'numpy\.float64'>"):
        linear(None, retrievers=["bm25", "dense"], weights=np.float64)


def test_rrf_equals_pyserini_fusion_on_the_cast_2021_organiser_runs():
    """pyserini.fusion is the reference: the same documents, order (score, then docid ascending) and scores.
    Its rank is the file's rank column, ours the position in the ranking: these files list each topic by rank."""
    from pyserini.fusion import reciprocal_rank_fusion as pyserini_rrf
    from pyserini.trectools import TrecRun

    files = CAST2021_PASSAGE_RUNS[:3]
    theirs = pyserini_rrf([TrecRun(str(path)) for path in files], rrf_k=60, depth=100, k=50).run_data
    rankings: dict[str, list[list[tuple[str, float]]]] = {}
    for number, path in enumerate(files):
        for line in path.read_text().splitlines():
            qid, _, docid, rank, score, _ = line.split()
            ranking = rankings.setdefault(qid, [[] for _ in files])[number]
            assert int(rank) == len(ranking) + 1  # the premise: ranks are positions
            ranking.append((docid, float(score)))
    assert set(theirs["topic"].astype(str)) == set(rankings)
    for qid, lists in rankings.items():
        ours = reciprocal_rank_fusion([ranking[:100] for ranking in lists], k=60, limit=50)
        topic = theirs[theirs["topic"].astype(str) == qid]
        assert [hit.docid for hit in ours] == list(topic["docid"]), qid
        assert [hit.score for hit in ours] == pytest.approx(list(topic["score"]), abs=1e-9)
