"""Response evaluation (harness.responses): readers, nugget banks, the scores and their rules,
assignment through the judge layer, and `harness responses eval`.

The reference for the four nugget scores is the `nuggetizer` package's own metric function
(nuggetizer.core.metrics), compared per turn and on the mean; the real data is the CONE-RAG
resource in ../shared (23 iKAT 2024 runs' responses, human gold nuggets graded 1-4).
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import fields, replace
from html import escape
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.judge.llm import LLMJudge
from harness.judge.scales import SUPPORT_0_2
from harness.queries.llm import Endpoint
from harness.responses import compare, evaluate
from harness.responses.assign import RecordedAssignments
from harness.responses.evaluation import MEASURES, NUGGET_SCORES, TurnResult, evaluate_runs
from harness.responses.judges import TEMPLATES
from harness.responses.model import Nugget, NuggetBank, Response, ResponseRun, Sentence
from harness.responses.nuggets import read_bank
from harness.responses.questions import turn_questions
from harness.responses.readers import read_responses
from harness.responses.report import build_report, render
from harness.responses.scores import citation_scores, mean, nugget_scores
from tests.conftest import shared_path, start_llm_server

SCORES = ("strict_vital", "strict_all", "vital", "all")


def cone_rag(*parts: str) -> Path:
    return shared_path("data/ikat/2024/cone-rag") / "resources" / Path(*parts)


@pytest.fixture(scope="module")
def cone_runs():
    return (read_responses(cone_rag("participant_resources", "automatic_responses.json"))
            + read_responses(cone_rag("participant_resources", "manual_responses.json")))


@pytest.fixture(scope="module")
def human_bank():
    return read_bank(cone_rag("human_resources", "gold_nuggets_human.json"))


def nuggetizer_scores(records: list[dict]) -> tuple[dict[tuple[str, str], dict], dict]:
    """nuggetizer's own numbers for assignment records: per (run, qid), and the mean."""
    from nuggetizer.core.metrics import calculate_global_metrics, calculate_nugget_scores

    per_turn = {}
    for record in records:
        metrics = calculate_nugget_scores(record["qid"], record["nuggets"])
        per_turn[record["run_id"], record["qid"]] = {s: getattr(metrics, f"{s}_score") for s in SCORES}
    return per_turn, calculate_global_metrics(records)


def assert_equal_to_nuggetizer(evaluation, records: list[dict]) -> None:
    expected, _ = nuggetizer_scores(records)
    frame = evaluation.per_turn()
    assert len(frame) == len(expected)
    for row in frame.itertuples():
        for score in SCORES:
            assert getattr(row, score) == pytest.approx(expected[row.run, row.turn][score], abs=1e-12)
    for run in evaluation.runs:
        _, means = nuggetizer_scores([r for r in records if r["run_id"] == run])
        mine = evaluation.aggregate().set_index("run").loc[run]
        for score in SCORES:
            assert mine[score] == pytest.approx(means[f"{score}_score"], abs=1e-12)


# --- readers ------------------------------------------------------------------------------


@pytest.mark.reference
def test_cone_rag_participant_files_read_as_23_runs_of_79_turns(cone_runs):
    assert len(cone_runs) == 23
    assert {len(run.responses) for run in cone_runs} == {79}
    assert "manual-out-rr-debertav3" in {run.name for run in cone_runs}


def test_an_ikat_2024_run_is_scored_by_its_rank_1_response_citing_its_used_passages(tmp_path):
    from harness.ikat.submission import PassageProvenance, Submission, SubmissionTurn, write_submission
    from harness.ikat.submission import Response as IkatResponse

    used = PassageProvenance("clueweb22-en0000-00-00000:1", 0.9, "The visa costs 25 dollars.", True)
    unused = PassageProvenance("clueweb22-en0000-00-00001:0", 0.5, "Egypt is in Africa.", False)
    turn = SubmissionTurn("1_1", (IkatResponse(2, "second answer", (unused,)),
                                  IkatResponse(1, "A visa costs 25 dollars.", (used, unused))))
    write_submission(tmp_path / "run.json", Submission("my-run", "automatic", (turn,)), 2024)
    [run] = read_responses(tmp_path / "run.json")
    response = run.responses["1_1"]
    assert (run.name, run.format, response.text) == ("my-run", "ikat-2024-json", "A visa costs 25 dollars.")
    assert response.sentences == (Sentence("A visa costs 25 dollars.", (used.id,)),)
    assert response.passages == {used.id: "The visa costs 25 dollars."}


def test_an_ikat_2024_response_marking_no_passage_used_cites_its_top_5_as_the_official_validator_says(tmp_path):
    """The official iKAT 2023/2024 validator: "The top 5 passages will be used as provenance by
    default" (ikat-official run_validation/main.py)."""
    from harness.ikat.submission import PassageProvenance, Submission, SubmissionTurn, write_submission
    from harness.ikat.submission import Response as IkatResponse

    passages = tuple(PassageProvenance(f"clueweb22-en0000-00-0000{i}:0", 1 - i / 10, f"text {i}", False)
                     for i in range(7))
    turn = SubmissionTurn("1_1", (IkatResponse(1, "An answer.", passages),))
    write_submission(tmp_path / "run.json", Submission("my-run", "automatic", (turn,)), 2024)
    [run] = read_responses(tmp_path / "run.json")
    response = run.responses["1_1"]
    assert response.sentences == (Sentence("An answer.", tuple(p.id for p in passages[:5])),)
    assert response.passages == {p.id: p.text for p in passages[:5]} and response.cites_top


def test_an_ikat_response_marking_no_passage_used_cites_its_5_best_scored_not_its_first_5_listed(tmp_path):
    """The validator only warns about a list out of score order: "top 5" is the 5 best by score in
    trec_eval's order (as `ikat to-trec` ranks them), a passage listed twice counted once."""
    from harness.ikat.submission import PassageProvenance, Submission, SubmissionTurn, write_submission
    from harness.ikat.submission import Response as IkatResponse

    ids = [f"clueweb22-en0000-00-0000{i}:0" for i in range(8)]
    listed = [PassageProvenance(ids[0], 0.0), PassageProvenance(ids[0], 0.0)]  # ascending, p0 twice
    listed += [PassageProvenance(pid, float(i)) for i, pid in enumerate(ids) if i]
    listed.append(PassageProvenance("clueweb22-en0000-00-00009:0", 3.0))  # ties with p3, a greater id
    turn = SubmissionTurn("1_1", (IkatResponse(1, "An answer.", tuple(listed)),))
    write_submission(tmp_path / "run.json", Submission("my-run", "automatic", (turn,)), 2023)
    [run] = read_responses(tmp_path / "run.json")
    assert run.responses["1_1"].sentences == (
        Sentence("An answer.", (ids[7], ids[6], ids[5], ids[4], "clueweb22-en0000-00-00009:0")),)


def ikat_2025_line(turn: str, pieces, run: str = "r25") -> dict:
    """An iKAT 2025 line whose `responses` are `pieces`: (text, the passage ids it cites)."""
    cited = [pid for _, pids in pieces for pid in pids]
    return {"metadata": {"team_id": "t", "run_id": run, "run_type": "automatic"}, "turn_id": turn,
            "responses": [{"text": text, "citations": {pid: 0.9 for pid in pids}, "ptkb_provenance": []}
                          for text, pids in pieces],
            "references": {pid: 0.9 for pid in cited}}


P0, P1 = "clueweb22-en0000-00-00000:1", "clueweb22-en0000-00-00002:3"


def test_an_ikat_2025_turn_s_responses_are_one_answer_cut_into_sentences_each_citing_its_own(tmp_path):
    """The track's validator counts the words of a turn's responses together against its limit and
    trims "sentences from the end" (the iKAT 2025 README): they read as a TREC RAG answer does."""
    pieces = [("Here is what I found.", []), ("Visas cost 25 dollars.", [P0]), ("They last 30 days.", [P1, P0])]
    (tmp_path / "run.jsonl").write_text(json.dumps(ikat_2025_line("3_2", pieces)) + "\n")
    [run] = read_responses(tmp_path / "run.jsonl")
    assert run.name == "r25" and run.format == "ikat-2025-jsonl"
    response = run.responses["3_2"]
    assert response.text == "Here is what I found. Visas cost 25 dollars. They last 30 days."
    assert response.sentences == (Sentence("Here is what I found.", ()), Sentence("Visas cost 25 dollars.", (P0,)),
                                  Sentence("They last 30 days.", (P1, P0)))


def test_an_ikat_2025_answer_over_the_word_limit_is_read_without_the_pieces_the_official_validator_drops(tmp_path):
    """Its --fix-length (on by default) pops pieces from the end until the turn's words fit 250:
    the answer the track scores. A piece of 250 words after one of 4 goes, and is counted."""
    pieces = [("Visas cost 25 dollars.", [P0]), ("word " * 250, [P1])]
    (tmp_path / "run.jsonl").write_text(json.dumps(ikat_2025_line("3_2", pieces)) + "\n")
    [run] = read_responses(tmp_path / "run.jsonl")
    response = run.responses["3_2"]
    assert (response.text, response.sentences, response.dropped) == (
        "Visas cost 25 dollars.", (Sentence("Visas cost 25 dollars.", (P0,)),), 1)


def rag_line(topic, run="rag-run", sentences=(("One fact.", [0]), ("Another.", [])), references=("d0", "d1")):
    return {"run_id": run, "topic_id": topic, "topic": "a question", "references": list(references),
            "response_length": 3, "answer": [{"text": t, "citations": c} for t, c in sentences]}


def test_trec_rag_2024_citations_are_indexes_into_references(tmp_path):
    (tmp_path / "rag.jsonl").write_text(json.dumps(rag_line(23287, sentences=(("A.", [1, 0]), ("B.", [])))) + "\n")
    [run] = read_responses(tmp_path / "rag.jsonl")
    assert run.format == "trec-rag-jsonl" and run.name == "rag-run"
    response = run.responses["23287"]  # an integer topic id reads as the string the nuggets use
    assert response.text == "A. B."  # the sentences joined by a space, as nuggetizer joins them
    assert response.sentences == (Sentence("A.", ("d1", "d0")), Sentence("B.", ()))
    assert response.question == "a question"  # its `topic`, the question the judge is asked (see turn_questions)


def test_trec_rag_2025_reads_metadata_and_segment_id_citations(tmp_path):
    line = {"metadata": {"team_id": "t", "run_id": "r", "narrative_id": "n7", "narrative": "Why? And how?",
                         "type": "automatic"},
            "references": ["seg-a", "seg-b"], "answer": [{"text": "X.", "citations": ["seg-b"]}]}
    (tmp_path / "rag25.jsonl").write_text(json.dumps(line) + "\n")
    [run] = read_responses(tmp_path / "rag25.jsonl")
    assert run.name == "r" and run.responses["n7"].sentences == (Sentence("X.", ("seg-b",)),)
    assert run.responses["n7"].question == "Why? And how?"


