"""`harness topics list` and `harness topics export`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.paths import data_root
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, child_env, interruptible


@pytest.mark.slow
def test_list_shows_every_benchmark_with_its_counts(capsys):
    assert main(["topics", "list"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["ikat2023"] == ["25", "332", "176"]
    assert rows["cast2022"] == ["50", "205", "165"]  # distinct turns of the flattened paths
    assert rows["cosrec-curated"] == ["20", "368", "268"]
    assert {"cast2019", "cast2020", "cast2021", "ikat2024", "ikat2025", "pragmaticqa", "opendialkg",
            "cosrec-crowd"} <= rows.keys()


def test_export_jsonl(tmp_path):
    out = tmp_path / "queries.jsonl"
    assert main(["topics", "export", "cast2019", "--strategy", "manual", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 479
    assert lines[1]["qid"] == "31_2" and lines[1]["query"] == "Is throat cancer treatable?"
    assert lines[1]["conversation_id"] == "31" and lines[1]["turn_index"] == 1


def test_export_tsv_with_split_and_each_qid_once(tmp_path):
    out = tmp_path / "queries.tsv"
    assert main(["topics", "export", "cast2022", "--strategy", "all_history", "--format", "tsv",
                 "--out", str(out)]) == 0
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({qid for qid, _ in rows}) == 205
    assert all(len(row) == 2 for row in rows)


def test_unknown_benchmark_and_missing_rewrites_are_one_line_errors(capsys, tmp_path):
    assert main(["topics", "export", "nope"]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    out = tmp_path / "never.jsonl"
    assert main(["topics", "export", "cast2019:train", "--strategy", "manual", "--out", str(out)]) == 2
    assert "turn 3_1 has no manual rewrite" in capsys.readouterr().err
    assert not out.exists()  # atomic: nothing half-written


def test_a_misspelt_benchmark_is_called_a_benchmark_with_the_nearest_name(capsys):
    assert main(["topics", "export", "ikat224"]) == 2
    assert "unknown benchmark 'ikat224'; nearest: ikat2024; known: cast2019," in capsys.readouterr().err


def test_a_strategy_reading_ptkb_statements_on_topics_without_any_is_an_error_as_variant_is(capsys, tmp_path):
    """Not the raw stream under another name: cast2019 has no PTKB, as it has no query variants."""
    assert main(["topics", "export", "cast2019", "--strategy", "variant"]) == 2
    assert "variant needs query variants" in capsys.readouterr().err
    assert main(["topics", "export", "cast2019", "--strategy", "ptkb_topk"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("harness topics export: error: ptkb_topk needs PTKB statements, and no conversation of these "
                            "topics has any (iKAT and CoSRec benchmarks have them)\n")


def test_a_strategy_error_found_at_the_end_of_the_stream_leaves_stdout_empty_as_it_leaves_output(capsys, tmp_path):
    rewrites = tmp_path / "rewrites.tsv"
    rewrites.write_text("31_1\tWhat is throat cancer?\n", encoding="utf-8")  # the first turn only
    assert main(["topics", "export", "cast2019", "--strategy", f"rewrites:{rewrites}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"{rewrites}: no rewrite for turn 31_2" in captured.err


def test_export_context_is_the_texts_the_strategy_used_not_the_history(capsys):
    """raw and manual make the query from the turn alone, so their `context` is that turn's
    text; all_history's lists the earlier utterances too. `--help` says so."""
    def third_turn(strategy: str) -> dict:
        assert main(["topics", "export", "ikat2023", "--strategy", strategy]) == 0
        return json.loads(capsys.readouterr().out.splitlines()[2])

    raw, history = third_turn("raw"), third_turn("all_history")
    assert raw["context"] == [raw["query"]] and raw["turn_index"] == 2
    assert len(history["context"]) == 3 and history["context"][-1] == raw["query"]
    with pytest.raises(SystemExit):
        main(["topics", "export", "--help"])
    assert "not the conversation history" in " ".join(capsys.readouterr().out.split())


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`harness ... | head`: the rest of the output goes nowhere, exit 0, no BrokenPipeError
    traceback (every command: main says it once)."""
    for command in (["topics", "export", "cast2022", "--strategy", "all_history"],  # 117 KB
                    ["eval", "--qrels", CAST2021_QRELS, *map(str, CAST2021_DOC_RUNS), "--per-query", "--format", "json",
                     "--measures", "P@5", "P@10", "P@20", "nDCG@3", "nDCG@5", "nDCG@10", "AP", "RR", "R@1000"]):  # 200 KB
        child = subprocess.Popen([sys.executable, "-m", "harness.cli", *command], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=child_env())
        assert child.stdout.readline()
        child.stdout.close()  # as head does, with most of the output still to come
        assert child.wait(timeout=120) == 0, command
        assert b"Traceback" not in child.stderr.read()


def test_a_reader_that_stops_early_leaves_ikat_validate_s_verdict_standing(tmp_path):
    """`harness ikat validate RUN | head` on an invalid run: its summary on stderr and exit 1,
    as without the pipe (a closed pipe ended it with 0 and no verdict, at random)."""
    submission = json.loads((data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data"
                             / "sample_run.json").read_text(encoding="utf-8"))
    for turn in submission["turns"]:  # 36,000 findings, 3.7 MB: far more than a pipe holds
        for response in turn["responses"]:
            response["passage_provenance"] = [{"id": f"not a passage {i}", "text": "x", "score": 1.0, "used": True}
                                              for i in range(1000)]
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps(submission), encoding="utf-8")
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-m", "harness.cli", "ikat", "validate", str(invalid), "--topics",
                                  "ikat2023", "--partial"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=child_env())
        assert child.stdout.readline()
        child.stdout.close()  # as head does, with most of the findings still to come
        assert child.wait(timeout=120) == 1
        err = child.stderr.read()
        assert b"INVALID" in err and b"Traceback" not in err


def test_a_ctrl_c_while_the_program_tears_down_leaves_its_exit_status():
    """A Ctrl-C once the command has returned (in the interpreter's teardown, which lasts
    seconds after a Ray run) keeps the status said, 0 here: it ended the process by the
    signal, though the output was written."""
    program = ("import os, signal, sys\nfrom harness.cli import main\n"
               "class Teardown:\n    def __del__(self):\n        os.kill(os.getpid(), signal.SIGINT)\n"
               "torn_down_last = Teardown()\nsys.exit(main())")
    done = subprocess.run([sys.executable, "-c", program, "topics", "list"], capture_output=True, env=child_env(),
                          preexec_fn=interruptible, timeout=120)
    assert done.returncode == 0 and done.stdout and b"Traceback" not in done.stderr, done.stderr[-2000:]


def test_a_topics_file_given_for_a_benchmark_is_an_error_saying_how_to_give_ones_own_queries(tmp_path, capsys):
    """`harness judge --topics FILE` said only 'unknown benchmark', and nothing said how to judge
    an ad hoc run (TREC RAG's) at all."""
    (tmp_path / "rag.topics.tsv").write_text("2024-105741\twhat is the role of a jury\n")
    (tmp_path / "rag.run").write_text("2024-105741 Q0 doc1 1 3.0 r\n")
    (tmp_path / "labels.qrels").write_text("2024-105741 0 doc1 3\n")
    assert main(["judge", str(tmp_path / "rag.run"), "--topics", str(tmp_path / "rag.topics.tsv"), "--judge", "file",
                 "--labels", str(tmp_path / "labels.qrels"), "--output", str(tmp_path / "out.qrels")]) == 2
    assert capsys.readouterr().err == (
        f"harness judge: error: {tmp_path / 'rag.topics.tsv'}: topics are a benchmark name (`harness topics list`), "
        "not a file: give your own queries as a benchmark plug-in, python:MODULE:ATTR, a function returning a "
        "harness.topics.Benchmark of them (README: Your own topics)\n")


def test_the_readmes_topics_plug_in_lets_harness_judge_label_an_ad_hoc_run(tmp_path, monkeypatch, capsys):
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    code = readme.split("```python\n# mytopics.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mytopics.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    topics = tmp_path / "rag.topics.tsv"
    topics.write_text("2024-105741\twhat is the role of a jury\n2024-145979\twhat is a bowline\n")
    (tmp_path / "rag.run").write_text("2024-105741 Q0 doc1 1 3.0 r\n2024-145979 Q0 doc2 1 2.0 r\n")
    (tmp_path / "labels.qrels").write_text("2024-105741 0 doc1 3\n2024-145979 0 doc2 0\n")
    assert main(["judge", str(tmp_path / "rag.run"), "--topics", f"python:mytopics:tsv:{topics}", "--judge", "file",
                 "--labels", str(tmp_path / "labels.qrels"), "--scale", "relevance-0-3",
                 "--output", str(tmp_path / "out.qrels")]) == 0
    assert (tmp_path / "out.qrels").read_text() == "2024-105741 0 doc1 3\n2024-145979 0 doc2 0\n"
