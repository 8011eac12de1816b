"""Rewrites from anywhere: `rewrites:FILE` and `llm[:NAME]` (an OpenAI-compatible endpoint).
The no-later-turn rule for both is checked with every strategy in tests/test_queries.py."""

from __future__ import annotations

import hashlib
import json

import pytest

from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.queries import inputs, stream
from harness.topics import load

PROMPT = "Earlier turns:\n{history}\nRewrite as a stand-alone question: {utterance}\n"


def _manual_pairs(name: str, strategy: str = "manual") -> list[tuple[str, str]]:
    return [(q.qid, q.text) for q in stream(load(name).conversations, strategy)]


@pytest.fixture
def tsv(tmp_path):
    path = tmp_path / "rewrites.tsv"
    path.write_text("".join(f"{qid}\t{text}\n" for qid, text in _manual_pairs("cast2019")), encoding="utf-8")
    return path


def test_rewrites_tsv_and_jsonl_give_the_file_texts(tsv, tmp_path):
    jsonl = tmp_path / "rewrites.jsonl"
    jsonl.write_text("".join(json.dumps({"qid": q, "text": t}) + "\n" for q, t in _manual_pairs("cast2019")),
                     encoding="utf-8")
    for path in (tsv, jsonl):
        assert [(q.qid, q.text) for q in stream(load("cast2019").conversations, f"rewrites:{path}")] \
            == _manual_pairs("cast2019")
    assert inputs(f"rewrites:{tsv}") == {"rewrites_file": str(tsv.resolve()),
                                         "sha256": hashlib.sha256(tsv.read_bytes()).hexdigest()}


def test_a_missing_qid_names_the_file(tsv):
    lines = tsv.read_text(encoding="utf-8").splitlines(keepends=True)
    tsv.write_text("".join(lines[:5] + lines[6:]), encoding="utf-8")
    missing = lines[5].split("\t")[0]
    with pytest.raises(InputError, match=f"{tsv.name}: no rewrite for turn {missing}"):
        list(stream(load("cast2019").conversations, f"rewrites:{tsv}"))


def test_an_empty_rewrite_is_sent_as_manual_sends_it_with_a_warning_naming_its_line(tmp_path, capsys):
    """`topics export --strategy manual` feeds back unchanged: iKAT 2023's 12-1_12 has an empty official rewrite."""
    exported = tmp_path / "manual.tsv"
    assert main(["topics", "export", "ikat2023", "--strategy", "manual", "--format", "tsv",
                 "--output", str(exported)]) == 0
    line = next(n for n, row in enumerate(exported.read_text(encoding="utf-8").splitlines(), 1) if row == "12-1_12\t")
    capsys.readouterr()
    assert _manual_pairs("ikat2023", f"rewrites:{exported}") == _manual_pairs("ikat2023")
    assert f"warning: {exported}:{line}: qid '12-1_12' has an empty rewrite, so the query is empty and retrieves " \
        "nothing" in capsys.readouterr().err


def test_an_empty_rewrite_is_warned_of_in_every_stream_that_sends_it(tmp_path, capsys):
    """A second stream in one process (a notebook, a test) says it again, as `manual` does."""
    rewrites = tmp_path / "rewrites.tsv"
    rewrites.write_text("".join(f"{qid}\t{'' if qid == '31_2' else text}\n" for qid, text in _manual_pairs("cast2019")))
    warning = f"warning: {rewrites}:2: qid '31_2' has an empty rewrite, so the query is empty and retrieves nothing"
    for _ in range(2):
        capsys.readouterr()
        assert [q.text for q in stream(load("cast2019").conversations, f"rewrites:{rewrites}")][1] == ""
        assert capsys.readouterr().err.count(warning) == 1


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_a_manual_export_in_either_format_feeds_back_as_rewrites(tmp_path, fmt, capsys):
    """The JSONL export writes its text as "query": read as "text", so the round trip holds on real topics."""
    exported = tmp_path / f"manual.{fmt}"
    assert main(["topics", "export", "ikat2023", "--strategy", "manual", "--format", fmt,
                 "--output", str(exported)]) == 0
    assert _manual_pairs("ikat2023", f"rewrites:{exported}") == _manual_pairs("ikat2023")


