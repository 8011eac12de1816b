"""`harness ikat from-trec` on a run whose passages lie outside the shipped iKAT 2023 test pool
(the train split's provenance passages, real ClueWeb22 passages the test pool lacks): their
texts come from every split's shipped pool by default, or from any corpus the harness reads
(--passages: a corpus spec, a passages file, a Lucene index with stored documents); the
passage the response is made from is `used`; the size of the file to upload is said."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import harness
from harness.cli import main
from harness.corpus.readers import open_corpus
from harness.paths import qrels_root
from harness.trec import Qrels, read_qrels, read_run, write_run
from tests.conftest import saturated_ikat2024_run

TRAIN_POOL = "benchmark:ikat2023:train"


@pytest.fixture(scope="module")
def outside():
    """Three train-pool passages, none in the test pool, with their texts."""
    return {d.id: d.contents for d in islice(open_corpus(TRAIN_POOL).documents(), 3)}


@pytest.fixture(scope="module")
def run_file(tmp_path_factory, outside):
    """Turn 9-1_1 ranks a passage no source has, then the three outside passages."""
    path = tmp_path_factory.mktemp("from-trec") / "outside.run"
    write_run(path, [("9-1_1", [("clueweb22-en0000-00-00000:0", 9.0), *[(pid, 5.0 - i) for i, pid in enumerate(outside)]])],
              "outside")
    return path


def from_trec(tmp_path, run_file, *options: str) -> dict:
    out = tmp_path / "submission.json"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2023", "--run-name", "x",
                 "--output", str(out), *options]) == 0
    (turn,) = [t for t in json.loads(out.read_text())["turns"] if t["turn_id"] == "9-1_1"]
    return turn["responses"][0]


def test_without_passages_texts_come_from_every_split_s_shipped_pool_and_the_missing_are_counted(
        tmp_path, run_file, outside, capsys):
    """The default config searches both iKAT 2023 pools, so from-trec reads both."""
    response = from_trec(tmp_path, run_file)
    assert [p["text"] for p in response["passage_provenance"]] == ["", *outside.values()]
    err = capsys.readouterr().err
    assert ("warning: 1 of 4 passages has no text in the passages ikat2023 ships "
            "(ikat2023:test-provenance, ikat2023:train-provenance)") in err
    assert "give --passages the collection the run retrieved from" in err


def test_passage_texts_come_from_a_corpus_spec(tmp_path, run_file, outside, capsys):
    response = from_trec(tmp_path, run_file, "--passages", TRAIN_POOL)
    texts = {p["id"]: p["text"] for p in response["passage_provenance"]}
    assert {pid: texts[pid] for pid in outside} == outside
    assert "warning: 1 of 4 passages has no text in benchmark:ikat2023:train" in capsys.readouterr().err


def test_passage_texts_come_from_several_corpus_specs_searched_in_order(tmp_path, run_file, outside, capsys):
    """As a config's corpus: list: the first spec holding a passage gives its text."""
    passages = tmp_path / "passages.jsonl"  # the last outside passage, under another text: the pool's comes first
    last = list(outside)[-1]
    passages.write_text(json.dumps({"id": last, "contents": "a later text"}) + "\n"
                        + json.dumps({"id": "clueweb22-en0000-00-00000:0", "contents": "only here"}) + "\n")
    response = from_trec(tmp_path, run_file, "--passages", "benchmark:ikat2023", TRAIN_POOL, str(passages))
    assert [p["text"] for p in response["passage_provenance"]] == ["only here", *outside.values()]
    assert "no text in" not in capsys.readouterr().err  # every passage's text found


def test_passage_texts_come_from_a_passages_file(tmp_path, run_file, outside):
    passages = tmp_path / "passages.jsonl"
    passages.write_text("".join(json.dumps({"id": pid, "contents": text}) + "\n" for pid, text in outside.items()))
    response = from_trec(tmp_path, run_file, "--passages", str(passages))
    assert {p["id"]: p["text"] for p in response["passage_provenance"][1:]} == outside


def test_passage_texts_come_from_the_shipped_passages_file_of_a_pool(tmp_path, run_file, outside):
    """The pool file's doc_id + passage_id + passage_text was refused: 'expected an id field'."""
    from harness.paths import data_root

    pool = data_root() / "ikat" / "2023" / "data" / "2023_train_topics_psg_text.jsonl"
    response = from_trec(tmp_path, run_file, "--passages", str(pool))
    assert {p["id"]: p["text"] for p in response["passage_provenance"][1:]} == outside