@pytest.mark.parametrize("lines, expected", [
    ([rag_line(1), {**rag_line(2), "answer": "text"}], ":2: answer: expected a list"),
    ([rag_line(1, sentences=(("A.", [5]),))], ":1: answer[0].citations: index 5 is outside the 2 references"),
    ([{**rag_line(1), "topic_id": None}], ":1: topic_id: expected the topic id"),
    ([{**rag_line(1), "topic": ["a", "b"]}], ":1: topic: expected the question answered (a string), got ['a', 'b']"),
    ([rag_line(1), rag_line(2, run="other")], ":2: run_id: 'other' differs from the first line's 'rag-run'"),
    ([rag_line(1), rag_line(1)], ":2: turn 1 is answered twice (first on line 1)"),
    ([{k: v for k, v in rag_line(1).items() if k != "answer"}], ":1: answer: expected a list"),  # one line
    ([{"metadata": {"run_id": "r", "narrative_id": "n1"}, "references": []}], ":1: answer: expected a list"),
    ([], ": empty file: no responses"),
    ([{"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1_1",
       "responses": [{"text": "x", "ptkb_provenance": []}], "references": {}}], ":1: responses: responses[0]: citations missing"),
    # past the turn's 250 words the checks leave a piece to the official validator, which drops it: checked still
    ([{**ikat_2025_line("1_1", []), "responses": [
        {"text": "word " * 250, "citations": {}, "ptkb_provenance": []}, {"text": "x", "ptkb_provenance": []}]}],
     ":1: responses[1]: expected an object {text, citations: {passage id: number}}"),
])
def test_a_malformed_response_file_is_an_error_naming_file_line_and_field(tmp_path, lines, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(InputError) as error:
        read_responses(path)
    assert str(error.value) == f"{path}{expected}" or str(error.value).startswith(f"{path}{expected}")


def test_json_lines_read_as_ikat_json_is_an_error_naming_the_file_and_what_it_is(tmp_path):
    path = tmp_path / "rag.jsonl"  # TREC RAG answers, given as the one JSON document of an iKAT 2023/2024 run
    path.write_text("".join(json.dumps(rag_line(topic)) + "\n" for topic in (1, 2)))
    with pytest.raises(InputError) as error:
        read_responses(path, "ikat-json")
    assert str(error.value) == (f"{path}: is JSON Lines (one JSON object per line), not the one JSON document of an "
                                "iKAT 2023 or 2024 run (iKAT 2025 runs and TREC RAG answers are JSON Lines)")


# --- nugget banks -------------------------------------------------------------------------


@pytest.mark.reference
def test_cone_rag_human_nuggets_are_2279_graded_1_to_4_vital_from_grade_3(human_bank):
    nuggets = [n for turn in human_bank.nuggets.values() for n in turn]
    assert len(human_bank.nuggets) == 116 and len(nuggets) == 2279
    assert {n.grade for n in nuggets} == {1, 2, 3, 4}
    assert all(n.vital == (n.grade >= 3) for n in nuggets) and sum(n.vital for n in nuggets) == 644
    assert "vital when grade >= 3" in human_bank.rule
    assert sum(n.vital for turn in read_bank(cone_rag("human_resources", "gold_nuggets_human.json"),
                                             vital_grade=4).nuggets.values() for n in turn) == 57


def test_nuggetizer_nuggets_keep_vital_and_okay_weighted_2_and_1(tmp_path):
    path = tmp_path / "nuggets.jsonl"
    path.write_text(json.dumps({"qid": "q1", "query": "?", "nuggets": [
        {"text": "a", "importance": "vital"}, {"text": "b", "importance": "okay"}]}) + "\n")
    bank = read_bank(path)
    assert bank.of("q1") == (Nugget("1", "a", 2, True), Nugget("2", "b", 1, False))
    path.write_text(json.dumps({"qid": "q1", "nuggets": [{"text": "a", "importance": "high"}]}) + "\n")
    with pytest.raises(InputError, match=r"nuggets.jsonl:1: nuggets\[0\].importance: expected 'vital' or 'okay'"):
        read_bank(path)


def test_a_nuggetizer_banks_query_is_its_turns_question_as_nuggetizers_assigner_asks_it(tmp_path):
    path = tmp_path / "nuggets.jsonl"
    lines = [{"qid": "q1", "query": "Do I need a visa?", "nuggets": [{"text": "a", "importance": "vital"}]},
             {"qid": "q2", "query": " ", "nuggets": [{"text": "b", "importance": "okay"}]},  # blank: none stated
             {"qid": "q3", "nuggets": [{"text": "c", "importance": "okay"}]}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert read_bank(path).questions == {"q1": "Do I need a visa?"}
    path.write_text(json.dumps({**lines[0], "query": {"text": "?"}}) + "\n")
    with pytest.raises(InputError, match=r"nuggets.jsonl:1: query: expected the question \(a string\), got \{"):
        read_bank(path)



@pytest.mark.parametrize("lines", [1, 2])
def test_a_bank_is_told_by_content_so_nuggetizer_lines_in_a_json_file_read_as_nuggetizers(tmp_path, lines):
    """Not by a `.jsonl` suffix alone: nuggetizer lines in `nuggets.json` were read as one CONE-RAG
    object ('line 2: invalid JSON: Extra data', or turn 'qid' of the wrong shape)."""
    path = tmp_path / "nuggets.json"
    path.write_text("".join(json.dumps({"qid": f"q{n}", "nuggets": [{"text": "a", "importance": "vital"}]}) + "\n"
                            for n in range(1, lines + 1)))
    assert read_bank(path).nuggets == {f"q{n}": (Nugget("1", "a", 2, True),) for n in range(1, lines + 1)}
    path.write_text(json.dumps({"q1": {"[1]": {"text": "a", "relevance": "3"}}}))
    assert read_bank(path).nuggets == {"q1": (Nugget("[1]", "a", 3, True),)}


def test_a_bank_a_given_format_does_not_read_is_an_error_naming_that_format_and_the_one_it_reads_as(tmp_path):
    """A CONE-RAG bank read as nuggetizer's was `nuggets.json:1: invalid JSON`, naming neither
    format: its owner was sent to fix a file that is fine."""
    path = tmp_path / "nuggets.json"
    path.write_text(json.dumps({"q1": {"[1]": {"text": "a", "relevance": "3"}}}, indent=2))
    with pytest.raises(InputError) as raised:
        read_bank(path, "nuggetizer-jsonl")
    assert str(raised.value) == (
        f"{path}:1: invalid JSON: Expecting property name enclosed in double quotes (column 2) (read as "
        "nuggetizer-jsonl, the format given; it reads as cone-rag-json: give that, or leave the format out to have it "
        "told from the content)")


def test_a_cone_rag_bank_named_jsonl_reads_as_cone_rags(tmp_path):
    """One JSON object over many lines, named `.jsonl`: it was read as nuggetizer's lines ('line 1: invalid JSON')."""
    path = tmp_path / "gold.jsonl"
    for indent in (2, None):  # over many lines, or on one
        path.write_text(json.dumps({"q1": {"[1]": {"text": "a", "relevance": "3"}}}, indent=indent))
        assert read_bank(path).nuggets == {"q1": (Nugget("[1]", "a", 3, True),)}


@pytest.mark.parametrize("text, problem", [
    ("", "empty file: no nuggets"), ("\n\n", "empty file: no nuggets"),
    ("q1 0 d1 2\n", "1: this looks like qrels ('qid iter docid grade'), not a nugget bank (each turn's nuggets: "
                   "CONE-RAG's JSON or nuggetizer's JSON Lines)"),
    ("q1 Q0 d1 1 9.5 r\n", "1: this looks like a TREC run ('qid Q0 docid rank score tag'), not a nugget bank"),
])
def test_an_empty_file_or_qrels_or_a_run_given_as_the_nugget_bank_is_said_so_not_invalid_json(tmp_path, text, problem):
    path = tmp_path / "nuggets.json"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_bank(path)
    assert str(caught.value).startswith(f"{path}:{problem}" if problem[0].isdigit() else f"{path}: {problem}")


# --- scores -------------------------------------------------------------------------------

A, B, C = Nugget("1", "a", 4, True), Nugget("2", "b", 2, False), Nugget("3", "c", 1, False)


def test_the_leaderboard_and_the_per_turn_rows_carry_every_nugget_score_once():
    assert sorted(MEASURES) == sorted(NUGGET_SCORES) and MEASURES[0] == "all"
    names = [field.name for field in fields(TurnResult)]
    assert names[names.index("unjudged") + 1:][:len(NUGGET_SCORES)] == list(NUGGET_SCORES)


def test_partial_support_counts_half_except_in_the_strict_scores():
    scores = nugget_scores([A, B, C], ["partial_support", "support", "not_support"])
    assert (scores.strict_vital, scores.vital, scores.strict_all, scores.all) == (0.0, 0.5, 1 / 3, 0.5)


def test_grade_weighted_recall_weights_each_nugget_by_its_grade():
    scores = nugget_scores([A, B, C], ["partial_support", "support", "not_support"])
    assert scores.weighted == pytest.approx((4 * 0.5 + 2 * 1) / 7)


def test_a_turn_without_vital_nuggets_scores_0_on_the_vital_scores_as_nuggetizer_does():
    scores = nugget_scores([B, C], ["support", "support"])
    assert (scores.strict_vital, scores.vital, scores.all) == (0.0, 0.0, 1.0)


def test_a_turn_whose_nuggets_all_have_grade_0_has_no_weighted_recall_left_out_of_its_mean_with_a_note():
    """nuggetizer has no weighted score (its empty denominators give 0 only for its own
    scores): no weight is no weighted recall, left out as trec_eval leaves out a query without
    relevant documents; the turn's other scores count."""
    zero = Nugget("4", "d", 0, False)
    bank = NuggetBank("bank", {"1_1": (A, B), "1_2": (zero,)}, "rule")
    runs = [run_of("a", {"1_1": "x", "1_2": "y"}), run_of("b", {"1_1": "x"})]
    evaluation = evaluate_runs(runs, bank, CountingJudge())
    rows = evaluation.per_turn().set_index(["run", "turn"])
    assert math.isnan(rows.loc[("a", "1_2"), "weighted"]) and rows.loc[("a", "1_2"), "all"] == 1.0
    means = evaluation.aggregate().set_index("run")
    assert (means.loc["a", "weighted"], means.loc["b", "weighted"], means.loc["b", "all"]) == (1.0, 1.0, 0.5)
    report = build_report(evaluation)
    summaries = report.leaderboard.summaries
    assert summaries["b", "weighted"].mean == 1.0 and summaries["b", "all"].mean == 0.5
    by_depth = {b.measure: b for b in report.breakdowns if b.name == "turn depth"}
    assert by_depth["weighted"].counts == {1: 1} and by_depth["all"].counts == {1: 1, 2: 1}
    assert "no weighted recall where every nugget has grade 0, left out of its means, tests and breakdowns (1 turn: 1_2)" \
        in evaluation.notes


def scoring_an_eighth_nine_tenths_a_fifth_and_a_half(tmp_path: Path, turns: list[str]) -> tuple:
    """Run `a` on four turns scoring 1/8, 9/10, 1/5 and 1/2 (mean 0.43125 exactly), through
    recorded assignments: the evaluation, and nuggetizer's mean of the same records."""
    from nuggetizer.core.metrics import calculate_global_metrics

    sizes, supported = dict(zip(turns, (8, 10, 5, 2))), dict(zip(turns, (1, 9, 1, 1)))
    bank = NuggetBank("bank", {t: tuple(Nugget(str(i), f"{t} {i}", 1, False) for i in range(1, n + 1))
                               for t, n in sizes.items()}, "rule")
    records = [{"qid": t, "run_id": "a", "nuggets": [
        {"id": n.id, "text": n.text, "importance": "okay", "assignment": "support" if int(n.id) <= supported[t]
         else "not_support"} for n in bank.of(t)]} for t in sizes]
    path = tmp_path / "assignments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    evaluation = evaluate_runs([run_of("a", dict.fromkeys(sizes, "x"))], bank, RecordedAssignments(path))
    return evaluation, calculate_global_metrics(records)["all_score"]


def test_a_runs_mean_is_nuggetizers_exact_mean_not_a_float_sums(tmp_path):
    """Turns scoring 1/8, 9/10, 1/5 and 1/2 average 0.43125 exactly: nuggetizer's
    statistics.mean gives that double (0.4313 at 4 decimals); numpy's and pandas's sums gave
    0.43124999999999997 (0.4312). Found by differential fuzzing against nuggetizer."""
    evaluation, expected = scoring_an_eighth_nine_tenths_a_fifth_and_a_half(tmp_path, ["1_1", "1_2", "1_3", "1_4"])
    assert expected == 0.43125
    assert evaluation.aggregate().set_index("run").loc["a", "all"] == expected
    assert build_report(evaluation).leaderboard.summaries["a", "all"].mean == expected


def test_a_breakdown_groups_mean_is_taken_as_the_runs_mean(tmp_path):
    """Four first turns: the turn-depth group 1 holds every turn, and shows the run's mean
    (0.4313), not a running float sum's 0.43124999999999997 (0.4312) beside it. Found by
    differential fuzzing against nuggetizer."""
    evaluation, expected = scoring_an_eighth_nine_tenths_a_fifth_and_a_half(tmp_path, ["1_1", "2_1", "3_1", "4_1"])
    depth = build_report(evaluation).breakdowns[0]
    assert (depth.name, depth.measure, depth.groups) == ("turn depth", "all", [1])
    assert depth.means["a"][1] == expected == 0.43125


def test_the_mean_over_conversations_is_taken_as_the_runs_mean(tmp_path):
    """Four one-turn conversations: their macro mean is the run's mean (0.4313), not a running
    float sum's (0.4312)."""
    evaluation, expected = scoring_an_eighth_nine_tenths_a_fifth_and_a_half(tmp_path, ["1_1", "2_1", "3_1", "4_1"])
    assert build_report(evaluation).conversation_means["all"]["a"] == expected == 0.43125


def test_the_json_report_writes_nuggetizers_scores_to_the_last_bit(tmp_path):
    """The aggregate and per-turn rows, as the leaderboard, write each score as Python writes a
    float: 1/3 as nuggetizer computes it (pandas' to_json wrote 0.333333333333333); NaN as null."""
    from nuggetizer.core.metrics import calculate_nugget_scores

    bank = NuggetBank("bank", {"1_1": (A, B, C), "1_2": (Nugget("1", "z", 0, False),)}, "rule")
    record = {"qid": "1_1", "run_id": "a", "nuggets": [{"id": n.id, "text": n.text, "importance": "vital" if n.vital
                                                        else "okay", "assignment": label}
                                                       for n, label in zip(bank.of("1_1"), ("not_support", "support",
                                                                                             "not_support"))]}
    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps({"qid": "1_2", "run_id": "a", "nuggets": [
        {"id": "1", "text": "z", "assignment": "support"}]}) + "\n")
    evaluation = evaluate_runs([run_of("a", {"1_1": "x", "1_2": "y"})], bank, RecordedAssignments(path))
    document = json.loads(render(evaluation, build_report(evaluation), "json", per_turn=True))
    row = next(r for r in document["per_turn"] if r["turn"] == "1_1")
    assert row["all"] == calculate_nugget_scores("1_1", record["nuggets"]).all_score == 1 / 3
    assert next(r for r in document["per_turn"] if r["turn"] == "1_2")["weighted"] is None
    [aggregate] = document["aggregate"]
    assert aggregate["all"] == mean([1 / 3, 1.0]) == document["runs"]["a"]["all"]["mean"]

def test_support_precision_and_recall_follow_the_trec_rag_2024_definitions():
    sentences = [Sentence("s0", ("p", "q")), Sentence("s1", ("p",)), Sentence("s2", ())]
    weights = {(0, "p"): 1.0, (0, "q"): 0.0, (1, "p"): 0.5}
    precision, recall = citation_scores(sentences, weights)
    assert precision == pytest.approx((1 + 0 + 0.5) / 3)  # over the cited pairs
    assert recall == pytest.approx((1 + 0.5 + 0) / 3)  # each sentence's best citation; uncited counts 0
    assert math.isnan(citation_scores([Sentence("s", ())], {})[0])  # nothing cited: no precision


# --- the evaluation's rules ---------------------------------------------------------------


class CountingJudge:
    """Every nugget supported; counts the items it is asked (a stand-in for the rule tests
    only: the judges themselves are tested against nuggetizer and a local server below)."""

    name, scale = "all-support", SUPPORT_0_2

    def __init__(self):
        self.asked = []

    def judge(self, items, progress=False):
        from harness.judge.model import Judgment

        self.asked += items
        return [Judgment(item.key, 2, "ok", "2", False) for item in items]

    def provenance(self):
        return {"judge": self.name}


def small_bank() -> NuggetBank:
    return NuggetBank("bank", {"1_1": (A, B), "1_2": (C,), "1_3": ()}, "rule")


def run_of(name: str, texts: dict[str, str]) -> ResponseRun:
    return ResponseRun(name, Path(f"{name}.jsonl"),
                       "test", {t: Response(t, x, (Sentence(x),), line=i + 1) for i, (t, x) in enumerate(texts.items())})


def test_the_api_refuses_a_baseline_matching_no_run_before_the_judge_is_asked_anything():
    """As `responses eval --baseline` does: the judging may cost an LLM's calls."""
    judge = CountingJudge()
    with pytest.raises(HarnessError, match=r"^baseline 'tow' is not among the runs \(one, two\); nearest: two$"):
        compare([run_of("one", {"1_1": "a"}), run_of("two", {"1_1": "b"})], small_bank(), judge, baseline="tow")
    assert judge.asked == []


@pytest.mark.parametrize("given, error", [
    ({"response_format": "ikat-json"}, "response_format= says how to read response files, and none is given"),
    ({"nuggets_format": "cone-rag-json"}, "nuggets_format= says how to read a nugget file, and nuggets= is a "
                                          "NuggetBank"),
])
def test_the_api_refuses_a_format_for_what_is_read_already(given, error):
    """A format names how a file is read: given with objects alone, it would be ignored unsaid."""
    with pytest.raises(HarnessError, match=f"^{re.escape(error)}"):
        evaluate([run_of("one", {"1_1": "a"})], small_bank(), CountingJudge(), **given)


@pytest.mark.parametrize("responses, nuggets, error", [
    (ResponseRun("r", Path("r"), "mine", {"1_1": Response("1_1", None)}), small_bank(),
     "responses= holds run 'r', turn '1_1': text None (NoneType); expected a string"),
    (run_of("r", {"1_1": "a"}), NuggetBank("b", {"1_1": (Nugget("1", "a", "3", True),)}, "rule"),
     "nuggets= holds turn '1_1', nuggets[0]: grade '3' (str); expected a whole number of 0 or more"),
])
def test_the_api_refuses_runs_and_banks_it_is_handed_holding_a_record_off_the_model_naming_it(responses, nuggets,
                                                                                              error):
    """As a plug-in reader's answer is refused: each was a traceback from the harness's code (AttributeError)."""
    with pytest.raises(HarnessError, match=f"^{re.escape(error)}$"):
        evaluate(responses, nuggets, CountingJudge())


def test_the_api_s_unknown_response_format_lists_the_known_ones(tmp_path):
    (tmp_path / "r.json").write_text("{}")
    with pytest.raises(HarnessError, match=r"^unknown response format 'ikat'; nearest: ikat-json; known: "):
        evaluate(str(tmp_path / "r.json"), small_bank(), CountingJudge(), response_format="ikat")


def test_an_empty_response_supports_nothing_and_the_judge_is_not_asked():
    judge = CountingJudge()
    evaluation = evaluate_runs([run_of("r", {"1_1": "  ", "1_2": "text"})], small_bank(), judge)
    row = evaluation.per_turn().set_index("turn").loc["1_1"]
    assert bool(row["empty"]) and row["all"] == 0.0
    assert [item.key[0] for item in judge.asked] == ["1_2"]


def test_a_nugget_judge_on_a_scale_without_assignments_is_refused_before_it_is_asked_anything():
    from harness.judge.scales import RELEVANCE_0_4

    judge = CountingJudge()
    judge.scale = RELEVANCE_0_4
    with pytest.raises(HarnessError, match=r"^a judge on the relevance-0-4 scale cannot assign nuggets; use one on "
                                           r"support-0-2 or yes-no$"):
        evaluate_runs([run_of("r", {"1_1": "text"})], small_bank(), judge)
    assert judge.asked == []


def test_a_turn_some_run_answers_and_another_does_not_scores_0_for_the_other():
    evaluation = evaluate_runs([run_of("a", {"1_1": "x", "1_2": "y"}), run_of("b", {"1_1": "x"})],
                               small_bank(), CountingJudge())
    rows = evaluation.per_turn().set_index(["run", "turn"])
    assert rows.loc[("b", "1_2"), "all"] == 0.0 and not rows.loc[("b", "1_2"), "answered"]
    assert evaluation.aggregate().set_index("run").loc["b", "all"] == 0.5


def test_a_turn_without_nuggets_is_not_scored_and_is_listed():
    evaluation = evaluate_runs([run_of("a", {"1_1": "x", "1_3": "z"})], small_bank(), CountingJudge())
    assert evaluation.turns == ["1_1"]
    assert "turns without nuggets (not scored): 1_3" in evaluation.notes


def test_a_response_to_a_turn_the_bank_lacks_is_listed_and_with_topics_refused():
    runs = [run_of("a", {"1_1": "x", "9_9": "?"})]
    evaluation = evaluate_runs(runs, small_bank(), CountingJudge())
    assert evaluation.turns == ["1_1"] and any("9_9" in note and "not scored" in note for note in evaluation.notes)
    with pytest.raises(InputError, match=r"a.jsonl:2: turn 9_9 is not a turn of the topics"):
        evaluate_runs(runs, small_bank(), CountingJudge(), turns={"1_1", "1_2", "1_3"})


@pytest.mark.reference
def test_the_four_scores_equal_nuggetizers_on_recorded_assignments_for_all_23_runs(cone_runs, human_bank, tmp_path):
    """A recorded assignment file in nuggetizer's output format (assignments drawn at random,
    seeded) read by the `file` judge: every per-turn score and every run's mean equal
    nuggetizer's metric on the same records. CONE-RAG's turn 4_7 has no human nugget."""
    rng = random.Random(25)
    records = []
    for run in cone_runs:
        for turn, response in run.responses.items():
            if human_bank.of(turn):
                records.append({"qid": turn, "run_id": run.name, "answer_text": response.text, "nuggets": [
                    {"id": n.id, "text": n.text, "importance": "vital" if n.vital else "okay",
                     "assignment": rng.choice(["support", "partial_support", "not_support"])}
                    for n in human_bank.of(turn)]})
    path = tmp_path / "assignments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    evaluation = evaluate_runs(cone_runs, human_bank, RecordedAssignments(path))
    assert len(evaluation.turns) == 78 and "turns without nuggets (not scored): 4_7" in evaluation.notes
    assert_equal_to_nuggetizer(evaluation, records)



def test_the_four_scores_equal_nuggetizers_on_seeded_odd_banks_read_from_files(tmp_path, capsys):
    """Seeded turns of 1 to 30 nuggets (vital and okay mixed, none vital, all vital, one nugget,
    the same text repeated), assignments all not_support, all support or mixed, some that
    nuggetizer gives no credit (`failed`, `Support`), lines with and without nugget ids, and a
    turn without nuggets: given as users give them (nuggetizer's nugget and assignment JSON
    Lines, TREC RAG answers) to `harness responses eval`, every per-turn score and run mean
    equals nuggetizer's metric on the records (the turn without nuggets is not scored)."""
    rng = random.Random(16)
    bank, records = {"1_0": []}, []
    for number in range(1, 41):
        kind = rng.choice(["mixed", "none vital", "all vital", "one", "one text"])
        size = 1 if kind == "one" else rng.randint(1, 30)
        bank[f"1_{number}"] = [{"text": "the same" if kind == "one text" else f"fact {i}",
                                "importance": {"none vital": "okay", "all vital": "vital"}.get(
                                    kind, rng.choice(["vital", "okay"]))} for i in range(size)]
    for run in ("a", "b", "c"):
        (tmp_path / f"{run}.jsonl").write_text("".join(json.dumps({"run_id": run, "topic_id": turn, "references": [],
                                                                   "answer": [{"text": "x", "citations": []}]}) + "\n"
                                                       for turn in bank))
        for turn, nuggets in bank.items():
            labels = rng.choice([["not_support"], ["support"], ["support", "partial_support", "not_support"],
                                 ["support", "failed", "Support", "partial_support"]])
            with_ids = rng.random() < 0.5
            if nuggets:
                records.append({"qid": turn, "run_id": run, "nuggets": [
                    {**({"id": str(i + 1)} if with_ids else {}), **nugget, "assignment": rng.choice(labels)}
                    for i, nugget in enumerate(nuggets)]})
    (tmp_path / "bank.jsonl").write_text("".join(json.dumps({"qid": turn, "nuggets": nuggets}) + "\n"
                                                 for turn, nuggets in bank.items()))
    (tmp_path / "assigned.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    assert main(["responses", "eval", *(str(tmp_path / f"{run}.jsonl") for run in "abc"), "--nuggets",
                 str(tmp_path / "bank.jsonl"), "--judge", f"file:{tmp_path / 'assigned.jsonl'}", "--format", "json",
                 "--per-turn"]) == 1  # some recorded `failed`: scored, and warned of as unfinished
    document = json.loads(capsys.readouterr().out)
    expected, _ = nuggetizer_scores(records)
    assert {(row["run"], row["turn"]): {score: row[score] for score in SCORES}
            for row in document["per_turn"]} == expected
    for row in document["aggregate"]:
        _, means = nuggetizer_scores([r for r in records if r["run_id"] == row["run"]])
        assert {score: row[score] for score in SCORES} == {score: means[f"{score}_score"] for score in SCORES}

