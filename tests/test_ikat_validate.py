"""`harness ikat validate` judges runs as the official iKAT validators do.

The files are the official validator's own sample runs (valid and deliberately broken);
checks no sample breaks are shown on the valid sample with one field changed.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import re
import sys
from collections.abc import Callable
from itertools import islice
from pathlib import Path

import pytest

from harness.cli import main
from harness.ikat.submission import Submission, SubmissionTurn, write_submission
from harness.ikat.validate import CHECKS, COVERAGE_CHECKS, ValidationReport, read_submission, validate_file
from harness.paths import data_root, qrels_root
from harness.topics.ikat import read_topics, topics_path

SAMPLES_2023 = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data"
SAMPLE_2024 = data_root() / "ikat" / "2024" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"
TOPICS = {year: read_topics(topics_path(year)) for year in (2023, 2024, 2025)}


def validate(path: Path, year: int, partial: bool = True) -> ValidationReport:
    return validate_file(path, TOPICS[year], year, skip=COVERAGE_CHECKS if partial else ())


def failing_checks(report: ValidationReport) -> set[str]:
    return {finding.check for finding in report.errors}


def warned_checks(report: ValidationReport) -> set[str]:
    return {finding.check for finding in report.warnings}


# --- the official sample runs --------------------------------------------------------------


def test_sample_run_turns_pass_every_per_turn_check():
    report = validate(SAMPLES_2023 / "sample_run.json", 2023)
    assert report.turns == 6
    assert report.findings == []


def test_sample_run_covers_6_of_332_test_turns_which_is_fatal_for_a_submission():
    report = validate(SAMPLES_2023 / "sample_run.json", 2023, partial=False)
    assert failing_checks(report) == {"turn-count", "topics-covered"}
    assert any("the run has 6 turns, the topics have 332" in f.message for f in report.errors)


def test_invalid_scores_fail_the_schema_check_naming_the_turn():
    report = validate(SAMPLES_2023 / "sample_run_invalid_scores.json", 2023)
    assert failing_checks(report) == {"schema"}
    assert {f.turn for f in report.errors} == {"9-1_1"}
    assert any("passage_provenance[0].score: 'abcdef' is not a number" in f.message for f in report.errors)


def test_renamed_fields_fail_the_schema_check():
    report = validate(SAMPLES_2023 / "sample_run_renamed_fields.json", 2023)
    assert failing_checks(report) == {"schema"}
    unknown = {f.message.split(":")[0] for f in report.errors}
    assert "turns[0].turn_number" in unknown and "turns[0].responses[0].order" in unknown


def test_missing_ptkb_fields_fail_the_ptkb_id_check():
    report = validate(SAMPLES_2023 / "sample_run_missing_ptkb_fields.json", 2023)
    assert failing_checks(report) == {"ptkb-id"}
    assert [(f.turn, "empty id" in f.message) for f in report.errors] == [("9-1_1", True)]


def test_no_ptkb_run_warns_for_every_response():
    report = validate(SAMPLES_2023 / "sample_run_no_ptkb.json", 2023)
    assert report.ok
    assert warned_checks(report) == {"ptkb-present"}
    assert len(report.warnings) == 12 * 3  # 12 turns, 3 responses each


def test_2024_sample_run_is_a_valid_complete_submission():
    report = validate(SAMPLE_2024, 2024, partial=False)
    assert report.turns == 218
    assert report.findings == []


def test_year_is_guessed_from_the_file(tmp_path):
    assert validate_file(SAMPLE_2024, TOPICS[2024]).year == 2024
    assert validate_file(SAMPLES_2023 / "sample_run.json", TOPICS[2023]).year == 2023
    cut = tmp_path / "cut.json"  # a 2023 run cut short: still 2023, reported as not JSON
    cut.write_text((SAMPLES_2023 / "sample_run.json").read_text(encoding="utf-8")[:5000], encoding="utf-8")
    report = validate_file(cut, TOPICS[2023])
    assert report.year == 2023 and [f.check for f in report.errors] == ["json"]


@pytest.fixture(scope="module")
def sample_2024_as(tmp_path_factory) -> Callable[[int], Path]:
    """The 2024 sample (2024 turns) written in another year's format, as `from-trec --year` writes it."""
    sample, _ = read_submission(SAMPLE_2024)
    folder = tmp_path_factory.mktemp("formats")

    def written(year: int) -> Path:
        path = folder / f"as{year}.json{'l' * (year == 2025)}"
        write_submission(path, Submission(sample.run_name, "automatic", sample.turns, team_id="t"), year)
        return path

    return written


@pytest.mark.parametrize("year", [2023, 2025])
@pytest.mark.parametrize("topics", ["ikat2024", str(topics_path(2024))])
def test_a_file_in_another_years_format_than_the_topics_is_one_error_naming_both(sample_2024_as, capsys, year, topics):
    """The official 2024 validator refuses a 2023-format file (its run.proto's ptkb_provenance are int32s) or
    JSON Lines; the year guessed from the file was never held to the topics' ('valid (iKAT 2023)')."""
    assert main(["ikat", "validate", str(sample_2024_as(year)), "--topics", topics]) == 1
    assert capsys.readouterr().out == (
        f"ERROR [format-year]: the file is in the iKAT {year} format, but the topics are iKAT 2024's, whose validator "
        "takes the 2024 format only: write it with `harness ikat from-trec --year 2024` (from its TREC run: `harness "
        f"ikat to-trec` writes one), or give --year {year} to check it against these topics as it is\n")


def test_another_years_format_given_with_year_is_checked_as_asked_with_a_note(sample_2024_as, capsys):
    """A harness leaderboard may take another year's format for the topics: --year says so."""
    main(["ikat", "validate", str(sample_2024_as(2023)), "--topics", "ikat2024", "--year", "2023", "--quiet"])
    err = capsys.readouterr().err
    assert err.startswith("note: --year 2023 checks the file in the iKAT 2023 format, which the iKAT 2024 validator "
                          "of --topics ikat2024 does not take (it takes the 2024 format only)\n")
    assert "218 turns" in err and "format-year" not in err


def test_a_submission_of_another_year_than_the_topics_is_told_to_give_its_year_s_topics(capsys):
    """The 2024 sample (its format and its turns) against the 2023 topics: the topics are the mistake."""
    assert main(["ikat", "validate", str(SAMPLE_2024), "--topics", "ikat2023"]) == 1
    assert capsys.readouterr().out == ("ERROR [format-year]: the file is an iKAT 2024 submission (its format and its "
                                       "turns), but the topics are iKAT 2023's: give the topics of the file's year\n")