def test_an_empty_passages_file_is_an_error_naming_it_not_empty_texts(tmp_path, run_file, capsys):
    passages = tmp_path / "passages.jsonl"
    passages.write_text("\n")
    out = tmp_path / "submission.json"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2023", "--run-name", "x",
                 "--output", str(out), "--passages", str(passages)]) == 2
    assert capsys.readouterr().err.endswith(f"\nharness ikat from-trec: error: {passages}: holds no document: nothing to read\n")
    assert not out.exists()


def test_the_passage_the_response_is_made_from_is_used(tmp_path, run_file, outside):
    response = from_trec(tmp_path, run_file, "--passages", TRAIN_POOL)
    first_with_text = next(iter(outside))
    assert response["text"] == " ".join(outside[first_with_text].split())
    assert [(p["id"], p["used"]) for p in response["passage_provenance"]] == [
        ("clueweb22-en0000-00-00000:0", False), *[(pid, pid == first_with_text) for pid in outside]]


def test_the_size_of_the_upload_is_said_against_the_hosted_limit(tmp_path, run_file, capsys, monkeypatch):
    from harness.ikat import cli
    from harness.serve.config import DEFAULT_MAX_UPLOAD_MB

    assert cli.DEFAULT_MAX_UPLOAD_MB == DEFAULT_MAX_UPLOAD_MB
    from_trec(tmp_path, run_file)
    size = (tmp_path / "submission.json").stat().st_size
    assert f"submission.json: {size / 2**20:.1f} MiB to upload" in capsys.readouterr().err
    monkeypatch.setattr(cli, "DEFAULT_MAX_UPLOAD_MB", 0)  # every file is over it
    from_trec(tmp_path, run_file, "--depth", "500")
    assert "MiB to upload, over the 0 MiB a hosted harness leaderboard takes by default (max_upload_mb): " \
           "about --depth 1 would fit" in capsys.readouterr().err


@pytest.mark.java
@pytest.mark.slow
def test_passage_texts_come_from_a_lucene_index_with_stored_documents(tmp_path, run_file, outside, ikat_cache):
    from harness.corpus import Corpus, Document
    from harness.retrieve.lucene import build_index

    documents = [Document(pid, text) for pid, text in outside.items()]
    index = build_index(Corpus("outside", lambda: iter(documents), known_fingerprint="outside"), tmp_path / "index")
    response = from_trec(tmp_path, run_file, "--passages", str(index))
    assert {p["id"]: p["text"] for p in response["passage_provenance"][1:]} == outside


def _from_trec_error(tmp_path, run_file, ptkb_run, capsys) -> str:
    out = tmp_path / "submission.json"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2023", "--run-name", "x",
                 "--output", str(out), "--ptkb-run", str(ptkb_run)]) == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_a_ptkb_run_that_answers_no_turn_is_the_error_a_passage_run_gets(tmp_path, run_file, capsys):
    from tests.conftest import CAST2021_DOC_RUNS  # a CAsT run: not one of its queries is an iKAT turn

    assert (f"harness ikat from-trec: error: {CAST2021_DOC_RUNS[0]}: none of its"
            in _from_trec_error(tmp_path, run_file, CAST2021_DOC_RUNS[0], capsys))


def test_a_ptkb_run_ranking_a_statement_the_turns_ptkb_lacks_is_an_error_naming_its_line(tmp_path, run_file, capsys):
    ptkb_run = tmp_path / "ptkb.run"
    ptkb_run.write_text("9-1_1 Q0 1 1 2 x\n9-1_1 Q0 nosuch 2 1 x\n")
    assert _from_trec_error(tmp_path, run_file, ptkb_run, capsys).endswith(
        f"harness ikat from-trec: error: {ptkb_run}:2: turn 9-1_1: 'nosuch' is not a statement of its PTKB "
        "(its statement ids: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)\n")


def test_the_2025_format_without_a_team_id_is_refused_before_anything_is_read(tmp_path, run_file, capsys):
    out = tmp_path / "submission.jsonl"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2025", "--run-name", "x",
                 "--output", str(out)]) == 2
    assert not out.exists()
    assert capsys.readouterr().err == ("harness ikat from-trec: error: --year 2025: the format's metadata names the team: "
                                       "give --team-id (`harness ikat from-trec --help` lists the options)\n")


def test_the_format_year_defaults_to_the_benchmark_s(tmp_path, run_file, capsys):
    out = tmp_path / "submission.json"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--run-name", "x",
                 "--output", str(out)]) == 0
    assert f"{out}: 332 turns (iKAT 2023 format)" in capsys.readouterr().err


