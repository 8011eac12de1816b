"""The classic first-day mistakes get a one-line error saying what the file looks like and
what to do (harness.trec's readers, `harness eval`'s options), on the CAsT 2021 files."""

from __future__ import annotations

import gzip
import re

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.trec import read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

QRELS = str(CAST2021_QRELS)
RUN = CAST2021_DOC_RUNS[0]


def error_of(capsys, *argv: str) -> str:
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_header_line_in_a_run_is_named_as_a_header(tmp_path, capsys):
    run = tmp_path / "header.run"
    run.write_text("qid Q0 docno rank score tag\n" + RUN.read_text())
    assert error_of(capsys, "--qrels", QRELS, str(run)).endswith(
        "header.run:1: rank 'rank' is not an integer: line 1 looks like a header row "
        "('qid Q0 docno rank score tag'); TREC run files have none: delete it")


def test_a_csv_run_is_named_as_csv(tmp_path, capsys):
    run = tmp_path / "frame.csv"
    run.write_text("".join(",".join(line.split()) + "\n" for line in RUN.read_text().splitlines()))
    error = error_of(capsys, "--qrels", QRELS, str(run))
    assert "frame.csv:1: expected 6 fields 'qid Q0 docid rank score tag', found 1: the line is comma-separated" in error
    assert "sep=' '" in error


def test_a_three_column_qrels_is_told_to_add_the_iteration_column(tmp_path, capsys):
    qrels = tmp_path / "three.qrels"
    qrels.write_text("".join(f"{q} {d} {g}\n" for q, _, d, g in map(str.split, CAST2021_QRELS.read_text().splitlines())))
    error = error_of(capsys, "--qrels", str(qrels), str(RUN))
    assert "three.qrels:1: expected 4 fields 'qid iter docid grade', found 3: this looks like 'qid docid grade'" in error
    assert "add 0 as the second field" in error


def _scores(capsys, run) -> str:
    assert main(["eval", "--qrels", QRELS, str(run), "--measures", "nDCG@3", "AP", "--format", "csv"]) == 0
    return capsys.readouterr().out.split("\n", 1)[1].split(",", 1)[1]


def test_an_ms_marco_run_is_told_how_to_write_it_as_a_trec_run(tmp_path, capsys):
    """'qid docid rank': the awk line the error gives scores as the TREC run it came from."""
    lines = [line.split() for line in RUN.read_text().splitlines()]
    run = tmp_path / "msmarco.run"
    run.write_text("".join(f"{q}\t{d}\t{r}\n" for q, _, d, r, _, _ in lines))
    error = error_of(capsys, "--qrels", QRELS, str(run))
    assert error.endswith("msmarco.run:1: expected 6 fields 'qid Q0 docid rank score tag', found 3: this looks like "
                          "'qid docid rank' (an MS MARCO run); write it as a TREC run, the score falling as the rank "
                          "rises, e.g. awk '{print $1, \"Q0\", $2, $3, -$3, \"myrun\"}'")
    cured = tmp_path / "cured.run"
    cured.write_text("".join(f"{q} Q0 {d} {r} {-int(r)} myrun\n" for q, _, d, r, _, _ in lines))
    assert _scores(capsys, cured) == _scores(capsys, RUN)


def test_a_run_without_its_tag_is_told_to_add_one(tmp_path, capsys):
    run = tmp_path / "untagged.run"
    run.write_text("".join(" ".join(line.split()[:5]) + "\n" for line in RUN.read_text().splitlines()))
    assert error_of(capsys, "--qrels", QRELS, str(run)).endswith(
        "untagged.run:1: expected 6 fields 'qid Q0 docid rank score tag', found 5: this looks like "
        "'qid Q0 docid rank score' without the run tag (the 6th field); add one, e.g. awk '{print $0, \"myrun\"}'")


@pytest.mark.parametrize("strict, depth", [(False, None), (True, None), (False, 10)])
def test_a_run_line_of_more_than_six_fields_is_told_a_document_id_holds_no_whitespace(tmp_path, capsys, strict, depth):
    """An item named, not given by its id ('Panic Room'): said before the rank it makes of a word
    of the name, by `harness eval` and by every way the run reader reads (strict, to a depth)."""
    run = tmp_path / "names.run"
    run.write_text(RUN.read_text().splitlines(keepends=True)[0] + "31_1 Q0 Panic Room 1 2.0 mine\n")
    told = ("names.run:2: 7 fields where a run line has 6 (qid Q0 docid rank score tag): a document id cannot hold "
            "whitespace ('Panic Room' is read as docid 'Panic' and rank 'Room', which is not an integer); give each "
            "document by its id as the corpus and the qrels write it (one word)")
    assert error_of(capsys, "--qrels", QRELS, str(run)).endswith(told)
    with pytest.raises(InputError, match=re.escape(told)):
        read_run(run, strict=strict, depth=depth)


