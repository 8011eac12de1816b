"""Answers off the judge's scale: counted as unparseable, never defaulted to a label; when no
answer parses (a prompt, scale or model that does not fit) the command fails quoting one, and
otherwise one is quoted in the notes and the provenance sidecar. A rerun asks nothing (the
answers are cached), so it fails again at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import start_llm_server
from harness.cli import main
from harness.judge.base import read_provenance

pytestmark = pytest.mark.server

QIDS = ("0_1", "0_2", "0_3")  # iKAT 2024 turns (the topics ship with the harness)


def _judge(tmp_path: Path, server) -> list[str]:
    run, corpus = tmp_path / "a.run", tmp_path / "corpus.jsonl"
    run.write_text("".join(f"{q} Q0 d{q} 1 1.0 mine\n" for q in QIDS))
    corpus.write_text("".join(json.dumps({"id": f"d{q}", "contents": f"[passage d{q}] text"}) + "\n" for q in QIDS))
    return ["judge", str(run), "--topics", "ikat2024", "--corpus", str(corpus), "--output", str(tmp_path / "out.qrels"),
            "--model", "m", "--base-url", server.base_url, "--cache", str(tmp_path / "cache")]


def test_judge_fails_quoting_an_answer_when_no_answer_is_on_the_scale(tmp_path, capsys):
    with start_llm_server(tmp_path) as server:  # it answers "rewrite: " + the prompt
        for _ in range(2):
            assert main(_judge(tmp_path, server)) == 2
            error = capsys.readouterr().err
            assert "no answer of the judge is a label of relevance-0-4 (0 to 4): e.g. 'rewrite: " in error
            assert "(3 such answers); check --prompt" in error and "--scale and --model" in error
        assert len(server.requests()) == len(QIDS)  # the rerun asked nothing
    assert not (tmp_path / "out.qrels").exists()


def test_judge_quotes_an_answer_off_the_scale_on_stderr_and_in_the_sidecar(tmp_path, capsys):
    labels = {"d0_1": [["2"]], "d0_2": [["very relevant"]], "d0_3": [["3"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        assert main(_judge(tmp_path, server)) == 0
    assert "note: 1 of 3 answers off the scale relevance-0-4 (0 to 4), counted as unparseable (never labelled): " \
           "e.g. 'very relevant'" in capsys.readouterr().err
    assert (tmp_path / "out.qrels").read_text() == "0_1 0 d0_1 2\n0_3 0 d0_3 3\n"
    assert read_provenance(tmp_path / "out.qrels")["unparseable_example"] == "very relevant"


def test_responses_eval_fails_quoting_an_answer_when_no_answer_is_on_the_scale(tmp_path, capsys):
    responses, bank = tmp_path / "responses.json", tmp_path / "bank.json"
    responses.write_text(json.dumps({"0_1": {"mine": "Egypt needs a visa."}}))
    bank.write_text(json.dumps({"0_1": {"[1]": {"text": "a visa is needed", "relevance": "2"}}}))
    with start_llm_server(tmp_path) as server:
        assert main(["responses", "eval", str(responses), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache")]) == 2
    error = capsys.readouterr().err
    assert "no answer of the judge is a label of support-0-2 (0 to 2): e.g. \"rewrite: " in error
    assert "check the judge's prompt" in error


def test_responses_eval_quotes_an_answer_off_the_scale_in_its_note_and_the_assignments_sidecar(tmp_path, capsys):
    responses, bank, out = tmp_path / "responses.json", tmp_path / "bank.json", tmp_path / "assigned.jsonl"
    responses.write_text(json.dumps({"0_1": {"mine": "Egypt needs a visa [passage r1]."}}))
    bank.write_text(json.dumps({"0_1": {"[1]": {"text": "a visa is needed", "relevance": "2"},
                                        "[2]": {"text": "the fee is 25 USD", "relevance": "1"}}}))
    labels = {"r1": [["a visa is needed", "2"], ["the fee is 25 USD", "maybe"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        assert main(["responses", "eval", str(responses), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"),
                     "--assignments-out", str(out)]) == 0
    assert "1 of 2 nugget judgments have no label (1 unparseable, e.g. 'maybe')" in capsys.readouterr().err
    assert read_provenance(out, "assignments_sha256")["unparseable_example"] == "maybe"