def test_a_jsonl_rewrite_given_as_both_text_and_query_names_the_line(tmp_path):
    both = tmp_path / "both.jsonl"
    both.write_text('{"qid": "31_1", "text": "a", "query": "b"}\n', encoding="utf-8")
    with pytest.raises(InputError, match='both.jsonl:1: found both "text" and "query": give the rewrite as one'):
        list(stream(load("cast2019").conversations, f"rewrites:{both}"))


def test_a_repeated_qid_names_the_file_and_line(tsv):
    lines = tsv.read_text(encoding="utf-8").splitlines(keepends=True)
    tsv.write_text("".join(lines + [lines[0]]), encoding="utf-8")
    with pytest.raises(InputError, match=f"{tsv.name}:{len(lines) + 1}: qid '31_1' appears twice"):
        list(stream(load("cast2019").conversations, f"rewrites:{tsv}"))


def test_an_extra_qid_names_the_file(tsv):
    with tsv.open("a", encoding="utf-8") as handle:
        handle.write("999_1\tnot a turn of cast2019\n")
    with pytest.raises(InputError, match=f"{tsv.name}: 1 qid\\(s\\) are not turns of this benchmark, e.g. '999_1'"):
        list(stream(load("cast2019").conversations, f"rewrites:{tsv}"))


@pytest.mark.parametrize("header", ["qid\ttext", "query_id\trewrite", "turn_id\tutterance"])
def test_a_header_row_names_the_file_and_line_as_the_run_reader_does(tsv, header):
    tsv.write_text(f"{header}\n" + tsv.read_text(encoding="utf-8"), encoding="utf-8")
    shown = header.replace("\t", " ")
    with pytest.raises(InputError, match=f"{tsv.name}:1: looks like a header row \\('{shown}'\\); "
                                         "rewrites files have none: delete it"):
        list(stream(load("cast2019").conversations, f"rewrites:{tsv}"))


def test_rewrites_without_a_file_or_with_a_bad_line_is_one_sentence(tmp_path):
    with pytest.raises(HarnessError, match="rewrites needs a file"):
        list(stream(load("cast2019").conversations, "rewrites"))
    bad = tmp_path / "bad.tsv"
    bad.write_text("31_1 no tab here\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.tsv:1: expected 'qid<TAB>text'"):
        list(stream(load("cast2019").conversations, f"rewrites:{bad}"))
    bad.write_text("31_1\tWhat is throat cancer?\tmanual\n", encoding="utf-8")  # a third column
    with pytest.raises(InputError, match="bad.tsv:1: expected 'qid<TAB>text', found 3 tab-separated fields"):
        list(stream(load("cast2019").conversations, f"rewrites:{bad}"))


def test_rewrites_are_read_as_every_user_file_is_bom_away_folder_one_line(tsv, tmp_path):
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf" + tsv.read_bytes())
    assert [q.text for q in stream(load("cast2019").conversations, f"rewrites:{bom}")] \
        == [text for _, text in _manual_pairs("cast2019")]
    assert inputs(f"rewrites:{bom}")["sha256"] == hashlib.sha256(bom.read_bytes()).hexdigest()
    with pytest.raises(InputError, match="is a folder, expected a file"):
        list(stream(load("cast2019").conversations, f"rewrites:{tmp_path}"))


# --- llm ---------------------------------------------------------------------------------


@pytest.fixture
def llm_env(monkeypatch, tmp_path, llm_server):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("HARNESS_LLM_MODEL", "test-model")
    monkeypatch.setenv("HARNESS_LLM_PROMPT", str(prompt))
    return prompt


