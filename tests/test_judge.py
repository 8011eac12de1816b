"""The judge layer and `harness judge`, end to end against a local OpenAI-protocol server that
answers each (turn, passage) pair with the label the iKAT organisers' GPT-4 judge gave it in
their 2024 pool file (`llm-gpt4-pool-depth-30.txt`).

The queries and conversations are the real iKAT 2024 topics; ClueWeb22 is not on this machine,
so each passage's text is a stand-in naming its id ("[passage ID] ..."), which is how the
server knows which pair it is asked about (with the turn's utterances as needles).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import child_env, interruptible, shared_path, start_llm_server
from tests.llm_server import TOO_LONG
from tests.test_progress import Terminal
from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.judge.base import JUDGES, read_provenance, sidecar
from harness.judge.llm import LLMJudge, default_prompt
from harness.judge.model import Item
from harness.judge.scales import RELEVANCE_0_3, RELEVANCE_0_4, SCALES, SUPPORT_0_2, YES_NO
from harness.paths import data_root
from harness.queries.llm import Endpoint
from harness.trec import read_qrels, read_run

pytestmark = [pytest.mark.server, pytest.mark.reference]

QUERIES = 12  # turns of the pool, spread over its conversations
DEPTH = 30  # the pool's depth: 12 x 30 = 360 pairs
SHALLOW = 10  # the fault tests judge the top 10 (120 pairs)


def pool_file() -> Path:
    return shared_path("data/ikat/2024/cone-rag") / "resources/automatic_resources/llm-gpt4-pool-depth-30.txt"


def nist_2024() -> Path:
    return pool_file().parents[4] / "qrels" / "2024-qrels.txt"


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """A run of 30 pool passages for each of 12 turns, the stand-in corpus, the expected
    labels {(qid, docid): grade} and the judge server's config. On a turn NIST judged, the
    run alternates passages NIST judged with ones it did not (holes), as a new system's would."""
    from harness.topics import load

    folder = tmp_path_factory.mktemp("pool")
    order: dict[str, list[str]] = {}
    labels: dict[tuple[str, str], int] = {}
    for line in pool_file().read_text(encoding="utf-8").splitlines():
        qid, _, docid, grade = line.split()
        order.setdefault(qid, []).append(docid)
        labels[qid, docid] = int(grade)
    qids = list(order)[:: len(order) // QUERIES][:QUERIES]
    nist = read_qrels(nist_2024()).judgments
    for qid in set(qids) & set(nist):
        judged = [docid for docid in order[qid] if docid in nist[qid]]
        holes = [docid for docid in order[qid] if docid not in nist[qid]]
        order[qid] = [docid for pair in zip(holes, judged) for docid in pair]
    chosen = {(qid, docid): labels[qid, docid] for qid in qids for docid in order[qid][:DEPTH]}
    run = folder / "pool.run"
    run.write_text("".join(f"{qid} Q0 {docid} {rank} {100 - rank} pool\n"
                           for qid in qids for rank, docid in enumerate(order[qid][:DEPTH], start=1)))
    corpus = folder / "corpus.jsonl"
    docids = sorted({docid for _, docid in chosen})
    corpus.write_text("".join(json.dumps({"id": d, "contents": f"[passage {d}] stand-in text for {d}"}) + "\n"
                              for d in docids))
    turns = {turn.qid: (conversation, index) for conversation in load("ikat2024").conversations
             for index, turn in enumerate(conversation.turns)}
    needles: dict[str, list[str]] = {}
    for qid in qids:
        conversation, index = turns[qid]
        needles[qid] = [conversation.turns[i].utterance for i in range(index + 1)]
    config = {"labels": {}}
    for (qid, docid), grade in chosen.items():
        config["labels"].setdefault(docid, []).append([*needles[qid], str(grade)])
    shallow = {(qid, docid): labels[qid, docid] for qid in qids for docid in order[qid][:SHALLOW]}
    return {"run": run, "corpus": corpus, "labels": chosen, "shallow": shallow, "config": config}


def judge_args(pool: dict, server, out: Path, *extra: str, depth: int = DEPTH) -> list[str]:
    return ["judge", str(pool["run"]), "--topics", "ikat2024", "--corpus", str(pool["corpus"]), "--depth", str(depth),
            "--model", "gpt-4-as-recorded", "--base-url", server.base_url, "--output", str(out),
            "--cache", str(out.parent / "cache"), *extra]


def written(path: Path) -> dict[tuple[str, str], int]:
    return {(qid, docid): grade for qid, docs in read_qrels(path).judgments.items() for docid, grade in docs.items()}


def prompts(server) -> list[str]:
    return [request["messages"][-1]["content"] for request in server.requests()]


# -- scales ------------------------------------------------------------------------------


def test_an_answer_counts_only_when_it_is_exactly_one_label_on_the_scale():
    assert [RELEVANCE_0_3.parse(a) for a in ["2", " 3\n", "0.", "1 "]] == [2, 3, 0, 1]
    for answer in ["4", "-1", "+1", "2/3", "Score: 2", "two", "2 3", "", "2.5", "1\n\nbecause", "\uff12", "\u0662"]:  # full-width, Arabic-Indic
        assert RELEVANCE_0_3.parse(answer) is None, answer
    assert RELEVANCE_0_4.parse("4") == 4
    assert (SUPPORT_0_2.labels, YES_NO.labels) == ((0, 1, 2), (0, 1))
    assert set(SCALES.names()) == {"relevance-0-3", "relevance-0-4", "support-0-2", "yes-no"}


def test_judges_are_registered_by_name():
    assert {"llm", "file"} <= set(JUDGES.names())


def test_the_llm_judge_retries_and_overlaps_alike_from_the_cli_the_api_and_a_declaration(monkeypatch):
    """`harness judge`, `harness responses eval` and harness.responses.make_judge (which the
    hosted board uses) make the same llm judge when given no --retries / --concurrency."""
    import argparse

    from harness.judge.cli_judge import add_llm_arguments
    from harness.responses.judges import make_judge

    parser = argparse.ArgumentParser()
    add_llm_arguments(parser, "prompt.txt")
    args = parser.parse_args([])
    declared = {p.name: p.default for p in JUDGES.declaration("llm").params}
    monkeypatch.setenv("HARNESS_LLM_MODEL", "m")
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    judge = make_judge("llm")
    assert (args.retries, args.concurrency) == (judge.retries, judge.concurrency) == (declared["retries"],
                                                                                     declared["concurrency"])


@pytest.mark.parametrize("door, shipped", [("harness judge", "relevance"), ("harness responses", "nugget_support")])
def test_an_llm_judge_reads_its_prompt_template_once(tmp_path, monkeypatch, door, shipped):
    """The prompt is filled with an item of the judge's kind before the judge is made (check_prompt); the
    judge takes the template so checked, not read a second time."""
    import argparse

    from harness.judge.cli_judge import add_arguments, make_judge as relevance_judge
    from harness.judge.llm import Template
    from harness.responses.judges import make_judge

    read: list[str] = []
    load = Template.load.__func__

    def counting(cls, template):
        read.append(str(template))
        return load(cls, template)

    monkeypatch.setattr(Template, "load", classmethod(counting))
    options = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--cache", str(tmp_path)]
    if door == "harness judge":
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        judge = relevance_judge(parser.parse_args(["a.run", "--topics", "t", "--output", "o.qrels", *options]))
    else:
        judge = make_judge("llm", model="m", base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path)
    assert read == [str(default_prompt(shipped))]
    assert judge.template.source == str(default_prompt(shipped))


def test_the_shipped_prompt_fills_query_context_passage_and_the_scale(tmp_path):
    judge = LLMJudge(Endpoint("m", "http://127.0.0.1:9/v1", default_prompt()), default_prompt(), RELEVANCE_0_4,
                     cache_dir=tmp_path)
    prompt = judge.prompt(Item(("q", "d"), {"query": "QUERY", "context": "CONTEXT", "passage": "PASSAGE",
                                            "ptkb": "PTKB"}))
    assert all(part in prompt for part in ["QUERY", "CONTEXT", "PASSAGE", "PTKB", "4 = highly relevant",
                                           "0, 1, 2, 3, 4"])
    assert judge.provenance()["prompt_sha256"] == __import__("hashlib").sha256(default_prompt().read_bytes()).hexdigest()


def test_a_template_field_the_items_lack_is_a_one_line_error(tmp_path):
    judge = LLMJudge(Endpoint("m", "http://127.0.0.1:9/v1", tmp_path), "Is {passage} about {topic}?", YES_NO,
                     cache_dir=tmp_path)
    with pytest.raises(HarnessError, match=r"uses \{topic\}, which the items do not carry"):
        judge.judge([Item(("q", "d"), {"passage": "p"})])


@pytest.mark.parametrize("text", ["", "Is this passage relevant? Answer 0 to 4.\n"])
def test_a_template_using_no_field_is_an_error_naming_the_fields_the_items_have(tmp_path, text):
    """An empty file (or the wrong one) would send every item the same prompt and get one label back;
    said before any request, naming this judge's fields (the hint named {question}, a nugget
    prompt's field, to a relevance judge)."""
    template = tmp_path / "prompt.txt"
    template.write_text(text)
    judge = LLMJudge(Endpoint("m", "http://127.0.0.1:9/v1", template), template, YES_NO, cache_dir=tmp_path)
    with pytest.raises(InputError) as error:
        judge.judge([Item(("q", "d"), {"query": "q", "passage": "p"})])
    assert str(error.value) == (f"{template}: uses no {{field}}: every item would get the same prompt; the items "
                                "have: labels, passage, query, scale")


# -- harness judge against the recorded GPT-4 labels ---------------------------------------


def test_judge_reproduces_the_gpt4_pool_labels_and_a_rerun_sends_nothing(pool, tmp_path):
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out)) == 0
        assert len(pool["labels"]) >= 300
        assert written(out) == pool["labels"]
        assert len(server.requests()) == len(pool["labels"])
        assert all(request["temperature"] == 0 for request in server.requests())
        out.unlink()
        assert main(judge_args(pool, server, out)) == 0  # from the cache
        assert len(server.requests()) == len(pool["labels"])
        assert written(out) == pool["labels"]
    record = read_provenance(out)
    assert record["counts"]["cached"] == record["counts"]["pairs"] == len(pool["labels"]) and record["requests"] == 0