def recorded_for(runs: list[ResponseRun], bank: NuggetBank, path: Path, names: dict[str, str]) -> Path:
    """Every nugget of every answered turn supported, each run's lines under names.get(run, run)."""
    path.write_text("".join(json.dumps({"qid": turn, "run_id": names.get(run.name, run.name), "nuggets": [
        {"id": n.id, "text": n.text, "assignment": "support"} for n in bank.of(turn)]}) + "\n"
        for run in runs for turn in run.responses if bank.of(turn)))
    return path


@pytest.mark.reference
def test_positional_assignments_made_on_another_cone_rag_bank_are_an_error_naming_file_and_line(tmp_path, capsys):
    """nuggetizer's lines (no `id`) made on the full human bank, scored on the deduplicated one:
    CONE-RAG's ids (`[2]`) are not positions, so the lines must still reach the text check,
    not leave 95 % of the labels missing with exit status 0."""
    manual = cone_rag("participant_resources", "manual_responses.json")
    full = read_bank(cone_rag("human_resources", "gold_nuggets_human.json"))
    path = tmp_path / "assignments.jsonl"
    path.write_text("".join(json.dumps({"qid": turn, "run_id": run.name, "nuggets": [
        {"text": n.text, "importance": "vital" if n.vital else "okay", "assignment": "support"}
        for n in full.of(turn)]}) + "\n" for run in read_responses(manual) for turn in run.responses if full.of(turn)))
    assert main(["responses", "eval", str(manual), "--nuggets",
                 str(cone_rag("human_resources", "gold_nuggets_human_deduplicated.json")),
                 "--judge", f"file:{path}"]) == 2
    assert re.fullmatch(rf"harness responses eval: error: {re.escape(str(path))}:\d+: turn \S+, run \S+, nugget "
                        r"\[\d+\]: the recorded text differs from the nugget bank's; were the assignments made with "
                        r"another bank\?\n", capsys.readouterr().err)


@pytest.mark.reference
def test_recorded_assignments_that_match_no_run_are_an_error_naming_the_file_and_their_count(
        human_bank, tmp_path, capsys):
    """CONE-RAG's human study names runs by team submission (`uva-1`): recorded lines so named
    match none of the runs, which would all score 0; an error, not a table of zeros."""
    manual = cone_rag("participant_resources", "manual_responses.json")
    runs = read_responses(manual)
    path = recorded_for(runs, human_bank, tmp_path / "assignments.jsonl",
                        {run.name: f"uva-{number}" for number, run in enumerate(runs, start=1)})
    assert main(["responses", "eval", str(manual), "--nuggets", str(cone_rag("human_resources", "gold_nuggets_human.json")),
                 "--judge", f"file:{path}"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {path}: 312 of the 312 lines match no run evaluated (their run_ids: uva-1, uva-2, "
        f"uva-3, uva-4), and no line is for run {sorted(run.name for run in runs)[0]} (nor for 3 more runs); a line's "
        "run_id must be the name of the run it assigns\n")


@pytest.mark.reference
def test_a_run_that_recorded_assignments_do_not_cover_is_left_out_in_a_note_naming_the_file(human_bank, tmp_path):
    """Scoring it would give 0 on every turn; the runs the file covers are scored as usual."""
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))
    path = recorded_for(runs, human_bank, tmp_path / "assignments.jsonl", {runs[-1].name: "uva-3"})
    evaluation = evaluate_runs(runs, human_bank, RecordedAssignments(path))
    assert evaluation.runs == [run.name for run in runs[:-1]]
    assert set(evaluation.aggregate()["all"]) == {1.0}
    assert f"{path}: 78 of its 312 lines match no run evaluated; no recorded assignment for 1 of the 4 runs, left out " \
           f"(not scored): {runs[-1].name}" in evaluation.notes


def test_a_turn_only_a_run_left_out_answered_is_not_in_the_test_set(tmp_path):
    """Else the runs kept would score 0 on it, though no run scored answers it."""
    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps({"qid": "1_1", "run_id": "a", "nuggets": [
        {"id": n.id, "assignment": "support"} for n in small_bank().of("1_1")]}) + "\n")
    runs = [run_of("a", {"1_1": "x"}), run_of("b", {"1_1": "x", "1_2": "y"})]
    evaluation = evaluate_runs(runs, small_bank(), RecordedAssignments(path))
    assert evaluation.runs == ["a"] and evaluation.turns == ["1_1"]
    assert evaluation.aggregate().set_index("run").loc["a", "all"] == 1.0