def neither_year_s_form(path: Path) -> Path:
    """The 2024 sample with no eval_response and no PTKB provenance: both official validators parse it."""
    run = json.loads(SAMPLE_2024.read_text())
    del run["eval_response"]
    for turn in run["turns"]:
        for response in turn["responses"]:
            response["ptkb_provenance"] = []
    path.write_text(json.dumps(run))
    return path


def test_a_file_showing_neither_json_year_s_form_is_checked_as_the_topics_year(tmp_path):
    """No eval_response and no PTKB provenance: both official validators parse it, so it is the topics' year's."""
    report = validate_file(neither_year_s_form(tmp_path / "run.json"), TOPICS[2024], topics_year=2024)
    assert report.year == 2024 and "format-year" not in failing_checks(report)


@pytest.mark.parametrize("given", [None, 2024])
def test_the_structure_checks_run_once_on_a_file_that_passes_them(tmp_path, monkeypatch, capsys, given):
    """A file showing neither JSON year's form is checked against the topics' year (or the --year given) before
    the year is settled; the validation does not check its structure again."""
    path = neither_year_s_form(tmp_path / "run.json")
    runs: list[str] = []
    look_up = CHECKS.get

    def counting(name: str):
        chosen = look_up(name)

        def run(ctx):
            runs.append(name)
            return chosen.run(ctx)

        return dataclasses.replace(chosen, run=run)

    monkeypatch.setattr(CHECKS, "get", counting)
    year = ["--year", str(given)] if given else []
    assert main(["ikat", "validate", str(path), "--topics", "ikat2024", "--partial", *year]) == 0
    structural = [name for name in CHECKS if look_up(name).structural and 2024 in look_up(name).years]
    assert sorted(name for name in runs if name in structural) == sorted(structural)
    assert "(iKAT 2024): 218 turns, 0 errors" in capsys.readouterr().err


@pytest.mark.parametrize("given", [None, 2024])
def test_a_structure_checks_warning_is_kept_where_the_structure_is_checked_before_the_year_is_settled(
        tmp_path, monkeypatch, given):
    """The early structure pass spares validation the structure checks only where they found nothing: what they
    found, a warning too, is reported as where they run once."""
    from harness.ikat.checks import warning

    look_up = CHECKS.get

    def warning_first(name: str):
        chosen = look_up(name)
        if name != "schema":
            return chosen

        def run(ctx):
            yield warning("schema", "a warning of the structure checks")
            yield from chosen.run(ctx)

        return dataclasses.replace(chosen, run=run)

    monkeypatch.setattr(CHECKS, "get", warning_first)
    report = validate_file(neither_year_s_form(tmp_path / "run.json"), TOPICS[2024], given, skip=COVERAGE_CHECKS,
                           topics_year=None if given else 2024)
    assert report.year == 2024 and not report.errors
    assert [f.message for f in report.warnings if f.check == "schema"] == ["a warning of the structure checks"]


def test_a_topics_file_that_does_not_exist_is_named(capsys):
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "nope.json"]) == 2
    assert capsys.readouterr().err == ("harness ikat validate: error: --topics nope.json: no such file (give a topics "
                                       "file or a benchmark name such as ikat2023) (`harness ikat validate --help` "
                                       "lists the options)\n")


HUGE = "7" * 5000  # an integer of more digits than Python converts (int_max_str_digits, 4300)
DEEP = "[" * 5000 + "]" * 5000  # nested past the recursion limit


def test_a_topics_file_python_cannot_hold_is_a_one_line_error_naming_its_line(tmp_path, capsys):
    topics = tmp_path / "topics.json"
    topics.write_text('[\n  {"number": ' + HUGE + "}\n]\n")
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", str(topics)]) == 2
    assert capsys.readouterr().err == (f"harness ikat validate: error: {topics}:2: invalid JSON: an integer of 5000 digits, "
                                       f"more than Python's limit ({sys.get_int_max_str_digits()}) allows (column 14)\n")


def test_a_topics_file_holding_no_topic_is_an_error_not_every_turn_unknown(tmp_path, capsys):
    topics = tmp_path / "topics.json"
    topics.write_text("[]\n")
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", str(topics)]) == 2
    assert capsys.readouterr().err == (f"harness ikat validate: error: {topics}: holds no topic: expected a JSON list of "
                                       "iKAT topics\n")


# --- one test per remaining 2023/2024 check: the valid sample with one thing broken -----------

Edit = Callable[[dict], None]


def _response(run: dict, turn: int = 0, response: int = 0) -> dict:
    return run["turns"][turn]["responses"][response]


def _set(path: list, value) -> Edit:
    def edit(run: dict) -> None:
        target = run
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _passages_up(run: dict) -> None:
    _response(run)["passage_provenance"][1]["score"] = 5.0


def _ptkb_up(run: dict) -> None:
    _response(run)["ptkb_provenance"][1]["score"] = 5.0


def _no_used(run: dict) -> None:
    for passage in _response(run)["passage_provenance"]:
        passage["used"] = False


def _too_many_passages(run: dict) -> None:
    passages = _response(run)["passage_provenance"]
    passages.extend(copy.deepcopy(passages[-1]) for _ in range(1001 - len(passages)))


def _duplicate_turn(run: dict) -> None:
    run["turns"][1]["turn_id"] = run["turns"][0]["turn_id"]


def _drop_run_name(run: dict) -> None:
    del run["run_name"]


BROKEN_2023: list[tuple[str, str, Edit, str]] = [
    # (check, level, edit, turn the finding names)
    ("required-fields", "error", _drop_run_name, None),
    ("non-empty", "error", _set(["turns"], []), None),
    ("run-name", "warning", _set(["run_name"], ""), None),
    ("run-type", "warning", _set(["run_type"], "semi-automatic"), None),
    ("turn-id-format", "error", _set(["turns", 0, "turn_id"], "9-1-1"), "9-1-1"),
    ("turn-id-known", "error", _set(["turns", 0, "turn_id"], "9-1_99"), "9-1_99"),
    ("turn-id-unique", "error", _duplicate_turn, "9-1_1"),
    ("response-rank", "warning", _set(["turns", 0, "responses", 1, "rank"], 1), "9-1_1"),
    ("response-text", "warning", _set(["turns", 0, "responses", 0, "text"], ""), "9-1_1"),
    ("passage-score-order", "warning", _passages_up, "9-1_1"),
    ("passage-id-format", "warning", _set(["turns", 0, "responses", 0, "passage_provenance", 0, "id"], "msmarco_1"), "9-1_1"),
    ("passage-used", "warning", _no_used, "9-1_1"),
    ("ptkb-id", "error", _set(["turns", 0, "responses", 0, "ptkb_provenance", 0, "id"], "99"), "9-1_1"),
    ("ptkb-text", "error", _set(["turns", 0, "responses", 0, "ptkb_provenance", 0, "text"], "I like tea."), "9-1_1"),
    ("ptkb-score-order", "warning", _ptkb_up, "9-1_1"),
]