@pytest.mark.slow
def test_llm_sends_history_and_turn_at_temperature_0_and_a_rerun_sends_nothing(llm_env, llm_server, tmp_path):
    before = len(llm_server.requests())
    out = tmp_path / "first.tsv"
    assert main(["topics", "export", "cast2019", "--strategy", "llm", "--format", "tsv", "--output", str(out)]) == 0
    sent = llm_server.requests()[before:]
    assert len(sent) == 479 and all(r["temperature"] == 0 and r["model"] == "test-model" for r in sent)
    second = sent[1]["messages"][0]["content"]
    assert second == PROMPT.format(history="User: What is throat cancer?", utterance="Is it treatable?")
    rows = dict(line.split("\t") for line in out.read_text(encoding="utf-8").splitlines())
    assert rows["31_2"] == "rewrite: " + " ".join(second.split())
    again = tmp_path / "again.tsv"
    assert main(["topics", "export", "cast2019", "--strategy", "llm", "--format", "tsv", "--output", str(again)]) == 0
    assert len(llm_server.requests()) == before + 479  # every answer came from the disk cache
    assert again.read_bytes() == out.read_bytes()


def test_llm_without_an_endpoint_is_one_sentence(monkeypatch, capsys):
    monkeypatch.delenv("HARNESS_LLM_BASE_URL", raising=False)
    assert main(["topics", "export", "cast2019", "--strategy", "llm"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "harness topics export: error: llm:default has no endpoint: give `llm: {default: {model, base_url, prompt}}` in "
        "the run config, or set HARNESS_LLM_BASE_URL, HARNESS_LLM_MODEL and HARNESS_LLM_PROMPT"]


def test_llm_with_an_unreachable_endpoint_or_unknown_model_is_one_sentence(llm_env, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_LLM_MODEL", "missing-model")
    assert main(["topics", "export", "cast2019", "--strategy", "llm"]) == 2
    assert "answered HTTP 404 for model 'missing-model'" in capsys.readouterr().err
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["topics", "export", "cast2019", "--strategy", "llm"]) == 2
    assert capsys.readouterr().err.strip().endswith("cannot reach the LLM endpoint at http://127.0.0.1:9/v1; "
                                                    "is the server running?")


NO_TEXT = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": None}}]}


def test_a_completion_with_no_text_is_an_error_naming_the_cause_and_is_asked_again_next_run(llm_env, tmp_path):
    """A reasoning model out of tokens or a content filter answers content null: not an empty
    rewrite cached for ever, but an error naming the finish_reason; the rerun asks again."""
    from tests.conftest import start_llm_server

    llm_env.write_text("[passage r] Rewrite: {utterance}", encoding="utf-8")
    first = load("cast2019").conversations[:1]
    with start_llm_server(tmp_path, {"labels": {"r": [[NO_TEXT]]}}) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_LLM_BASE_URL", server.base_url)
        with pytest.raises(HarnessError, match=rf"^the LLM endpoint at {server.base_url} answered turn 31_1 with no "
                                               r"text \(finish_reason length\) for model 'test-model' .*a rerun asks"):
            list(stream(first, "llm"))
    (tmp_path / "fixed").mkdir()
    with start_llm_server(tmp_path / "fixed") as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_LLM_BASE_URL", server.base_url)
        queries = list(stream(first, "llm"))
        assert len(server.requests()) == len(queries) == len(first[0].turns)
    assert queries[0].text == "rewrite: [passage r] Rewrite: What is throat cancer?"


def test_a_reasoning_model_s_thinking_is_left_out_of_the_rewrite_and_thinking_alone_is_no_text(llm_env, tmp_path):
    """Served without vLLM's reasoning parser, a reasoning model answers `<think>...</think>` and
    then its rewrite: the rewrite was the line `<think>`; a reply cut off while thinking is no text."""
    from tests.conftest import start_llm_server

    llm_env.write_text("[passage r] Rewrite: {utterance}", encoding="utf-8")
    first = load("cast2019").conversations[:1]
    thinking = {"labels": {"r": [["<think>\nhm\n</think>\n\nwhat is throat cancer"]]}}
    with start_llm_server(tmp_path, thinking) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_LLM_BASE_URL", server.base_url)
        assert next(stream(first, "llm")).text == "what is throat cancer"
    (tmp_path / "cut").mkdir()
    with start_llm_server(tmp_path / "cut", {"labels": {"r": [["<think>\nThe user asks"]]}}) as server, \
            pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_LLM_BASE_URL", server.base_url)  # 31_1's rewrite is cached: 31_2 is asked
        with pytest.raises(HarnessError, match=r"answered turn 31_2 with no text after the thinking \(finish_reason"):
            list(stream(first, "llm"))


def test_a_rewrite_cached_with_no_text_by_an_earlier_version_is_asked_again(llm_env, llm_server):
    from harness.queries.llm import _cache_path, endpoint, prompt_for

    first = load("cast2019").conversations[:1]
    prompt = prompt_for(endpoint("default").template(), first[0], 0)
    _cache_path("test-model", prompt).parent.mkdir(parents=True)
    _cache_path("test-model", prompt).write_text(json.dumps({"model": "test-model", "prompt": prompt, "answer": ""}))
    before = len(llm_server.requests())
    assert next(stream(first, "llm")).text == "rewrite: " + " ".join(prompt.split())
    assert len(llm_server.requests()) == before + 1


def test_a_prompt_with_an_unknown_field_names_the_file(llm_env):
    llm_env.write_text("Rewrite {utterance} given {histroy}", encoding="utf-8")
    with pytest.raises(InputError, match="prompt.txt: unknown field {histroy}; known: utterance, history"):
        list(stream(load("cast2019").conversations, "llm"))


def test_a_prompt_using_no_field_is_an_error_naming_the_file(llm_env):
    """An empty prompt file would have every turn rewritten from the same text."""
    llm_env.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="prompt.txt: uses no field: every turn would get the same prompt; known: "
                                         "utterance, history"):
        list(stream(load("cast2019").conversations, "llm"))


