"""The iKAT PTKB statement ranking task and the `ptkb_topk` query strategy, on the real
2023 test topics and the NIST PTKB qrels."""

from __future__ import annotations

import dataclasses
import enum
import sys

import pytest

import harness
from harness.errors import HarnessError
from harness.evaluate import parse_measures
from harness.evaluate.presets import PRESETS
from harness.ikat.ptkb import METHODS, rank_ptkb, turn_query
from harness.queries import get
from harness.topics.ikat import ptkb_qrels
from harness.topics.model import Conversation, Turn
from harness.trec import Run


@pytest.fixture(scope="module")
def bm25_rankings(ikat_cache, ikat2023):
    return rank_ptkb(ikat2023, "bm25")


def scored(run: Run, qrels=None) -> dict:
    """The `ptkb` preset's means and the count of queries scored, as harness.evaluate gives them,
    against the NIST PTKB qrels unless told."""
    _, aggregate = harness.evaluate(run, qrels or ptkb_qrels("nist"), preset="ptkb")
    return aggregate.drop(columns="run").iloc[0].to_dict()


def test_measures_are_ir_measures_names():
    assert [str(m) for m in parse_measures(PRESETS.get("ptkb").measures)] == ["nDCG@3", "P@3", "R@3", "RR"]


def test_gold_ranking_reproduces_the_organisers_ptkb_judgments(ikat2023):
    """The topics' PTKB provenance is what the organisers' qrels judge relevant."""
    scores = scored(rank_ptkb(ikat2023, "gold"), ptkb_qrels("org"))
    assert scores["nDCG@3"] == pytest.approx(1.0)
    assert scores["RR"] == pytest.approx(1.0)


def test_gold_against_nist_judgments(ikat2023):
    """NIST judged PTKB relevance on its own: the organisers' provenance is a weak run there."""
    scores = scored(rank_ptkb(ikat2023, "gold"))
    assert scores["queries"] == 98
    assert scores["nDCG@3"] == pytest.approx(0.2356, abs=1e-4)


@pytest.mark.java
@pytest.mark.slow
def test_bm25_run_against_nist_qrels(bm25_rankings):
    assert len(bm25_rankings) == 332
    scores = scored(bm25_rankings)
    print("PTKB bm25 (utterances so far) vs NIST:", scores)
    assert scores == pytest.approx({"nDCG@3": 0.5287, "P@3": 0.3673, "R@3": 0.5415, "RR": 0.6214, "queries": 98},
                                   abs=1e-4)


@pytest.mark.model
@pytest.mark.slow
def test_dense_run_against_nist_qrels(ikat_cache, ikat2023):
    scores = scored(rank_ptkb(ikat2023, "dense"))
    print("PTKB dense (utterances so far) vs NIST:", scores)
    assert scores == pytest.approx({"nDCG@3": 0.6701, "P@3": 0.4456, "R@3": 0.6507, "RR": 0.7356, "queries": 98},
                                   abs=2e-3)


@pytest.mark.java
@pytest.mark.slow
def test_rankings_hold_only_the_turns_own_statements(ikat2023, bm25_rankings):
    for conversation in ikat2023.conversations:
        own = {s.id for s in conversation.personal}
        for turn in conversation.turns:
            assert {pid for pid, _ in bm25_rankings[turn.qid]} <= own


def test_unknown_method_is_refused(ikat2023):
    with pytest.raises(HarnessError, match="unknown PTKB ranking method 'bm52'"):
        rank_ptkb(ikat2023, "bm52")


class Order(enum.Enum):
    LISTED = "listed"
    REVERSED = "reversed"


def _ordered(conversations, *, order: Order = Order.LISTED):
    """A ranking method whose scores say which member it was given (a string would score 0)."""
    score = {Order.LISTED: 1.0, Order.REVERSED: 2.0}.get(order, 0.0)

    class Ranker:
        def rank(self, turns):
            return Run.of({c.turns[i].qid: [(s.id, score) for s in c.personal[:1]] for c, i in turns})

    return Ranker()