def test_the_sidecar_names_the_endpoint_that_answered_even_when_another_asks_the_cache(pool, tmp_path):
    """The cache is keyed by model, not by endpoint: the same model served elsewhere reuses
    the answers, and the sidecar credits them to the endpoint that gave them, not to the one
    that found them cached (answers cached before lines named it: "not recorded")."""
    out = tmp_path / "llm.qrels"
    with start_llm_server(tmp_path, pool["config"]) as first:
        assert main(judge_args(pool, first, out)) == 0
    assert read_provenance(out)["answered_by"] == {first.base_url: len(pool["labels"])}
    (tmp_path / "second").mkdir()
    with start_llm_server(tmp_path / "second", pool["config"]) as second:
        out.unlink()
        assert main(judge_args(pool, second, out)) == 0
        assert not second.requests()
    record = read_provenance(out)
    assert record["endpoint"] == second.base_url and record["answered_by"] == {first.base_url: len(pool["labels"])}
    cache = next((tmp_path / "cache").glob("*.jsonl"))
    cache.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "endpoint"}) + "\n"
                             for line in cache.read_text().splitlines()))
    with start_llm_server(tmp_path / "second", pool["config"]) as second:
        out.unlink()
        assert main(judge_args(pool, second, out)) == 0
    assert read_provenance(out)["answered_by"] == {"not recorded": len(pool["labels"])}


def test_the_sidecar_says_judge_model_prompt_endpoint_date_and_counts(pool, tmp_path):
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out)) == 0
    record = json.loads(sidecar(out).read_text())
    assert record["judge"] == "llm" and record["model"] == "gpt-4-as-recorded"
    assert record["endpoint"] == server.base_url and record["scale"] == "relevance-0-4"
    assert len(record["prompt_sha256"]) == 64 and record["date"].endswith("+00:00")
    assert record["counts"]["ok"] == record["labels_written"] == len(pool["labels"])
    assert record["inputs"]["depth"] == DEPTH and str(pool["run"]) in record["inputs"]["runs"]
    assert read_provenance(out)["matches_file"]


def test_agreement_reports_say_who_made_judge_written_labels(pool, tmp_path, capsys):
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 0
    capsys.readouterr()
    assert main(["qrels", "agree", str(pool_file()), str(out)]) == 0
    table = capsys.readouterr().out
    assert f"B: {out} (llm.qrels: judge llm, model gpt-4-as-recorded, answered by {server.base_url} (" in table
    assert "Cohen's kappa, grade >= 1: 1.0000" in table and "weighted kappa (quadratic): 1.0000" in table
    out.write_text(out.read_text() + "x 0 y 1\n")
    assert main(["qrels", "agree", str(pool_file()), str(out), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["provenance"]["a"] is None and document["provenance"]["b"]["matches_file"] is False


def answer_dates(cache: Path) -> str:
    """When the cached answers were made, from the cache's own lines: `answered FIRST to LAST`."""
    dates = sorted(json.loads(line)["date"] for line in next(cache.glob("*.jsonl")).read_text().splitlines())
    return f"answered {dates[0]}" + (f" to {dates[-1]}" if dates[-1] != dates[0] else "")


def filled_line(pool: dict, fill: Path, capsys) -> str:
    """The provenance line `eval --fill` prints under the scores."""
    capsys.readouterr()
    assert main(["eval", "--qrels", str(nist_2024()), str(pool["run"]), "--measures", "nDCG@10",
                 "--fill", str(fill)]) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("# filled labels: "))


@pytest.mark.slow  # two test servers, a second between their answers
def test_shown_provenance_names_the_endpoints_that_answered_and_when_not_the_last_invocation(pool, tmp_path, capsys):
    """A qrels judged half by one server and finished by another names both, with their counts; judged
    again from the cache at an address where nothing listens it still names them, and the answers'
    dates, not the endpoint and time of the invocation that wrote it (README's "a rerun elsewhere
    credits the one that answered", which the sidecar kept but no output showed)."""
    out = tmp_path / "llm.qrels"
    with start_llm_server(tmp_path, pool["config"]) as first:
        assert main(judge_args(pool, first, out, depth=5)) == 0
    (tmp_path / "second").mkdir()
    with start_llm_server(tmp_path / "second", pool["config"]) as second:
        assert main(judge_args(pool, second, out, depth=SHALLOW)) == 0
    half = len(pool["shallow"]) // 2
    answered = ", ".join(f"{url} ({half})" for url in sorted([first.base_url, second.base_url]))
    shown = (f"# filled labels: llm.qrels: judge llm, model gpt-4-as-recorded, answered by {answered}, prompt "
             f"sha256 {read_provenance(out)['prompt_sha256'][:12]}, scale relevance-0-4, "
             f"{answer_dates(tmp_path / 'cache')}")
    assert filled_line(pool, out, capsys) == shown
    time.sleep(1.1)  # a write time other than the answers'
    down = ["--base-url", "http://127.0.0.1:9/v1"]
    assert main([*judge_args(pool, second, out, depth=SHALLOW), *down]) == 0
    assert read_provenance(out)["endpoint"] == "http://127.0.0.1:9/v1"
    assert filled_line(pool, out, capsys) == shown
    capsys.readouterr()
    assert main(["qrels", "agree", str(nist_2024()), str(out)]) == 0
    assert f"B: {out} ({shown.removeprefix('# filled labels: ')})\n" in capsys.readouterr().out


def test_a_sidecar_without_who_answered_says_its_endpoint_and_its_write_time_as_such():
    """Sidecars written before answered_by and answered_between: the endpoint as recorded, and the date
    said to be when the file was written, not when its labels were made."""
    from harness.judge.base import provenance_line

    record = {"judge": "llm", "model": "m", "endpoint": "http://h/v1", "scale": "yes-no", "date": "2026-01-02T03:04:05"}
    assert provenance_line(record) == ("judge llm, model m, endpoint http://h/v1, scale yes-no, "
                                       "written 2026-01-02T03:04:05")


def test_the_summary_counts_one_pair_as_one(pool, tmp_path, capsys):
    """'judged 1 pairs' read as a slip in a line meant to be quoted."""
    run = tmp_path / "one.run"
    run.write_text(pool["run"].read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    assert main(["judge", str(run), "--topics", "ikat2024", "--judge", "file", "--labels", str(pool_file()),
                 "--output", str(tmp_path / "one.qrels")]) == 0
    assert "judged 1 pair (0 from the cache;" in capsys.readouterr().err


def test_a_file_judges_qrels_names_the_judge_that_made_the_labels_it_recorded(pool, tmp_path, capsys):
    """`harness judge --judge file --labels LLM.qrels` re-selects an LLM's labels: the fill's line names
    the model and who answered (the sidecar's source_provenance), not only `judge file`."""
    out, chosen = tmp_path / "llm.qrels", tmp_path / "chosen.qrels"
    with start_llm_server(tmp_path, pool["config"]) as server:
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 0
    assert main(["judge", str(pool["run"]), "--topics", "ikat2024", "--depth", str(SHALLOW), "--judge", "file",
                 "--labels", str(out), "--output", str(chosen)]) == 0
    written_at = read_provenance(chosen)["date"]
    made = f"answered by {server.base_url} ({len(pool['shallow'])})"
    assert filled_line(pool, chosen, capsys) == (
        f"# filled labels: chosen.qrels: judge file, labels from {out}, scale relevance-0-4, written {written_at}; "
        f"recorded from judge llm, model gpt-4-as-recorded, {made}, prompt sha256 "
        f"{read_provenance(out)['prompt_sha256'][:12]}, scale relevance-0-4, {answer_dates(tmp_path / 'cache')}")


def test_agree_and_rank_agree_say_how_many_pairs_the_judge_left_without_a_label(pool, tmp_path, capsys):
    """On the 0-3 scale GPT-4's 4s are off the scale: unlabelled, they are not among the pairs the
    kappas and taus are over. Both commands say how many from B's sidecar, in `eval --fill`'s words,
    on stderr and in the table and JSON (a CSV's on stderr alone)."""
    fours = sum(grade == 4 for grade in pool["shallow"].values())
    assert fours
    out, other = tmp_path / "llm.qrels", tmp_path / "other.run"
    with start_llm_server(tmp_path, pool["config"]) as server:
        assert main(judge_args(pool, server, out, "--scale", "relevance-0-3", depth=SHALLOW)) == 0
    other.write_text("".join(line for line in pool["run"].read_text().splitlines(keepends=True)
                             if line.split()[3] != "1"))
    counted = (f"llm.qrels: {fours} of the {len(pool['shallow'])} pairs it was asked to judge got no label (its "
               f"sidecar: {fours} unparseable)")
    cure = ": an unparseable answer is cached: check the judge's --prompt and --scale"
    agree = f"{counted}, none of them in the agreement, which is over the pairs both files label{cure}"
    scored = len(set(read_qrels(nist_2024()).judgments) & set(read_qrels(out).judgments))
    rank = (f"{counted}, which count as unjudged in the runs' scores under it where their queries are among the "
            f"{scored} scored (its sidecar does not say which they are){cure}")
    nist = str(nist_2024())
    rank_agree = ["rank-agree", nist, str(out), str(pool["run"]), str(other), "--measures", "nDCG@10"]
    for command, said in ((["agree", nist, str(out)], agree), (rank_agree, rank)):
        for form in ("table", "csv", "json"):
            capsys.readouterr()
            assert main(["qrels", *command, "--format", form]) == 0
            captured = capsys.readouterr()
            assert f"warning: {said}\n" in captured.err, (command[0], form)
            if form == "table":
                assert f"\nwarning: {said}\n" in captured.out
            elif form == "json":
                assert said in json.loads(captured.out)["warnings"]
            else:
                assert "warning" not in captured.out


def test_on_a_log_or_a_pipe_judging_draws_no_bar_and_ends_with_its_one_line(pool, tmp_path, capsys):
    """A bar redrawn on a stream that is not a terminal is a line per refresh (`> log`, CI)."""
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "pair/s" not in err
    assert err.startswith(f"judged {len(pool['shallow'])} pairs (0 from the cache, {len(pool['shallow'])} requests;")
    assert err.count("\n") == 1

def test_pairs_people_judged_are_not_judged_again(pool, tmp_path):
    nist = read_qrels(nist_2024()).judgments
    new = {pair: grade for pair, grade in pool["labels"].items() if pair[1] not in nist.get(pair[0], {})}
    assert 0 < len(new) < len(pool["labels"])
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "holes.qrels"
        assert main(judge_args(pool, server, out, "--qrels", str(nist_2024()))) == 0
        assert len(server.requests()) == len(new)
    assert written(out) == new


def test_429_500_and_timeouts_are_retried_with_backoff(pool, tmp_path, monkeypatch):
    monkeypatch.setattr("harness.judge.llm.BACKOFF_CAP_S", 0.05)
    config = {**pool["config"], "faults": {"429": 5, "500": 7, "timeout": 11}, "timeout_s": 2.0}
    with start_llm_server(tmp_path, config) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, "--timeout", "0.8", depth=SHALLOW)) == 0
        asked = Counter(prompts(server))
    assert written(out) == pool["shallow"]
    assert set(asked.values()) == {1, 2}  # a failed first request is asked once more
    record = read_provenance(out)
    assert record["retries"] == sum(n - 1 for n in asked.values()) > 0
    assert sum(record["failed_requests"].values()) == record["retries"]
    assert {"HTTP 429", "HTTP 500", "timeout"} == set(record["failed_requests"])


