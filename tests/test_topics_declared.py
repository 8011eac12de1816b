"""Benchmarks declare their splits and the typed fields of their turns and conversations."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.registry import check_value, declare
from harness.report.breakdown import groups_from_topics
from harness.topics import ADAPTERS, load, splits
from harness.topics.model import Turn


def test_every_benchmark_declares_a_summary_splits_and_described_fields():
    for name in ADAPTERS.names():
        declaration = ADAPTERS.declaration(name)
        assert declaration.summary and declaration.splits, name
        assert all(field.desc for field in declaration.fields + declaration.conversation_fields), name


def test_splits_come_from_the_declaration_without_calling_the_adapter():
    def never(split):
        raise AssertionError("listing splits must not load the benchmark")

    mine = declare("a plug-in benchmark", splits=("dev", "test"))(never)
    with ADAPTERS.using({"mine": mine}):
        assert splits("mine") == ("dev", "test")
    assert splits("pragmaticqa") == ADAPTERS.declaration("pragmaticqa").splits == ("val", "train", "test")
    assert load("pragmaticqa").name == "pragmaticqa:val"  # the first declared split is the default


def test_an_unknown_split_is_refused_listing_the_declared_ones():
    with pytest.raises(HarnessError, match=r"^ikat2023 has no split 'bogus'; known: test, train$"):
        load("ikat2023:bogus")
    with pytest.raises(HarnessError, match=r"^crsarena has no split 'test'; known: open, closed$"):
        load("crsarena:test")


FIELDED = ["ikat2023", "cast2020", "cosrec-curated", "cosrec-crowd", "opendialkg", "pragmaticqa", "crsarena:closed"]


@pytest.mark.parametrize("name", FIELDED)
def test_every_turn_carries_the_declared_fields_with_their_types(name):
    benchmark = load(name)
    declaration = ADAPTERS.declaration(name.partition(":")[0])
    assert declaration.fields or declaration.conversation_fields
    for field in declaration.fields + declaration.conversation_fields:
        assert field.desc, f"{name}: field {field.name} has no description"
    for conversation in benchmark.conversations:
        for field in declaration.conversation_fields:
            check_value(f"{conversation.id}.{field.name}", getattr(conversation, field.name), field.type)
        for turn in conversation.turns:
            for field in declaration.fields:
                check_value(f"{turn.qid}.{field.name}", getattr(turn, field.name), field.type)


def test_turns_have_no_untyped_extra_dict():
    assert not hasattr(Turn("q", "u"), "extra")
    assert all(not hasattr(c, "extra") for c in load("crsarena:open").conversations)


def test_ikat_turns_carry_their_ptkb_provenance():
    turn = load("ikat2023").conversations[0].turns[0]
    assert turn.ptkb_provenance == ("5", "4", "2")
    assert [f.name for f in ADAPTERS.declaration("ikat2023").fields] == ["ptkb_provenance"]


def test_cosrec_turns_carry_variants_and_intent():
    turn = {t.qid: t for t in load("cosrec-curated").turns}["CoSRec-Curated_1_1_0"]
    assert turn.type == "recommendation" and len(turn.query_variants) == 4
    assert {"query_variants", "type", "user", "keywords"} <= {f.name for f in ADAPTERS.declaration("cosrec-curated").fields}


def test_opendialkg_turns_carry_context_entities_and_recommendations():
    turn = load("opendialkg").turns[0]
    assert (turn.context, turn.entities, turn.recommended) == ((), ("Fight Club",), ("Panic Room",))
    assert [f.name for f in ADAPTERS.declaration("opendialkg").fields] == ["context", "entities", "recommended"]


def test_crsarena_conversations_carry_system_user_sentiment_and_setting():
    first = load("crsarena:open").conversations[0]
    assert (first.system, first.sentiment, first.setting) == ("barcor_redial", "frustrated", "open")
    assert [f.name for f in ADAPTERS.declaration("crsarena").conversation_fields] == \
        ["system", "user", "sentiment", "setting", "opening"]


def test_compare_group_field_must_be_a_declared_field(capsys, tmp_path):
    code = main(["compare", "--qrels", str(tmp_path / "q"), str(tmp_path / "a.run"), "--topics", "cosrec-curated",
                 "--group-field", "intent"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert ("--group-field 'intent': cosrec-curated declares no such field of its turns or conversations; declared: "
            "query_variants, utterance_index, type, user, keywords, keywords_by_user") in err
    groups = groups_from_topics(load("pragmaticqa"), "genre")  # a conversation field
    assert len(groups) == len(load("pragmaticqa").turns)