@pytest.mark.parametrize("check, level, edit, turn", BROKEN_2023, ids=[row[0] for row in BROKEN_2023])
def test_2023_check_fires_on_its_own_breakage(tmp_path, check, level, edit, turn):
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    edit(run)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    report = validate(path, 2023)
    named = failing_checks(report) if level == "error" else warned_checks(report)
    assert named == {check}, [str(f) for f in report.findings]
    assert {f.turn for f in report.findings} == {turn}


def test_a_turn_of_no_topic_is_said_to_name_none_of_the_topics_given_a_benchmark_or_a_file(tmp_path):
    """`--topics ikat2023` is a benchmark, not a file: the message says 'the topics given'."""
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    run["turns"][0]["turn_id"] = "9_1"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert [f.message for f in validate(path, 2023).findings if f.check == "turn-id-known"] == [
        "turn id '9_1' names none of the 25 topics given"]


def test_more_than_1000_passages_is_a_warning(tmp_path):
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    _too_many_passages(run)
    (tmp_path / "run.json").write_text(json.dumps(run))
    report = validate(tmp_path / "run.json", 2023)
    assert warned_checks(report) == {"passage-count"} and report.ok
    assert [f.message for f in report.warnings] == ["response #0 has 1001 passages, more than 1000"]


def test_no_passages_warns_twice_as_upstream(tmp_path):
    """No provenance at all: both 'none used' and 'none given', as the official tool counts."""
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    _response(run)["passage_provenance"] = []
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert warned_checks(validate(tmp_path / "run.json", 2023)) == {"passage-count", "passage-used"}


def test_passage_not_in_the_collection_warns_once_per_turn_as_the_official_service(tmp_path, capsys):
    """The official validator asks its gRPC service about each distinct passage id of a turn."""
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    first = _response(run)["passage_provenance"][0]["id"]
    known = {p["id"] for t in run["turns"] for r in t["responses"] for p in r["passage_provenance"]} - {first}
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{pid}\n" for pid in sorted(known)))
    (tmp_path / "run.json").write_text(json.dumps(run))
    main(["ikat", "validate", str(tmp_path / "run.json"), "--topics", "ikat2023", "--partial", "--passages", str(ids)])
    out = capsys.readouterr().out
    assert out.count("[passage-exists]") == 1 and first in out


@pytest.mark.parametrize("name, text", [("ids.txt", "\n  \n"), ("ids.txt", "# passage ids\n\n"), ("passages.jsonl", "")])
def test_an_empty_passage_collection_is_an_error_not_a_warning_for_every_passage(tmp_path, capsys, name, text):
    ids = tmp_path / name
    ids.write_text(text)
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "ikat2023", "--partial",
                 "--passages", str(ids)]) == 2
    assert capsys.readouterr().err.startswith(f"harness ikat validate: error: {ids}: holds no passage id")


def test_json_given_as_the_passage_id_file_is_an_error_naming_its_line(tmp_path, capsys):
    """A submission (or a .json passages file) read as ids made every passage 'not in the collection'."""
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "ikat2023", "--partial",
                 "--passages", str(SAMPLES_2023 / "sample_run.json")]) == 2
    assert capsys.readouterr().err.startswith(f"harness ikat validate: error: {SAMPLES_2023 / 'sample_run.json'}:1: looks like "
                                              "JSON, not one passage id per line")


@pytest.mark.parametrize("kind", ["qrels ('qid iter docid grade')", "a TREC run ('qid Q0 docid rank score tag')"])
def test_a_qrels_or_run_given_as_the_passage_id_file_is_an_error_naming_its_line(tmp_path, capsys, kind):
    """Each line was read as one id, the turn id (a qrels line's first field): every passage was 'not in the
    collection'."""
    qrels = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
    if kind.startswith("a TREC run"):
        qrels = tmp_path / "run.txt"
        qrels.write_text("9-1_1 Q0 clueweb22-en0000-32-08101:4 1 2.5 bm25\n")
    assert main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "ikat2023", "--partial",
                 "--passages", str(qrels)]) == 2
    assert capsys.readouterr().err.startswith(f"harness ikat validate: error: {qrels}:1: looks like {kind}, not one "
                                              "passage id per line: give the collection the run searched")


def test_passage_collection_reads_from_a_benchmark_or_its_passage_file():
    from harness.ikat.validate import read_passage_ids
    from harness.topics.ikat import passages_path

    from_file = read_passage_ids(str(passages_path("test")))
    assert len(from_file) == 700 and "clueweb22-en0000-32-08101:4" in from_file
    assert read_passage_ids("benchmark:ikat2023") == from_file


@pytest.fixture(scope="module")
def two_pools_submission(tmp_path_factory) -> Path:
    """The official 2023 sample with its passages swapped for the first 30 of each shipped pool,
    one of each in turn, as a run of the default config (corpus: [benchmark:ikat2023:test,
    benchmark:ikat2023:train]) cites them."""
    from harness.corpus.readers import open_corpus

    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    pools = [[d.id for d in islice(open_corpus(f"benchmark:ikat2023:{split}").documents(), 30)]
             for split in ("test", "train")]
    for turn in run["turns"]:
        for response in turn["responses"]:
            for passage, pid in zip(response["passage_provenance"], [pid for pair in zip(*pools) for pid in pair]):
                passage["id"] = pid
    path = tmp_path_factory.mktemp("pools") / "run.json"
    path.write_text(json.dumps(run))
    return path


def test_several_passage_collections_are_one_as_a_config_s_corpus_list(two_pools_submission, capsys):
    pools = ["benchmark:ikat2023:test", "benchmark:ikat2023:train"]
    assert main(["ikat", "validate", str(two_pools_submission), "--topics", "ikat2023", "--partial",
                 "--passages", *pools]) == 0
    out, err = capsys.readouterr()
    assert "[passage-exists]" not in out and "note:" not in err


