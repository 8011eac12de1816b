"""The iKAT PTKB statement ranking task and the `ptkb_topk` query strategy, on the real
2023 test topics and the NIST PTKB qrels."""

from __future__ import annotations

import dataclasses
import enum
import sys
import zlib
from pathlib import Path

import pytest

import harness
from harness.errors import HarnessError
from harness.evaluate import parse_measures
from harness.evaluate.presets import PRESETS
from harness.ikat.ptkb import METHODS, rank_ptkb, turn_query
from harness.queries import check, get
from harness.topics import Benchmark
from harness.topics.ikat import ptkb_qrels
from harness.topics.model import Conversation, Turn, asked
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


def _greedy(conversations):
    """A PTKB method scoring each statement by everything it is handed, when built and at each
    turn: any turn, answer or assessed field it could read changes its scores."""
    built = repr(conversations)

    class Ranker:
        def rank(self, turns):
            return Run.of({c.turns[i].qid: [(s.id, float(zlib.crc32(f"{built}{c!r}{i}{s.id}".encode())))
                                             for s in c.personal] for c, i in turns})

    return Ranker()


def _poisoned(turn):
    return dataclasses.replace(turn, utterance="LEAK vegetarian", manual_rewrite="LEAK", response="LEAK",
                               provenance=("LEAK",), ptkb_provenance=("1", "2"))


@pytest.mark.parametrize("method", [pytest.param("bm25", marks=[pytest.mark.java, pytest.mark.slow]),
                                    pytest.param("dense", marks=[pytest.mark.model, pytest.mark.slow]), "greedy"])
def test_no_ptkb_method_reads_a_later_turn_or_its_own_turn_s_answer(ikat_cache, ikat2023, method):
    """Every method but the gold oracle, in the ptkb task and in ptkb_topk, ranks a turn's statements
    with the conversation so far, the turn as the user asked it (its response and assessed PTKB
    provenance blank), as a query strategy builds a query."""
    conversation = ikat2023.conversations[1]
    with METHODS.using({"greedy": _greedy}):
        strategy, arg = get(f"ptkb_topk:2:{method}")
        ranked = rank_ptkb(Benchmark("one", (conversation,)), method)
        for index, turn in enumerate(conversation.turns):
            query = strategy(conversation, index, arg)
            kept = conversation.turns[: index + 1]
            otherwise = dataclasses.replace(turn, response="LEAK", provenance=("LEAK",), ptkb_provenance=("1", "2"))
            later = tuple(_poisoned(t) for t in conversation.turns[index + 1:])
            for seen in (dataclasses.replace(conversation, turns=kept),
                         dataclasses.replace(conversation, turns=kept + later),
                         dataclasses.replace(conversation, turns=(*kept[:-1], asked(turn))),
                         dataclasses.replace(conversation, turns=(*kept[:-1], otherwise))):
                again = rank_ptkb(Benchmark("one", (seen,)), method)[turn.qid]  # dense: batched otherwise
                near = [(hit.docid, pytest.approx(hit.score, abs=1e-5)) for hit in again]
                assert near == list(ranked.pairs(turn.qid))
                assert strategy(seen, index, arg) == query


def _spy(seen: list):
    def method(conversations):
        seen.append(conversations)

        class Ranker:
            def rank(self, turns):
                seen.extend(turns)
                return Run.of({c.turns[i].qid: [] for c, i in turns})

        return Ranker()

    return method


def test_a_ptkb_method_is_built_with_the_statements_alone_and_handed_each_turn_as_asked(ikat2023):
    """What a plug-in method sees, in the task and in ptkb_topk: no turn when it is built, then each
    turn without its answer after the turns before it whole, never a later one."""
    seen: list = []
    conversation = ikat2023.conversations[1]
    with METHODS.using({"spy": _spy(seen)}):
        rank_ptkb(Benchmark("one", (conversation,)), "spy")
        strategy, arg = get("ptkb_topk:2:spy")
        strategy(conversation, 2, arg)
    (built, *handed), (built_topk, topk) = seen[:-2], seen[-2:]
    assert [c.turns for c in built + built_topk] == [(), ()]
    assert [c.personal for c in built + built_topk] == [conversation.personal] * 2
    assert len(handed) == len(conversation.turns)
    for c, index in [*handed, topk]:
        given = conversation.turns[index]
        assert given.response and given.ptkb_provenance or index != 2  # what the benchmark holds
        assert c.turns == (*conversation.turns[:index], asked(given))
        assert (c.turns[index].response, c.turns[index].ptkb_provenance) == (None, ())


def _peeking(conversations):
    """A plug-in reading the turn's assessed PTKB provenance, as gold does."""
    class Ranker:
        def rank(self, turns):
            return Run.of({c.turns[i].qid: [(pid, 1.0) for pid in c.turns[i].ptkb_provenance] for c, i in turns})

    return Ranker()


