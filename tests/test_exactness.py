"""Exactness at the edges: one test per rule, where the harness once differed from trec_eval
or from the official iKAT tools.

Judgments used (real, from trec-cast-qrels-docs.2021.qrel): for 106_1, KILT_262039 is graded
2 and KILT_105219 0; for 112_3, WAPO_627b180c-85ae-11e1-abb4-839961045500 is judged (0).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.evaluate import evaluate
from harness.ikat.validate import COVERAGE_CHECKS, validate_file
from harness.paths import data_root
from harness.topics.ikat import read_topics, topics_path
from harness.trec import Qrels, read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, write_run

REL2, NONREL = "KILT_262039", "KILT_105219"
WAPO_DIGITS = "WAPO_627b180c-85ae-11e1-abb4-839961045500"  # last uuid group all digits
SAMPLE_2023 = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
SAMPLE_2024 = data_root() / "ikat" / "2024" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"


@pytest.fixture(scope="module")
def cast2021() -> Qrels:
    return read_qrels(CAST2021_QRELS)


# --- 1. RR@k and Judged@k break ties as trec_eval does (Judged@k's rules: tests/test_judged.py) ---


def test_rr_at_k_breaks_score_ties_by_docid_descending_like_trec_eval(tmp_path, qrels_106):
    # Tied: trec_eval ranks MARCO_D1 above KILT_262039 ('M' > 'K'), so the relevant one is 2nd.
    path = write_run(tmp_path, [f"106_1 Q0 {REL2} 1 5.0 t", "106_1 Q0 MARCO_D1 2 5.0 t"])
    values = evaluate(qrels_106, read_run(path), ["RR(rel=2)@10", "RR(rel=2)"]).per_query
    assert values["RR(rel=2)@10"]["106_1"] == values["RR(rel=2)"]["106_1"] == 0.5


def test_judged_at_k_breaks_score_ties_by_docid_descending_like_trec_eval(tmp_path, qrels_106):
    path = write_run(tmp_path, [f"106_1 Q0 {REL2} 1 5.0 t", "106_1 Q0 MARCO_D1 2 5.0 t"])
    assert evaluate(qrels_106, read_run(path), ["Judged@1"]).per_query["Judged@1"]["106_1"] == 0.0


@pytest.mark.reference
@pytest.mark.slow
def test_rr_at_k_equals_trec_eval_per_query_on_the_cast2021_organiser_runs(trec_eval, cast2021):
    for run_path in CAST2021_DOC_RUNS:
        ours = evaluate(cast2021, read_run(run_path), ["RR(rel=2)@10"]).per_query["RR(rel=2)@10"]
        output = subprocess.run([str(trec_eval), "-q", "-c", "-M10", "-l2", "-m", "recip_rank", str(CAST2021_QRELS),
                                 str(run_path)], check=True, capture_output=True, text=True).stdout
        theirs = {f[1]: float(f[2]) for f in map(str.split, output.splitlines()) if f[1] != "all"}
        assert theirs.keys() == ours.keys()
        assert all(abs(ours[q] - theirs[q]) < 5e-5 for q in theirs), run_path.stem


# --- 2. count measures are summed on `all`; a missing query gets its real counts -----------


def test_count_measures_are_summed_and_a_missing_query_gets_its_real_counts(tmp_path, qrels_106):
    path = write_run(tmp_path, [f"106_1 Q0 {REL2} 1 5.0 t", f"106_1 Q0 {NONREL} 2 4.0 t"])
    evaluation = evaluate(qrels_106, read_run(path), ["NumQ", "NumRel", "NumRet", "NumRelRet"])
    relevant = {qid: sum(g >= 1 for g in docs.values()) for qid, docs in qrels_106.judgments.items()}
    assert evaluation.per_query["NumRel"] == {qid: float(n) for qid, n in relevant.items()}  # 106_2 is missing
    assert evaluation.means == {"NumQ": 2, "NumRel": sum(relevant.values()), "NumRet": 2, "NumRelRet": 1}


def test_cli_prints_counts_as_whole_numbers(capsys):
    main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]), "--measures", "NumQ", "RR"])
    assert capsys.readouterr().out.splitlines()[1].split()[1:] == ["all", "158", "0.6719"]  # trec_eval -c: num_q 158, recip_rank 0.6719


# --- 3. to-trec writes what generate_run.py writes; ties ranked by id descending -----------


def test_to_trec_writes_the_official_scores_with_ties_ranked_by_id_descending(tmp_path):
    out = tmp_path / "sample.run"
    assert main(["ikat", "to-trec", str(SAMPLE_2024), "--out", str(out)]) == 0
    lines = [line.split() for line in out.read_text().splitlines()]
    submission = json.loads(SAMPLE_2024.read_text())
    import struct

    def float32(x: float) -> float:
        return struct.unpack("f", struct.pack("f", x))[0]

    tied_turns = 0
    for turn in submission["turns"]:
        scores: dict[str, float] = {}
        for response in turn["responses"]:
            for p in response["passage_provenance"]:
                scores.setdefault(p["id"], float32((1 / (response["rank"] + 1)) * float32(p["score"])))
        ours = [(f[2], f[4]) for f in lines if f[0] == turn["turn_id"]]
        assert {pid: float(s) for pid, s in ours} == scores
        assert [s for _, s in ours] == [str(scores[pid]) for pid, _ in ours]  # printed as Python prints it
        expected = sorted(sorted(scores, reverse=True), key=lambda pid: -scores[pid])
        assert [pid for pid, _ in ours] == expected
        tied_turns += len(set(scores.values())) < len(scores)
    assert tied_turns >= 10  # the official sample has ties in many turns


def test_to_trec_2025_prints_six_decimals_and_ranks_ties_by_id_descending(tmp_path):
    line = {"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1_1",
            "references": {"clueweb22-en0000-00-00001:1": 0.1234564, "clueweb22-en0000-00-00002:1": 0.1234565,
                           "clueweb22-en0000-00-00003:1": 2}, "responses": []}
    (tmp_path / "run.jsonl").write_text(json.dumps(line) + "\n")
    main(["ikat", "to-trec", str(tmp_path / "run.jsonl"), "--out", str(tmp_path / "out.run")])
    rows = [line.split()[2:5:2] for line in (tmp_path / "out.run").read_text().splitlines()]
    assert rows == [["clueweb22-en0000-00-00003:1", "2.000000"], ["clueweb22-en0000-00-00002:1", "0.123456"],
                    ["clueweb22-en0000-00-00001:1", "0.123456"]]


def test_to_trec_rank_minus_one_is_a_one_line_error(tmp_path, capsys):
    run = json.loads(SAMPLE_2024.read_text())
    run["turns"][0]["responses"][0]["rank"] = -1
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(tmp_path / "run.json"), "--out", str(tmp_path / "out.run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rank -1" in err[0] and "turn 0_1" in err[0]
    assert not (tmp_path / "out.run").exists()


# --- 4. the cast2021 separator keeps WAPO ids whose last uuid group is all digits ----------


def test_cast2021_separator_keeps_wapo_ids_whose_last_uuid_group_is_digits(tmp_path, cast2021):
    assert WAPO_DIGITS in cast2021.judgments["112_3"]
    path = write_run(tmp_path, [f"112_3 Q0 {WAPO_DIGITS}-2 1 9.0 t", f"112_3 Q0 {WAPO_DIGITS} 2 8.0 t"])
    documents = read_run(path).to_documents("-")
    assert documents.ranked("112_3") == [(WAPO_DIGITS, 9.0)]
    assert evaluate(cast2021, documents, ["Judged@1"]).per_query["Judged@1"]["112_3"] == 1.0


# --- 5. scores are plain decimal or scientific numbers -------------------------------------


@pytest.mark.parametrize("score", ["1_0", "inf", "-Infinity", "nan", "0x1p3", "\u0661", "1e", "1.5f", "--1"])
def test_score_must_be_a_plain_decimal_or_scientific_number(tmp_path, score):
    path = write_run(tmp_path, ["106_1 Q0 KILT_0 1 9.5 t", f"106_1 Q0 KILT_1 2 {score} t"])
    with pytest.raises(InputError, match=rf"run\.run:2: score '{score}' is not"):
        read_run(path)


@pytest.mark.parametrize("score", ["12", "-0.5", ".5", "5.", "+2", "1e-3", "-2.5E+1"])
def test_plain_decimal_and_scientific_scores_are_read_as_trec_eval_reads_them(tmp_path, score):
    path = write_run(tmp_path, [f"106_1 Q0 KILT_1 1 {score} t"])
    assert read_run(path).scores["106_1"]["KILT_1"] == float(score)


@pytest.mark.parametrize("separator", ["", " "])
def test_an_empty_or_blank_passage_separator_is_refused(capsys, separator):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]),
                 "--passage-separator", separator]) == 2
    assert "--passage-separator must be" in capsys.readouterr().err


# --- 6. a bad measure name is a one-line error ---------------------------------------------


@pytest.mark.parametrize("name, reason", [
    ("nDCG(rel=2)@3", "nDCG takes no rel="),
    ("P(rel=2)@3.0", "the cutoff must be a whole number"),
    ("P@0", "the cutoff must be a whole number"),
    ("AP(rel=0)", "rel= must be a grade from 1 to"),
    ("nDCG@9223372036854775808", "the cutoff must be a whole number of documents from 1 to 2147483647"),
    ("P(rel=2147483648)@3", "rel= must be a grade from 1 to 2147483647"),
    ("Judged", "Judged needs a cutoff"),
    ("Rprec@5", "Rprec takes no cutoff"),
    ("NumRel(rel=2)", "num_rel at level 1"),
    ("ERR@10", "gdeval"),
    ("nDCG(dcg='exp-log2')@10", "log2 discount only"),
    ("nDCG@@3", "cannot read measure"),
    ("nDCG@-3", "the cutoff must be a whole number of documents from 1 to 2147483647, not -3"),
    ("P(rel=-1)@3", "rel= must be a grade from 1 to 2147483647 (trec_eval -l), not -1"),
    ("nDCG @3", "a measure's name holds no space: give nDCG@3"),
    ("P(rel= 2)@3", "a measure's name holds no space: give 'P(rel=2)@3'"),
    ("Bogus@3", "cannot read measure"),
])
def test_bad_measure_name_is_a_one_line_error(capsys, name, reason):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]),
                 "--measures", name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and reason in err[0] and name in err[0], err


# --- 7. the validator reads fields as protobuf does; rank 0 draws two warnings -------------


TOPICS_2023 = read_topics(topics_path(2023))


def _validate_edited(tmp_path: Path, edit, path: Path = SAMPLE_2023, year: int = 2023):
    run = json.loads(path.read_text())
    edit(run["turns"][0]["responses"][0])
    (tmp_path / "run.json").write_text(json.dumps(run))
    return validate_file(tmp_path / "run.json", TOPICS_2023 if year == 2023 else read_topics(topics_path(year)),
                         year, skip=COVERAGE_CHECKS)


@pytest.mark.parametrize("rank", [0, None])
def test_rank_zero_or_null_draws_two_warnings_as_upstream(tmp_path, rank):
    report = _validate_edited(tmp_path, lambda r: r.update(rank=rank))
    assert [f.check for f in report.findings] == ["response-rank", "response-rank"] and report.ok


def test_negative_rank_draws_one_warning_as_upstream(tmp_path):
    report = _validate_edited(tmp_path, lambda r: r.update(rank=-3))
    assert [f.check for f in report.findings] == ["response-rank"]


@pytest.mark.parametrize("field, value, ok", [
    ("rank", "1", True), ("rank", "1_0", True), ("rank", " 1", False), ("rank", True, False), ("rank", 1.5, False),
])
def test_rank_is_read_as_protobuf_reads_an_int32(tmp_path, field, value, ok):
    report = _validate_edited(tmp_path, lambda r: r.update({field: value}))
    assert report.ok == ok and ("schema" in {f.check for f in report.errors}) != ok


@pytest.mark.parametrize("value, ok", [(True, True), ("9.5", True), (" 9.5", True), ("abc", False), (1e39, False)])
def test_score_is_read_as_protobuf_reads_a_float(tmp_path, value, ok):
    report = _validate_edited(tmp_path, lambda r: r["passage_provenance"][0].update(score=value))
    assert report.ok == ok


def test_deliberate_difference_quoted_nan_score_is_refused(tmp_path):
    report = _validate_edited(tmp_path, lambda r: r["passage_provenance"][0].update(score="NaN"))
    assert {f.check for f in report.errors} == {"schema"}


def test_deliberate_difference_first_score_above_1e9_draws_no_warning(tmp_path):
    report = _validate_edited(tmp_path, lambda r: r["passage_provenance"][0].update(score=2e9))
    assert "passage-score-order" not in {f.check for f in report.findings}


def test_deliberate_difference_2025_non_numeric_scores_are_errors(tmp_path):
    turn = read_topics(topics_path(2025))[0].turns[0].qid  # a real turn: the file is partial, not invented
    line = {"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": turn,
            "references": {"clueweb22-en0000-00-00001:1": "high"},
            "responses": [{"text": "x", "citations": {}, "ptkb_provenance": []}]}
    (tmp_path / "run.jsonl").write_text(json.dumps(line) + "\n")
    report = validate_file(tmp_path / "run.jsonl", read_topics(topics_path(2025)), 2025, skip=COVERAGE_CHECKS)
    assert {f.check for f in report.errors} == {"references"}