@pytest.mark.slow
@pytest.mark.java
def test_a_run_records_the_rewrites_hash_and_the_llm_and_reruns_send_nothing(tmp_path, tsv, llm_server, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    config = tmp_path / "run.yaml"
    config.write_text(
        f"llm:\n  local: {{model: test-model, base_url: '{llm_server.base_url}', prompt: '{prompt}'}}\n"
        "experiments:\n  - name: ikat\n    topics: ikat2023:test\n"
        f"    strategies: ['rewrites:{tmp_path / 'ikat.tsv'}', 'llm:local']\n"
        "    retrievers: [bm25]\n    measures: [nDCG@3]\n    k: 10\n", encoding="utf-8")
    (tmp_path / "ikat.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in _manual_pairs("ikat2023:test", "raw")),
                                       encoding="utf-8")
    assert main(["run", str(config), "--output", str(tmp_path / "runs")]) == 0
    sent = len(llm_server.requests())
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((tmp_path / "runs").glob("*.json"))]
    by_strategy = {r["config"]["strategy"]: r["strategy_inputs"] for r in records}
    assert by_strategy[f"rewrites:{tmp_path / 'ikat.tsv'}"]["sha256"] == \
        hashlib.sha256((tmp_path / "ikat.tsv").read_bytes()).hexdigest()
    assert by_strategy["llm:local"]["model"] == "test-model" and by_strategy["llm:local"]["temperature"] == 0
    assert main(["run", str(config), "--output", str(tmp_path / "runs"), "--force"]) == 0
    assert len(llm_server.requests()) == sent