@pytest.mark.parametrize("written", ["reversed", "REVERSED"])
def test_a_method_parameter_typed_with_an_enum_is_passed_the_member(ikat2023, written):
    """As a retriever built for a retrieval run is: a config's `order: reversed` is Order.REVERSED."""
    with METHODS.using({"ordered": _ordered}):
        ranked = rank_ptkb(ikat2023, "ordered", order=written)
    assert {hit.score for hits in ranked.values() for hit in hits} == {2.0}


def test_the_dense_method_needs_no_faiss_however_big_the_benchmark_s_corpus(monkeypatch):
    """It searches a turn's few PTKB statements, not the corpus: a corpus of 10,000 documents or
    more on a CPU without faiss asked for faiss, which the dense retriever over that corpus needs."""
    from harness.retrieve import RETRIEVERS

    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    params = {"model": "a-model", "device": "cpu"}

    def big(limit: int) -> int:
        return limit  # as many documents as are counted
    assert "faiss" in RETRIEVERS.declaration("dense").needs_for(params, big)
    assert "faiss" not in METHODS.declaration("dense").needs_for(params, big)


def _rewrite_later_turns(conversation: Conversation, index: int) -> Conversation:
    later = tuple(
        dataclasses.replace(turn, utterance="I am vegetarian and allergic to peanuts.", manual_rewrite="x")
        for turn in conversation.turns[index + 1 :]
    )
    return dataclasses.replace(conversation, turns=conversation.turns[: index + 1] + later)


def test_turn_query_is_the_conversation_so_far(ikat2023):
    conversation = ikat2023.conversations[0]
    turns = conversation.turns
    assert turn_query(conversation, 2) == " ".join(t.utterance for t in turns[:3])
    assert turn_query(conversation, 2, history=1) == f"{turns[1].utterance} {turns[2].utterance}"
    assert turn_query(conversation, 2, field="manual_rewrite", history=0) == turns[2].manual_rewrite
    assert turn_query(_rewrite_later_turns(conversation, 2), 2) == turn_query(conversation, 2)


@pytest.mark.parametrize("name", ["ptkb_topk", "ptkb_topk:2:gold"])
@pytest.mark.java
@pytest.mark.slow
def test_ptkb_topk_reads_no_later_turn(ikat_cache, ikat2023, name):
    strategy, arg = get(name)
    conversation = ikat2023.conversations[1]
    for index in (0, 3):
        assert strategy(_rewrite_later_turns(conversation, index), index, arg) == strategy(conversation, index, arg)


def test_ptkb_topk_appends_the_top_k_statements(ikat2023):
    strategy, arg = get("ptkb_topk:2:gold")
    conversation = ikat2023.conversations[0]
    texts = {s.id: s.text for s in conversation.personal}
    for index, turn in enumerate(conversation.turns):
        query = strategy(conversation, index, arg)
        chosen = [texts[pid] for pid in turn.ptkb_provenance[:2]]
        assert query.context == (turn.utterance, *chosen)
        assert query.text == " ".join([turn.utterance, *chosen])
        assert (query.qid, query.turn_index) == (turn.qid, index)


@pytest.mark.java
@pytest.mark.slow
def test_ptkb_topk_default_is_three_bm25_statements(ikat_cache, ikat2023):
    strategy, arg = get("ptkb_topk")
    conversation = ikat2023.conversations[0]
    queries = [strategy(conversation, i, arg) for i in range(len(conversation.turns))]
    assert max(len(q.context) for q in queries) == 1 + 3
    statements = {s.text for s in conversation.personal}
    assert all(set(q.context[1:]) <= statements for q in queries)


def test_ptkb_topk_refuses_a_bad_argument(ikat2023):
    strategy, arg = get("ptkb_topk:three")
    with pytest.raises(HarnessError, match="K:METHOD"):
        strategy(ikat2023.conversations[0], 0, arg)


def test_turn_without_ptkb_gets_the_utterance_alone():
    conversation = Conversation("c", (Turn("c_1", "hello"),))
    strategy, arg = get("ptkb_topk:3:gold")
    assert strategy(conversation, 0, arg).text == "hello"