def test_nuggets_without_a_recorded_assignment_are_counted_by_cause_in_a_note_promising_no_rerun(tmp_path):
    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps({"qid": "1_1", "run_id": "a", "nuggets": [{"id": "1", "assignment": "support"}]}) + "\n")
    evaluation = evaluate_runs([run_of("a", {"1_1": "x", "1_2": "y"})], small_bank(), RecordedAssignments(path))
    assert evaluation.per_turn().set_index("turn")["unjudged"].to_dict() == {"1_1": 1, "1_2": 1}
    assert "2 of 3 nugget judgments have no label (2 with no recorded label): counted as not supported" in evaluation.notes


def test_assignments_written_out_keep_a_nugget_without_label_unlabelled_when_read_back(tmp_path):
    """--assignments-out writes it `failed` (nuggetizer's word): the scores replay equal, and
    the replay counts it unlabelled too instead of taking it for a judged not_support."""
    from nuggetizer.core.metrics import calculate_nugget_scores

    from harness.responses.assign import write_assignments

    path, out = tmp_path / "assignments.jsonl", tmp_path / "written.jsonl"
    path.write_text(json.dumps({"qid": "1_1", "run_id": "a", "nuggets": [{"id": "1", "assignment": "support"}]}) + "\n")
    first = evaluate_runs([run_of("a", {"1_1": "x", "1_2": "y"})], small_bank(), RecordedAssignments(path))
    write_assignments(out, first.records, {})
    assert [n["assignment"] for r in first.records for n in r["nuggets"]] == ["support", "failed", "failed"]
    again = evaluate_runs([run_of("a", {"1_1": "x", "1_2": "y"})], small_bank(), RecordedAssignments(out))
    assert again.per_turn().equals(first.per_turn())
    assert ("2 of 3 nugget judgments have no label (2 failed (recorded failed: their judge gave no label)): counted as "
            "not supported") in again.notes
    theirs = [calculate_nugget_scores(r["qid"], r["nuggets"]).all_score for r in first.records]
    assert first.per_turn()["all"].tolist() == theirs == [0.5, 0.0]


def test_assignments_written_out_hold_the_turns_a_run_leaves_unanswered_so_nuggetizers_mean_is_the_runs(tmp_path):
    """A turn evaluated but unanswered (--topics, or answered by another run) scores 0; its record
    was left out, so nuggetizer's mean of --assignments-out averaged the answered turns only: 1.0
    where the run's mean is 0.5. It is written with every nugget not_support and no answer text."""
    from nuggetizer.core.metrics import calculate_global_metrics

    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps({"qid": "1_1", "run_id": "a", "nuggets": [
        {"id": "1", "assignment": "support"}, {"id": "2", "assignment": "support"}]}) + "\n")
    evaluation = evaluate_runs([run_of("a", {"1_1": "x"})], small_bank(), RecordedAssignments(path),
                               evaluated_turns={"1_1", "1_2", "1_3"})
    assert evaluation.aggregate().set_index("run").loc["a", "all"] == 0.5
    assert calculate_global_metrics(evaluation.records)["all_score"] == 0.5
    assert evaluation.records[1] == {"qid": "1_2", "run_id": "a", "answer_text": "", "nuggets": [
        {"id": C.id, "text": C.text, "importance": "vital" if C.vital else "okay", "grade": C.grade,
         "assignment": "not_support"}]}


def test_a_recorded_assignment_outside_the_three_counts_unsupported_as_in_nuggetizer_and_is_counted(tmp_path):
    """nuggetizer writes its LLM's label lower-cased as it came (`supported`), and `failed`
    where it gave up; its metric counts them as no support. Refusing the file scored nothing.
    A `failed` one is counted as failed (its judge gave no label), not as an answer off the scale."""
    from nuggetizer.core.metrics import calculate_nugget_scores

    record = {"qid": "1_1", "run_id": "a", "nuggets": [
        {"text": "a", "importance": "vital", "assignment": "failed"},
        {"text": "b", "importance": "okay", "assignment": "support"}]}
    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps(record) + "\n")
    evaluation = evaluate_runs([run_of("a", {"1_1": "x"})], small_bank(), RecordedAssignments(path))
    row = evaluation.per_turn().iloc[0]
    theirs = calculate_nugget_scores("1_1", record["nuggets"])
    assert (row["all"], row["vital"], row["unjudged"]) == (theirs.all_score, theirs.vital_score, 1) == (0.5, 0.0, 1)
    assert ("1 of 2 nugget judgments have no label (1 failed (recorded failed: their judge gave no label)): counted as "
            "not supported") in evaluation.notes


def test_nuggets_a_recorded_line_leaves_out_count_unsupported_and_the_rest_keep_their_labels(tmp_path):
    """nuggetizer keeps a window's first labels when its LLM answers fewer: the line lists
    fewer nuggets, without ids. Matched in order by text, the others keep their own labels (by
    position, nugget 2's label was read as nugget 1's: an error); the left-out one counts as
    not supported, where nuggetizer's metric drops it (all 1.0 there), and is counted."""
    bank = NuggetBank("bank", {"1_1": (A, B, C)}, "rule")
    path = tmp_path / "assignments.jsonl"
    path.write_text(json.dumps({"qid": "1_1", "run_id": "a", "nuggets": [
        {"text": "b", "importance": "okay", "assignment": "support"},
        {"text": "c", "importance": "okay", "assignment": "partial_support"}]}) + "\n")
    evaluation = evaluate_runs([run_of("a", {"1_1": "x"})], bank, RecordedAssignments(path))
    row = evaluation.per_turn().iloc[0]
    assert (row["strict_all"], row["all"], row["unjudged"]) == (1 / 3, 0.5, 1)
    assert ("1 of 3 nugget judgments have no label (1 with no recorded label): counted as not supported"
            in evaluation.notes)


def test_recorded_assignments_of_another_answer_text_are_an_error_naming_the_line_run_and_turn(tmp_path):
    """A line's labels were given for its answer_text: "I do not know." under a recorded run's
    name scored that run's labels (0.6464 on CONE-RAG, on top of a hosted board)."""
    path = tmp_path / "assignments.jsonl"
    path.write_text("".join(json.dumps({"qid": turn, "run_id": "a", "answer_text": text, "nuggets": [
        {"id": "1", "assignment": "support"}]}) + "\n" for turn, text in (("1_1", "x"), ("1_2", "y"))))
    same = evaluate_runs([run_of("a", {"1_1": "x", "1_2": " y\n"})], small_bank(), RecordedAssignments(path))
    assert same.per_turn().set_index("turn")["strict_all"].to_dict() == {"1_1": 0.5, "1_2": 0.0}
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: turn 1_2, run a: recorded for another answer "
                                         r"text \(the line's answer_text is not the run's answer\): rescore with a "
                                         r"judge$"):
        evaluate_runs([run_of("a", {"1_1": "x", "1_2": "I do not know."})], small_bank(), RecordedAssignments(path))