def test_config_llm_endpoints_are_checked_where_they_are_written(tmp_path):
    from harness.runner.config import ConfigError, parse_config

    experiments = [{"topics": "cast2019", "strategies": ["llm:local"], "retrievers": ["bm25"], "measures": ["RR"]}]
    with pytest.raises(ConfigError, match="x.yaml: llm.local: missing required key 'prompt'"):
        parse_config(tmp_path / "x.yaml", {"llm": {"local": {"model": "m", "base_url": "u"}}, "experiments": experiments})
    with pytest.raises(ConfigError, match=r"llm.local.prompt: no such file: .*nope.txt"):
        parse_config(tmp_path / "x.yaml", {"llm": {"local": {"model": "m", "base_url": "u", "prompt": "nope.txt"}},
                                           "experiments": experiments})


def test_config_strategies_are_checked_with_their_key_path_when_the_config_is_read(tmp_path, monkeypatch):
    from harness.runner.config import ConfigError, parse_config

    monkeypatch.delenv("HARNESS_LLM_BASE_URL", raising=False)
    experiment = {"topics": "cast2019", "strategies": ["raw", f"rewrites:{tmp_path / 'none.tsv'}"],
                  "retrievers": ["bm25"], "measures": ["RR"], "corpus": {"index": "msmarco-v1-passage"}}
    with pytest.raises(ConfigError, match=r"x.yaml: experiments\[0\].strategies\[1\]: .*none.tsv: no such rewrites file"):
        parse_config(tmp_path / "x.yaml", {"experiments": [experiment]})
    experiment["strategies"] = ["llm:local"]
    with pytest.raises(ConfigError, match=r"experiments\[0\].strategies\[0\]: llm:local has no endpoint"):
        parse_config(tmp_path / "x.yaml", {"experiments": [experiment]})


def test_a_rewrites_file_missing_a_turn_or_with_a_header_is_refused_at_its_key_when_the_config_is_read(tsv, tmp_path):
    from harness.runner.config import ConfigError, parse_config

    lines = tsv.read_text(encoding="utf-8").splitlines(keepends=True)
    experiment = {"topics": "cast2019", "strategies": ["raw", f"rewrites:{tsv}"], "retrievers": ["bm25"],
                  "measures": ["RR"], "corpus": {"index": "msmarco-v1-passage"}}  # the strategy's error alone
    tsv.write_text("".join(lines[:5] + lines[6:]), encoding="utf-8")
    missing = lines[5].split("\t")[0]
    with pytest.raises(ConfigError, match=rf"x.yaml: experiments\[0\].strategies\[1\]: .*rewrites.tsv: no rewrite "
                                          rf"for turn {missing}$"):
        parse_config(tmp_path / "x.yaml", {"experiments": [experiment]})
    tsv.write_text("qid\ttext\n" + "".join(lines), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"x.yaml: experiments\[0\].strategies\[1\]: .*rewrites.tsv:1: looks like a "
                                          r"header row"):
        parse_config(tmp_path / "x.yaml", {"experiments": [experiment]})


@pytest.mark.java  # its BM25 starts the JVM
@pytest.mark.slow
def test_an_edited_rewrites_file_redoes_its_run_naming_the_strategys_inputs(tmp_path, capsys):
    rewrites, out = tmp_path / "ikat.tsv", tmp_path / "runs"
    pairs = _manual_pairs("ikat2023:test", "raw")
    rewrites.write_text("".join(f"{q}\t{t}\n" for q, t in pairs), encoding="utf-8")
    config = tmp_path / "run.yaml"
    config.write_text("experiments:\n  - name: ikat\n    topics: ikat2023:test\n"
                      f"    strategies: ['rewrites:{rewrites}']\n    retrievers: [bm25]\n    measures: [nDCG@3]\n"
                      "    k: 10\n", encoding="utf-8")
    assert main(["run", str(config), "--output", str(out)]) == 0
    rewrites.write_text("".join(f"{q}\t{t} edited\n" if n == 0 else f"{q}\t{t}\n" for n, (q, t) in enumerate(pairs)),
                        encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(config), "--output", str(out), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(
        f"\tto run (the inputs of strategy rewrites:{rewrites} changed since it was made)")