def test_responses_written_without_text_are_counted(tmp_path, run_file, capsys):
    """A response's text is its best passage's: where no passage has one (a corpus lacking the
    run's passages) the answer is empty, which a response task scores 0; said with its count."""
    out = tmp_path / "submission.json"
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"id": "no-run-ranks-it:0", "contents": "elsewhere"}) + "\n")
    for passages in (["--passages", str(empty)], []):  # none of its passages' texts; the shipped pools' texts
        assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--run-name", "x",
                     *passages, "--output", str(out)]) == 0
        texts = [turn["responses"][0]["text"] for turn in json.loads(out.read_text())["turns"]]
        assert (f"note: {sum(not text for text in texts)} of {len(texts)} responses have no text (its passages have "
                "none): write the answers into it before submitting to a response task, where an empty answer "
                "scores 0") in capsys.readouterr().err
    assert 0 < sum(not text for text in texts) < len(texts)


def test_a_year_other_than_the_benchmark_s_is_written_with_a_warning_naming_both_years(tmp_path, run_file, capsys):
    """An iKAT 2023 run in the 2024 format: the 2024 validator refuses every 2023 turn id ('9-1_1':
    its topic is no number), so the warning says so and how to write the 2023 format instead."""
    out = tmp_path / "submission.json"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2024", "--run-name", "x",
                 "--output", str(out)]) == 0
    assert out.exists()
    assert ("warning: --year 2024 writes ikat2023's turns (iKAT 2023) in the iKAT 2024 format, which the iKAT 2023 "
            "validator does not take, nor the iKAT 2024 validator the turn ids of 332 of its 332 turns (turn id "
            "'9-1_1' is not '<topic>_<turn number>'): leave --year out to write the 2023 format\n"
            ) in capsys.readouterr().err
    assert main(["ikat", "validate", str(out), "--topics", "ikat2023", "--year", "2024", "--quiet"]) == 1
    assert "332 x error turn-id-format" in capsys.readouterr().err


def test_a_year_whose_validator_takes_the_turn_ids_is_written_with_where_to_check_it(tmp_path, run_file, capsys):
    """Written, not refused: the iKAT 2023 track does not take the 2025 format, but a harness leaderboard whose
    task names ikat-2025-jsonl for the 2023 topics does; `validate` without --year says the track's verdict."""
    out = tmp_path / "submission.jsonl"
    assert main(["ikat", "from-trec", str(run_file), "--benchmark", "ikat2023", "--year", "2025", "--team-id", "t",
                 "--run-name", "x", "--output", str(out)]) == 0
    assert ("warning: --year 2025 writes ikat2023's turns (iKAT 2023) in the iKAT 2025 format, which the iKAT 2023 "
            f"validator does not take (a harness leaderboard may: `harness ikat validate {out} --topics ikat2023 "
            "--year 2025` checks it): leave --year out to write the 2023 format\n") in capsys.readouterr().err
    assert main(["ikat", "validate", str(out), "--topics", "ikat2023", "--quiet"]) == 1
    assert "1 x error format-year" in capsys.readouterr().err
    main(["ikat", "validate", str(out), "--topics", "ikat2023", "--year", "2025", "--partial", "--quiet"])
    assert "format-year" not in capsys.readouterr().err


def test_counts_of_one_take_the_singular(tmp_path, capsys):
    """A run answering every iKAT 2023 test turn but the first, each with one passage no pool has."""
    from harness.topics import load
    from harness.trec import write_run

    turns = [t.qid for c in load("ikat2023").conversations for t in c.turns]
    run = tmp_path / "all_but_one.run"
    write_run(run, [(qid, [("clueweb22-en0000-00-00000:0", 1.0)]) for qid in turns[1:]], "r")
    ptkb = tmp_path / "ptkb.run"
    ptkb.write_text(f"{turns[1]} Q0 1 1 2 x\n")
    assert main(["ikat", "from-trec", str(run), "--benchmark", "ikat2023", "--run-name", "x", "--ptkb-run", str(ptkb),
                 "--depth", "1", "--output", str(tmp_path / "submission.json")]) == 0
    err = capsys.readouterr().err
    assert f"{run}: 1 of 332 turns of ikat2023 has no passages in the run (written with none)" in err
    assert f"{ptkb}: 331 of 332 turns of ikat2023 have no PTKB statements in the run" in err


