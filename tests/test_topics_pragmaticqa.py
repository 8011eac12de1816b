"""PragmatiCQA: questions in their conversations, a span corpus and qrels derived from citations."""

from __future__ import annotations

import pytest

from harness.topics import load
from harness.topics.pragmaticqa import span_counts


@pytest.mark.parametrize(
    "split, conversations, turns, judged, documents",
    [("train", 476, 3722, 3680, 6894), ("val", 179, 1526, 1480, 2547), ("test", 213, 1576, 1570, 3031)],
)
def test_counts(split, conversations, turns, judged, documents):
    benchmark = load(f"pragmaticqa:{split}")
    assert (len(benchmark.conversations), len(benchmark.turns)) == (conversations, turns)
    assert len(benchmark.qrels().judgments) == judged
    assert len(list(benchmark.corpus.documents())) == documents


def test_bare_name_is_val():
    assert load("pragmaticqa").name == "pragmaticqa:val"


def test_qid_is_line_and_question_number_and_answer_is_the_response():
    turn = load("pragmaticqa:train").conversations[0].turns[1]
    assert turn.qid == "1_2"
    assert turn.response


def test_literal_spans_grade_2_pragmatic_only_spans_grade_1():
    benchmark = load("pragmaticqa:train")
    judgments = benchmark.qrels().judgments
    for turn in benchmark.turns:
        for docid in turn.literal:
            assert judgments[turn.qid][docid] == 2
        for docid in turn.pragmatic:
            assert judgments[turn.qid][docid] == 1


def test_broken_spans_are_counted_not_indexed():
    counts = span_counts("val")
    assert counts.cited == 3696
    assert (counts.broken, counts.scrape_error, counts.no_key, counts.empty) == (7, 84, 311, 0)
    assert counts.indexed + counts.skipped == counts.cited
    texts = [document.contents for document in load("pragmaticqa:val").corpus.documents()]
    assert not any("Cannot GET" in text for text in texts)


def test_every_judged_span_is_in_the_corpus_once():
    benchmark = load("pragmaticqa:test")
    ids = [document.id for document in benchmark.corpus.documents()]
    assert len(ids) == len(set(ids))
    assert {d for judged in benchmark.qrels().judgments.values() for d in judged} == set(ids)
    assert all(len(docid.split(":")) == 3 for docid in ids)  # startKey:endKey:text digest
