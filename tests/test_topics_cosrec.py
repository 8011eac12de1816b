"""CoSRec curated intents (with personalised copies) and crowd annotations."""

from __future__ import annotations

from harness.topics import load
from harness.topics.cosrec import Intent


def test_curated_counts():
    benchmark = load("cosrec-curated")
    assert len(benchmark.conversations) == 20
    intents = [t for t in benchmark.turns if "#" not in t.qid]
    assert len(intents) == 143  # 62 recommendation intents, each with 3-4 personalised copies
    assert len({t.qid for t in benchmark.turns}) == len(benchmark.turns) == 368
    assert all(t.type and t.manual_rewrite for t in benchmark.turns)


def test_every_judged_curated_qid_comes_from_the_adapter():
    benchmark = load("cosrec-curated")
    judged = benchmark.qrels().judgments
    assert len(judged) == 268
    assert set(judged) <= {turn.qid for turn in benchmark.turns}


def test_intent_carries_type_variants_and_canonical_longest_formulation():
    turn = {t.qid: t for t in load("cosrec-curated").turns}["CoSRec-Curated_1_1_0"]
    assert turn.type == "recommendation"
    assert len(turn.query_variants) == 4
    assert turn.manual_rewrite == max(turn.query_variants, key=len)


def test_personalised_copies_follow_users_in_lexical_order():
    conversation = load("cosrec-curated").conversations[0]
    users = sorted(conversation.keywords_by_user)
    turns = {t.qid: t for t in conversation.turns}
    for k, user in enumerate(users):
        copy = turns[f"CoSRec-Curated_1_0_0#{k}"]
        assert copy.user == user
        keywords = " ".join(conversation.keywords_by_user[user])
        assert all(variant.endswith(keywords) for variant in copy.query_variants)
    assert turns[f"CoSRec-Curated_1_0_0#{len(users)}"].user is None


def test_search_intents_are_not_personalised():
    qids = {t.qid for t in load("cosrec-curated").turns}
    assert "CoSRec-Curated_1_2_0" in qids and "CoSRec-Curated_1_2_0#0" not in qids


def test_crowd_keeps_each_annotators_intents():
    benchmark = load("cosrec-crowd")
    assert (len(benchmark.conversations), len(benchmark.turns)) == (291, 2329)
    turn = benchmark.turns[0]
    assert turn.qid == "CoSRec-Crowd_1_0"
    assert len(turn.annotations) == 4
    assert turn.annotations[0][0] == Intent("recommendation", "mistery novel about a serial killer in London")
    assert benchmark.qrels is None


def test_crowd_consecutive_system_lines_form_one_response():
    conversation = {c.id: c for c in load("cosrec-crowd").conversations}["CoSRec-Crowd_27"]
    assert any("\n" in (turn.response or "") for turn in conversation.turns)


def test_the_extra_judged_copy_of_each_recommendation_intent_has_no_user_as_the_readme_says():
    """The qrels judge one copy more per intent than users are listed: README counts 62 judged such
    copies beside the 43 judged search intents, both without a user."""
    benchmark = load("cosrec-curated")
    judged = benchmark.qrels().judgments
    for conversation in benchmark.conversations:
        last = f"#{len(conversation.keywords_by_user)}"
        copies = [t for t in conversation.turns if "#" in t.qid]
        assert all((t.user is None) == t.qid.endswith(last) for t in copies)
        plain = {t.qid: tuple(v.strip() for v in t.query_variants) for t in conversation.turns}
        assert all(t.keywords == () and t.query_variants == plain[t.qid.partition("#")[0]]
                   for t in copies if t.user is None)
    no_user = [t for t in benchmark.turns if t.qid in judged and t.user is None]
    assert sum("#" in t.qid for t in no_user) == 62 and sum(t.type == "search" for t in no_user) == 43