def test_one_split_s_pool_as_the_collection_is_noted_with_the_splits_it_leaves_out(two_pools_submission, capsys):
    """benchmark:ikat2023 is the test split's pool alone, as everywhere a corpus is named."""
    assert main(["ikat", "validate", str(two_pools_submission), "--topics", "ikat2023", "--partial",
                 "--passages", "benchmark:ikat2023"]) == 0
    out, err = capsys.readouterr()
    unknown = len(set(re.findall(r"passage '(.*?)' is not in the passage collection", out)))
    assert unknown > 0 and (f"note: {unknown} passage ids are not in --passages benchmark:ikat2023; the benchmark's "
                            f"other splits ship passages too: add benchmark:ikat2023:train (it holds {unknown} of them) "
                            "if the run searched them") in err


@pytest.mark.parametrize("train", [(), ("2023_train_topics_psg_text.jsonl",)])
def test_a_left_out_split_is_not_named_when_it_holds_none_of_the_unknown_ids(capsys, train):
    """The sample's passages are in neither pool; the train pool given as its file is not left out either."""
    pools = [str(data_root() / "ikat" / "2023" / "data" / name) for name in train]
    main(["ikat", "validate", str(SAMPLES_2023 / "sample_run.json"), "--topics", "ikat2023", "--partial",
          "--passages", "benchmark:ikat2023", *pools])
    out, err = capsys.readouterr()
    assert "[passage-exists]" in out and "note:" not in err


def test_the_note_counts_distinct_passage_ids_not_one_per_turn(tmp_path, capsys):
    """Every passage of the sample set to one of 2 train-pool ids: 2 ids, though every turn cites both."""
    from harness.corpus.readers import open_corpus

    train = [d.id for d in islice(open_corpus("benchmark:ikat2023:train").documents(), 2)]
    run = json.loads((SAMPLES_2023 / "sample_run.json").read_text())
    for turn in run["turns"]:
        for response in turn["responses"]:
            for index, passage in enumerate(response["passage_provenance"]):
                passage["id"] = train[index % 2]
    (tmp_path / "run.json").write_text(json.dumps(run))
    main(["ikat", "validate", str(tmp_path / "run.json"), "--topics", "ikat2023", "--partial",
          "--passages", "benchmark:ikat2023"])
    out, err = capsys.readouterr()
    assert out.count("[passage-exists]") == 2 * len(run["turns"]) > 2
    assert "note: 2 passage ids are not in --passages benchmark:ikat2023;" in err and "(it holds 2 of them)" in err


def test_more_warnings_than_allowed_is_an_error():
    report = validate_file(SAMPLES_2023 / "sample_run_no_ptkb.json", TOPICS[2023], 2023, max_warnings=10, skip=COVERAGE_CHECKS)
    assert failing_checks(report) == {"max-warnings"}


def test_2024_ptkb_numbers_must_be_statements_of_the_topic(tmp_path):
    run = json.loads(SAMPLE_2024.read_text())
    run["turns"][0]["responses"][0]["ptkb_provenance"] = [0]
    (tmp_path / "run.json").write_text(json.dumps(run))
    report = validate(tmp_path / "run.json", 2024)
    assert failing_checks(report) == {"ptkb-id"} and report.errors[0].turn == "0_1"


@pytest.mark.parametrize("rank", ["1.0", "1e0"])
def test_a_quoted_rank_int_does_not_read_is_refused_as_the_pinned_protobuf_refuses_it(tmp_path, rank):
    """The official tools pin protobuf 5.26.1 (2024; 4.24.1, 2023), whose JSON parser reads a
    quoted integer with int(): `"1.0"` is no rank there ("invalid literal for int()"), though
    protobuf 7 reads it as 1."""
    run = json.loads(SAMPLE_2024.read_text())
    run["turns"][0]["responses"][0]["rank"] = rank
    (tmp_path / "run.json").write_text(json.dumps(run))
    [finding] = validate(tmp_path / "run.json", 2024).errors
    assert finding.message == f"turns[0].responses[0].rank: '{rank}' is not a 32-bit integer"


def test_2024_missing_topic_turns_are_fatal(tmp_path):
    run = json.loads(SAMPLE_2024.read_text())
    run["turns"] = [t for t in run["turns"] if t["turn_id"] != "0_3"]
    (tmp_path / "run.json").write_text(json.dumps(run))
    report = validate(tmp_path / "run.json", 2024, partial=False)
    assert failing_checks(report) == {"turn-count", "topics-covered"}
    assert any("topic 0 should have 12 turns but has 11" in f.message for f in report.errors)


def test_2024_empty_text_is_fine_for_only_response_runs(tmp_path):
    run = json.loads(SAMPLE_2024.read_text())
    run["run_type"] = "only_response"
    run["turns"][0]["responses"][0]["text"] = ""
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert validate(tmp_path / "run.json", 2024).findings == []


def test_not_json_is_an_error(tmp_path):
    (tmp_path / "run.json").write_text('{"run_name": "x", ')
    assert failing_checks(validate(tmp_path / "run.json", 2023)) == {"json"}


@pytest.mark.parametrize("value, problem", [(HUGE, "an integer of 5000 digits"), (DEEP, "nested more than ")])
def test_json_python_cannot_hold_is_not_json_to_the_validator_as_a_syntax_error_is(tmp_path, value, problem):
    (tmp_path / "run.json").write_text('{"run_name": "x",\n "turns": ' + value + "}")
    [finding] = validate(tmp_path / "run.json", 2023).errors
    assert finding.check == "json" and finding.message.startswith(f"not JSON: {problem}")


@pytest.mark.parametrize("value, problem", [
    (HUGE, re.escape(f"an integer of 5000 digits, more than Python's limit ({sys.get_int_max_str_digits()}) allows")),
    (DEEP, rf"nested more than \d+ levels deep, deeper than Python reads \(its recursion limit is {sys.getrecursionlimit()}\)"),
])
def test_to_trec_of_json_python_cannot_hold_is_a_one_line_error_naming_the_line(tmp_path, capsys, value, problem):
    """It was a ValueError or RecursionError traceback."""
    run = tmp_path / "run.json"
    run.write_text('{"run_name": "x",\n "turns": [], "n": ' + value + "}")
    assert main(["ikat", "to-trec", str(run), "--output", str(tmp_path / "out.run")]) == 2
    assert re.fullmatch(rf"harness ikat to-trec: error: {re.escape(str(run))}:2: not JSON: {problem}\n", capsys.readouterr().err)
    assert not (tmp_path / "out.run").exists()


