"""OpenDialKG (iEvaLM processing): recommendation turns as queries, items as documents."""

from __future__ import annotations

import json

import pytest

from harness.topics import load
from harness.topics.opendialkg import folder, unmapped_recommendations


@pytest.mark.parametrize(
    "split, conversations, turns", [("train", 4100, 5547), ("valid", 1124, 1188), ("test", 1113, 1188)]
)
def test_counts_and_qids_are_the_split_ids(split, conversations, turns):
    benchmark = load(f"opendialkg:{split}")
    assert (len(benchmark.conversations), len(benchmark.turns)) == (conversations, turns)
    ids = json.loads((folder() / f"{split}_data_id.json").read_text())
    assert {turn.qid for turn in benchmark.turns} == set(ids)


def test_every_recommendation_maps_to_an_item():
    benchmark = load("opendialkg")
    assert benchmark.name == "opendialkg:test"
    judged = benchmark.qrels().judgments
    assert set(judged) == {turn.qid for turn in benchmark.turns}
    assert sum(len(items) for items in judged.values()) == 1262 - sum(unmapped_recommendations("test").values())
    assert not unmapped_recommendations("test")


def test_turn_keeps_context_entities_and_recommendations():
    turn = {t.qid: t for t in load("opendialkg").turns}["11_3"]
    assert turn.utterance.endswith("Do you know what genre The Guard is?")
    assert turn.context[0] == "Could you recommend anything by the actor Don Cheadle?"
    assert turn.recommended == ("The Guard",)
    assert "Don Cheadle" in turn.entities


def test_history_strategies_see_earlier_recommendation_turns_not_the_context_as_readme_says():
    """README and configs/default.yaml: all_history differs from raw on the 75 test turns that are not
    their dialogue's first recommendation turn, and never holds the turn's context."""
    from harness.queries import stream

    conversations = load("opendialkg:test").conversations
    raw = {q.qid: q.text for q in stream(conversations, "raw")}
    history = {q.qid: q.text for q in stream(conversations, "all_history")}
    later = {t.qid for c in conversations for t in c.turns[1:]}
    assert {qid for qid in raw if raw[qid] != history[qid]} == later and len(later) == 75
    assert history["11_3"] == raw["11_3"] == "I do! I think he's a great actor. Do you know what genre The Guard is?"


def test_item_documents_carry_attributes_and_kg_facts():
    documents = {d.id: d for d in load("opendialkg").corpus.documents()}
    assert len(documents) == 3672
    item = documents["1"]
    assert item.title == "Rachel Getting Married"
    assert "director: Jonathan Demme" in item.contents
    assert item.contents.count("Bill Irwin") == 1  # repeated attribute values once
