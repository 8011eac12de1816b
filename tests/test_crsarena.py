"""The `crsarena` adapter: CRSArena-Dial dialogues as conversations with system and sentiment."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harness.errors import HarnessError, InputError
from harness.topics import load
from harness.topics.crsarena import dialogue_file, read_dialogues


def test_open_and_closed_hold_the_published_dialogue_counts():
    # CRSArena-Dial DataAnalysis.md: 254 open, 220 closed dialogues
    open_, closed = load("crsarena:open"), load("crsarena:closed")
    assert (len(open_.conversations), len(closed.conversations)) == (254, 220)
    assert Counter(c.system for c in open_.conversations)["kbrd_opendialkg"] == 38
    assert Counter(c.system for c in closed.conversations)["crbcrs_redial"] == 26


def test_bare_name_is_open_then_closed():
    both = load("crsarena")
    assert len(both.conversations) == 474
    assert [c.setting for c in both.conversations[253:255]] == ["open", "closed"]
    assert both.qrels is None and both.corpus is None


def test_sentiment_user_and_system_come_from_the_record():
    first = load("crsarena:open").conversations[0]
    assert first.id == "barcor_redial_03368a16-93bd-4b21-885d-b9a21e3498ba"
    assert first.system == "barcor_redial"
    assert first.user == "03368a16-93bd-4b21-885d-b9a21e3498ba"
    assert first.sentiment == "frustrated"


def test_each_user_utterance_is_a_turn_answered_by_the_following_agent_utterance():
    first = load("crsarena:open").conversations[0]
    assert first.turns[0].qid == "barcor_redial-03368a16-93bd-4b21-885d-b9a21e3498ba_0"
    assert first.turns[0].utterance == "Recommend me r movi in the science fiction genre "
    assert first.turns[0].response == "Have you seen Blade Runner 2049 (2017)?"
    assert first.turns[1].qid.endswith("_2")


def test_every_user_utterance_becomes_one_turn():
    records = json.loads(dialogue_file("closed").read_text())
    users = sum(u["participant"] == "USER" for r in records for u in r["conversation"])
    assert len(load("crsarena:closed").turns) == users == 1228


def test_unknown_split_is_an_error():
    with pytest.raises(HarnessError, match="crsarena has no split 'test'"):
        load("crsarena:test")


def test_malformed_dialogue_names_file_and_record(tmp_path):
    bad = tmp_path / "crs_arena_dial_open.json"
    bad.write_text(json.dumps([{"conversation ID": "x_1", "agent": {"id": "x"}, "user": {"id": "1"},
                                "conversation": [], "metadata": {}}]))
    with pytest.raises(InputError, match=r"crs_arena_dial_open.json \(record 0 \(x_1\)\): expected a str field 'sentiment'"):
        read_dialogues(bad)


def test_a_dialogue_file_that_is_not_json_is_worded_as_every_json_reader_words_it(tmp_path):
    """`FILE:LINE: invalid JSON: WHAT (column N)`, as topics, qrels and submissions say (it said
    'not valid JSON (WHAT)', without the column)."""
    bad = tmp_path / "crs_arena_dial_open.json"
    bad.write_text('[\n  {"conversation ID": "x_1",\n')
    with pytest.raises(InputError) as error:
        read_dialogues(bad)
    assert str(error.value) == f"{bad}:3: invalid JSON: Expecting property name enclosed in double quotes (column 1)"


def test_a_sentiment_other_than_satisfied_or_frustrated_is_refused(tmp_path):
    """'Satisfied' once counted as frustrated: every system 0% satisfied, correlations nan, without a word."""
    bad = tmp_path / "crs_arena_dial_open.json"
    bad.write_text(json.dumps([{"conversation ID": "x_1", "agent": {"id": "x"}, "user": {"id": "1"},
                                "conversation": [], "metadata": {"sentiment": "Satisfied"}}]))
    with pytest.raises(InputError) as error:
        read_dialogues(bad)
    assert str(error.value) == (f"{bad} (record 0 (x_1)): sentiment 'Satisfied' is neither 'satisfied' nor "
                                "'frustrated'")