def test_gold_alone_is_handed_the_turn_s_assessed_ptkb_provenance(ikat2023):
    """The built-in gold is the oracle by design (a manual run); a plug-in is never handed the
    answer, not even one answering to gold's name."""
    assert sum(map(len, rank_ptkb(ikat2023, "gold").values())) > 0
    with METHODS.using({"gold": _peeking, "peeking": _peeking}):
        assert sum(map(len, rank_ptkb(ikat2023, "gold").values())) == 0
        assert sum(map(len, rank_ptkb(ikat2023, "peeking").values())) == 0


def _foreign(conversations):
    class Ranker:
        def rank(self, turns):
            return Run.of({c.turns[i].qid: [("1", 2.0), ("99", 1.0)] for c, i in turns})

    return Ranker()


def _unasked(conversations):
    class Ranker:
        def rank(self, turns):
            return Run.of({"nope_1": [("1", 1.0)], **{c.turns[i].qid: [("1", 1.0)] for c, i in turns}})

    return Ranker()


def test_a_method_ranking_a_statement_its_user_has_not_is_one_line_naming_it(ikat2023):
    """Scored as an unjudged statement in the task, a KeyError in ptkb_topk: an error naming the
    method, the turn and the id."""
    expected = (r"^PTKB ranking method 'foreign' ranked statement '99' for turn 9-1_1, which is none of its user's "
                r"\(their ids: 1, 2, 3, 4, 5, \.\.\.\)")
    with METHODS.using({"foreign": _foreign}):
        with pytest.raises(HarnessError, match=expected):
            rank_ptkb(ikat2023, "foreign")
        strategy, arg = get("ptkb_topk:2:foreign")
        with pytest.raises(HarnessError, match=expected):
            strategy(ikat2023.conversations[0], 0, arg)


def test_a_method_ranking_a_turn_not_asked_is_one_line_naming_it(ikat2023):
    """As a retriever's answer for a query not asked is: its ranking would be dropped without a word."""
    with METHODS.using({"unasked": _unasked}):
        with pytest.raises(HarnessError, match=r"^PTKB ranking method 'unasked' ranked turn 'nope_1', which it was "
                                               r"not asked \(asked: 9-1_1, 9-1_2, 9-1_3, \.\.\.\)$"):
            rank_ptkb(ikat2023, "unasked")


def _boosted(conversations, words: Path, boost: float = 2.0):
    """Statements holding a word of the file `words` first."""
    listed = set(Path(words).read_text(encoding="utf-8").split())

    class Ranker:
        def rank(self, turns):
            return Run.of({c.turns[i].qid: [(s.id, boost * len(listed & set(s.text.lower().split())))
                                            for s in c.personal] for c, i in turns})

    return Ranker()


def test_a_method_parameter_without_a_default_is_the_config_s_to_give(ikat2023, tmp_path):
    """As a retriever's is: declared required, and taken as given."""
    words = tmp_path / "words.txt"
    words.write_text("water\n", encoding="utf-8")
    with METHODS.using({"boosted": _boosted}):
        assert METHODS.declaration("boosted").param("words").required
        ranked = rank_ptkb(ikat2023, "boosted", words=str(words), boost=3)
    texts = {s.id: s.text for s in ikat2023.conversations[0].personal}
    assert {texts[hit.docid] for hit in ranked["9-1_1"] if hit.score == 3.0} == \
        {text for text in texts.values() if "water" in text.lower().split()} != set()


def test_ptkb_topk_refuses_a_method_that_needs_a_parameter(ikat2023):
    """A strategy's arguments give a method none: said when the config is read, and before a query is built."""
    expected = "ptkb_topk's METHOD 'boosted' needs words, and a strategy's arguments give a method no parameters"
    with METHODS.using({"boosted": _boosted}):
        with pytest.raises(HarnessError, match=expected):
            check("ptkb_topk:1:boosted")
        strategy, arg = get("ptkb_topk:1:boosted")
        with pytest.raises(HarnessError, match=expected):
            strategy(ikat2023.conversations[0], 0, arg)


def _first(statement: str):
    def method(conversations):
        class Ranker:
            def rank(self, turns):
                return Run.of({c.turns[i].qid: [(statement, 1.0)] for c, i in turns})

        return Ranker()

    return method


def test_ptkb_topk_ranks_with_the_method_a_name_now_gives(ikat2023):
    """Its rankers are kept per conversation: another object under the same name (a plug-in module
    edited between two harness.run calls of one process) is built anew, not the first one's reused."""
    conversation = ikat2023.conversations[0]
    texts = {s.id: s.text for s in conversation.personal}
    for statement in ("1", "2"):
        with METHODS.using({"first": _first(statement)}):
            strategy, arg = get("ptkb_topk:1:first")
            assert strategy(conversation, 0, arg).context[1:] == (texts[statement],)