def test_a_trec_run_given_as_a_submission_is_told_to_go_through_from_trec(tmp_path, capsys):
    """The same hint from `validate` (a finding) and `to-trec` (an error), which read it alike."""
    run = tmp_path / "mine.run"
    run.write_text("9-1_1 Q0 clueweb22-en0038-00-13406:0 1 7.03 mine\n")
    hint = ("not JSON: Extra data (line 1, column 2); this looks like a TREC run ('qid Q0 docid rank score tag'), "
            "not an iKAT submission: `harness ikat from-trec` writes one from it")
    assert [finding.message for finding in validate(run, 2023).errors] == [hint]
    assert main(["ikat", "to-trec", str(run), "--output", str(tmp_path / "out.run")]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {run}:1: {hint.replace(' (line 1, column 2)', '')}\n"


# --- 2025: JSON Lines ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_2025(tmp_path_factory) -> Path:
    """The 2023 sample's answers, turn for turn, laid out for the 2025 test topics."""
    sample, _ = read_submission(SAMPLES_2023 / "sample_run.json")
    qids = [turn.qid for conversation in TOPICS[2025] for turn in conversation.turns]
    turns = tuple(SubmissionTurn(qid, sample.turns[i % len(sample.turns)].responses) for i, qid in enumerate(qids))
    path = tmp_path_factory.mktemp("ikat2025") / "run.jsonl"
    write_submission(path, Submission("sample", "automatic", turns, team_id="harness"), 2025)
    return path


def test_a_2025_file_given_another_year_is_told_to_give_2025(run_2025):
    hint = ("not JSON: Extra data (line 2, column 1); this looks like JSON Lines (an object a line), as iKAT 2025 "
            "submissions are written: give --year 2025")
    assert [finding.message for finding in validate(run_2025, 2023).errors] == [hint]


@pytest.mark.parametrize("given, path, found", [
    (2023, SAMPLE_2024, "eval_response: unknown field (expected one of run_name, run_type, turns)"),
    (2024, SAMPLES_2023 / "sample_run.json", "turns[0].responses[0].ptkb_provenance[0]: {'id': '1', 'text': "),
])
def test_a_json_file_given_the_other_json_year_is_told_to_leave_year_out(tmp_path, capsys, given, path, found):
    """Hundreds of schema errors (a 2024 file as 2023: 603), none saying the file is the other year's: one, as
    --year 2025 on a JSON file gets; to-trec, which reads the file alike, says it too."""
    (error,) = validate(path, given).errors
    other = 2024 if given == 2023 else 2023
    assert error.check == "format-year" and error.message.startswith(f"the file is in the iKAT {other} format, not "
                                                                     f"{given}'s ({found}")
    assert error.message.endswith("): leave --year out (the year is guessed from the file) or give the file's year")
    assert main(["ikat", "to-trec", str(path), "--year", str(given), "--output", str(tmp_path / "out.run")]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path}: {error.message}\n"


def test_to_trec_of_a_2025_file_given_another_year_is_told_to_give_2025(tmp_path, run_2025, capsys):
    assert main(["ikat", "to-trec", str(run_2025), "--year", "2024", "--output", str(tmp_path / "out.run")]) == 2
    assert capsys.readouterr().err.endswith("; this looks like JSON Lines (an object a line), as iKAT 2025 "
                                            "submissions are written: give --year 2025\n")


def test_a_2023_file_given_as_2025_is_one_error_saying_it_is_one_json_document_not_an_error_a_line(tmp_path, capsys):
    """--year 2025 on a 2023/2024 submission: no line of it is a JSON object; one finding says
    what the file is (it was one error for each of its lines, counted as turns)."""
    message = ("ERROR [json]: one JSON document holding a list of turns, as iKAT 2023 and 2024 submissions are "
               "written, not JSON Lines (an object a line): leave --year out (the year is guessed from the file) or "
               "give the file's year\n")
    sample = SAMPLES_2023 / "sample_run.json"  # on one line
    indented = tmp_path / "indented.json"  # as from-trec writes it: a line for each key
    indented.write_text(json.dumps(json.loads(sample.read_text()), indent=2))
    for path in (sample, indented):
        assert main(["ikat", "validate", str(path), "--topics", "ikat2025", "--year", "2025", "--partial"]) == 1
        assert capsys.readouterr() == (message, f"{path.name} (iKAT 2025): 0 turns, 1 errors, 0 warnings: INVALID "
                                                "(1 x error json)\n")


def test_a_trec_run_given_as_2025_is_one_error_told_to_go_through_from_trec(capsys):
    run = data_root() / "cast" / "2021" / "baselines" / "document_runs" / "org_manual_bm25.run"
    assert main(["ikat", "validate", str(run), "--topics", "ikat2025", "--year", "2025", "--quiet"]) == 1
    assert capsys.readouterr().err == ("org_manual_bm25.run (iKAT 2025): 0 turns, 1 errors, 0 warnings: INVALID "
                                       "(1 x error json)\n")
    [finding] = validate(run, 2025, partial=False).findings
    assert finding.message.endswith("is a JSON object; this looks like a TREC run ('qid Q0 docid rank score tag'), "
                                    "not an iKAT submission: `harness ikat from-trec` writes one from it")


@pytest.mark.parametrize("text", ["", "\n  \n\n"])
@pytest.mark.parametrize("partial", [[], ["--partial"]])
def test_a_2025_file_with_no_line_is_one_error_not_valid_nor_an_error_a_turn(tmp_path, capsys, text, partial):
    """It drew 188 turns-covered errors, or with --partial '0 turns, 0 errors: valid'."""
    path = tmp_path / "run.jsonl"
    path.write_text(text)
    assert main(["ikat", "validate", str(path), "--topics", "ikat2025", "--year", "2025", *partial]) == 1
    assert capsys.readouterr() == ("ERROR [json]: the file is empty (or blank lines only): iKAT 2025 submissions are "
                                   "JSON Lines, an object a line for each turn\n",
                                   "run.jsonl (iKAT 2025): 0 turns, 1 errors, 0 warnings: INVALID (1 x error json)\n")


def test_json_lines_told_from_one_document_by_the_rule_that_guesses_the_year(tmp_path, run_2025):
    """The hint agrees with the year guess (harness.jsonl.first_line): a first line of a lone
    no-break space, which the 2025 validator strips, hid it ('Expecting value', no hint)."""
    path = tmp_path / "run.json"
    path.write_text("\u00a0\n" + run_2025.read_text(encoding="utf-8"), encoding="utf-8")
    assert validate_file(path, TOPICS[2025], skip=COVERAGE_CHECKS).year == 2025  # guessed
    [problem] = [finding.message for finding in validate(path, 2023).errors]
    assert problem.endswith("; this looks like JSON Lines (an object a line), as iKAT 2025 submissions are written: "
                            "give --year 2025")


def _edit_line(source: Path, target: Path, edit: Callable[[dict], None], line: int = 0) -> Path:
    lines = source.read_text().splitlines()
    entry = json.loads(lines[line])
    edit(entry)
    lines[line] = json.dumps(entry)
    target.write_text("\n".join(lines) + "\n")
    return target


def test_2025_run_written_by_harness_is_valid(run_2025):
    report = validate(run_2025, 2025, partial=False)
    assert report.turns == 188
    assert report.findings == []


def test_2025_text_may_hold_unicode_line_separators(tmp_path, run_2025):
    """Lines end at '\\n' only: the harness writes text unescaped (ensure_ascii=False), and a
    response may contain U+2028 or U+0085, which str.splitlines would break the line at."""
    lines = run_2025.read_text(encoding="utf-8").split("\n")
    entry = json.loads(lines[0])
    entry["responses"][0]["text"] += " one\u2028two\x85three"
    lines[0] = json.dumps(entry, ensure_ascii=False)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert validate(path, 2025, partial=False).findings == []


def _del(*path) -> Edit:
    def edit(entry: dict) -> None:
        target = entry
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return edit


def _long_answer(entry: dict) -> None:
    entry["responses"][0]["text"] = "word " * 251


def _many_references(entry: dict) -> None:
    entry["references"].update({f"clueweb22-en0000-00-{i:05d}:0": 0.01 for i in range(1001)})


BROKEN_2025: list[tuple[str, str, Edit, str]] = [
    ("turn-id", "warning", _del("turn_id"), None),  # upstream counts no turn for the line; coverage decides
    ("metadata", "error", _del("metadata", "team_id"), "1-1_1"),
    ("metadata", "error", _set(["metadata", "run_type"], "semi"), "1-1_1"),
    ("references", "error", _set(["references"], ["clueweb22-en0004-67-08978:7"]), "1-1_1"),
    ("references", "error", _many_references, "1-1_1"),
    ("references", "warning", _set(["references", "msmarco_v2.1_doc_0"], 0.1), "1-1_1"),
    ("responses", "error", _del("responses", 0, "ptkb_provenance"), "1-1_1"),
    ("responses", "error", _del("responses", 0, "citations"), "1-1_1"),
    ("responses", "error", _set(["responses", 0, "citations", "clueweb22-en0001-01-00001:1"], 1.0), "1-1_1"),
    ("responses", "error", _set(["responses", 0, "text"], None), "1-1_1"),
    ("response-length", "warning", _long_answer, "1-1_1"),
]


@pytest.mark.parametrize("check, level, edit, turn", BROKEN_2025, ids=[f"{r[0]}-{i}" for i, r in enumerate(BROKEN_2025)])
def test_2025_check_fires_on_its_own_breakage(tmp_path, run_2025, check, level, edit, turn):
    path = _edit_line(run_2025, tmp_path / "run.jsonl", edit)
    report = validate(path, 2025)
    named = failing_checks(report) if level == "error" else warned_checks(report)
    assert named == {check}, [str(f) for f in report.findings]
    assert {(f.turn, f.line) for f in report.findings} == {(turn, 1)}


BAD_CITATION = {"clueweb22-en9999-00-00001:1": 1.0}  # in no line's references


@pytest.mark.parametrize("responses, ok", [
    ([{"text": "word " * 300, "citations": BAD_CITATION, "ptkb_provenance": []}], True),
    ([{"text": "A short answer.", "citations": BAD_CITATION, "ptkb_provenance": []},
      {"text": "word " * 300, "citations": {}, "ptkb_provenance": []}], False),
])
def test_2025_responses_are_checked_after_the_official_trim_to_250_words(tmp_path, run_2025, responses, ok):
    """The official validator (--fix-length, on by default) drops responses from the end until the turn fits, then
    checks what is left: a dropped response's bad citation fails nothing; a kept one's still does."""
    path = _edit_line(run_2025, tmp_path / "run.jsonl", lambda entry: entry.update(responses=responses))
    report = validate(path, 2025)
    assert report.ok is ok and ("responses" in failing_checks(report)) is not ok
    (length,) = [f for f in report.warnings if f.check == "response-length"]
    assert length.message.endswith(f"drops responses from the end to fit (1 of {len(responses)} here) and checks only "
                                   "those it keeps")


def test_2025_missing_and_extra_turns_are_errors(tmp_path, run_2025):
    path = _edit_line(run_2025, tmp_path / "run.jsonl", _set(["turn_id"], "99-1_1"))
    report = validate(path, 2025, partial=False)
    assert failing_checks(report) == {"turns-covered", "turns-known"}
    assert {(f.turn, f.message) for f in report.errors} == {
        ("1-1_1", "turn missing from the file"),
        ("99-1_1", "turn is not in the topics"),
    }
    partial = validate(path, 2025, partial=True)  # a partial file may miss turns, not invent them
    assert {(f.turn, f.message) for f in partial.errors} == {("99-1_1", "turn is not in the topics")}


def test_another_years_topics_are_named_as_the_likely_mistake(capsys):
    """The 2024 sample checked as 2024 against the 2023 topics: 244 errors, and a line saying what they have in
    common."""
    assert main(["ikat", "validate", str(SAMPLE_2024), "--topics", "ikat2023", "--year", "2024", "--quiet"]) == 1
    assert ("note: none of the file's 218 turns is a turn of --topics ikat2023 (the file's first: '0_1'): give the "
            "topics of the file's year") in capsys.readouterr().err
    assert main(["ikat", "validate", str(SAMPLE_2024), "--topics", "ikat2024", "--quiet"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_2025_validation_says_that_passages_was_not_used(tmp_path, run_2025, capsys):
    """The 2025 validator looks no passage up: --passages had no effect, and 'valid' said nothing of it."""
    ids = tmp_path / "ids.txt"
    ids.write_text("clueweb22-en0000-00-00000:0\n")
    assert main(["ikat", "validate", str(run_2025), "--topics", "ikat2025", "--passages", str(ids), "--quiet"]) == 0
    assert "note: --passages was not used: the iKAT 2025 validator looks up no passage" in capsys.readouterr().err


def test_2025_repeated_turn_is_a_warning(tmp_path, run_2025):
    path = _edit_line(run_2025, tmp_path / "run.jsonl", _set(["turn_id"], "1-1_2"))
    report = validate(path, 2025)
    assert warned_checks(report) == {"turn-repeated"} and report.ok


def test_2025_lines_not_json_objects_are_named_20_then_counted_in_one_error(tmp_path, run_2025, capsys):
    """A valid first line above a TREC run drew an error for each of its 18570 lines."""
    trec = (data_root() / "cast" / "2021" / "baselines" / "document_runs" / "org_manual_bm25.run").read_text()
    path = tmp_path / "run.jsonl"
    path.write_text(run_2025.read_text().splitlines()[0] + "\n" + trec)
    lines = 1 + trec.count("\n")
    errors = validate(path, 2025).errors
    assert [f.line for f in errors] == list(range(2, 23))
    assert errors[-1].message == f"... and {lines - 21} more lines that are not a JSON object (lines 22 to {lines})"
    assert main(["ikat", "validate", str(path), "--topics", "ikat2025", "--year", "2025", "--partial"]) == 1
    assert capsys.readouterr().out.count("\n") == 21


def test_2025_bad_json_line_is_an_error(tmp_path, run_2025):
    lines = run_2025.read_text().splitlines()
    (tmp_path / "run.jsonl").write_text("\n".join(["{oops", *lines[1:]]) + "\n")
    report = validate(tmp_path / "run.jsonl", 2025)
    assert failing_checks(report) == {"json-object"} and report.errors[0].line == 1


def test_2025_json_line_python_cannot_hold_is_an_error_naming_its_line(tmp_path, run_2025):
    lines = run_2025.read_text().splitlines()
    (tmp_path / "run.jsonl").write_text("\n".join([lines[0], '{"turn_id": ' + DEEP + "}", *lines[2:]]) + "\n")
    report = validate(tmp_path / "run.jsonl", 2025)
    assert [(f.check, f.line) for f in report.errors] == [("json-object", 2)]
    assert report.errors[0].message.startswith("not JSON: nested more than ")


def test_every_registered_check_is_exercised_above():
    exercised = {row[0] for row in BROKEN_2023 + BROKEN_2025} | {
        "schema", "turn-count", "topics-covered", "max-warnings", "json", "json-object",
        "turns-covered", "turns-known", "turn-repeated", "ptkb-present", "passage-count", "passage-exists",
    }  # fmt: skip
    assert set(CHECKS.names()) <= exercised


# --- the command line ------------------------------------------------------------------------


def test_cli_exits_non_zero_on_errors_and_names_the_turn(capsys):
    topics = str(topics_path(2023))
    code = main(["ikat", "validate", str(SAMPLES_2023 / "sample_run_missing_ptkb_fields.json"), "--topics", topics, "--partial"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "ERROR turn 9-1_1 [ptkb-id]" in out
    assert "1 errors, 0 warnings: INVALID" in err


def test_cli_exits_zero_on_a_valid_file(capsys):
    code = main(["ikat", "validate", str(SAMPLE_2024), "--topics", "ikat2024"])
    assert code == 0
    assert "218 turns, 0 errors, 0 warnings: valid" in capsys.readouterr().err


def test_a_passage_id_holding_whitespace_keeps_the_official_verdict_and_a_note_says_to_trec_refuses_it(tmp_path,
                                                                                                       capsys):
    """The official validator only looks such an id up (a 'does not exist' warning with its gRPC
    service): its verdict and counts stand, and a note after them says what the harness refuses."""
    run = json.loads(SAMPLE_2024.read_text())
    passage = run["turns"][0]["responses"][0]["passage_provenance"][0]
    passage["id"] += " "  # as the ids in the organisers' llm-gpt4-pool-depth-30.txt end
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert main(["ikat", "validate", str(path), "--topics", "ikat2024", "--quiet"]) == 0
    assert capsys.readouterr().err == (
        "run.json (iKAT 2024): 218 turns, 0 errors, 0 warnings: valid\n"
        f"note: `harness ikat to-trec` and a hosted leaderboard's run task refuse this file: {path} (record turn 0_1): "
        f"passage_provenance id {passage['id']!r} holds whitespace or a NUL byte, which would split its TREC run "
        "line\n")


def test_a_passage_a_response_lists_again_is_noted_as_dropped_by_to_trec(tmp_path, capsys):
    run = json.loads(SAMPLE_2024.read_text())
    provenance = run["turns"][0]["responses"][0]["passage_provenance"]
    provenance.append({**provenance[0], "score": 0.001})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert main(["ikat", "validate", str(path), "--topics", "ikat2024", "--quiet"]) == 0
    assert capsys.readouterr().err.endswith(
        "0 errors, 0 warnings: valid\nnote: 1 passage is listed again in the same response: `harness ikat to-trec` "
        "keeps the first (as the official generate_run.py), a hosted board too\n")


def test_2025_empty_answers_are_counted_in_a_note_the_official_counts_unchanged(tmp_path, run_2025, capsys):
    """The 2025 validator asks only that a text be a string (no response-text check as in 2023/2024):
    a file of empty answers is valid there, and here, with a note counting them."""
    lines = [json.loads(line) for line in run_2025.read_text().splitlines()]
    for entry in lines[1:]:
        for response in entry["responses"]:
            response["text"] = " "
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    report = validate(path, 2025, partial=False)
    assert report.ok and not report.warnings
    assert main(["ikat", "validate", str(path), "--topics", "ikat2025", "--quiet"]) == 0
    assert capsys.readouterr().err.endswith(
        f"0 errors, 0 warnings: valid\nnote: {len(lines) - 1} of {len(lines)} answers have no text (the first: line 2, "
        f"turn {lines[1]['turn_id']}), which the official iKAT 2025 validator does not check: an empty answer "
        "supports no nugget, it scores 0 on the response task\n")


def test_a_blank_2025_response_beside_others_with_text_is_no_empty_answer(tmp_path, run_2025, capsys):
    """A turn's responses are the sentences of one answer (the validator sums their words and trims
    "sentences from the end"): the answer keeps the text of the others."""
    lines = [json.loads(line) for line in run_2025.read_text().splitlines()]
    lines[1]["responses"].append({"text": " ", "citations": {}, "ptkb_provenance": []})
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    assert main(["ikat", "validate", str(path), "--topics", "ikat2025", "--quiet"]) == 0
    assert capsys.readouterr().err.endswith("0 errors, 0 warnings: valid\n")


def test_ikat_years_are_one_table():
    """A year is one entry of submission.YEARS: its run types, writer and checks module."""
    from harness.ikat.checks import RUN_TYPES
    from harness.ikat.submission import WRITERS, YEARS

    assert sorted(YEARS) == [2023, 2024, 2025]
    assert RUN_TYPES == {year: set(entry.run_types) for year, entry in YEARS.items()}
    for year, entry in YEARS.items():
        assert entry.format in WRITERS
        assert any(year in CHECKS.get(name).years for name in CHECKS), year
    assert [y for y, e in YEARS.items() if e.json_lines] == [2025]


@pytest.mark.parametrize("action", [["validate", "--topics", "ikat2023"], ["to-trec"]])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_harness_run_record_given_for_a_submission_is_one_line_naming_the_from_trec_command(
        run_records, tmp_path, capsys, action, suffix):
    """`harness run`'s record of an iKAT run (runs/<tag>.json, gzipped to send it too) drew 22 errors of the iKAT
    schema: it is named for what it is, with the command that makes a submission of its run."""
    record = tmp_path / f"ikat2023-test.raw.bm25{suffix}"
    data = (run_records / "ikat2023-test.raw.bm25.json").read_bytes()
    record.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    run = tmp_path / "ikat2023-test.raw.bm25.run"
    run.write_bytes((run_records / run.name).read_bytes())
    assert main(["ikat", action[0], str(record), *action[1:]]) == 2
    assert capsys.readouterr().err == (
        f"harness ikat {action[0]}: error: {record}: this is `harness run`'s record of ikat2023-test.raw.bm25.run (its "
        f"provenance and scores), not an iKAT submission: make a submission of {run} instead: `harness ikat from-trec "
        f"{run} --benchmark ikat2023:test --run-name ikat2023-test.raw.bm25 --output "
        "ikat2023-test.raw.bm25.ikat.json`\n")


def test_a_submission_read_from_a_pipe_is_validated_not_read_first_for_a_run_record(run_records, tmp_path, capsys):
    """`cat x.json | harness ikat validate /dev/stdin` (or `<(...)`): the record check read the pipe first and
    left validate nothing ('not JSON': INVALID). A pipe is no record; its bytes are the validator's."""
    import os
    import threading

    submission = tmp_path / "bm25.ikat.json"
    assert main(["ikat", "from-trec", str(run_records / "ikat2023-test.raw.bm25.run"), "--benchmark", "ikat2023:test",
                 "--run-name", "bm25", "--output", str(submission)]) == 0
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as pipe:
            pipe.write(submission.read_bytes())

    threading.Thread(target=feed, daemon=True).start()
    capsys.readouterr()
    try:
        assert main(["ikat", "validate", f"/dev/fd/{read}", "--topics", "ikat2023", "--quiet"]) == 0
    finally:
        os.close(read)
    said = capsys.readouterr().err
    assert re.fullmatch(r"\d+ \(iKAT 2023\): 332 turns, 0 errors, \d+ warnings: valid \(.*\)\n", said), said


def test_a_harness_run_record_of_ptkb_statements_names_from_trec_s_ptkb_run(run_records, capsys):
    record = run_records / "ikat2023-test.ptkb.bm25.json"
    assert main(["ikat", "validate", str(record), "--topics", "ikat2023"]) == 2
    assert capsys.readouterr().err == (
        f"harness ikat validate: error: {record}: this is `harness run`'s record of ikat2023-test.ptkb.bm25.run (its "
        "provenance and scores), not an iKAT submission: make the PTKB provenance of a submission of "
        f"{record.with_suffix('.run')} instead: `harness ikat from-trec PASSAGE_RUN --ptkb-run "
        f"{record.with_suffix('.run')} --benchmark ikat2023:test --run-name ikat2023-test.ptkb.bm25 --output "
        "ikat2023-test.ptkb.bm25.ikat.json`\n")


def test_a_harness_run_record_of_an_ikat_2025_run_names_the_team_and_a_json_lines_output(run_records, tmp_path,
                                                                                          capsys):
    """The 2025 format is JSON Lines naming the team: from-trec refuses to write it without --team-id. (The
    iKAT 2023 run's record, its topics made iKAT 2025's: a 2025 run needs ClueWeb22.)"""
    record = json.loads((run_records / "ikat2023-test.raw.bm25.json").read_text(encoding="utf-8"))
    record["config"]["topics"] = "ikat2025:test"
    path = tmp_path / "ikat2023-test.raw.bm25.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["ikat", "validate", str(path), "--topics", "ikat2025"]) == 2
    assert capsys.readouterr().err.endswith(
        "make a submission of that run instead (it is not beside this record): `harness ikat from-trec "
        "ikat2023-test.raw.bm25.run --benchmark ikat2025:test --run-name ikat2023-test.raw.bm25 --team-id TEAM "
        "--output ikat2023-test.raw.bm25.ikat.jsonl`\n")


def test_a_harness_run_record_of_a_plugin_ikat_benchmark_naming_no_year_names_from_trec_with_a_year_to_give(
        run_records, tmp_path, capsys):
    """It said `--benchmark 'myikat:test' names no iKAT year: give --year`, of a --benchmark not given (validate's
    --year does not help): the from-trec command holds `--year YEAR`, said what to give."""
    from harness.registry import declare
    from harness.topics import ADAPTERS, load
    from harness.topics.ikat import FIELDS

    record = json.loads((run_records / "ikat2023-test.raw.bm25.json").read_text(encoding="utf-8"))
    record["config"]["topics"] = "myikat:test"
    path = tmp_path / "ikat2023-test.raw.bm25.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    run = tmp_path / "ikat2023-test.raw.bm25.run"
    run.write_bytes((run_records / run.name).read_bytes())
    mine = declare("iKAT 2023's turns by another name", splits=("test",), fields=FIELDS)(lambda split: load("ikat2023"))
    with ADAPTERS.using({"myikat": mine}):
        assert main(["ikat", "validate", str(path), "--topics", "ikat2023"]) == 2
    assert capsys.readouterr().err.endswith(
        f"make a submission of {run} instead: `harness ikat from-trec {run} --benchmark myikat:test --year YEAR "
        "--run-name ikat2023-test.raw.bm25 --output ikat2023-test.raw.bm25.ikat.json` (YEAR: the iKAT format to "
        "write, 2023, 2024, 2025, as myikat:test names no year; 2025's, JSON Lines, also needs --team-id TEAM and a "
        ".jsonl output)\n")


def test_a_harness_run_record_of_other_topics_given_for_a_submission_says_from_trec_does_not_take_them(
        run_records, capsys):
    record = run_records / "pragmaticqa-val.raw.bm25.json"
    assert main(["ikat", "validate", str(record), "--topics", "ikat2023"]) == 2
    assert capsys.readouterr().err == (
        f"harness ikat validate: error: {record}: this is `harness run`'s record of pragmaticqa-val.raw.bm25.run (its "
        "provenance and scores), not an iKAT submission, and its run ranks the queries of pragmaticqa:val, which "
        "`harness ikat from-trec` does not take (it takes ikat2023, ikat2024, ikat2025)\n")