def test_an_answer_off_the_scale_is_counted_unparseable_never_a_label(pool, tmp_path, capsys):
    """On the 0-3 scale the recorded 4s are off the scale: counted, not clipped to 3 or set to 0."""
    fours = {pair for pair, grade in pool["labels"].items() if grade == 4}
    assert fours
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, "--scale", "relevance-0-3")) == 0
    assert written(out) == {pair: grade for pair, grade in pool["labels"].items() if pair not in fours}
    assert all(grade != 0 for pair, grade in pool["labels"].items() if pair in fours)
    assert read_provenance(out)["counts"]["unparseable"] == len(fours)
    assert f"{len(fours)} unparseable" in capsys.readouterr().err


def test_a_pair_failing_after_every_retry_is_counted_and_asked_again_next_time(pool, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("harness.judge.llm.BACKOFF_CAP_S", 0.01)
    with start_llm_server(tmp_path, {**pool["config"], "always_503": 20}) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, "--retries", "2", depth=SHALLOW)) == 1
        failed = read_provenance(out)["counts"]["failed"]
        assert failed > 0 and len(written(out)) == len(pool["shallow"]) - failed
        assert len(server.requests()) == len(pool["shallow"]) + 2 * failed
        record = read_provenance(out)
        assert record["retries"] == 2 * failed and record["failed_requests"] == {"HTTP 503": 3 * failed}
        assert "got no answer after the retries" in capsys.readouterr().err
        before = len(server.requests())
        assert main(judge_args(pool, server, out, "--retries", "0", depth=SHALLOW)) == 1
        assert len(server.requests()) - before == failed  # only the failed pairs are asked again


def test_a_pair_the_endpoint_refuses_fails_alone_quoted_and_is_asked_again_next_time(pool, tmp_path, capsys):
    """A passage past the model's window is refused (HTTP 400) at once, before the answers to
    the requests sent with it: that pair fails (counted, left out, not retried, the refusal
    quoted), the others are judged, and a rerun asks it alone again."""
    seen = Counter(docid for _, docid in pool["shallow"])
    qid, docid = next(pair for pair in pool["shallow"] if seen[pair[1]] == 1)
    config = {**pool["config"], "delay_s": 0.05, "too_long": [f"[passage {docid}]"]}
    with start_llm_server(tmp_path, config) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 1
        assert written(out) == {pair: grade for pair, grade in pool["shallow"].items() if pair != (qid, docid)}
        assert len(server.requests()) == len(pool["shallow"])  # no retry
        record = read_provenance(out)
        assert record["counts"]["failed"] == 1 and record["failed_requests"] == {"HTTP 400": 1}
        assert record["refused_requests"] == 1 and record["refused_example"] == f"HTTP 400: {TOO_LONG}"
        assert (f"warning: 1 pair got a refusal from the endpoint (1 request refused, e.g. "
                f"{record['refused_example']!r}); run again") in capsys.readouterr().err
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 1
        assert len(server.requests()) == len(pool["shallow"]) + 1 and f"[passage {docid}]" in prompts(server)[-1]
    assert read_provenance(out)["counts"] == {**record["counts"], "cached": len(pool["shallow"]) - 1}


def test_an_endpoint_refusing_every_request_is_a_one_line_error(pool, tmp_path, capsys):
    """Refused with HTTP 400 eight times in a row before any answer (a parameter the server
    rejects, a window too small for any prompt): the endpoint, not a pair; no qrels written."""
    with start_llm_server(tmp_path, {**pool["config"], "too_long": ["[passage "]}) as server:
        out = tmp_path / "llm.qrels"
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 2
        assert len(server.requests()) < 2 * 8 < len(pool["shallow"])
    assert capsys.readouterr().err == (f"harness judge: error: the LLM endpoint at {server.base_url} answered HTTP 400 "
                                       f"for model 'gpt-4-as-recorded': {TOO_LONG}\n")
    assert not out.exists()


