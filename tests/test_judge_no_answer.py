"""Replies that are no answer, and endpoints that answer nothing: a completion with no text
(a reasoning model out of tokens, a content filter) is a failed pair, not an empty answer
cached for ever; a reasoning model's leading <think> block is not the answer; an endpoint
that answered no pair at all (only 5xx, only empty completions) is one line, nothing written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import start_llm_server
from harness.cli import main
from harness.judge.base import read_provenance, sidecar
from harness.judge.llm import LLMJudge
from harness.judge.model import Item
from harness.judge.scales import RELEVANCE_0_4
from harness.queries.llm import Endpoint

pytestmark = pytest.mark.server

QIDS = ("0_1", "0_2", "0_3")  # iKAT 2024 turns (the topics ship with the harness)
NO_TEXT = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": None}}]}


def _judge(tmp_path: Path, server, *extra: str) -> list[str]:
    run, corpus = tmp_path / "a.run", tmp_path / "corpus.jsonl"
    run.write_text("".join(f"{q} Q0 d{q} 1 1.0 mine\n" for q in QIDS))
    corpus.write_text("".join(json.dumps({"id": f"d{q}", "contents": f"[passage d{q}] text"}) + "\n" for q in QIDS))
    return ["judge", str(run), "--topics", "ikat2024", "--corpus", str(corpus), "--output", str(tmp_path / "out.qrels"),
            "--model", "m", "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), *extra]


def test_a_completion_with_no_text_fails_its_pair_with_the_cause_and_is_asked_again_next_run(tmp_path, capsys):
    labels = {"d0_1": [["2"]], "d0_2": [[NO_TEXT]], "d0_3": [["3"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        assert main(_judge(tmp_path, server)) == 1
        assert len(server.requests()) == 3  # not retried: at temperature 0 the same reply comes back
    error = capsys.readouterr().err
    assert "3 requests; 0 unparseable, 1 failed, 0 missing)" in error and "off the scale" not in error
    assert "warning: 1 pair got a reply with no text (finish_reason length) on 1 request; run again" in error
    record = read_provenance(tmp_path / "out.qrels")
    assert record["counts"]["failed"] == 1 and record["failed_requests"] == {"no text (finish_reason length)": 1}
    assert (tmp_path / "out.qrels").read_text() == "0_1 0 d0_1 2\n0_3 0 d0_3 3\n"
    (tmp_path / "fixed").mkdir()
    with start_llm_server(tmp_path / "fixed", {"labels": {**labels, "d0_2": [["1"]]}}) as server:
        assert main(_judge(tmp_path, server)) == 0
        assert len(server.requests()) == 1  # only the pair that got no text
    assert (tmp_path / "out.qrels").read_text() == "0_1 0 d0_1 2\n0_2 0 d0_2 1\n0_3 0 d0_3 3\n"


def _think_only(reply: str, finish_reason: str) -> dict:
    return {**NO_TEXT, "choices": [{"index": 0, "finish_reason": finish_reason,
                                    "message": {"role": "assistant", "content": reply}}]}


@pytest.mark.parametrize("reply, cause", [
    (_think_only("<think>\nThe user asks about Egypt. Let me weigh whether the passage", "length"),
     "no text after the thinking (finish_reason length)"),  # cut off mid-think, served without a reasoning parser
    (_think_only("<think>I am unsure.</think>\n", "stop"), "no text after the thinking (finish_reason stop)"),
])
def test_a_reply_with_no_text_after_its_thinking_fails_its_pair_and_is_asked_again_next_run(tmp_path, capsys, reply,
                                                                                              cause):
    """Was parsed as an answer: 'unparseable', cached for ever (a rerun sent nothing)."""
    labels = {"d0_1": [["2"]], "d0_2": [[reply]], "d0_3": [["3"]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        assert main(_judge(tmp_path, server)) == 1
        assert main(_judge(tmp_path, server)) == 1
        assert len(server.requests()) == 3 + 1  # asked again, alone
    error = capsys.readouterr().err
    assert "(2 from the cache, 1 request; 0 unparseable, 1 failed, 0 missing)" in error and "off the scale" not in error
    assert f"warning: 1 pair got a reply with {cause} on 1 request; run again" in error
    assert read_provenance(tmp_path / "out.qrels")["failed_requests"] == {cause: 1}


def test_a_pair_failing_with_no_text_after_a_retried_failure_is_not_said_to_have_run_out_of_retries(tmp_path,
                                                                                                     capsys):
    """Every prompt's first request answered HTTP 500, the retry answered: only the no text failed a pair."""
    labels = {"d0_1": [["2"]], "d0_2": [[NO_TEXT]], "d0_3": [["3"]]}
    with start_llm_server(tmp_path, {"labels": labels, "faults": {"500": 1}}) as server:
        assert main(_judge(tmp_path, server, "--retries", "1")) == 1
    assert read_provenance(tmp_path / "out.qrels")["failed_requests"] == {"HTTP 500": 3,
                                                                          "no text (finish_reason length)": 1}
    said = "warning: 1 pair got a reply with no text (finish_reason length) on 1 request; run again"
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("answer", ["", "<think>I am unsure.</think>", "<think>\nThe user asks"])
def test_an_answer_with_no_text_after_its_thinking_an_earlier_version_cached_is_asked_again(tmp_path, answer):
    item = Item(("q", "d"), {"passage": "d"})

    def judge(base_url):
        return LLMJudge(Endpoint("m", base_url, "t"), "[passage {passage}]", RELEVANCE_0_4, cache_dir=tmp_path / "c")

    made = judge("http://127.0.0.1:9/v1")
    made.cache.path.parent.mkdir()
    key = hashlib.sha256(made.prompt(item).encode()).hexdigest()
    made.cache.path.write_text(json.dumps({"key": key, "item": ["q", "d"], "answer": answer}) + "\n")
    with start_llm_server(tmp_path, {"labels": {"d": [["2"]]}}) as server:
        assert [(j.label, j.cached) for j in judge(server.base_url).judge([item])] == [(2, False)]
        assert len(server.requests()) == 1