@pytest.mark.reference
@pytest.mark.model
@pytest.mark.slow
def test_the_offline_baseline_scores_equal_nuggetizers_and_replay_from_its_assignment_file(
        cone_runs, human_bank, tmp_path, monkeypatch, capsys):
    """Two runs on 6 turns through the minilm judge and `harness responses eval`: its
    --assignments-out file (nuggetizer's format) gives nuggetizer's scores, and read back with
    `--judge file:` gives the same per-turn scores."""
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    turns = sorted(t for t in cone_runs[0].responses if human_bank.of(t))[:6]
    rows = {}
    for run in cone_runs[:2]:
        for turn in turns:
            rows.setdefault(turn, {})[run.name] = run.responses[turn].text
    (tmp_path / "two.json").write_text(json.dumps(rows))
    bank = cone_rag("human_resources", "gold_nuggets_human.json")
    out = tmp_path / "assigned.jsonl"
    assert main(["responses", "eval", str(tmp_path / "two.json"), "--nuggets", str(bank), "--judge", "minilm",
                 "--assignments-out", str(out), "--format", "json", "--per-turn"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert "offline baseline" in first["title"] and first["judge"]["kind"].startswith("offline baseline")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    provenance = json.loads(Path(f"{out}.provenance.json").read_text())
    assert provenance["judge"] == "minilm" and provenance["thresholds"] == {"support": 0.7, "partial": 0.5}
    expected, _ = nuggetizer_scores(records)
    assert len(first["per_turn"]) == len(expected) == 12
    for row in first["per_turn"]:
        for score in SCORES:
            assert row[score] == pytest.approx(expected[row["run"], row["turn"]][score], abs=1e-12)
    assert main(["responses", "eval", str(tmp_path / "two.json"), "--nuggets", str(bank), "--judge", f"file:{out}",
                 "--format", "json", "--per-turn"]) == 0
    assert json.loads(capsys.readouterr().out)["per_turn"] == first["per_turn"]


def cone_rag_0_11(tmp_path: Path, runs: dict[str, list]) -> tuple[Path, list[str], list[str]]:
    """The CONE-RAG human nugget bank, the texts of its nuggets for iKAT 2024 turn 0_11, and an
    iKAT 2025 file a run (name: pieces) answering that turn."""
    bank = cone_rag("human_resources", "gold_nuggets_human_deduplicated.json")
    nuggets = [nugget["text"].strip() for nugget in json.loads(bank.read_text())["0_11"].values()]
    files = []
    for name, pieces in runs.items():
        files.append(str(tmp_path / f"{name}.jsonl"))
        Path(files[-1]).write_text(json.dumps(ikat_2025_line("0_11", pieces(nuggets), run=name)) + "\n")
    return bank, nuggets, files


@pytest.mark.reference
@pytest.mark.model
@pytest.mark.slow
def test_an_ikat_2025_answer_scores_the_same_in_one_piece_and_in_three(tmp_path, capsys):
    """An answer stating both of turn 0_11's nuggets after "Here is what I found for you.": in
    three pieces, its first alone was scored, 0 where the same answer in one piece scored 1."""
    intro = "Here is what I found for you."
    bank, _, files = cone_rag_0_11(tmp_path, {
        "pieces": lambda nuggets: [(intro, [P0])] + [(text, [P0]) for text in nuggets],
        "one": lambda nuggets: [(" ".join([intro, *nuggets]), [P0])]})
    assert main(["responses", "eval", *files, "--nuggets", str(bank), "--judge", "minilm", "--format", "json",
                 "--per-turn"]) == 0
    rows = {row["run"]: row for row in json.loads(capsys.readouterr().out)["per_turn"]}
    assert {**rows["pieces"], "run": "one"} == rows["one"] and rows["one"]["all"] == 1.0


@pytest.mark.reference
@pytest.mark.model
@pytest.mark.slow
def test_the_citations_of_an_ikat_2025_answer_s_second_piece_count_for_support(tmp_path, capsys):
    bank, nuggets, [run] = cone_rag_0_11(tmp_path, {
        "r": lambda nuggets: [("Here is what I found for you.", []), (nuggets[0], [P0])]})
    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": P0, "contents": nuggets[0]}) + "\n")
    assert main(["responses", "eval", run, "--nuggets", str(bank), "--judge", "minilm", "--citations",
                 "--passages", str(passages), "--format", "json", "--per-turn"]) == 0
    [row] = json.loads(capsys.readouterr().out)["per_turn"]
    assert (row["cited_pairs"], row["support_precision"], row["support_recall"]) == (1, 1.0, 0.5)


@pytest.mark.reference
@pytest.mark.model
@pytest.mark.slow
def test_an_ikat_2025_answer_over_the_word_limit_scores_as_its_kept_pieces_and_is_said(tmp_path, capsys):
    """The nuggets stated in a 250-word last piece the official validator drops support nothing;
    the note names the turn and how many pieces went."""
    bank, _, files = cone_rag_0_11(tmp_path, {
        "long": lambda nuggets: [("Here is what I found for you.", [P0]), (" ".join(nuggets) + " word" * 250, [P0])],
        "short": lambda nuggets: [("Here is what I found for you.", [P0])]})
    assert main(["responses", "eval", *files, "--nuggets", str(bank), "--judge", "minilm", "--format", "json",
                 "--per-turn"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {row["run"]: row for row in out["per_turn"]}
    assert {**rows["long"], "run": "short"} == rows["short"] and rows["short"]["all"] == 0.0
    assert ("long: 1 answer over the 250-word limit is scored without its last 1 piece, as the official iKAT 2025 "
            "validator drops them to fit (0_11)") in out["notes"]


@pytest.mark.model
@pytest.mark.slow
def test_an_interrupted_offline_judge_resumes_to_the_similarities_of_an_uninterrupted_run(tmp_path, monkeypatch):
    """Ctrl-C during a long cold run loses at most the chunk in progress, says how many pairs are
    cached, and the rerun encodes only what the run had not: the vectors later chunks reuse
    were kept, so every similarity equals an uninterrupted run's, to the last digit."""
    from harness.errors import Interrupted
    from harness.judge.model import Item
    from harness.responses import baseline
    from harness.retrieve import embeddings

    items = [Item(("t", "r", str(i)), {"nugget": f"fact {i} about rivers",
                                       "response": f"Rivers flow. The answer states fact {i}."}) for i in range(6)]
    load = embeddings.load_encoder

    class Stopping:  # Ctrl-C when the third chunk starts encoding
        def __init__(self, encoder):
            self.encoder, self.calls = encoder, 0

        def encode_documents(self, texts):
            self.calls += 1
            if self.calls == 3:
                raise KeyboardInterrupt
            return self.encoder.encode_documents(texts)

    monkeypatch.setattr(embeddings, "load_encoder", lambda *args, **kwargs: Stopping(load(*args, **kwargs)))
    with pytest.raises(Interrupted, match=r"^4 of 6 pairs judged, their similarities cached in .*; run the same "):
        baseline.MiniLMJudge(cache_dir=tmp_path, chunk_pairs=2).judge(items)
    assert list(tmp_path.glob("*.carried/*.npz"))  # "Rivers flow.", encoded in the first chunk
    monkeypatch.setattr(embeddings, "load_encoder", load)
    resumed = baseline.MiniLMJudge(cache_dir=tmp_path, chunk_pairs=2)
    judgments = resumed.judge(items)
    assert [j.cached for j in judgments] == [True] * 4 + [False] * 2
    assert resumed.encoded == 4  # the last chunk's two claims and two new sentences
    assert not list(tmp_path.glob("*.carried"))  # the run finished: nothing left to resume
    uninterrupted = baseline.MiniLMJudge(cache_dir=tmp_path / "fresh", chunk_pairs=2).judge(items)
    assert [(j.label, j.raw) for j in judgments] == [(j.label, j.raw) for j in uninterrupted]


@pytest.mark.model
def test_a_run_interrupted_before_its_first_chunk_says_nothing_is_cached_yet(tmp_path, monkeypatch):
    from harness.errors import Interrupted
    from harness.judge.model import Item
    from harness.responses import baseline
    from harness.retrieve import embeddings

    def interrupted(*args, **kwargs):  # Ctrl-C while MiniLM loads
        raise KeyboardInterrupt

    monkeypatch.setattr(embeddings, "load_encoder", interrupted)
    with pytest.raises(Interrupted, match=r"^0 of 1 pairs judged: nothing cached yet \(the cache is written after "
                                          r"every 4096 pairs computed, the first once MiniLM has loaded\)$"):
        baseline.MiniLMJudge(cache_dir=tmp_path).judge([Item(("t",), {"nugget": "a", "response": "b."})])


# --- the llm judge end to end -------------------------------------------------------------

RUNS = {"run-a": {"q1": "Paris is the capital. It has 2 million people.", "q2": "Water boils at 100 C."},
        "run-b": {"q1": "Lyon is big.", "q2": "Water boils at 90 C."}}
NUGGETS = {"q1": [("[passage q1n1] Paris is the capital of France", "vital"), ("[passage q1n2] Population", "okay")],
           "q2": [("[passage q2n1] Boiling point 100 C at sea level", "vital")]}
# what the server answers for (nugget, the response's distinctive words)
ANSWERS = {"q1n1": [["Paris is the capital.", "2"], ["Lyon is big.", "0"]],
           "q1n2": [["2 million", "1"], ["Lyon is big.", "definitely"]],  # off the scale: unparseable
           "q2n1": [["at 100 C.", "2"], ["at 90 C.", "1"]]}


class CitationJudge:
    """Full support for every cited pair, or no label for the passages in `unlabelled` (a
    stand-in for the rule tests, like CountingJudge)."""

    name, scale = "cites", SUPPORT_0_2

    def __init__(self, unlabelled=()):
        self.unlabelled = set(unlabelled)

    def judge(self, items, progress=False):
        from harness.judge.model import Judgment

        return [Judgment(item.key, None, "failed", "", False) if item.key[3] in self.unlabelled
                else Judgment(item.key, 2, "ok", "2", False) for item in items]

    def provenance(self):
        return {"judge": self.name}


def cited_run(name: str, turns: list[str]) -> ResponseRun:
    return ResponseRun(name, Path(f"{name}.jsonl"), "test",
                       {t: Response(t, "x", (Sentence("x", ("p1", "p2")),), {"p1": "a", "p2": "b"}) for t in turns})


def test_a_turn_a_run_does_not_answer_scores_0_support_recall_not_nan():
    evaluation = evaluate_runs([cited_run("a", ["1_1", "1_2"]), cited_run("b", ["1_1"])], small_bank(),
                               CountingJudge(), citation_judge=CitationJudge())
    rows = evaluation.per_turn().set_index(["run", "turn"])
    assert rows.loc[("b", "1_2"), "support_recall"] == 0.0 and math.isnan(rows.loc[("b", "1_2"), "support_precision"])
    means = evaluation.aggregate().set_index("run")
    assert (means.loc["a", "support_recall"], means.loc["b", "support_recall"]) == (1.0, 0.5)


def test_a_blank_response_citing_passages_supports_none_of_them_and_the_judge_is_not_asked(tmp_path, capsys):
    blank = ResponseRun("a", Path("a.jsonl"), "test", {"1_1": Response("1_1", " ", (Sentence(" ", ("p1",)),),
                                                                       {"p1": "a"})})
    judge = CitationJudge()
    judge.judge = lambda items, progress=False: pytest.fail(f"the citation judge was asked about {items}")
    [row] = evaluate_runs([blank], small_bank(), CountingJudge(), citation_judge=judge).per_turn().to_dict("records")
    assert (row["cited_pairs"], row["support_precision"], row["support_recall"]) == (1, 0.0, 0.0)
    run, bank, passages = tmp_path / "run.jsonl", tmp_path / "bank.jsonl", tmp_path / "passages.jsonl"
    run.write_text(json.dumps({"run_id": "r", "topic_id": "1_1", "references": ["p1"],
                               "answer": [{"text": "", "citations": [0]}]}) + "\n")
    bank.write_text(json.dumps({"qid": "1_1", "nuggets": [{"text": "A fact.", "importance": "vital"}]}) + "\n")
    passages.write_text(json.dumps({"id": "p1", "contents": "A fact."}) + "\n")
    assert main(["responses", "eval", str(run), "--nuggets", str(bank), "--judge", "minilm", "--citations",
                 "--passages", str(passages), "--format", "json", "--per-turn"]) == 0
    [row] = json.loads(capsys.readouterr().out)["per_turn"]
    assert (row["cited_pairs"], row["support_precision"], row["support_recall"]) == (1, 0.0, 0.0)


def test_responses_citing_their_top_passages_for_want_of_used_ones_are_counted_per_run_in_the_notes():
    marked = ResponseRun("a", Path("a.json"), "test", {t: Response(t, "x", (Sentence("x", ("p1",)),), {"p1": "a"},
                                                                  cites_top=t == "1_2") for t in ("1_1", "1_2")})
    evaluation = evaluate_runs([marked], small_bank(), CountingJudge(), citation_judge=CitationJudge())
    assert ("a: 1 response marks no passage used: its top 5 passages count as its citations, the rule the official "
            "iKAT validator states (1_2)") in evaluation.notes
    assert not any("no passage used" in n for n in evaluate_runs([marked], small_bank(), CountingJudge()).notes)


def test_a_cited_pair_without_a_label_counts_as_no_support_and_is_counted_in_the_notes():
    evaluation = evaluate_runs([cited_run("a", ["1_1"])], small_bank(), CountingJudge(),
                               citation_judge=CitationJudge(unlabelled={"p2"}))
    [row] = evaluation.per_turn().to_dict("records")
    assert (row["support_precision"], row["support_recall"]) == (0.5, 1.0)
    assert any(note.startswith("1 of 2 citation judgments have no label") for note in evaluation.notes)


def write_llm_inputs(folder: Path, topic: str | None = "?", query: str | None = "?") -> tuple[list[str], Path]:
    """The RUNS as TREC RAG answer files and the NUGGETS as a nuggetizer bank, the answers' `topic`
    and the bank's `query` `topic` and `query` (`{qid}` filled with the turn; None: left out)."""
    def stating(record: dict, key: str, question: str | None, qid: str) -> dict:
        return record if question is None else {**record, key: question.format(qid=qid)}

    files = []
    for run, texts in RUNS.items():
        path = folder / f"{run}.jsonl"
        path.write_text("".join(json.dumps(stating({"run_id": run, "topic_id": q, "references": [],
                                                    "response_length": 1, "answer": [{"text": t, "citations": []}]},
                                                   "topic", topic, q)) + "\n" for q, t in texts.items()))
        files.append(str(path))
    bank = folder / "nuggets.jsonl"
    bank.write_text("".join(json.dumps(stating({"qid": q, "nuggets": [{"text": t, "importance": i} for t, i in found]},
                                               "query", query, q)) + "\n" for q, found in NUGGETS.items()))
    return files, bank


def asked_questions(server) -> list[str]:
    """The question each request's prompt holds (the line of the shipped nugget prompt)."""
    return [re.search(r"Question asked \(may be empty\): (.*)\n", r["messages"][-1]["content"]).group(1)
            for r in server.requests()]


def test_a_turns_question_is_the_first_stated_of_the_nugget_bank_the_topics_and_the_responses():
    """nuggetizer prompts with its bank's `query`, the standalone question the nuggets were written
    for: it comes before the topics' utterance, which may lean on the conversation, and both
    before the answer files'."""
    runs = [replace(run_of("a", {}), responses={t: Response(t, "x", question=q) for t, q in (
                ("1", "R1"), ("2", " B2  again"), ("3", "R3"), ("4", " "), ("5", "R5"))}),  # blank: states none
            replace(run_of("b", {}), responses={"3": Response("3", "y", question="R3 other")})]
    bank = replace(small_bank(), questions={"1": "B1", "2": "B2 again"})
    found = turn_questions(runs, bank, {"1": "T1", "4": "", "5": "T5"})
    assert found.text == {"1": "B1", "2": "B2 again", "3": "R3", "5": "T5"}
    assert found.source == {"1": "the nugget bank", "2": "the nugget bank", "3": "the responses", "5": "the topics"}
    # spacing aside, the answer file's question for turn 2 is the bank's; two runs' differ on turn 3
    assert found.differing == {"1": ("the topics", "the responses"), "3": ("the responses",), "5": ("the responses",)}
    turns = ["1", "2", "3", "4", "5"]
    assert found.counts(turns) == {"the nugget bank": 2, "the responses": 1, "the topics": 1, "none": 1}
    assert found.notes(turns) == [
        "1 of the 5 evaluated turns has no question (neither the nugget bank nor the topics nor the responses "
        "states one): the judge's {question} is empty there (4)",
        "3 of the 5 evaluated turns have two questions (the nugget bank and the responses differ; the nugget bank "
        "and the topics differ; two runs' files differ; the topics and the responses differ): the judge is asked "
        "the first source's, in the order the nugget bank, the topics, the responses (1, 3, 5)"]
    assert turn_questions(runs, bank).sources == ("the nugget bank", "the responses")  # no topics given
    board = turn_questions(None, bank, {"1": "T1", "5": "T5"})  # a hosted board's: the answer files are no source
    assert (board.text, board.sources) == ({"1": "B1", "2": "B2 again", "5": "T5"}, ("the nugget bank", "the topics"))


@pytest.mark.server
def test_the_llm_judge_is_asked_the_question_the_answer_files_or_the_nugget_bank_state(tmp_path, capsys):
    """TREC RAG answers and nuggetizer banks carry their question (`topic`, `query`): the judge was
    asked every nugget under an empty one, unsaid."""
    files, bank = write_llm_inputs(tmp_path, topic="topic of {qid}", query=None)
    command = ["responses", "eval", *files, "--nuggets", str(bank), "--judge", "llm", "--model", "m",
               "--cache", str(tmp_path / "cache"), "--format", "json"]
    with start_llm_server(tmp_path, {"labels": ANSWERS}) as server:
        assert main([*command, "--base-url", server.base_url]) == 0
        assert sorted(asked_questions(server)) == ["topic of q1"] * 4 + ["topic of q2"] * 2
        assert json.loads(capsys.readouterr().out)["judge"]["questions"] == {"the responses": 2}
        write_llm_inputs(tmp_path, topic="topic of {qid}", query="query of {qid}")  # the bank's comes first
        assert main([*command, "--base-url", server.base_url]) == 0
        assert sorted(asked_questions(server)[6:]) == ["query of q1"] * 4 + ["query of q2"] * 2
    out, err = capsys.readouterr()
    assert json.loads(out)["judge"]["questions"] == {"the nugget bank": 2}
    assert main([*command[:-1], "md", "--base-url", "http://127.0.0.1:9/v1"]) == 0  # from the cache
    assert "; {question} from: the nugget bank (2 turns)\n" in capsys.readouterr().out
    assert ("note: 2 of the 2 evaluated turns have two questions (the nugget bank and the responses differ): the "
            "judge is asked the first source's, in the order the nugget bank, the responses (q1, q2)") in err


@pytest.mark.server
def test_a_turn_no_source_states_a_question_for_is_asked_with_none_and_counted_in_the_notes(tmp_path):
    files, bank = write_llm_inputs(tmp_path, topic=None, query=None)
    with start_llm_server(tmp_path, {"labels": ANSWERS}) as server:
        with pytest.warns(UserWarning, match="^2 of the 2 evaluated turns have no question"):
            _, aggregate = evaluate(files, bank, llm_judge(server, tmp_path))
        assert asked_questions(server) == [""] * 6  # the prompt as it was: its cache keys unchanged
    assert ("2 of the 2 evaluated turns have no question (neither the nugget bank nor the responses states one): "
            "the judge's {question} is empty there (q1, q2)") in aggregate.attrs["notes"]
    _, baseline = evaluate(files, bank, CountingJudge())  # a judge reading no question: nothing to say
    assert not any("question" in note for note in baseline.attrs["notes"])


IKAT_TURNS = ("0_1", "0_2", "0_3")  # iKAT 2024's first turns; 0_2 says "Oh, do I need a visa?"


def write_ikat_inputs(folder: Path) -> tuple[str, str]:
    """A TREC RAG file answering 0_1 and 0_2 (each `topic` its own: `TOPIC 0_1`), and a nuggetizer
    bank for IKAT_TURNS stating the `query` of 0_1 alone, its nugget for turn T `[passage T]`."""
    run, bank = folder / "run.jsonl", folder / "nuggets.jsonl"
    run.write_text("".join(json.dumps({"run_id": "r", "topic_id": t, "topic": f"TOPIC {t}", "references": [],
                                       "response_length": 1, "answer": [{"text": "an answer", "citations": []}]})
                           + "\n" for t in IKAT_TURNS[:2]))
    bank.write_text("".join(json.dumps({"qid": t, **({"query": "BANK 0_1"} if t == "0_1" else {}),
                                        "nuggets": [{"text": f"[passage {t}] a fact", "importance": "vital"}]})
                            + "\n" for t in IKAT_TURNS))
    return str(run), str(bank)


def asked_by_turn(requests: list[dict]) -> dict[str, str]:
    """The question each turn's nugget prompt asked, by the turn of its nugget."""
    return {re.search(r"\[passage (\S+)\]", r["messages"][-1]["content"])[1]: question
            for r, question in zip(requests, asked_questions_of(requests))}


def sent(requests: list[dict]) -> list[str]:
    """The requests as sent, in one order (the judge sends them concurrently)."""
    return sorted(json.dumps(request, sort_keys=True) for request in requests)


def asked_questions_of(requests: list[dict]) -> list[str]:
    return [re.search(r"Question asked \(may be empty\): (.*)\n", r["messages"][-1]["content"]).group(1)
            for r in requests]


@pytest.mark.server
def test_with_topics_the_bank_s_query_is_asked_first_and_the_turn_s_utterance_where_it_states_none(
        tmp_path, capsys):
    """The bank's `query` is the standalone question its nuggets were written for (nuggetizer's
    assigner asks it); an iKAT utterance leans on the conversation ("Oh, do I need a visa?"). The
    utterance came first; the answer file's `topic` is asked neither."""
    run, bank = write_ikat_inputs(tmp_path)
    with start_llm_server(tmp_path, {"labels": {t: [["2"]] for t in IKAT_TURNS}}) as server:
        assert main(["responses", "eval", run, "--nuggets", bank, "--topics", "ikat2024", "--judge", "llm",
                     "--model", "m", "--base-url", server.base_url, "--cache", str(tmp_path / "cache"),
                     "--format", "json"]) == 0
        assert asked_by_turn(server.requests()) == {"0_1": "BANK 0_1", "0_2": "Oh, do I need a visa?"}
    out = json.loads(capsys.readouterr().out)
    assert out["judge"]["questions"] == {"the nugget bank": 1, "the topics": 2}  # 0_3: unanswered, scored 0


@pytest.mark.server
def test_the_api_s_topics_asks_the_questions_and_evaluates_the_turns_the_cli_s_topics_does(tmp_path, capsys):
    """harness.responses.evaluate took no topics: it asked the bank's query, then the answer
    file's `topic`, and evaluated the answered turns alone, where `--topics` asks the turn's
    utterance and scores a missed turn 0. A Benchmark or its conversations are the same topics."""
    from harness.topics import load

    run, bank = write_ikat_inputs(tmp_path)
    with start_llm_server(tmp_path, {"labels": {t: [["2"]] for t in IKAT_TURNS}}) as server:
        assert main(["responses", "eval", run, "--nuggets", bank, "--topics", "ikat2024", "--judge", "llm",
                     "--model", "m", "--base-url", server.base_url, "--cache", str(tmp_path / "cli"),
                     "--format", "json", "--per-turn"]) == 0
        cli = server.requests()
        settings = {"judge": "llm", "model": "m", "base_url": server.base_url, "cache_dir": tmp_path / "api"}
        per_turn, _ = evaluate(run, bank, topics="ikat2024", **settings)
        assert sent(server.requests()[len(cli):]) == sent(cli)  # the same prompts, each sent again (another cache)
        benchmark = load("ikat2024")
        for topics in (benchmark, list(benchmark.conversations)):
            assert evaluate(run, bank, topics=topics, **settings)[0].equals(per_turn)
        assert len(server.requests()) == 2 * len(cli)  # from the cache
        board = compare(run, bank, topics="ikat2024", **settings).set_index("measure")
        assert board.loc["all", "mean"] == pytest.approx(2 / 3)  # 0_3 scored 0, as on the CLI's board
    rows = {row["turn"]: row["all"] for row in json.loads(capsys.readouterr().out)["per_turn"]}
    assert rows == dict(zip(per_turn["turn"], per_turn["all"])) == {"0_1": 1.0, "0_2": 1.0, "0_3": 0.0}
    with pytest.raises(HarnessError, match=r"^topics=: expected a benchmark name \(NAME\[:SPLIT\], as --topics\), "
                                           r"a harness.topics.Benchmark or a list of its Conversations, not int$"):
        evaluate(run, bank, topics=2024, **settings)


@pytest.mark.server
@pytest.mark.reference
def test_ikat_turns_with_topics_and_a_cone_rag_bank_are_asked_their_utterance_as_before(tmp_path):
    """A CONE-RAG bank states no `query`: with --topics ikat2024 every prompt asks the turn's
    utterance, as before the bank's query came first, so those prompts (the judge's cache keys) are
    the same."""
    from harness.topics import load

    automatic = json.loads(cone_rag("participant_resources", "automatic_responses.json").read_text())
    name = "gpt4-QR-out-rr-debertav3"
    run = tmp_path / "run.json"  # its answers to three turns, marked for the test judge
    run.write_text(json.dumps({t: {name: f"[passage a] {automatic[t][name]}"} for t in ("0_2", "0_3", "0_6")}))
    bank = cone_rag("human_resources", "gold_nuggets_human_deduplicated.json")
    assert read_bank(bank).questions == {}
    with start_llm_server(tmp_path, {"labels": {"a": [["2"]]}}) as server:
        assert main(["responses", "eval", str(run), "--nuggets", str(bank), "--topics", "ikat2024", "--judge", "llm",
                     "--model", "m", "--base-url", server.base_url, "--cache", str(tmp_path / "cache")]) == 0
        requests = server.requests()
    utterances = {turn.qid: turn.utterance for turn in load("ikat2024").turns}
    asked = [(re.search(r"System answer:\n\[passage a\] (.{40})", r["messages"][-1]["content"])[1], question)
             for r, question in zip(requests, asked_questions_of(requests))]
    assert len(asked) == 4 + 2 + 3  # the turns' nuggets
    assert sorted(set(asked)) == sorted((automatic[t][name][:40], utterances[t]) for t in ("0_2", "0_3", "0_6"))


def llm_judge(server, folder: Path, **settings) -> LLMJudge:
    return LLMJudge(Endpoint("judge-model", server.base_url, TEMPLATES["nuggets"]), TEMPLATES["nuggets"], SUPPORT_0_2,
                    cache_dir=folder / "cache", backoff_s=0.01, **settings)


@pytest.mark.server
def test_llm_judge_scores_follow_the_answers_exactly_and_a_rerun_sends_nothing(tmp_path):
    files, bank = write_llm_inputs(tmp_path)
    with start_llm_server(tmp_path, {"labels": ANSWERS}) as server:
        per_turn, aggregate = evaluate(files, bank, llm_judge(server, tmp_path))
        sent = len(server.requests())
        again, _ = evaluate(files, bank, llm_judge(server, tmp_path))
        assert len(server.requests()) == sent == 6  # 2 runs x 3 nuggets, then none
    rows = per_turn.set_index(["run", "turn"])
    assert rows.loc[("run-a", "q1"), ["strict_all", "all", "vital"]].tolist() == [0.5, 0.75, 1.0]
    assert rows.loc[("run-b", "q1"), ["all", "unjudged"]].tolist() == [0.0, 1]  # 0 and an unparseable answer
    assert rows.loc[("run-b", "q2"), ["strict_vital", "vital"]].tolist() == [0.0, 0.5]
    assert rows.loc[("run-a", "q1"), "weighted"] == pytest.approx((2 * 1 + 1 * 0.5) / 3)
    assert aggregate.set_index("run").loc["run-a", "all"] == pytest.approx((0.75 + 1.0) / 2)
    assert again.equals(per_turn)
    assert "Piece of information" in server.requests()[0]["messages"][0]["content"]


@pytest.mark.server
def test_a_prompt_two_items_share_is_asked_once(tmp_path):
    files, bank = write_llm_inputs(tmp_path)
    copy = tmp_path / "run-c.jsonl"  # run-a's answers under another name: the same prompts
    copy.write_text(Path(files[0]).read_text().replace('"run-a"', '"run-c"'))
    with start_llm_server(tmp_path, {"labels": ANSWERS}) as server:
        judge = llm_judge(server, tmp_path)
        per_turn, _ = evaluate([*files, str(copy)], bank, judge)
        assert len(server.requests()) == judge.stats.requests == 6  # not 9
    rows = per_turn.set_index("run")[list(SCORES)]
    assert rows.loc["run-c"].values.tolist() == rows.loc["run-a"].values.tolist()


@pytest.mark.server
def test_llm_failures_are_retried_and_what_still_fails_is_counted_unjudged(tmp_path):
    files, bank = write_llm_inputs(tmp_path)
    (tmp_path / "flaky").mkdir()
    with start_llm_server(tmp_path / "flaky", {"labels": ANSWERS, "faults": {"500": 1}}) as server:
        judge = llm_judge(server, tmp_path)
        per_turn, _ = evaluate(files, bank, judge)
        assert judge.stats.retries == 6 and per_turn["unjudged"].sum() == 1  # every first try failed, then answered
    (tmp_path / "down").mkdir()
    with start_llm_server(tmp_path / "down", {"labels": ANSWERS, "failing": ["at 90 C."]}) as server:
        judge = llm_judge(server, tmp_path / "down", retries=1)
        per_turn, aggregate = evaluate(files, bank, judge)
        assert per_turn["unjudged"].sum() == 2 and judge.provenance()["counts"]["failed"] == 1  # and 'definitely'
        assert len(server.requests()) == 5 + 2  # the failing pair tried twice, not cached
        evaluate(files, bank, llm_judge(server, tmp_path / "down", retries=1))
        assert len(server.requests()) == 7 + 2  # the failed pair is asked again


@pytest.mark.server
def test_the_command_exits_1_when_judgments_failed_after_the_retries(tmp_path, capsys):
    files, bank = write_llm_inputs(tmp_path)
    with start_llm_server(tmp_path, {"labels": ANSWERS, "failing": ["at 90 C."]}) as server:
        code = main(["responses", "eval", *files, "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), "--retries", "0"])
    assert code == 1 and "warning: 1 judgment got no answer after the retries" in capsys.readouterr().err


@pytest.mark.server
def test_assignments_of_an_llm_run_with_failures_rescored_from_the_file_say_so_and_exit_1(tmp_path, capsys):
    """Re-scored with --judge file:, an llm run's failed judgments were called 'unparseable, e.g.
    'failed'' and the board exited 0; they are failed, the sidecar's counts quoted, with the rerun
    that finishes them. Finished, the file's one `failed` left is the llm's unparseable answer."""
    files, bank = write_llm_inputs(tmp_path)
    recorded = tmp_path / "assigned.jsonl"
    llm = ["responses", "eval", *files, "--nuggets", str(bank), "--judge", "llm", "--model", "m", "--retries", "0",
           "--cache", str(tmp_path / "cache"), "--assignments-out", str(recorded)]
    rescore = ["responses", "eval", *files, "--nuggets", str(bank), "--judge", f"file:{recorded}"]
    with start_llm_server(tmp_path, {"labels": ANSWERS, "failing": ["at 90 C."]}) as server:
        assert main([*llm, "--base-url", server.base_url]) == 1
    capsys.readouterr()
    assert main(rescore) == 1
    error = capsys.readouterr().err
    assert ("2 of 6 nugget judgments have no label (2 failed (recorded failed: their judge gave no label)): counted as "
            "not supported") in error
    assert error.endswith("warning: 2 of the 6 nugget judgments are recorded failed (scored as not supported): the llm "
                          "judge that made assigned.jsonl gave them no label (its sidecar: 1 failed, 1 unparseable): "
                          "rerun `harness responses eval --judge llm --model m` with --assignments-out, whose cache "
                          "answers the others, to finish them\n")
    (tmp_path / "fixed").mkdir()
    with start_llm_server(tmp_path / "fixed", {"labels": ANSWERS}) as server:
        assert main([*llm, "--base-url", server.base_url]) == 0
        assert len(server.requests()) == 1
    capsys.readouterr()
    assert main(rescore) == 0
    assert "1 of 6 nugget judgments have no label (1 unparseable, e.g. 'failed')" in capsys.readouterr().err


@pytest.mark.server
def test_a_judgment_the_endpoint_refuses_is_failed_and_the_warning_quotes_the_refusal(tmp_path, capsys):
    """A prompt past the model's window (HTTP 400) fails that judgment alone, as in `harness judge`."""
    from tests.llm_server import TOO_LONG

    files, bank = write_llm_inputs(tmp_path)
    with start_llm_server(tmp_path, {"labels": ANSWERS, "too_long": ["at 90 C."]}) as server:
        code = main(["responses", "eval", *files, "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache")])
    assert code == 1 and (f"warning: 1 judgment got a refusal from the endpoint (1 request refused, e.g. "
                          f"{'HTTP 400: ' + TOO_LONG!r}) (scored as not supported)"
                          in capsys.readouterr().err)


@pytest.mark.server
def test_citation_support_through_the_llm_judge_and_the_command(tmp_path, capsys):
    files, bank = write_llm_inputs(tmp_path)
    cited = tmp_path / "cited.jsonl"
    cited.write_text(json.dumps({"run_id": "cited", "topic_id": "q2", "topic": "?", "references": ["p1", "p2"],
                                 "response_length": 6, "answer": [{"text": "Water boils at 100 C.", "citations": [0, 1]},
                                                                  {"text": "Ice is cold.", "citations": []}]}) + "\n")
    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": "p1", "contents": "[passage p1] boiling"}) + "\n"
                        + json.dumps({"id": "p2", "contents": "[passage p2] freezing"}) + "\n")
    labels = {**ANSWERS, "p1": [["Water boils at 100 C.", "2"]], "p2": [["Water boils at 100 C.", "1"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        code = main(["responses", "eval", str(cited), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), "--citations", "--passages", f"jsonl:{passages}",
                     "--format", "json", "--per-turn"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    [row] = document["per_turn"]
    assert (row["cited_pairs"], row["support_precision"], row["support_recall"]) == (2, 0.75, 0.5)
    assert document["judge"]["citations"]["counts"]["ok"] == 2


def one_citation_run(folder: Path) -> Path:
    """A TREC RAG answer to q2 of one sentence citing passage p1."""
    path = folder / "cited.jsonl"
    path.write_text(json.dumps({"run_id": "cited", "topic_id": "q2", "topic": "?", "references": ["p1"],
                                "response_length": 5, "answer": [{"text": "Water boils at 100 C.", "citations": [0]}]})
                    + "\n")
    return path


@pytest.mark.server
def test_a_cited_passage_is_judged_by_the_text_harness_judge_reads_its_title_then_its_contents(tmp_path, capsys):
    """One text for a passage wherever a judge reads it: the title (where the corpus has one) on
    the first line, then the contents, as ClueWeb22's Clean-Text, which iKAT's passages are cut
    from, begins with the page title (harness.corpus.segment.document_text)."""
    from harness.corpus.readers import open_corpus
    from harness.judge.pairs import passages as judged_texts

    _, bank = write_llm_inputs(tmp_path)
    cited = one_citation_run(tmp_path)
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Boiling point", "contents": "[passage p1] at sea level"}) + "\n")
    labels = {**ANSWERS, "p1": [["Water boils at 100 C.", "2"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        assert main(["responses", "eval", str(cited), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), "--citations",
                     "--passages", f"jsonl:{corpus}"]) == 0
        [prompt] = [text for text in (r["messages"][-1]["content"] for r in server.requests()) if "cites" in text]
    _, text = judged_texts([open_corpus(f"jsonl:{corpus}")], {"p1"})["p1"]
    assert text == "Boiling point\n[passage p1] at sea level"
    assert f"Passage the sentence cites:\n{text}\n" in prompt


@pytest.mark.server
def test_replayed_assignments_name_the_judge_that_made_them_in_every_format(tmp_path, capsys):
    """--assignments-out's sidecar keeps the nugget judge's provenance (also with --citations),
    and `--judge file:` reports quote it: md, csv ('#' lines) and json."""
    files, bank = write_llm_inputs(tmp_path)
    cited = one_citation_run(tmp_path)
    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": "p1", "contents": "[passage p1] boiling"}) + "\n")
    out = tmp_path / "assigned.jsonl"
    with start_llm_server(tmp_path, {"labels": {**ANSWERS, "p1": [["Water boils at 100 C.", "2"]]}}) as server:
        assert main(["responses", "eval", *files, str(cited), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), "--citations",
                     "--passages", f"jsonl:{passages}", "--assignments-out", str(out), "--format", "csv"]) == 0
    made = capsys.readouterr().out
    assert f"# nuggets judged by: judge llm, model m, answered by {server.base_url} (" in made
    assert "# citations judged by: judge llm, model m" in made
    sidecar = json.loads(Path(f"{out}.provenance.json").read_text())
    assert (sidecar["judge"], sidecar["model"], sidecar["nuggets"]) == ("llm", "m", str(bank))
    replay = ["responses", "eval", *files, str(cited), "--nuggets", str(bank), "--judge", f"file:{out}", "--format"]
    assert main([*replay, "md"]) == 0
    assert "Judge: file, recorded from llm (m)." in capsys.readouterr().out
    assert main([*replay, "csv"]) == 0
    assert f"; recorded from judge llm, model m, answered by {server.base_url} (" in capsys.readouterr().out
    assert main([*replay, "json"]) == 0
    assert json.loads(capsys.readouterr().out)["judge"]["source_provenance"]["prompt_sha256"] == sidecar["prompt_sha256"]


@pytest.mark.server
def test_assignments_recorded_again_from_a_file_name_the_judge_that_first_made_them(tmp_path, capsys):
    """`--judge file:X --assignments-out Y`: Y's sidecar is the file judge's, the llm's nested in
    it; replayed from Y, the report said "recorded from file", losing the llm (or the baseline)."""
    files, bank = write_llm_inputs(tmp_path)
    made, again = tmp_path / "made.jsonl", tmp_path / "again.jsonl"
    with start_llm_server(tmp_path, {"labels": ANSWERS}) as server:
        assert main(["responses", "eval", *files, "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"),
                     "--assignments-out", str(made)]) == 0
    replay = ["responses", "eval", *files, "--nuggets", str(bank), "--format", "md", "--judge"]
    assert main([*replay, f"file:{made}", "--assignments-out", str(again)]) == 0
    assert main([*replay, f"file:{again}"]) == 0
    out = capsys.readouterr().out.split("# Response evaluation")[-1]
    assert out.startswith(", judge: file, recorded from llm (m)\n")
    assert f"; recorded from judge llm, model m, answered by {server.base_url} (" in out and "(WARNING" not in out


@pytest.mark.server
def test_a_run_left_out_for_want_of_recorded_assignments_has_its_citations_never_judged(tmp_path):
    """Its scores are not reported: asking the citation judge about it would be paid requests
    whose answers go unused. Only the kept run's cited sentence reaches the server."""
    def cited(name: str, sentence: str) -> ResponseRun:
        return ResponseRun(name, Path(f"{name}.jsonl"), "test", {"q2": Response(
            "q2", sentence, (Sentence(sentence, ("p1",)),), {"p1": "[passage p1] boiling"})})

    runs = [cited("kept", "Water boils at 100 C."), cited("left", "Water boils at 90 C.")]
    bank = NuggetBank("bank", {"q2": (Nugget("q2n1", NUGGETS["q2"][0][0], 2, True),)}, "rule")
    recorded = tmp_path / "assignments.jsonl"
    recorded.write_text(json.dumps({"qid": "q2", "run_id": "kept", "nuggets": [
        {"id": "q2n1", "assignment": "support"}]}) + "\n")
    labels = {"p1": [["Water boils at 100 C.", "2"], ["Water boils at 90 C.", "0"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        citation_judge = LLMJudge(Endpoint("m", server.base_url, TEMPLATES["citations"]), TEMPLATES["citations"],
                                  SUPPORT_0_2, cache_dir=tmp_path / "cache")
        evaluation = evaluate_runs(runs, bank, RecordedAssignments(recorded), citation_judge=citation_judge)
        [asked] = [r["messages"][-1]["content"] for r in server.requests()]
    assert "Water boils at 100 C." in asked and "90 C." not in asked
    assert evaluation.runs == ["kept"]
    assert evaluation.judge["citations"]["counts"]["pairs"] == 1
    assert any("left out (not scored): left" in note for note in evaluation.notes)


# --- the command --------------------------------------------------------------------------


@pytest.mark.reference
def test_the_command_ranks_cone_rag_runs_by_a_recorded_judge_as_json_and_html(human_bank, tmp_path, capsys):
    automatic = cone_rag("participant_resources", "automatic_responses.json")
    rng = random.Random(7)
    path = tmp_path / "one-supports-all.jsonl"  # gpt4-QD1-rr supports every nugget, the other runs some
    path.write_text("".join(json.dumps({"qid": t, "run_id": run.name, "nuggets": [
        {"id": n.id, "text": n.text, "assignment": "support" if run.name == "gpt4-QD1-rr" else
         rng.choice(["support", "partial_support", "not_support"])}
        for n in human_bank.of(t)]}) + "\n" for run in read_responses(automatic) for t in run.responses
        if human_bank.of(t)))
    args = ["responses", "eval", str(automatic),
            "--nuggets", str(cone_rag("human_resources", "gold_nuggets_human.json")), "--judge", f"file:{path}"]
    assert main([*args, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert next(iter(document["runs"])) == "gpt4-QD1-rr" and document["runs"]["gpt4-QD1-rr"]["all"]["mean"] == 1.0
    assert document["queries"] == 78 and "holm" in document["legend"]
    assert {b["name"] for b in document["breakdowns"]} == {"turn depth", "conversation"}
    assert main([*args, "--format", "html", "--output", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "Judge: file" in html and "Score by turn depth" in html and "Nugget importance" in html


@pytest.mark.reference
def test_empty_answers_are_counted_per_run_in_every_formats_notes_and_on_stderr(human_bank, tmp_path, capsys):
    """The organisers' own gold responses leave 17 of the 78 scored turns blank: scored 0 they
    rank the gold last, which no reader may take for systems beating people unawares."""
    gold = cone_rag("human_resources", "gold_response_and_nuggets_human.json")
    path = recorded_for(read_responses(gold), human_bank, tmp_path / "assignments.jsonl", {})
    said = "manual: 17 empty answers (blank text), scored 0 (0_3, 10_3, 10_8, 11_11, 11_13 ...)"
    for fmt in ("md", "html", "csv", "json"):
        assert main(["responses", "eval", str(gold), "--nuggets", str(cone_rag("human_resources",
                     "gold_nuggets_human.json")), "--judge", f"file:{path}", "--format", fmt]) == 0
        out, err = capsys.readouterr()
        assert f"note: {said}\n" in err and said in out


@pytest.mark.reference
def test_the_python_api_says_the_notes_the_cli_says_as_warnings_and_in_the_aggregate_s_attrs(human_bank, tmp_path):
    """A notebook gets the CLI's notes (here: the gold file's 17 empty answers), not a silent 0."""
    gold = cone_rag("human_resources", "gold_response_and_nuggets_human.json")
    path = recorded_for(read_responses(gold), human_bank, tmp_path / "assignments.jsonl", {})
    said = "manual: 17 empty answers (blank text), scored 0 (0_3, 10_3, 10_8, 11_11, 11_13 ...)"
    with pytest.warns(UserWarning) as caught:
        _, aggregate = evaluate(gold, cone_rag("human_resources", "gold_nuggets_human.json"), judge=f"file:{path}")
    assert said in [str(w.message) for w in caught] and said in aggregate.attrs["notes"]


@pytest.mark.reference
@pytest.mark.parametrize("grade, without", [(3, 16), (4, 60)])
def test_turns_without_a_vital_nugget_are_counted_in_the_notes_and_score_0_as_in_nuggetizer(human_bank, tmp_path,
                                                                                            grade, without):
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))
    bank = read_bank(cone_rag("human_resources", "gold_nuggets_human.json"), vital_grade=grade)
    evaluation = evaluate_runs(runs, bank, RecordedAssignments(recorded_for(runs, bank, tmp_path / "a.jsonl", {})))
    assert (f"{without} of 78 evaluated turns have no vital nugget (none of grade {grade} or more): vital and "
            "strict_vital score 0 there for every run, as nuggetizer scores them (") in "\n".join(evaluation.notes)
    rows = evaluation.per_turn()
    assert (rows[rows["vital_nuggets"] == 0][["vital", "strict_vital"]] == 0.0).all().all()
    assert len(rows[rows["vital_nuggets"] == 0]) == without * len(runs)


@pytest.mark.reference
def test_nuggets_repeating_a_text_of_their_turn_are_counted_in_the_notes_and_scored_as_given(human_bank, tmp_path):
    """74 of the human bank's nuggets repeat a text of their turn (a trailing space aside: 11_10's
    "Fall monitoring systems ..." twice); the organisers' deduplicated bank holds none."""
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))
    notes = evaluate_runs(runs, human_bank, RecordedAssignments(
        recorded_for(runs, human_bank, tmp_path / "a.jsonl", {}))).notes
    assert ("74 nuggets repeat the text of an earlier nugget of their turn (spacing aside) and are counted again "
            "(29 turns: 11_10, 11_11, 11_12, 11_13, 11_2 ...); a deduplicated bank counts each text once") in notes
    deduplicated = read_bank(cone_rag("human_resources", "gold_nuggets_human_deduplicated.json"))
    notes = evaluate_runs(runs, deduplicated, RecordedAssignments(
        recorded_for(runs, deduplicated, tmp_path / "d.jsonl", {}))).notes
    assert not any("repeat the text" in note for note in notes)


@pytest.mark.reference
def test_with_topics_every_turn_with_nuggets_is_evaluated_so_a_run_alone_scores_as_beside_others(human_bank,
                                                                                                tmp_path, capsys):
    """A hosted board scores every turn of its topics with nuggets: --topics makes the command do
    the same, so one team's file checked alone gets the board's number (0_2 and 0_3 left out)."""
    manual = cone_rag("participant_resources", "manual_responses.json")
    missing = tmp_path / "missing.json"  # one run's answers less two, as a team's file named "short"
    missing.write_text(json.dumps({t: {"short": answers["manual-out-rr"]} for t, answers
                                   in json.loads(manual.read_text()).items() if t not in ("0_2", "0_3")}))
    path = recorded_for([*read_responses(manual), *read_responses(missing)], human_bank, tmp_path / "a.jsonl", {})
    args = ["--nuggets", str(cone_rag("human_resources", "gold_nuggets_human.json")), "--judge", f"file:{path}",
            "--format", "json"]

    def short_all(*given: str) -> tuple[float, int]:
        assert main(["responses", "eval", *given, *args]) == 0
        found = json.loads(capsys.readouterr().out)
        return found["runs"]["short"]["all"]["mean"], found["queries"]

    assert short_all(str(manual), str(missing)) == (pytest.approx(76 / 78), 78)  # every nugget supported where answered
    assert short_all(str(missing)) == (1.0, 76)  # alone, without --topics: the turns it answers
    assert short_all(str(missing), "--topics", "ikat2024") == (pytest.approx(76 / 78), 78)


@pytest.mark.reference
def test_a_run_missing_evaluated_turns_is_counted_in_the_notes(human_bank, tmp_path):
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))
    path = recorded_for(runs, human_bank, tmp_path / "a.jsonl", {})
    short = replace(runs[0], responses={t: r for t, r in runs[0].responses.items() if t not in ("0_2", "0_3")})
    evaluation = evaluate_runs([short, *runs[1:]], human_bank, RecordedAssignments(path))
    assert f"{short.name}: no answer to 2 of the 78 evaluated turns, scored 0 (0_2, 0_3)" in evaluation.notes
    assert not any(f"{run.name}: no answer" in note for run in runs[1:] for note in evaluation.notes)


def regraded_0(bank: NuggetBank, turns: set[str]) -> NuggetBank:
    """The bank with every nugget of `turns` given grade 0 (no weight, importance kept)."""
    return replace(bank, nuggets={t: tuple(replace(n, grade=0) for n in found) if t in turns else found
                                  for t, found in bank.nuggets.items()})


@pytest.mark.reference
def test_every_format_states_over_how_many_turns_weighted_recall_is_averaged(human_bank, tmp_path):
    """Its means, tests and breakdowns leave out the turns whose nuggets all have grade 0: the
    legend says so, not the plain count of turns (CONE-RAG's 4 manual runs, 2 turns regraded 0)."""
    runs = read_responses(cone_rag("participant_resources", "manual_responses.json"))
    bank = regraded_0(human_bank, {"0_2", "0_3"})
    evaluation = evaluate_runs(runs, bank, RecordedAssignments(recorded_for(runs, bank, tmp_path / "a.jsonl", {})))
    report = build_report(evaluation)
    said = "paired-t test on 78 turns (weighted on 76 of them, undefined on 2), p-values holm-corrected"
    document = json.loads(render(evaluation, report, "json"))
    assert said in document["legend"] and document["queries_per_measure"] == {**dict.fromkeys(MEASURES, 78),
                                                                             "weighted": 76}
    assert said in render(evaluation, report, "md").decode()
    assert escape(said) in render(evaluation, report, "html").decode()
    assert sum(next(b for b in report.breakdowns if b.measure == "weighted").counts.values()) == 76


def test_a_bank_without_a_graded_nugget_shows_weighted_recall_as_undefined_on_every_turn(capsys, tmp_path):
    """No mean to show or test: the leaderboard leaves the measure out and its legend says why."""
    (tmp_path / "bank.json").write_text(json.dumps({"1_1": {"1": {"text": "a", "relevance": "0"}}}))
    (tmp_path / "r.json").write_text(json.dumps({"1_1": {"run": "text"}}))
    recorded = tmp_path / "assigned.jsonl"
    recorded.write_text(json.dumps({"qid": "1_1", "run_id": "run", "nuggets": [{"assignment": "support"}]}) + "\n")
    assert main(["responses", "eval", str(tmp_path / "r.json"), "--nuggets", str(tmp_path / "bank.json"),
                 "--judge", f"file:{recorded}", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert ("Intervals: n/a on 1 turn (vital undefined on every turn; strict_vital undefined on every turn; weighted "
            "undefined on every turn)") in document["legend"]  # no grade reaches the vital grade either
    assert "weighted" not in document["runs"]["run"] and document["queries_per_measure"]["weighted"] == 0


@pytest.mark.reference
def test_a_vital_grade_above_every_nugget_grade_is_warned_and_leaves_vital_undefined_not_0(human_bank, tmp_path,
                                                                                        capsys):
    """With no vital nugget the vital scores say nothing: said as eval says an unreachable rel=,
    and left off the board as an undefined weighted recall is, not 0.0000 for every run."""
    manual = cone_rag("participant_resources", "manual_responses.json")
    path = recorded_for(read_responses(manual), human_bank, tmp_path / "assignments.jsonl", {})
    assert main(["responses", "eval", str(manual), "--nuggets", str(cone_rag("human_resources", "gold_nuggets_human.json")),
                 "--judge", f"file:{path}", "--vital-grade", "9", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: --vital-grade 9: no nugget in gold_nuggets_human.json reaches grade 9 (the highest "
                          "is 4), so no nugget is vital: vital and strict_vital are undefined (n/a)\n")
    document = json.loads(out)
    assert "(vital undefined on every turn; strict_vital undefined on every turn)" in document["legend"]
    assert all(set(scores) == {"all", "strict_all", "weighted"} for scores in document["runs"].values())
    assert all(row["vital"] is None for row in document["aggregate"])


def test_the_api_warns_of_a_vital_grade_above_every_nugget_grade_as_the_command_does(tmp_path):
    """Undefined vital scores without a word were the API's, where the command warns; the
    warning names the argument as the caller wrote it, and points at the caller's line."""
    (tmp_path / "bank.json").write_text(json.dumps({"1_1": {"1": {"text": "a", "relevance": "3"}}}))
    (tmp_path / "r.json").write_text(json.dumps({"1_1": {"run": "a"}}))
    recorded = tmp_path / "assigned.jsonl"
    recorded.write_text(json.dumps({"qid": "1_1", "run_id": "run", "nuggets": [{"assignment": "support"}]}) + "\n")
    with pytest.warns(UserWarning) as caught:
        _, aggregate = evaluate(tmp_path / "r.json", tmp_path / "bank.json", judge=f"file:{recorded}", vital_grade=9)
    assert [str(warning.message) for warning in caught] == [
        "vital_grade=9: no nugget in bank.json reaches grade 9 (the highest is 3), so no nugget is vital: vital and "
        "strict_vital are undefined (n/a)"]
    assert caught[0].filename == __file__
    assert aggregate["vital"].isna().all() and aggregate["all"].tolist() == [1.0]


@pytest.mark.parametrize("grade", ["high", "\u00b2", -1])  # a superscript two is a digit to str.isdigit, not to int()
def test_a_malformed_bank_is_one_line_naming_file_and_record(tmp_path, capsys, grade):
    (tmp_path / "bank.json").write_text(json.dumps({"1_1": {"[1]": {"text": "a", "relevance": grade}}}))
    (tmp_path / "r.json").write_text(json.dumps({"1_1": {"run": "text"}}))
    assert main(["responses", "eval", str(tmp_path / "r.json"), "--nuggets", str(tmp_path / "bank.json"),
                 "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (f"harness responses eval: error: {tmp_path / 'bank.json'} (record turn 1_1, nugget "
                                       f"[1]): relevance: expected a whole-number grade of 0 or more, got {grade!r}\n")


def test_a_qrels_file_given_as_recorded_assignments_is_said_to_be_one(tmp_path):
    """The mix-up with `harness judge --judge file --labels`: named, not 'invalid JSON: Extra data'."""
    path = tmp_path / "llm.qrels"
    path.write_text("\n0_1 0 doc0_1-0:0 2\n0_1 0 doc0_1-1:0 3\n")
    with pytest.raises(InputError) as error:
        RecordedAssignments(path)
    assert str(error.value) == (f"{path}:2: looks like a qrels file; --judge file: takes nuggetizer assignment "
                                "JSONL {qid, run_id, nuggets}")


@pytest.mark.parametrize("text, expected", [
    ('{"1_1": {"[1]": {"text": "  ", "relevance": "3"}}}', " (record turn 1_1, nugget [1]): text: empty"),
    ('{"qid": "1_1", "nuggets": [{"text": "a", "importance": "vital"}, {"text": " ", "importance": "okay"}]}\n',
     ":1: nuggets[1].text: empty"),
])
def test_a_blank_nugget_text_is_an_error_as_a_missing_one_is(tmp_path, text, expected):
    """No response can support a nugget that says nothing: it would count as missed by every run."""
    path = tmp_path / "bank.json"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_bank(path)
    assert str(error.value) == f"{path}{expected}"


@pytest.mark.parametrize("read, text, expected", [
    (read_responses, '{"1_1": {"r": "Paris."},\n "1_1": {"r": "Lyon."}}', ": turn 1_1 is given twice"),
    (read_responses, '{"1_1": {"r": "Paris.", "r": "Lyon."}}', " (record turn 1_1): run r is given twice"),
    (read_bank, '{"1_1": {"n1": {"text": "a", "relevance": "4"}, "n1": {"text": "b", "relevance": "1"}}}',
     " (record turn 1_1): nugget n1 is given twice"),
])
def test_a_turn_run_or_nugget_a_cone_rag_file_gives_twice_is_an_error_not_the_last_one_kept(tmp_path, read, text,
                                                                                           expected):
    """json keeps the last of a repeated key silently: a half-dropped turn or nugget would be scored unseen."""
    path = tmp_path / "cone.json"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read(path)
    assert str(error.value) == f"{path}{expected} (a JSON object's keys must be unique)"


def test_two_runs_with_one_name_are_refused():
    with pytest.raises(HarnessError, match="two runs share the name a"):
        evaluate_runs([run_of("a", {"1_1": "x"}), run_of("a", {"1_2": "y"})], small_bank(), CountingJudge())


def test_the_api_s_llm_judge_refuses_a_prompt_its_items_cannot_fill_when_it_is_made(tmp_path):
    """harness.responses.evaluate(..., citations=True) filled the citation prompt only after every
    nugget's request; a hosted board's, at its first upload."""
    from harness.responses.judges import make_judge

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Does {response} state {nugget}?\n")
    make_judge("llm", model="m", base_url="http://127.0.0.1:9/v1", prompt=prompt, cache_dir=tmp_path)
    with pytest.raises(InputError, match=r"uses \{nugget\}, which the items do not carry; they have: labels, passage, "
                                         r"question, scale, sentence$"):
        make_judge("llm", task="citations", model="m", base_url="http://127.0.0.1:9/v1", prompt=prompt,
                   cache_dir=tmp_path)


@pytest.mark.server
def test_the_api_s_citation_judge_reads_citation_prompt_and_the_nugget_judge_prompt(tmp_path):
    """As --prompt and --citation-prompt: one prompt= served both judges, so a nugget prompt asked
    the citations for {nugget}, an error, and no citation prompt of one's own could be given."""
    _, bank = write_llm_inputs(tmp_path)
    nugget, citation = tmp_path / "nugget.txt", tmp_path / "citation.txt"
    nugget.write_text("NUGGET {nugget} stated by {response}? {labels}\n")
    citation.write_text("CITATION {sentence} backed by {passage}? {labels}\n")
    labels = {**ANSWERS, "p1": [["Water boils at 100 C.", "2"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        _, aggregate = evaluate(str(one_citation_run(tmp_path)), bank, "llm", model="m", base_url=server.base_url,
                                prompt=nugget, citations=True, citation_prompt=citation,
                                passages={"p1": "[passage p1] boiling"}, cache_dir=tmp_path / "cache")
        sent = [request["messages"][-1]["content"].split()[0] for request in server.requests()]
    assert sorted(sent) == ["CITATION", "NUGGET"]
    assert aggregate.loc[0, ["all", "support_precision"]].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("as_path", [str, Path])
def test_the_api_reads_passages_given_as_a_corpus_file_as_the_cli_s_passages_reads_it(tmp_path, as_path):
    """passages='corpus.jsonl', as every other file argument is given, was an AttributeError (a str
    has no .get) from deep inside; a mapping {id: text} is taken as before."""
    _, bank = write_llm_inputs(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Boiling", "contents": "[passage p1] boiling"}) + "\n")
    judge = CountingJudge()
    _, aggregate = evaluate(str(one_citation_run(tmp_path)), bank, judge, citations=True, passages=as_path(corpus))
    [cited] = [item for item in judge.asked if "passage" in item.fields]
    assert cited.fields["passage"] == "Boiling\n[passage p1] boiling"  # title, then contents: `harness judge`'s text
    _, given = evaluate(str(one_citation_run(tmp_path)), bank, CountingJudge(), citations=True,
                        passages={"p1": "Boiling\n[passage p1] boiling"})
    assert aggregate.equals(given)


@pytest.mark.parametrize("setting", [{"citation_prompt": "citation.txt"}, {"citations": True}])
def test_the_api_s_compare_refuses_a_citation_setting_in_its_own_words_before_the_judge_is_asked(setting):
    """compare ranks on nugget scores only: citation_prompt= advised citations=True, which compare
    then failed on with a TypeError (two values for `citations`)."""
    judge = CountingJudge()
    [key] = setting
    with pytest.raises(HarnessError, match=rf"^{key}=: compare ranks the runs on their nugget scores only, not on "
                                           r"citation support; harness\.responses\.evaluate\(\.\.\., citations=True\) "
                                           r"scores the citations$"):
        compare([run_of("one", {"1_1": "a"}), run_of("two", {"1_1": "b"})], small_bank(), judge, **setting)
    assert judge.asked == []


@pytest.mark.parametrize("settings, expected", [
    ({"judge": "llm"}, "citation_prompt= serves citations=True (citation support), which is not given"),
    ({"judge": "minilm", "citations": True}, "citation_prompt= is a template of judge='llm', not of judge='minilm'"),
])
def test_a_citation_prompt_without_citations_or_an_llm_judge_is_an_error_not_ignored(tmp_path, settings, expected):
    with pytest.raises(HarnessError, match=re.escape(expected)):
        evaluate(tmp_path / "never.jsonl", tmp_path / "never.json", citation_prompt=tmp_path / "citation.txt",
                 **settings)