def test_a_completion_without_a_choice_fails_its_pair_and_a_body_that_is_none_is_a_one_line_error(tmp_path):
    """HTTP 200 with no choice (as a content filter answers) is no answer: the pair fails (not
    cached, asked again next run); a body that is no chat completion (a wrong base URL) is one
    line, not a traceback."""
    labels = {"ok": [["2"]], "filtered": [[{"id": "x", "object": "chat.completion", "choices": []}]],
              "page": [[{"status": "hello from some other web service"}]]}
    with start_llm_server(tmp_path, {"labels": labels}) as server:
        def judge(*docids):
            made = LLMJudge(Endpoint("m", server.base_url, "t"), "[passage {passage}]", RELEVANCE_0_4,
                            cache_dir=tmp_path / "cache", backoff_s=0.01)
            return made.judge([Item(("q", docid), {"passage": docid}) for docid in docids])

        assert [(j.status, j.raw) for j in judge("ok", "filtered")] == [("ok", "2"), ("failed", "")]
        with pytest.raises(HarnessError, match=r"^the LLM endpoint at http://127.0.0.1:\d+/v1 did not answer with a "
                                               r"chat completion; is it an OpenAI-compatible base URL"):
            judge("page")


@pytest.mark.parametrize("body, why", [
    ({"raw body": "not json"}, "its body is not JSON"),
    ({"choices": [{"index": 0, "message": {"role": "assistant", "content": ["2"]}}]},
     "its message content is a JSON list, not text"),
])
def test_a_body_that_is_no_json_or_whose_content_is_no_text_is_a_one_line_error_and_never_cached(tmp_path, body,
                                                                                               why):
    """An HTTP 200 the client cannot read as JSON, or whose message content is not a string,
    is one line, not a traceback; nothing is cached, so the pair is asked again once the
    endpoint answers properly (an answer such a body left in an earlier cache is asked again too)."""
    cache = tmp_path / "cache"

    def judge(server):
        made = LLMJudge(Endpoint("m", server.base_url, "t"), "[passage {passage}]", RELEVANCE_0_4, cache_dir=cache)
        return made, made.judge([Item(("q", "d"), {"passage": "d"})])

    with start_llm_server(tmp_path, {"labels": {"d": [[body]]}}) as server:
        with pytest.raises(HarnessError, match=rf"^the LLM endpoint at http://127.0.0.1:\d+/v1 did not answer with a "
                                               rf"chat completion \({why}\); is it an OpenAI-compatible base URL"):
            judge(server)
    made = LLMJudge(Endpoint("m", "http://127.0.0.1:9/v1", "t"), "[passage {passage}]", RELEVANCE_0_4,
                    cache_dir=cache)
    assert not made.cache.answers
    key = hashlib.sha256(made.prompt(Item(("q", "d"), {"passage": "d"})).encode()).hexdigest()
    cache.mkdir()
    made.cache.path.write_text(json.dumps({"key": key, "item": ["q", "d"], "answer": ["2"]}) + "\n")
    (tmp_path / "fixed").mkdir()
    with start_llm_server(tmp_path / "fixed", {"labels": {"d": [["2"]]}}) as server:
        _, judgments = judge(server)
        assert [(j.label, j.cached) for j in judgments] == [(2, False)] and len(server.requests()) == 1


def test_a_cache_folder_that_is_a_file_or_cannot_be_written_is_a_one_line_error(pool, tmp_path, capsys):
    (tmp_path / "a-file").write_text("not a folder\n")
    with start_llm_server(tmp_path, pool["config"]) as server:
        args = judge_args(pool, server, tmp_path / "x.qrels")
        args[args.index("--cache") + 1] = str(tmp_path / "a-file")
        assert main(args) == 2
        made = LLMJudge(Endpoint("m", server.base_url, "t"), "[passage {passage}]", RELEVANCE_0_4,
                        cache_dir=tmp_path / "cache")
        (tmp_path / "cache").write_text("made a file after the cache was read\n")
        with pytest.raises(HarnessError, match=r"^cannot use the judge's answer cache .*cache/\w+\.jsonl: File exists"):
            made.judge([Item(("q", "d"), {"passage": "d"})])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"harness judge: error: cannot use the judge's answer cache {tmp_path / 'a-file'}/")
    assert error.endswith(": Not a directory (its folder, --cache or the harness cache's judge/, must be a folder "
                          "harness can write)")
    assert not (tmp_path / "x.qrels").exists()


def test_an_unreachable_endpoint_is_a_one_line_error(pool, tmp_path, capsys):
    assert main(judge_args(pool, type("S", (), {"base_url": "http://127.0.0.1:9/v1"}), tmp_path / "x.qrels")) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == "harness judge: error: cannot reach the LLM endpoint at http://127.0.0.1:9/v1; is the server running?"
    assert not (tmp_path / "x.qrels").exists()


def test_an_endpoint_that_accepts_but_never_answers_is_a_one_line_error(pool, tmp_path, capsys):
    """Every request stalls past --timeout: once one pair's tries have all timed out with nothing
    answered yet, one line says so (each pair would otherwise cost timeout x tries, for ever)."""
    stall = {**pool["config"], "faults": {"timeout": 1}, "timeout_s": 2}  # every prompt's first request
    with start_llm_server(tmp_path, stall) as server:
        assert main(judge_args(pool, server, tmp_path / "x.qrels", "--timeout", "0.3", "--retries", "0",
                               depth=SHALLOW)) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == (f"harness judge: error: the LLM endpoint at {server.base_url} answered no request within its "
                     "timeout (0.3 s, 1 try of one pair); is it still loading the model? (--timeout)")
    assert not (tmp_path / "x.qrels").exists()


def test_a_base_url_that_is_not_the_api_root_is_asked_about_not_the_model(pool, tmp_path, capsys):
    """A 404 from a base URL without /v1 (vLLM's root answers 404) is the URL's, the usual cause."""
    with start_llm_server(tmp_path, pool["config"]) as server:
        args = judge_args(pool, server, tmp_path / "x.qrels")
        args[args.index(server.base_url)] = server.base_url.removesuffix("/v1")
        assert main(args) == 2
    assert capsys.readouterr().err.strip().endswith("; is the base URL the API root, e.g. http://HOST:PORT/v1?")


def test_a_base_url_without_a_scheme_is_said_so_not_unreachable(pool, tmp_path, capsys):
    with start_llm_server(tmp_path, pool["config"]) as server:
        args = judge_args(pool, server, tmp_path / "x.qrels")
        bare = server.base_url.removeprefix("http://")
        args[args.index(server.base_url)] = bare
        assert main(args) == 2
    assert capsys.readouterr().err == (f"harness judge: error: LLM base URL {bare!r} is not an http:// or https:// "
                                       "URL with a host (e.g. http://127.0.0.1:8000/v1)\n")


def test_a_wrong_model_is_a_one_line_error(pool, tmp_path, capsys):
    with start_llm_server(tmp_path, pool["config"]) as server:
        args = judge_args(pool, server, tmp_path / "x.qrels")
        args[args.index("gpt-4-as-recorded")] = "missing-model"
        assert main(args) == 2
    assert "answered HTTP 404 for model 'missing-model': no model missing-model" in capsys.readouterr().err


def judge_process(args: list[str], **popen) -> subprocess.Popen:
    """`harness ARGS` in a child process running this checkout's harness."""
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], env=child_env(), **popen)