@pytest.mark.parametrize("reply, label, raw", [
    ("<think>\nThe passage names the topic.\n</think>\n\n3", 3, "\n\n3"),
    ("The chat template opened the block.</think>\n1", 1, "\n1"),  # DeepSeek-R1's: only its end in the reply
    ("<think>long thought</think> Relevant", None, " Relevant"),
    ("2 <think>an afterthought</think>", None, "2 <think>an afterthought</think>"),  # not leading: the reply as is
])
def test_a_leading_think_block_is_left_out_of_the_answer_and_kept_in_the_cache(tmp_path, reply, label, raw):
    item = Item(("q", "d"), {"passage": "d"})
    with start_llm_server(tmp_path, {"labels": {"d": [[reply]]}}) as server:
        made = LLMJudge(Endpoint("m", server.base_url, "t"), "[passage {passage}]", RELEVANCE_0_4,
                        cache_dir=tmp_path / "c")
        [judgment] = made.judge([item])
    assert (judgment.label, judgment.raw) == (label, raw)
    assert list(made.cache.answers.values()) == [reply]


@pytest.mark.parametrize("config, said", [
    ({"labels": {}, "always_503": 1}, "HTTP 503 on all 6 requests"),
    ({"labels": {f"d{q}": [[NO_TEXT]] for q in QIDS}}, "no text (finish_reason length) on all 3 requests"),
])
def test_an_endpoint_that_answers_no_pair_is_one_line_naming_why_and_nothing_is_written(tmp_path, capsys, config,
                                                                                          said):
    with start_llm_server(tmp_path, config) as server:
        assert main(_judge(tmp_path, server, "--retries", "1")) == 2
    assert capsys.readouterr().err == (f"harness judge: error: the LLM endpoint at {server.base_url} answered none of "
                                       f"the 3 pairs (model 'm'): {said}; nothing is cached, a rerun asks them "
                                       "again\n")
    assert not (tmp_path / "out.qrels").exists() and not sidecar(tmp_path / "out.qrels").exists()


def test_responses_eval_with_an_endpoint_that_answers_nothing_writes_no_board(tmp_path, capsys):
    """A board of 0.0000 for every run was written to --output (exit 1), the cause only in its notes."""
    responses, bank, out = tmp_path / "responses.json", tmp_path / "bank.json", tmp_path / "board.md"
    responses.write_text(json.dumps({"0_1": {"mine": "Egypt needs a visa.", "other": "No idea."}}))
    bank.write_text(json.dumps({"0_1": {"[1]": {"text": "a visa is needed", "relevance": "2"}}}))
    with start_llm_server(tmp_path, {"labels": {}, "always_503": 1}) as server:
        assert main(["responses", "eval", str(responses), "--nuggets", str(bank), "--judge", "llm", "--model", "m",
                     "--base-url", server.base_url, "--cache", str(tmp_path / "cache"), "--retries", "0",
                     "--output", str(out)]) == 2
    assert capsys.readouterr().err.endswith(f"error: the LLM endpoint at {server.base_url} answered none of the 2 "
                                            "pairs (model 'm'): HTTP 503 on all 2 requests; nothing is cached, a "
                                            "rerun asks them again\n")
    assert not out.exists()