def test_an_item_name_on_line_one_with_a_spaced_tag_is_told_of_whitespace_not_taken_for_a_header(tmp_path, capsys):
    """'Q0' and 'tag' are column names too: the line read as a header row ('delete it'), where it
    is data whose document id holds whitespace; nor is the id read as 'Panic Room'."""
    run = tmp_path / "names.run"
    run.write_text("31_1 Q0 Panic Room 1 2.0 my tag\n" + RUN.read_text())
    told = ("names.run:1: 8 fields where a run line has 6 (qid Q0 docid rank score tag): a document id cannot hold "
            "whitespace ('Panic Room' is read as docid 'Panic' and rank 'Room', which is not an integer); give each "
            "document by its id as the corpus and the qrels write it (one word)")
    assert error_of(capsys, "--qrels", QRELS, str(run)).endswith(told)


@pytest.mark.parametrize("qrels, run, told", [
    (str(RUN), str(RUN), "is a run file given as the qrels?"),
    (QRELS, QRELS, "is the qrels file given as a run?"),
])
def test_a_run_and_qrels_given_the_wrong_way_round_are_named(capsys, qrels, run, told):
    assert error_of(capsys, "--qrels", qrels, run).endswith(told)


def test_run_files_swallowed_by_measures_are_named_with_the_fix(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--qrels", QRELS, "--measures", "nDCG@3", *map(str, CAST2021_DOC_RUNS[:2])])
    error = capsys.readouterr().err
    assert f"--measures took {CAST2021_DOC_RUNS[0]}, {CAST2021_DOC_RUNS[1]}, which are files" in error
    assert "put RUN... before --measures, or end its values with -- (--measures ... -- RUN...)" in error
    assert main(["eval", "--qrels", QRELS, "--measures", "nDCG@3", "--", str(RUN)]) == 0


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_measures_ended_with_a_last_double_dash_read_as_without_it(capsys, command):
    """--measures' help says to end it with --: after the runs, with nothing following, argparse
    refused that -- ('unrecognized arguments: --')."""
    argv = [command, "--qrels", QRELS, *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "nDCG@3", "AP"]
    assert main(argv) == 0
    without = capsys.readouterr()
    assert main([*argv, "--"]) == 0
    assert capsys.readouterr() == without


def test_a_run_file_among_the_measures_after_another_run_is_named_as_swallowed_too(capsys):
    """A run before --measures fills the positionals, so the parser sees nothing missing; the
    one after was read as a measure name ('cannot read measure ...')."""
    first, second = map(str, CAST2021_DOC_RUNS[:2])
    assert main(["eval", "--qrels", QRELS, first, "--measures", "nDCG@3", second]) == 2
    assert f"--measures took {second}, which is a file" in capsys.readouterr().err


@pytest.mark.parametrize("argv, option, positionals", [
    (["compare", "--qrels", QRELS, "--baseline", "org_manual_bm25", "{runs}", "--measures", "P@5"], "--baseline", "RUN..."),
    (["compare", "--qrels", QRELS, "--arena-votes", "{runs}"], "--arena-votes", "RUN..."),
    (["compare", "--qrels", QRELS, "--dialogues", "{runs}"], "--dialogues", "RUN..."),
    (["responses", "eval", "--nuggets", "n", "--judge", "minilm", "--baseline", "A", "{runs}"], "--baseline", "RESPONSES..."),
    (["qrels", "rank-agree", "--measures", "P@5", QRELS, QRELS, "{runs}"], "--measures", "A B RUN..."),
    (["qrels", "agree", "--thresholds", "1", QRELS, QRELS], "--thresholds", "A B"),
])
def test_every_option_of_several_values_that_swallows_the_files_after_it_says_so(capsys, argv, option, positionals):
    """An option with nargs='+' takes every word up to the next option: the error names the
    files it took and the two fixes, whichever the option and command (not 'give at least one
    run file' or 'the following arguments are required')."""
    files = [str(run) for run in CAST2021_DOC_RUNS[:2]]
    argv = [word for arg in argv for word in (files if arg == "{runs}" else [arg])]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1
    assert f"{option} took " in error and (", ".join(files) in error or QRELS in error)
    assert f"put {positionals} before {option}, or end its values with -- ({option} ... -- {positionals})" in error


def test_a_folder_given_to_submit_as_the_run_is_named_a_folder_before_any_request(tmp_path, capsys):
    argv = ["submit", str(tmp_path), "--server", "http://127.0.0.1:9", "--token", "t", "--task", "x"]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"harness submit: error: {tmp_path}: is a folder, expected a file\n"
    assert main([*argv[:1], str(tmp_path / "missing.run"), *argv[2:]]) == 2
    assert capsys.readouterr().err == f"harness submit: error: {tmp_path / 'missing.run'}: no such file\n"


def test_an_ikat_submission_given_as_a_run_is_named_json_with_to_trec_as_the_cure(tmp_path, capsys):
    from harness.paths import data_root

    sample = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
    assert error_of(capsys, "--qrels", QRELS, str(sample)).endswith(
        "sample_run.json:1: rank '\"manual\",' is not an integer: the file looks like JSON, not TREC run lines: "
        "`harness ikat to-trec` writes a TREC run of an iKAT submission")


def test_a_harness_run_record_given_as_a_run_is_refused_naming_the_run_beside_it(run_records, capsys):
    """The record is named for what it is, not by its line 1 ('expected 6 fields ..., found 1')."""
    record = run_records / "ikat2023-test.raw.bm25.json"
    assert main(["eval", "--qrels", QRELS, str(record)]) == 2
    assert capsys.readouterr().err == (
        f"harness eval: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its provenance "
        f"and scores), not a run: give {record.with_suffix('.run')} instead\n")


@pytest.mark.parametrize("command", ["eval", "compare"])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_harness_run_record_beside_its_run_gets_the_records_advice_not_rename_one(run_records, tmp_path, capsys,
                                                                                    command, suffix):
    """`compare runs/*` on a `harness run` folder said 'two runs share the name X: X.json and X.run; rename one
    run file', which would have scored the record as a run (a gzipped record too)."""
    record = tmp_path / f"ikat2023-test.raw.bm25{suffix}"
    data = (run_records / "ikat2023-test.raw.bm25.json").read_bytes()
    record.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    run = tmp_path / "ikat2023-test.raw.bm25.run"
    run.write_bytes((run_records / run.name).read_bytes())
    assert main([command, "--qrels", QRELS, str(record), str(run)]) == 2
    assert capsys.readouterr().err == (
        f"harness {command}: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        f"provenance and scores), not a run: give {run} instead (of a folder of runs and their records, give the .run "
        f"files: {tmp_path / '*.run'})\n")


@pytest.mark.parametrize("order", ["record first", "run first"])
def test_a_harness_run_record_given_with_its_run_from_another_folder_is_to_be_dropped(run_records, tmp_path, capsys,
                                                                                      order):
    """`compare alone/x.json runs/x.run` said 'give that run instead (it is not beside this record) (..., give the
    .run files: alone/*.run)': the run was given, and alone/*.run matches nothing."""
    record = tmp_path / "ikat2023-test.raw.bm25.json"
    record.write_bytes((run_records / record.name).read_bytes())
    run = run_records / "ikat2023-test.raw.bm25.run"
    files = [str(record), str(run)] if order == "record first" else [str(run), str(record)]
    assert main(["compare", "--qrels", QRELS, *files]) == 2
    assert capsys.readouterr().err == (
        f"harness compare: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        f"provenance and scores), not a run, and its name is that of {run}, given too: drop it\n")


@pytest.mark.parametrize("beside", [True, False])
def test_two_records_of_one_run_given_together_name_the_run_to_give(run_records, tmp_path, capsys, beside):
    """x.json and x.json.gz given without x.run said 'drop it' of one, and left the run to be guessed."""
    record, packed = tmp_path / "ikat2023-test.raw.bm25.json", tmp_path / "ikat2023-test.raw.bm25.json.gz"
    data = (run_records / record.name).read_bytes()
    record.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    run = tmp_path / "ikat2023-test.raw.bm25.run"
    if beside:
        run.write_bytes((run_records / run.name).read_bytes())
    assert main(["compare", "--qrels", QRELS, str(record), str(packed)]) == 2
    give = f"give {run} instead" if beside else "give that run instead (it is not beside this record)"
    assert capsys.readouterr().err == (
        f"harness compare: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        f"provenance and scores), not a run: {give} ({packed}, given too, is a record as well)\n")


@pytest.mark.parametrize("habit, hint", [
    (["-m", "ndcg_cut.3"], "trec_eval's -m ndcg_cut.3 is --measures ndcg_cut.3 here"),
    (["-q"], "trec_eval's -q is --per-query here"),
    (["-M100"], "trec_eval's -M 100 is --depth 100 here"),
    (["-M", "100"], "trec_eval's -M 100 is --depth 100 here"),
    (["-c"], "trec_eval's -c is always on here (a judged query the run lacks scores 0)"),
    (["-l2"], "trec_eval's -l2 is rel=2 in a measure's name here: P(rel=2)@10"),
])
def test_a_trec_eval_flag_is_answered_with_the_option_that_does_it(capsys, habit, hint):
    """trec_eval users type its flags; the one error line maps each to the harness's option."""
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--qrels", QRELS, str(RUN), *habit])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1
    assert error.startswith("harness eval: error: unrecognized arguments: -") and f"; {hint} (`harness eval" in error


def test_the_qrels_given_first_as_trec_eval_takes_it_is_told_to_be_given_as_qrels(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "-q", QRELS, str(RUN)])
    error = capsys.readouterr().err
    assert error.startswith("harness eval: error: the following arguments are required: --qrels; ")
    assert f"; {QRELS} reads as qrels, which trec_eval takes first: give it as --qrels {QRELS} (" in error
    with pytest.raises(SystemExit):
        main(["eval", str(RUN), QRELS])  # a run first is not taken for qrels
    assert "reads as qrels" not in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval", "--fill", QRELS, str(RUN)])  # nor the value of another option
    assert "reads as qrels" not in capsys.readouterr().err