@pytest.mark.slow  # a test server and a harness process
def test_a_kill_mid_run_resumes_without_asking_again(pool, tmp_path):
    with start_llm_server(tmp_path, {**pool["config"], "delay_s": 0.01}) as server:
        out = tmp_path / "llm.qrels"
        child = judge_process(judge_args(pool, server, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(server.requests()) < len(pool["labels"]) // 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert not out.exists()
        first = Counter(prompts(server))
        assert 0 < len(first) < len(pool["labels"])
        assert main(judge_args(pool, server, out)) == 0
        again = Counter(prompts(server)) - first
    asked_twice = [prompt for prompt in again if prompt in first]
    assert len(asked_twice) <= 8  # only the requests in flight at the kill (concurrency 8)
    assert sum(again.values()) == len(pool["labels"]) - len(first) + len(asked_twice)
    assert written(out) == pool["labels"]


@pytest.mark.slow  # a test server and a harness process
def test_ctrl_c_stops_at_once_keeps_the_answers_and_says_how_many_were_judged(pool, tmp_path):
    """Ctrl-C while every request in flight stalls (a slow endpoint): the process ends, not after
    the requests' 60 s timeout and retries (bounded at 20 s, a third of one timeout, not a speed
    goal); exit status 130, one line, no traceback; the answers received are cached and a rerun
    does not ask them again."""
    stall = {**pool["config"], "faults": {"timeout": 4}, "timeout_s": 60}  # a quarter of the prompts stall
    with start_llm_server(tmp_path, stall) as server:
        out = tmp_path / "llm.qrels"
        cache = tmp_path / "cache"
        child = judge_process(judge_args(pool, server, out, depth=SHALLOW), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
        answered = lambda: sum(len(path.read_text().splitlines()) for path in cache.glob("*.jsonl"))  # noqa: E731
        sent, since, deadline = -1, time.monotonic(), time.monotonic() + 60
        while time.monotonic() < deadline:  # until the 8 requests in flight all stall
            if len(server.requests()) != sent:
                sent, since = len(server.requests()), time.monotonic()
            elif sent - answered() == 8 and time.monotonic() - since > 0.5:
                break
            time.sleep(0.05)
        assert child.poll() is None and 0 < answered() == sent - 8
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
    kept = answered()
    assert child.returncode == 130
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        f"harness judge: interrupted: {kept} of {len(pool['shallow'])} pairs judged, their answers cached; "
        "run the same command again to resume (they are not asked again)")
    assert not out.exists()
    cached = {json.loads(line)["key"] for path in cache.glob("*.jsonl") for line in path.read_text().splitlines()}
    (tmp_path / "again").mkdir()
    with start_llm_server(tmp_path / "again", pool["config"]) as server:
        assert main(judge_args(pool, server, out, depth=SHALLOW)) == 0
        again = prompts(server)
    assert len(again) == len(pool["shallow"]) - kept
    assert not {hashlib.sha256(prompt.encode()).hexdigest() for prompt in again} & cached
    assert written(out) == pool["shallow"]


def test_a_passage_the_corpus_lacks_or_a_query_the_benchmark_lacks_is_a_one_line_error(pool, tmp_path, capsys):
    corpus = tmp_path / "short.jsonl"
    corpus.write_text("".join(pool["corpus"].read_text().splitlines(keepends=True)[1:]))
    args = judge_args(pool, type("S", (), {"base_url": "http://127.0.0.1:9/v1"}), tmp_path / "x.qrels")
    args[args.index(str(pool["corpus"]))] = str(corpus)
    assert main(args) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"are not in corpus short.jsonl (e.g. {sorted(d for _, d in pool['labels'])[0]!r}); "
        "give the corpus the runs were made on (each of them, if they searched several)")
    args[args.index("ikat2024")] = "ikat2023"
    assert main(args) == 2
    assert "queries of the runs are not turns of ikat2023" in capsys.readouterr().err


@pytest.fixture(scope="module")
def two_pools_run(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A run of the first iKAT 2023 test turn over both provenance pools, as the default
    config's runs search them (corpus: [benchmark:ikat2023:test, benchmark:ikat2023:train]):
    the first passage of each pool. (the run, {passage id: its text as a judge reads it})"""
    from harness.corpus.readers import open_corpus
    from harness.corpus.segment import document_text
    from harness.topics import load

    qid = load("ikat2023").turns[0].qid
    firsts = [next(open_corpus(f"benchmark:ikat2023:{split}").documents()) for split in ("test", "train")]
    run = tmp_path_factory.mktemp("pools") / "pools.run"
    run.write_text("".join(f"{qid} Q0 {passage.id} {rank} {-rank} pools\n" for rank, passage in enumerate(firsts, 1)))
    return run, {passage.id: document_text(passage) for passage in firsts}


@pytest.mark.parametrize("corpus", [[], ["--corpus", "benchmark:ikat2023:test", "benchmark:ikat2023:train"]])
def test_a_run_searching_several_corpora_is_judged_on_their_passages_named_or_every_split_of_the_topics(
        two_pools_run, tmp_path, corpus):
    """--corpus takes several specs, as a config's corpus: list does; without it, every split's
    corpus of --topics is read, its own first, as `ikat from-trec` reads them (ikat2023 is the
    test split, whose pool alone lacks the train pool's passages)."""
    run, texts = two_pools_run
    out, prompt = tmp_path / "llm.qrels", tmp_path / "prompt.txt"
    prompt.write_text("[passage any] {query}\n{passage}\nReply with one of {labels}.\n")  # the server answers 2
    with start_llm_server(tmp_path, {"labels": {"any": [["2"]]}}) as server:
        assert main(["judge", str(run), "--topics", "ikat2023", "--model", "m", "--base-url", server.base_url,
                     "--cache", str(tmp_path / "cache"), "--prompt", str(prompt), "--output", str(out), *corpus]) == 0
        sent = prompts(server)
    assert len(sent) == 2 and all(any(text in prompt for prompt in sent) for text in texts.values())
    assert read_provenance(out)["inputs"]["corpus"] == (corpus[1:] or ["benchmark:ikat2023", "benchmark:ikat2023:train"])


def test_a_run_is_judged_on_the_shipped_passages_files_of_the_pools(two_pools_run, tmp_path):
    """The pool files' doc_id + passage_id + passage_text was refused: 'expected an id field'."""
    run, texts = two_pools_run
    pools = [str(data_root() / "ikat" / "2023" / "data" / f"2023_{split}_topics_psg_text.jsonl")
             for split in ("test", "train")]
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("[passage any] {query}\n{passage}\nReply with one of {labels}.\n")  # the server answers 2
    with start_llm_server(tmp_path, {"labels": {"any": [["2"]]}}) as server:
        assert main(["judge", str(run), "--topics", "ikat2023", "--model", "m", "--base-url", server.base_url,
                     "--cache", str(tmp_path / "cache"), "--prompt", str(prompt),
                     "--output", str(tmp_path / "llm.qrels"), "--corpus", *pools]) == 0
        sent = prompts(server)
    assert len(sent) == 2 and all(any(text in prompt for prompt in sent) for text in texts.values())


def test_one_split_of_several_is_a_one_line_error_naming_the_corpus_and_the_passages_it_lacks(two_pools_run, capsys):
    run, texts = two_pools_run
    assert main(["judge", str(run), "--topics", "ikat2023", "--corpus", "benchmark:ikat2023", "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1", "--output", "never.qrels"]) == 2
    assert capsys.readouterr().err == (
        f"harness judge: error: 1 of the 2 passages to judge are not in corpus ikat2023:test-provenance "
        f"(e.g. {list(texts)[1]!r}); give the corpus the runs were made on (each of them, if they searched several)\n")


def test_run_files_taken_by_corpus_are_a_usage_error_saying_so(two_pools_run, capsys):
    run, _ = two_pools_run
    with pytest.raises(SystemExit) as stop:
        main(["judge", "--corpus", "benchmark:ikat2023:test", "benchmark:ikat2023:train", str(run),
              "--topics", "ikat2023", "--output", "never.qrels"])
    assert stop.value.code == 2 and capsys.readouterr().err == (
        f"harness judge: error: --corpus took {run}, which is a file (an option with several values takes every word "
        "after it): put RUN... before --corpus, or end its values with -- (--corpus ... -- RUN...) "
        "(`harness judge --help` lists the options)\n")


def judge_val_spans(folder: Path, *corpus: str) -> None:
    """`harness judge` of a PragmatiCQA test run made on the val split's spans (two of its three
    passages), with `corpus` (the corpus options; none: the default, every split's)."""
    from harness.corpus.readers import open_corpus
    from harness.topics import load

    qid = load("pragmaticqa:test").turns[0].qid
    spans = [open_corpus(f"benchmark:pragmaticqa:{split}").documents() for split in ("val", "test")]
    passages = [next(spans[0]), next(spans[0]), next(spans[1])]
    run = folder / "val-spans.run"
    run.write_text("".join(f"{qid} Q0 {passage.id} {rank} {-rank} r\n" for rank, passage in enumerate(passages, 1)))
    prompt = folder / "prompt.txt"
    prompt.write_text("[passage any] {query}\n{passage}\nReply with one of {labels}.\n")  # the server answers 2
    with start_llm_server(folder, {"labels": {"any": [["2"]]}}) as server:
        assert main(["judge", str(run), "--topics", "pragmaticqa:test", "--model", "m", "--base-url", server.base_url,
                     "--cache", str(folder / "cache"), "--prompt", str(prompt),
                     "--output", str(folder / "llm.qrels"), *corpus]) == 0


@pytest.mark.parametrize("corpus", [[], ["--corpus", "benchmark:pragmaticqa:test", "benchmark:pragmaticqa:val"]])
def test_passages_found_only_in_another_split_s_corpus_are_noted_with_how_many_and_the_split(tmp_path, capsys, corpus):
    """The run is judged on the corpora of every split (the default), and one note says so; the
    corpora named with --corpus are the user's choice, said nothing of."""
    judge_val_spans(tmp_path, *corpus)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == [] if corpus else notes == [
        "note: 2 of the 3 passages to judge are not in the corpus of --topics pragmaticqa:test but in other splits' "
        "corpora: benchmark:pragmaticqa:val (it holds 2 of them); right if the runs searched them too, else give "
        "--corpus the corpus the runs were made on"]


def test_the_note_on_other_splits_reads_no_corpus_again(tmp_path, capsys, monkeypatch):
    """Which split holds each passage is known from the one search for their texts: the note read
    the own split's corpus again, and every other split's in full."""
    from dataclasses import replace

    import harness.topics

    shipped, passes = harness.topics.shipped_corpora, []

    def counted(name: str) -> dict:
        def reading(spec, corpus):
            return lambda: passes.append(spec) or corpus.documents()
        return {spec: replace(corpus, documents=reading(spec, corpus)) for spec, corpus in shipped(name).items()}

    monkeypatch.setattr(harness.topics, "shipped_corpora", counted)
    judge_val_spans(tmp_path)
    assert passes == ["benchmark:pragmaticqa:test", "benchmark:pragmaticqa:val"]
    assert "(it holds 2 of them)" in capsys.readouterr().err


def test_a_prompt_using_no_field_is_told_the_fields_harness_judge_fills(pool, tmp_path, capsys):
    """A qrels file given as --prompt: the hint lists the relevance items' fields (README's), not
    {question}, which `harness judge` does not fill; nothing is sent (nothing listens there)."""
    out = tmp_path / "p.qrels"
    assert main(["judge", str(pool["run"]), "--topics", "ikat2024", "--corpus", str(pool["corpus"]), "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1", "--prompt", str(nist_2024()), "--output", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"harness judge: error: {nist_2024()}: uses no {{field}}: every item "
                                              "would get the same prompt; the items have: context, labels, passage, "
                                              "ptkb, query, scale, title")
    assert not out.exists()


def test_a_prompt_field_the_items_lack_is_an_error_also_when_nothing_is_left_to_judge(pool, tmp_path, capsys):
    """--qrels judging every pair of the run: the judge fills no prompt, and a --prompt its items
    cannot fill wrote an empty qrels, exit 0; it is said before any pair is read."""
    prompt, out = tmp_path / "prompt.txt", tmp_path / "none.qrels"
    prompt.write_text("Is {passage} relevant to {question}?\n")
    assert main(["judge", str(pool["run"]), "--topics", "ikat2024", "--corpus", str(pool["corpus"]), "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1", "--qrels", str(pool_file()), "--prompt", str(prompt),
                 "--output", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"harness judge: error: {prompt}: the prompt template uses {{question}}, "
                                              "which the items do not carry; they have: context, labels, passage, "
                                              "ptkb, query, scale, title")
    assert not out.exists()


def test_nothing_left_to_judge_writes_an_empty_qrels_that_fills_nothing(pool, tmp_path, capsys):
    out = tmp_path / "none.qrels"
    args = ["judge", str(pool["run"]), "--topics", "ikat2024", "--judge", "file", "--labels", str(pool_file()),
            "--qrels", str(pool_file()), "--output", str(out)]
    assert main(args) == 0 and out.read_text() == "" and read_provenance(out)["counts"]["pairs"] == 0
    assert main(["eval", "--qrels", str(nist_2024()), str(pool["run"]), "--fill", str(out)]) == 0
    assert "0 labels added" in capsys.readouterr().err


def file_judge_args(pool: dict, out: Path, labels: Path, *extra: str) -> list[str]:
    return ["judge", str(pool["run"]), "--topics", "ikat2024", "--depth", str(DEPTH), "--judge", "file",
            "--labels", str(labels), "--output", str(out), *extra]


def test_labels_of_another_year_labelling_no_pair_are_an_error_not_an_empty_qrels(pool, tmp_path, capsys):
    """iKAT 2023's labels for a 2024 run: 'wrote 0 labels', exit 0, and --fill quietly added none.
    The file is what to fix: the error names it, with no `--help` tail."""
    from harness.paths import qrels_root

    labels, out = qrels_root() / "ikat" / "2023-qrels.all-turns.txt", tmp_path / "x.qrels"
    assert main(file_judge_args(pool, out, labels)) == 2
    assert capsys.readouterr().err == (
        f"harness judge: error: {labels}: --labels labelling none of the {len(pool['labels'])} (qid, docid) pairs to "
        "judge: nothing to write; are these labels of --topics ikat2024, the benchmark the runs answer?\n")
    assert not out.exists()


def test_labels_of_the_runs_queries_but_none_of_their_passages_are_an_error_saying_so(pool, tmp_path, capsys):
    qid = next(iter(pool["labels"]))[0]
    labels, out = tmp_path / "other.qrels", tmp_path / "x.qrels"
    labels.write_text(f"{qid} 0 some-other-passage 2\n")
    assert main(file_judge_args(pool, out, labels)) == 2
    assert capsys.readouterr().err == (
        f"harness judge: error: {labels}: --labels labelling none of the {len(pool['labels'])} (qid, docid) pairs to "
        f"judge: nothing to write; it judges 1 of their {QUERIES} queries, other passages of them\n")


def test_a_qrels_judging_none_of_the_runs_queries_is_a_warning_said_before_judging(pool, tmp_path, capsys):
    """iKAT 2023's qrels skip nothing of a 2024 run: '0 pairs already in --qrels skipped' and no
    word (with an llm judge, people's pairs are paid for again)."""
    from harness.paths import qrels_root

    human = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    assert main(file_judge_args(pool, tmp_path / "x.qrels", pool_file(), "--qrels", str(human))) == 0
    assert capsys.readouterr().err.startswith(
        f"warning: --qrels {human} judges none of the runs' {QUERIES} queries; is it the qrels of --topics ikat2024, "
        f"the benchmark the runs answer? (no pair is skipped)\njudged {len(pool['labels'])} pairs")


def test_the_closing_line_counts_the_pairs_on_queries_the_qrels_does_not_judge(pool, tmp_path, capsys):
    """Their labels --fill never uses (README's hole-filling recipe paid for them: 83% of the
    requests in a newcomer's try)."""
    nist = read_qrels(nist_2024()).judgments
    elsewhere = sum(qid not in nist for qid, _ in pool["labels"])
    holes = sum(qid in nist and docid not in nist[qid] for qid, docid in pool["labels"])
    assert 0 < elsewhere < len(pool["labels"]) and holes
    assert main(file_judge_args(pool, tmp_path / "x.qrels", pool_file(), "--qrels", str(nist_2024()))) == 0
    assert f"; {elsewhere} pairs judged on queries --qrels does not judge, whose labels --fill does not use " \
           "(--holes-only leaves them out); wrote" in capsys.readouterr().err


def test_holes_only_judges_only_the_holes_of_the_queries_the_qrels_judges(pool, tmp_path, capsys):
    """Every label it writes is one --fill uses."""
    nist = read_qrels(nist_2024()).judgments
    holes = {(qid, docid): grade for (qid, docid), grade in pool["labels"].items()
             if qid in nist and docid not in nist[qid]}
    elsewhere = sum(qid not in nist for qid, _ in pool["labels"])
    out = tmp_path / "holes.qrels"
    assert main(file_judge_args(pool, out, pool_file(), "--qrels", str(nist_2024()), "--holes-only")) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"judged {len(holes)} pairs")
    assert f"; {elsewhere} pairs on queries --qrels does not judge left out (--holes-only); wrote" in err
    assert written(out) == holes and read_provenance(out)["inputs"]["holes_only"] is True
    assert main(["eval", "--qrels", str(nist_2024()), str(pool["run"]), "--fill", str(out)]) == 0
    assert f"{len(holes)} labels added, 0 pairs already judged by people (their label kept), 0 on queries people " \
           "did not judge" in capsys.readouterr().err


def test_judged_queries_only_judges_every_pair_of_the_queries_the_qrels_judges(pool, tmp_path, capsys):
    """The pairs agree and rank-agree compare with people's: those people judged too, none on a
    query they never judged (without --qrels those were paid for and never read)."""
    nist = read_qrels(nist_2024()).judgments
    wanted = {(qid, docid): grade for (qid, docid), grade in pool["labels"].items() if qid in nist}
    people = sum(docid in nist[qid] for qid, docid in wanted)
    elsewhere = len(pool["labels"]) - len(wanted)
    assert people and elsewhere
    out = tmp_path / "judged.qrels"
    assert main(file_judge_args(pool, out, pool_file(), "--qrels", str(nist_2024()), "--judged-queries-only")) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"judged {len(wanted)} pairs")
    assert f"; {elsewhere} pairs on queries --qrels does not judge left out (--judged-queries-only); wrote" in err
    assert "skipped" not in err
    assert written(out) == wanted and read_provenance(out)["inputs"]["judged_queries_only"] is True


def test_judged_queries_only_without_qrels_or_with_holes_only_is_an_error(pool, tmp_path, capsys):
    assert main(file_judge_args(pool, tmp_path / "x.qrels", pool_file(), "--judged-queries-only")) == 2
    assert capsys.readouterr().err.startswith("harness judge: error: --judged-queries-only needs --qrels")
    with pytest.raises(SystemExit):
        main(file_judge_args(pool, tmp_path / "x.qrels", pool_file(), "--qrels", str(nist_2024()), "--holes-only",
                             "--judged-queries-only"))
    assert "--judged-queries-only: not allowed with argument --holes-only" in capsys.readouterr().err


def test_holes_only_with_a_qrels_judging_none_of_the_runs_queries_is_an_error(pool, tmp_path, capsys):
    """Nothing is left to judge: said before any pair is judged, nothing written."""
    from harness.paths import qrels_root

    human, out = qrels_root() / "ikat" / "2023-qrels.all-turns.txt", tmp_path / "x.qrels"
    assert main(file_judge_args(pool, out, pool_file(), "--qrels", str(human), "--holes-only")) == 2
    assert capsys.readouterr().err.startswith(
        f"harness judge: error: --qrels {human} judges none of the runs' {QUERIES} queries; is it the qrels of "
        "--topics ikat2024, the benchmark the runs answer? (--holes-only leaves nothing to judge)")
    assert not out.exists()


def test_holes_only_without_qrels_is_an_error(pool, tmp_path, capsys):
    assert main(file_judge_args(pool, tmp_path / "x.qrels", pool_file(), "--holes-only")) == 2
    assert capsys.readouterr().err.startswith("harness judge: error: --holes-only needs --qrels")


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_filling_labels_of_another_scale_than_the_human_grades_is_a_warning_naming_both(pool, tmp_path, capsys,
                                                                                        command):
    """GPT-4's pool labels made yes-no (grade >= 2: yes) fill iKAT's 0-4 qrels: a 'yes' (1) would
    score as iKAT's grade 1, below every rel=2 measure. The sidecar says the scale, so eval and
    compare --fill warn, naming both; the labels on iKAT's own scale draw no warning."""
    yes_no = tmp_path / "yes-no.txt"
    yes_no.write_text("".join(f"{q} 0 {d} {int(g >= 2)}\n" for (q, d), g in pool["labels"].items()))
    fills = {}
    for scale, labels in (("yes-no", yes_no), ("relevance-0-4", pool_file())):
        fills[scale] = tmp_path / f"{scale}.qrels"
        assert main(["judge", str(pool["run"]), "--topics", "ikat2024", "--qrels", str(nist_2024()), "--judge", "file",
                     "--labels", str(labels), "--scale", scale, "--output", str(fills[scale])]) == 0
    capsys.readouterr()
    argv = [command, "--qrels", str(nist_2024()), str(pool["run"]), "--measures", "P(rel=2)@10", "--fill"]
    assert main([*argv, str(fills["yes-no"])]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: {fills['yes-no']}: its provenance sidecar puts its labels on the scale yes-no "
                        f"(0 to 1), but the top grade of {nist_2024()} is 4: each filled label is scored as the "
                        "human grade of the same number, mixing the two scales; judge with --scale relevance-0-4"]
    assert main([*argv, str(fills["relevance-0-4"])]) == 0
    assert "warning: " not in capsys.readouterr().err


def test_the_file_judge_answers_from_recorded_labels(pool, tmp_path):
    out = tmp_path / "file.qrels"
    assert main(["judge", str(pool["run"]), "--topics", "ikat2024", "--depth", str(DEPTH),
                 "--judge", "file", "--labels", str(pool_file()), "--output", str(out)]) == 0
    assert written(out) == pool["labels"]
    record = read_provenance(out)
    assert record["judge"] == "file" and record["labels"] == str(pool_file())


def test_the_file_judge_needs_no_passage_text_even_where_the_benchmark_brings_a_corpus(tmp_path):
    """ikat2023 brings its 700 provenance passages; a run of ClueWeb22 passages outside them
    is answered from the recorded labels all the same (no corpus is read)."""
    from harness.paths import qrels_root

    labels = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    qid, judged = next(iter(read_qrels(labels).judgments.items()))
    run, out = tmp_path / "mine.run", tmp_path / "file.qrels"
    run.write_text("".join(f"{qid} Q0 {docid} {rank} {-rank} mine\n" for rank, docid in enumerate(judged, 1)))
    assert main(["judge", str(run), "--topics", "ikat2023", "--depth", str(len(judged)), "--judge", "file",
                 "--labels", str(labels), "--output", str(out)]) == 0
    assert written(out) == {(qid, docid): grade for docid, grade in judged.items()}
    assert read_provenance(out)["inputs"]["corpus"] is None


def test_a_recorded_label_off_the_judges_scale_is_an_error_naming_the_file_line_grade_and_scale(tmp_path, capsys):
    """Recorded labels are the user's input: iKAT 2023's 0-4 grades read on the yes-no scale
    stop at the first grade above 1, with no qrels written (not 'N unparseable' and 0 labels)."""
    from harness.paths import qrels_root

    labels = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    line, grade = next((number, fields[3]) for number, fields in
                       enumerate((text.split() for text in labels.read_text().splitlines()), 1) if int(fields[3]) > 1)
    qid, judged = next(iter(read_qrels(labels).judgments.items()))
    run, out = tmp_path / "mine.run", tmp_path / "file.qrels"
    run.write_text("".join(f"{qid} Q0 {docid} {rank} {-rank} mine\n" for rank, docid in enumerate(judged, 1)))
    assert main(["judge", str(run), "--topics", "ikat2023", "--judge", "file", "--labels", str(labels),
                 "--scale", "yes-no", "--output", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"harness judge: error: {labels}:{line}: grade {grade} is outside "
                                              "yes-no (0 to 1)")
    assert not out.exists() and not sidecar(out).exists()


def test_the_file_judge_keeps_the_scale_its_labels_sidecar_records_and_refuses_another(tmp_path, capsys):
    """A judge's yes-no labels re-filed without --scale were written under relevance-0-4, and
    `eval --fill`'s warning on mixing scales never fired for them; --scale other than the
    recorded one is an error naming both, with nothing written."""
    from harness.judge.base import write_qrels
    from harness.judge.model import Judgment

    labels, run = tmp_path / "yn.qrels", tmp_path / "mine.run"
    write_qrels(labels, [Judgment(("0_1", "d1"), 1, "ok", "1", False), Judgment(("0_1", "d2"), 0, "ok", "0", False)],
                {"judge": "llm", "model": "m", "scale": "yes-no"})
    run.write_text("0_1 Q0 d1 1 2.0 mine\n0_1 Q0 d2 2 1.0 mine\n")
    args = ["judge", str(run), "--topics", "ikat2024", "--judge", "file", "--labels", str(labels)]
    assert main([*args, "--output", str(tmp_path / "again.qrels")]) == 0
    assert read_provenance(tmp_path / "again.qrels")["scale"] == "yes-no"
    capsys.readouterr()
    out = tmp_path / "other.qrels"
    assert main([*args, "--scale", "relevance-0-4", "--output", str(out)]) == 2
    assert capsys.readouterr().err == (f"harness judge: error: {labels}: its provenance sidecar records its labels on "
                                       "the scale yes-no (0 to 1), not relevance-0-4 (0 to 4): give the scale yes-no, "
                                       "the one they were made on (the file judge's `scale`; on the command line "
                                       "--scale yes-no, or no --scale)\n")
    assert not out.exists() and not sidecar(out).exists()
    with pytest.raises(InputError, match=r"give the scale yes-no, the one they were made on \(the file judge's `sc"):
        JUDGES.get("file")(labels, RELEVANCE_0_4)  # the Python API: told its parameter, not only a flag


def test_an_llm_option_given_with_another_judge_is_an_error_naming_it(tmp_path, capsys, monkeypatch):
    """It was silently ignored; an llm option left at its environment default is no option given."""
    monkeypatch.setenv("HARNESS_LLM_MODEL", "m")
    from harness.paths import qrels_root

    labels = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    qid, judged = next(iter(read_qrels(labels).judgments.items()))
    run = tmp_path / "mine.run"
    run.write_text(f"{qid} Q0 {next(iter(judged))} 1 1.0 mine\n")
    args = ["judge", str(run), "--topics", "ikat2023", "--judge", "file", "--labels", str(labels)]
    assert main([*args, "--timeout", "3", "--output", str(tmp_path / "a.qrels")]) == 2
    assert capsys.readouterr().err.startswith("harness judge: error: --timeout is an option of --judge llm, "
                                              "not of --judge file")
    assert main([*args, "--output", str(tmp_path / "b.qrels")]) == 0


def test_labels_given_with_another_judge_is_an_error_naming_both_before_anything_is_sent(tmp_path, capsys,
                                                                                          monkeypatch):
    """The mirror of the llm options' rule: --labels without --judge file got 'the llm judge needs
    --model', and with HARNESS_LLM_* set every pair went to the model, the labels unread."""
    monkeypatch.setenv("HARNESS_LLM_MODEL", "m")
    monkeypatch.setenv("HARNESS_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: nothing may be sent
    from harness.paths import qrels_root

    labels = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    qid, judged = next(iter(read_qrels(labels).judgments.items()))
    run, out = tmp_path / "mine.run", tmp_path / "x.qrels"
    run.write_text(f"{qid} Q0 {next(iter(judged))} 1 1.0 mine\n")
    assert main(["judge", str(run), "--topics", "ikat2023", "--labels", str(labels), "--output", str(out)]) == 2
    assert capsys.readouterr().err.startswith("harness judge: error: --labels is an option of --judge file, "
                                              "not of --judge llm: give --judge file to answer from the recorded "
                                              "labels")
    assert not out.exists()

# -- eval / compare --fill -----------------------------------------------------------------


def test_eval_output_with_filled_labels_says_who_made_them_in_a_table_and_json(tmp_path, capsys):
    """Not only on stderr: a saved `harness eval --fill` table or JSON names the fill."""
    human, fill = tmp_path / "human.qrels", tmp_path / "fill.qrels"
    human.write_text("1 0 a 1\n1 0 b 0\n")
    fill.write_text("1 0 c 2\n")
    run = tmp_path / "sys.run"
    run.write_text("1 Q0 a 1 3 s\n1 Q0 c 2 2 s\n")
    for fmt in ("table", "json"):
        assert main(["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--fill", str(fill),
                     "--format", fmt]) == 0
        out = capsys.readouterr().out
        notes = json.loads(out)["notes"] if fmt == "json" else [line[2:] for line in out.splitlines() if line[:2] == "# "]
        assert notes[0].startswith("holes filled from") and "no provenance sidecar" in notes[1], fmt
        assert notes[2] == "sys: Judged@10 0.5000 with the human labels, 1.0000 with the holes filled", fmt


def test_eval_fill_csv_is_a_csv_pandas_reads_with_its_notes_on_stderr(tmp_path, capsys, monkeypatch):
    """`eval --fill --format csv > scores.csv` is the CSV it is without --fill (a '#' note line
    above the header broke csv readers and pandas); the notes are `note:` lines on stderr, on a
    terminal too, where the CSV does not show them."""
    import pandas

    human, fill, run = tmp_path / "human.qrels", tmp_path / "fill.qrels", tmp_path / "sys.run"
    human.write_text("1 0 a 1\n1 0 b 0\n")
    fill.write_text("1 0 c 2\n")
    run.write_text("1 Q0 a 1 3 s\n1 Q0 c 2 2 s\n")
    args = ["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--format", "csv"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--fill", str(fill)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "run,qid,P@2" and "#" not in captured.out
    (tmp_path / "scores.csv").write_text(captured.out)
    assert pandas.read_csv(tmp_path / "scores.csv").to_dict("records") == [{"run": "sys", "qid": "all", "P@2": 1.0}]
    notes = [line[6:] for line in captured.err.splitlines() if line.startswith("note: ")]
    assert notes[0].startswith("holes filled from") and notes[2].startswith("sys: Judged@10") and plain != captured.out
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert main([*args, "--fill", str(fill)]) == 0
    assert [line[6:] for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")] == notes


def test_eval_fill_notes_are_said_once_on_a_terminal_and_on_stderr_too_for_a_file_or_pipe(tmp_path, capsys,
                                                                                          monkeypatch):
    """On a terminal the output's '#' lines are on the screen: stderr's 'note:' lines were the same
    notes again; an output going to a file or a pipe is not seen, so stderr says them."""
    human, fill, run = tmp_path / "human.qrels", tmp_path / "fill.qrels", tmp_path / "sys.run"
    human.write_text("1 0 a 1\n1 0 b 0\n")
    fill.write_text("1 0 c 2\n")
    run.write_text("1 Q0 a 1 3 s\n1 Q0 c 2 2 s\n")
    args = ["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--fill", str(fill)]
    assert main(args) == 0
    piped = capsys.readouterr()
    notes = [line[2:] for line in piped.out.splitlines() if line.startswith("# ")]
    assert len(notes) == 5 and [line[6:] for line in piped.err.splitlines() if line.startswith("note: ")] == notes
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert main(args) == 0
    assert [line[2:] for line in sys.stdout.getvalue().splitlines() if line.startswith("# ")] == notes
    assert "note: " not in capsys.readouterr().err


def test_the_fill_notes_judged_is_evals_judged_at_10_ir_measures_own(tmp_path, capsys):
    """The note's Judged@10 is what `--measures Judged@10` gives with the human labels and with the
    holes filled: ir-measures' Judged@10, under which a query the run lacks counts 0. On a run
    answering 6 of the 158 CAsT 2021 queries it is low however well those 6 are judged (1 - unj@10
    read 0.9956 there: a query the run lacks counted as judged)."""
    import ir_measures

    from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

    human, source = read_qrels(CAST2021_QRELS).judgments, read_run(CAST2021_DOC_RUNS[0]).scores
    top = {qid: list(source[qid].items())[:10] for qid in list(source)[:6]}
    run, fill = tmp_path / "six.run", tmp_path / "fill.qrels"
    run.write_text("".join(f"{q} Q0 {d} {r} {s} six\n" for q, docs in top.items() for r, (d, s) in enumerate(docs, 1)))
    fill.write_text("".join(f"{q} 0 {d} 1\n" for q, docs in top.items() for d, _ in docs if d not in human[q]))
    judged = []
    for extra in ([], ["--fill", str(fill)]):
        assert main(["eval", "--qrels", str(CAST2021_QRELS), str(run), "--measures", "Judged@10", *extra,
                     "--format", "json"]) == 0
        judged.append(json.loads(capsys.readouterr().out))
    before, after = judged[0]["six"]["Judged@10"], judged[1]["six"]["Judged@10"]
    assert judged[1]["notes"][2] == (f"six: Judged@10 {before:.4f} with the human labels, {after:.4f} with the holes "
                                     "filled")
    measure = ir_measures.Judged @ 10
    theirs = ir_measures.calc_aggregate([measure], [ir_measures.Qrel(q, d, g) for q, docs in human.items()
                                                    for d, g in docs.items()],
                                        [ir_measures.ScoredDoc(q, d, s) for q, docs in top.items() for d, s in docs])
    assert before == pytest.approx(theirs[measure]) and f"{before:.4f}" == "0.0335" and after == pytest.approx(6 / 158)


def test_fill_scores_human_labels_first_and_reports_judged_before_and_after(pool, tmp_path, capsys):
    with start_llm_server(tmp_path, pool["config"]) as server:
        out = tmp_path / "holes.qrels"
        assert main(judge_args(pool, server, out, "--qrels", str(nist_2024()), depth=SHALLOW)) == 0
    capsys.readouterr()
    assert main(["eval", "--qrels", str(nist_2024()), str(pool["run"]), "--measures", "nDCG@10", "--fill", str(out),
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    filled = json.loads(captured.out)["pool"]["nDCG@10"]
    assert "judge llm, model gpt-4-as-recorded" in captured.err
    assert any("judge llm, model gpt-4-as-recorded" in note for note in json.loads(captured.out)["notes"])
    note = captured.err.split("pool: Judged@10 ")[1].split(" with the holes")[0]
    before, after = (float(x) for x in note.split(" with the human labels, "))
    nist = read_qrels(nist_2024()).judgments
    answered = set(read_run(pool["run"]).scores) & set(nist)  # each top 10 all judged once filled; the rest 0
    assert before < after and f"{after:.4f}" == f"{len(answered) / len(nist):.4f}"
    # the same as scoring a qrels file that merges the two by hand, human labels first
    merged = tmp_path / "merged.qrels"
    lines = [f"{q} 0 {d} {g}\n" for q, docs in nist.items() for d, g in docs.items()]
    lines += [f"{q} 0 {d} {g}\n" for (q, d), g in written(out).items() if q in nist]
    merged.write_text("".join(lines))
    assert main(["eval", "--qrels", str(merged), str(pool["run"]), "--measures", "nDCG@10", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pool"]["nDCG@10"] == filled
    report = tmp_path / "report.md"
    assert main(["compare", "--qrels", str(nist_2024()), str(pool["run"]), "--measures", "nDCG@10", "--fill", str(out),
                 "--format", "md", "--output", str(report)]) == 0
    text = report.read_text()
    assert "holes filled from holes.qrels" in text and "judge llm, model gpt-4-as-recorded" in text
    assert "Judged@10 human" in text and "Judged@10 filled" in text
