"""iKAT 2023-2025 topics on the shipped files: counts, turn ids, PTKB, provenance corpus."""

from __future__ import annotations

import re

import pytest

from harness.errors import HarnessError
from harness.topics import load
from harness.topics.ikat import ptkb_qrels


@pytest.mark.parametrize(
    "name, conversations, turns",
    [("ikat2023", 25, 332), ("ikat2023:train", 11, 95), ("ikat2024", 17, 218), ("ikat2025", 17, 188)],
)
def test_counts(name, conversations, turns):
    benchmark = load(name)
    assert (len(benchmark.conversations), len(benchmark.turns)) == (conversations, turns)
    assert len({turn.qid for turn in benchmark.turns}) == turns


def test_bare_name_is_the_judged_test_split():
    assert load("ikat2023").name == "ikat2023:test"
    with pytest.raises(HarnessError, match="no split 'dev'"):
        load("ikat2023:dev")


@pytest.mark.parametrize("name, judged", [("ikat2023", 176), ("ikat2024", 116)])
def test_every_judged_turn_comes_from_the_topics(name, judged):
    benchmark = load(name)
    qrels = benchmark.qrels()
    assert len(qrels.judgments) == judged
    assert set(qrels.judgments) <= {turn.qid for turn in benchmark.turns}


def test_turn_ids_follow_the_qrels_spelling():
    assert load("ikat2023").turns[2].qid == "9-1_3"
    assert load("ikat2024").turns[7].qid == "0_8"
    assert load("ikat2025").turns[0].qid == "1-1_1"


def test_2025_has_no_qrels():
    assert load("ikat2025").qrels is None


@pytest.mark.parametrize("kind", ["nist", "org"])
def test_ptkb_qrels_judge_statements_of_the_turns_own_conversation(kind):
    statements = {
        turn.qid: {s.id for s in conversation.personal}
        for conversation in load("ikat2023").conversations
        for turn in conversation.turns
    }
    qrels = ptkb_qrels(kind)
    assert len(qrels.judgments) == {"nist": 98, "org": 112}[kind]
    for qid, judged in qrels.judgments.items():
        assert set(judged) <= statements[qid], qid


def test_ptkb_becomes_personal_statements_with_their_ids():
    conversation = load("ikat2023").conversations[0]
    assert conversation.personal[4].id == "5" and conversation.personal[4].text == "I'm vegetarian."
    first = conversation.turns[0]
    assert first.ptkb_provenance == ("5", "4", "2")
    assert first.manual_rewrite.startswith("Can you help me find a diet for myself considering")
    assert first.provenance[0] == "clueweb22-en0035-25-01897:1"


def test_2025_relevant_ptkbs_texts_map_to_list_positions():
    conversation = load("ikat2025").conversations[0]
    assert len(conversation.personal) == 21 and conversation.personal[0].id == "1"
    turn = conversation.turns[2]
    assert turn.qid == "1-1_3"
    assert turn.ptkb_provenance == ("20", "18")
    assert turn.provenance[0] == "clueweb22-en0026-73-16809:6"


@pytest.mark.parametrize("split, passages", [("test", 700), ("train", 194)])
def test_provenance_corpus_is_exactly_the_cited_passages(split, passages):
    benchmark = load(f"ikat2023:{split}")
    ids = [document.id for document in benchmark.corpus.documents()]
    assert len(ids) == len(set(ids)) == passages
    assert all(re.fullmatch(r"clueweb22-en\d{4}-\d{2}-\d{5}:\d+", docid) for docid in ids)
    assert set(ids) == {passage for turn in benchmark.turns for passage in turn.provenance}