def test_the_depth_said_to_fit_the_hosted_limit_fits_when_turns_rank_fewer_passages(tmp_path, capsys, monkeypatch):
    """The depth was scaled from the file's size as if every turn ranked --depth passages: on the
    tour's manual.bm25 run (618 passages a turn at depth 1000) it said 211, whose file is 95.9 MiB."""
    import re

    from harness.ikat import cli
    from harness.topics import load

    pool = [d.id for d in open_corpus("benchmark:ikat2023:test").documents()]
    turns = [t.qid for c in load("ikat2023").conversations for t in c.turns]
    run = tmp_path / "uneven.run"  # the first turn ranks the whole pool, the others 1 to 50 passages
    write_run(run, [(qid, [(pid, 1000.0 - r) for r, pid in enumerate(pool[:len(pool) if i == 0 else i % 50 + 1])])
                    for i, qid in enumerate(turns)], "uneven")
    monkeypatch.setattr(cli, "DEFAULT_MAX_UPLOAD_MB", 4)
    out = tmp_path / "submission.json"
    argv = ["ikat", "from-trec", str(run), "--benchmark", "ikat2023", "--run-name", "x", "--output", str(out)]
    assert main(argv) == 0
    depth = int(re.search(r"about --depth (\d+) would fit", capsys.readouterr().err)[1])
    assert main([*argv, "--depth", str(depth)]) == 0
    assert out.stat().st_size <= 4 << 20 and "would fit" not in capsys.readouterr().err


# --- run scores the format cannot tell apart ----------------------------------------------

SATURATED_MEASURES = ["nDCG@5", "nDCG@10", "RR(rel=2)", "P@5", "AP"]


@pytest.fixture(scope="module")
def saturated(tmp_path_factory):
    return saturated_ikat2024_run(tmp_path_factory.mktemp("saturated") / "saturated.run")


def saturated_submission(tmp_path, saturated, year: int) -> Path:
    out = tmp_path / f"submission{year}.json{'l' if year == 2025 else ''}"
    assert main(["ikat", "from-trec", str(saturated), "--benchmark", "ikat2024", "--year", str(year), "--team-id", "t",
                 "--run-name", "x", "--output", str(out)]) == 0
    return out


@pytest.mark.parametrize("year", [2024, 2025])
def test_a_submission_evaluates_as_its_run_where_the_format_cannot_tell_the_run_s_scores_apart(
        tmp_path, saturated, year):
    """Scores 1e-9 apart are one 32-bit float (2024) and one 6-decimal score (2025): written as
    the run has them, the official run ranked them by passage id, and scored otherwise."""
    back = tmp_path / "back.run"
    assert main(["ikat", "to-trec", str(saturated_submission(tmp_path, saturated, year)), "--output", str(back)]) == 0
    run, converted = read_run(saturated), read_run(back)
    judged = read_qrels(qrels_root() / "ikat" / "2024-qrels.txt").judgments
    qrels = Qrels("ikat2024", {qid: judged[qid] for qid in run})
    per_query, _ = harness.evaluate({"run": run, "converted": converted}, qrels, SATURATED_MEASURES)
    ours, theirs = (per_query[per_query["run"] == name].drop(columns="run").reset_index(drop=True)
                    for name in ("run", "converted"))
    pd.testing.assert_frame_equal(ours, theirs)
    assert {qid: [docid for docid, _ in converted.ranked(qid)] for qid in converted} == \
        {qid: [docid for docid, _ in run.ranked(qid)] for qid in run}


def test_only_scores_the_format_cannot_tell_apart_are_lowered_and_run_ties_stay_tied(tmp_path, saturated, capsys):
    """Each turn: the first score and the 12 apart in float32 are the run's; the 7 below the first,
    1e-9 apart, each the 32-bit float just below the one above, the tied 4th and 5th one score."""
    turns = json.loads(saturated_submission(tmp_path, saturated, 2024).read_text())["turns"]
    run = read_run(saturated)
    written = {turn["turn_id"]: turn["responses"][0]["passage_provenance"]
               for turn in turns if turn["responses"][0]["passage_provenance"]}
    assert written.keys() == set(run.scores)
    for qid, passages in written.items():
        scores, ran = [p["score"] for p in passages], [score for _, score in run.ranked(qid)]
        assert scores[0] == ran[0] and scores[8:] == ran[8:]
        below = [float(np.nextafter(np.float32(score), np.float32(0))) for score in scores[:7]]
        below[3] = scores[3]  # the 5th, tied with the 4th in the run
        assert scores[1:8] == below
    turn, passages = next(iter(written.items()))  # the first in the file
    assert (f"note: 84 passages in 12 turns are written with a score below the run's, to keep its order: the iKAT "
            "2024 format holds scores as 32-bit floats, in which their run score would not rank below the passage's "
            "above (the official run ranks tied passages by id), so each is given the nearest score below that one's "
            f"(the first: turn {turn}, passage {passages[1]['id']}, 0.999999996 written as 0.9999999403953552)"
            ) in capsys.readouterr().err
