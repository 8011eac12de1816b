"""Writing iKAT submissions from TREC rankings, and converting them back (`harness ikat to-trec`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.evaluate import evaluate
from harness.ikat.convert import read_rankings
from harness.ikat.ptkb import rank_ptkb
from harness.ikat.submission import build_submission, cap_words, word_count, write_submission
from harness.ikat.validate import validate_file
from harness.paths import data_root
from harness.retrieve import SearchQuery, build
from harness.topics.ikat import topics_path
from harness.trec import Run, canonical_order, read_run, write_run

SAMPLE_2023 = data_root() / "ikat" / "2023" / "scripts" / "run_validation" / "tests" / "data" / "sample_run.json"


@pytest.fixture(scope="module")
def bm25_rankings(ikat_cache, ikat2023):
    """BM25 over the real 2023 provenance passages, with the manual rewrites of all 332 turns."""
    retriever = build("bm25", corpus=ikat2023.corpus)
    queries = [SearchQuery(turn.qid, turn.manual_rewrite) for turn in ikat2023.turns]
    hits = retriever.search(queries, 100)
    return {qid: [(hit.docid, hit.score) for hit in ranking] for qid, ranking in hits.items()}


@pytest.fixture(scope="module")
def ptkb_rankings(ikat_cache, ikat2023):
    return rank_ptkb(ikat2023, "bm25")


@pytest.fixture(scope="module")
def submission(ikat2023, bm25_rankings, ptkb_rankings):
    return build_submission(
        bm25_rankings,
        ikat2023.corpus,
        run_name="bm25 manual",
        run_type="manual",
        ptkb_rankings=ptkb_rankings,
        conversations=ikat2023.conversations,
        team_id="harness",
    )


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_response_is_the_top_passage_capped_at_250_words(submission, ikat2023):
    texts = {d.id: d.contents for d in ikat2023.corpus.documents()}
    for turn in submission.turns:
        (response,) = turn.responses
        if response.passage_provenance:
            top = response.passage_provenance[0]
            assert top.used and response.text == cap_words(texts[top.id])
            assert word_count(response.text) <= 250
    assert any(word_count(texts[t.responses[0].passage_provenance[0].id]) > 250 for t in submission.turns if t.responses[0].passage_provenance)


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_ptkb_provenance_carries_the_topics_statement_texts(submission, ikat2023):
    statements = {t.qid: {s.id: s.text for s in c.personal} for c in ikat2023.conversations for t in c.turns}
    provenance = [(turn.turn_id, p) for turn in submission.turns for p in turn.responses[0].ptkb_provenance]
    assert provenance
    assert all(p.text == statements[qid][p.id] for qid, p in provenance)


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
@pytest.mark.parametrize("year", [2023, 2025])
def test_round_trip_rankings_submission_validates_and_converts_back(tmp_path, ikat2023, submission, bm25_rankings, year):
    path = tmp_path / ("run.jsonl" if year == 2025 else "run.json")
    write_submission(path, submission, year)
    report = validate_file(path, ikat2023.conversations, year)
    assert report.ok, [str(f) for f in report.errors]
    assert report.turns == 332

    original = tmp_path / "original.run"
    write_run(original, bm25_rankings.items(), "bm25")
    converted = tmp_path / "converted.run"
    assert main(["ikat", "to-trec", str(path), "--out", str(converted)]) == 0
    before, after = read_run(original), read_run(converted)
    # 2023: the track's conversion scales a passage's score by 1 / (response rank + 1) in a
    # 32-bit float; 2025 prints it with 6 decimals. Ties are then ranked by id descending.
    converted_rankings = read_rankings(path).passages
    assert set(converted_rankings) == set(bm25_rankings)
    factor = 0.5 if year == 2023 else 1.0
    for qid, ranking in bm25_rankings.items():
        assert dict(converted_rankings[qid]) == pytest.approx({d: factor * s for d, s in ranking}, rel=1e-6)
        assert converted_rankings[qid] == canonical_order(converted_rankings[qid])
        assert [d for d, _ in after.ranked(qid)] == [d for d, _ in converted_rankings[qid]]
    qrels = ikat2023.qrels()
    assert evaluate(qrels, after, ["nDCG@5"]).means == pytest.approx(evaluate(qrels, before, ["nDCG@5"]).means, abs=1e-3)


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_ptkb_provenance_converts_to_a_ptkb_run(tmp_path, submission, ptkb_rankings):
    path = tmp_path / "run.json"
    write_submission(path, submission, 2023)
    runs = read_rankings(path)
    assert dict(runs.ptkb) == {qid: ranking[:3] for qid, ranking in ptkb_rankings.items() if ranking}


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_2024_writes_ptkb_statement_numbers(tmp_path, submission):
    path = tmp_path / "run.json"
    write_submission(path, submission, 2024)
    run = json.loads(path.read_text())
    assert run["eval_response"] is True
    numbers = [p for t in run["turns"] for r in t["responses"] for p in r["ptkb_provenance"]]
    assert numbers and all(isinstance(n, int) for n in numbers)


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_2025_lines_cite_the_used_passages_among_the_references(tmp_path, submission):
    path = tmp_path / "run.jsonl"
    write_submission(path, submission, 2025)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(entries) == 332
    assert entries[0]["metadata"] == {"team_id": "harness", "run_id": "bm25 manual", "run_type": "manual"}
    for entry in entries:
        for response in entry["responses"]:
            assert set(response["citations"]) <= set(entry["references"])


def test_official_conversion_first_occurrence_wins_scaled_by_response_rank():
    """The sample run repeats passages across its three responses (ranks 1-3)."""
    sample = json.loads(SAMPLE_2023.read_text())
    runs = read_rankings(SAMPLE_2023)
    for turn in sample["turns"]:
        expected: dict[str, float] = {}
        for response in turn["responses"]:
            for passage in response["passage_provenance"]:
                expected.setdefault(passage["id"], passage["score"] / (response["rank"] + 1))
        ranking = runs.passages[turn["turn_id"]]
        assert dict(ranking) == pytest.approx(expected, rel=1e-7)  # run.proto scores are 32-bit floats
        assert ranking == canonical_order(ranking)  # score descending, ties by id descending


def test_cap_words_counts_as_the_2025_validator():
    assert cap_words("a  b\u00a0c d", 3) == "a b c"  # NFKC turns the no-break space into a space
    assert word_count("a  b\u00a0c d") == 4


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_2024_file_converts_back_to_the_same_ranking(tmp_path, submission, bm25_rankings):
    path = tmp_path / "run.json"
    write_submission(path, submission, 2024)
    runs = read_rankings(path)
    assert dict(runs.passages) == {
        qid: [(docid, 0.5 * score) for docid, score in ranking] for qid, ranking in bm25_rankings.items()
    }
    assert all(ranking for ranking in runs.ptkb.values())


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_cli_writes_the_ptkb_run(tmp_path, submission, ptkb_rankings):
    path = tmp_path / "run.json"
    write_submission(path, submission, 2023)
    out, ptkb_out = tmp_path / "passages.run", tmp_path / "ptkb.run"
    assert main(["ikat", "to-trec", str(path), "--out", str(out), "--ptkb-out", str(ptkb_out)]) == 0
    ptkb = read_run(ptkb_out)
    assert ptkb.name == "ptkb" and set(ptkb.scores) == {qid for qid, ranking in ptkb_rankings.items() if ranking}
    for qid, ranking in ptkb_rankings.items():
        if ranking:
            assert [pid for pid, _ in ptkb.ranked(qid)] == [pid for pid, _ in ranking[:3]]


@pytest.mark.parametrize("cut, message", [
    (lambda turn: turn.pop("turn_id"), ": turns[0].turn_id: missing or empty, expected the turn's id"),
    (lambda turn: turn["responses"][0]["passage_provenance"][0].pop("id"),
     " (record turn 9-1_1): a passage_provenance id is missing or empty"),
])
def test_to_trec_of_a_turn_or_passage_without_its_id_names_the_submission_not_the_output(tmp_path, capsys, cut,
                                                                                          message):
    """generate_run.py writes a line with an empty field; the error is the input's, not 'cannot write OUT'."""
    run = json.loads(SAMPLE_2023.read_text())
    cut(run["turns"][0])
    path, out = tmp_path / "run.json", tmp_path / "out.run"
    path.write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path}{message}\n"
    assert not out.exists()


def test_to_trec_counts_the_turns_its_run_file_holds_and_those_ranking_no_passage(tmp_path, capsys):
    """A turn whose responses cite no passage has no line in the run: not counted among its turns."""
    run = json.loads(SAMPLE_2023.read_text())
    for response in run["turns"][0]["responses"]:
        response["passage_provenance"] = []
    path, out = tmp_path / "run.json", tmp_path / "out.run"
    path.write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0
    written = read_run(out)
    lines = sum(map(len, written.scores.values()))
    assert capsys.readouterr().err == (f"{out}: {lines} passages over {len(written.scores)} turns (1 turn of the "
                                       "submission ranks no passage)\n")
    assert len(written.scores) == len(run["turns"]) - 1


def test_to_trec_whose_default_output_beside_the_submission_cannot_be_written_says_to_give_output(tmp_path, capsys):
    """The run goes beside the submission unless --output says where: a place there that cannot
    be written (a read-only folder, here a folder in its way) is told the option."""
    path = tmp_path / "s.json"
    path.write_text(SAMPLE_2023.read_text())
    (tmp_path / "s.run").mkdir()
    assert main(["ikat", "to-trec", str(path)]) == 2
    assert capsys.readouterr().err == (f"harness ikat to-trec: error: cannot write {tmp_path / 's.run'} (the default "
                                       "output, beside the submission): it is a folder; give --output\n")


def test_to_trec_never_writes_its_default_output_into_the_installed_package(tmp_path, capsys, monkeypatch):
    """An install's shipped sample run lies in site-packages: a run written beside it would be a
    file pip neither records nor removes (here the package's folder is tmp_path)."""
    monkeypatch.setattr("harness.paths.PACKAGE_ROOT", tmp_path)
    path = tmp_path / "_data" / "sample_run.json"
    path.parent.mkdir()
    path.write_text(SAMPLE_2023.read_text())
    assert main(["ikat", "to-trec", str(path)]) == 2
    assert capsys.readouterr().err == (f"harness ikat to-trec: error: cannot write {path.with_suffix('.run')} (the "
                                       "default output, beside the submission): it is inside the installed harness "
                                       "package; give --output\n")
    assert sorted(path.parent.iterdir()) == [path]
    assert main(["ikat", "to-trec", str(path), "--output", str(tmp_path / "mine.run")]) == 0


def test_to_trec_counts_the_passages_a_response_lists_again_which_it_drops(tmp_path, capsys):
    """generate_run.py keeps a passage's first occurrence: a repeat in one response is said and
    counted, as `harness eval` counts a run's repeated documents, not dropped silently."""
    run = json.loads(SAMPLE_2023.read_text())
    provenance = run["turns"][0]["responses"][0]["passage_provenance"]
    provenance.append({**provenance[0], "score": 0.001})
    path, out = tmp_path / "run.json", tmp_path / "out.run"
    path.write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0
    written = read_run(out)
    assert capsys.readouterr().err == (f"{out}: {sum(map(len, written.scores.values()))} passages over "
                                       f"{len(written.scores)} turns; 1 repeated passage dropped (listed again in the "
                                       "same response: the first kept)\n")
    first = run["turns"][0]
    assert written.scores[first["turn_id"]][provenance[0]["id"]] > 0.001  # the first occurrence's score


def test_passages_a_response_lists_again_are_the_runs_duplicates_those_two_responses_cite_are_not(tmp_path):
    """The passage ranking is a `Run`: each response ranks passages, so one it lists again is a
    repeated document (counted in `duplicates`, the first named in `repeated`); one that
    another response cites too (the sample's three responses share passages) is no repeat."""
    run = json.loads(SAMPLE_2023.read_text())
    turn = run["turns"][1]
    provenance = turn["responses"][1]["passage_provenance"]
    provenance.append({**provenance[2], "score": 0.001})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    passages = read_rankings(path).passages
    assert isinstance(passages, Run)
    assert (passages.duplicates, passages.repeated) == (1, (turn["turn_id"], provenance[2]["id"]))
    assert read_rankings(SAMPLE_2023).passages.duplicates == 0


def test_to_trec_of_a_turn_given_twice_counts_the_repeats_of_the_occurrence_it_converts(tmp_path, capsys):
    """A turn given twice is converted from its last occurrence (README): a passage the other
    one lists twice is dropped with all of that occurrence, not 'listed again ...: the first kept'."""
    run = json.loads(SAMPLE_2023.read_text())
    run["turns"].append(json.loads(json.dumps(run["turns"][0])))
    provenance = run["turns"][0]["responses"][0]["passage_provenance"]
    provenance.append(provenance[0])
    path, out = tmp_path / "run.json", tmp_path / "out.run"
    path.write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0
    assert "repeated" not in capsys.readouterr().err


def test_a_turn_given_twice_keeps_no_ptkb_ranking_of_the_occurrence_it_drops(tmp_path):
    """The last occurrence of a turn is converted, its PTKB provenance with its passages: an
    earlier occurrence's PTKB statements are not kept beside a later one that cites none."""
    run = json.loads(SAMPLE_2023.read_text())
    again = json.loads(json.dumps(run["turns"][0]))
    for response in again["responses"]:
        response["ptkb_provenance"] = []
    run["turns"].append(again)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert again["turn_id"] not in read_rankings(path).ptkb


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_cli_from_trec_writes_a_valid_submission(tmp_path, ikat2023, bm25_rankings, ptkb_rankings):
    passages, ptkb = tmp_path / "bm25.run", tmp_path / "ptkb.run"
    write_run(passages, bm25_rankings.items(), "bm25")
    write_run(ptkb, ptkb_rankings.items(), "ptkb")
    out = tmp_path / "submission.json"
    code = main(["ikat", "from-trec", str(passages), "--benchmark", "ikat2023", "--year", "2023",
                 "--run-name", "bm25", "--ptkb-run", str(ptkb), "--out", str(out)])  # fmt: skip
    assert code == 0
    assert main(["ikat", "validate", str(out), "--topics", str(topics_path(2023)), "--quiet"]) == 0
    assert [t["turn_id"] for t in json.loads(out.read_text())["turns"]] == [t.qid for t in ikat2023.turns]


@pytest.mark.java
@pytest.mark.slow  # the BM25 rankings of all 2023 turns
def test_from_trec_keeps_the_top_statements_of_a_ptkb_run_its_help_says(tmp_path, capsys, bm25_rankings,
                                                                          ptkb_rankings):
    """A longer PTKB ranking is cut to its top PTKB_DEPTH per turn; the help says so (it did not)."""
    from harness.ikat.submission import PTKB_DEPTH

    passages, ptkb, out = tmp_path / "bm25.run", tmp_path / "ptkb.run", tmp_path / "submission.json"
    write_run(passages, bm25_rankings.items(), "bm25")
    write_run(ptkb, ptkb_rankings.items(), "ptkb")
    assert main(["ikat", "from-trec", str(passages), "--benchmark", "ikat2023", "--run-name", "bm25",
                 "--ptkb-run", str(ptkb), "--output", str(out)]) == 0
    listed = {turn["turn_id"]: [p["id"] for p in turn["responses"][0]["ptkb_provenance"]]
              for turn in json.loads(out.read_text())["turns"]}
    assert any(len(ranking) > PTKB_DEPTH for ranking in ptkb_rankings.values())
    assert listed == {qid: [pid for pid, _ in ptkb_rankings.get(qid, [])[:PTKB_DEPTH]] for qid in listed}
    with pytest.raises(SystemExit):
        main(["ikat", "from-trec", "--help"])
    assert f"its top {PTKB_DEPTH} per turn are written" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("change, message", [
    ({}, "none of its"),  # a CAsT run: not one of its queries is an iKAT turn
    ({"--benchmark": "cast2021"}, "takes an iKAT benchmark"),
    ({"--run-type": "semi-automatic"}, "is not one of automatic, manual"),
    ({"--depth": "0"}, "must be a whole number from 1 to 1000"),
    ({"--depth": "2000"}, "must be a whole number from 1 to 1000"),
])
def test_from_trec_refuses_what_would_make_an_empty_or_invalid_submission(tmp_path, capsys, change, message):
    from tests.conftest import CAST2021_DOC_RUNS

    options = {"--benchmark": "ikat2023", "--year": "2023", "--run-name": "x", "--output": str(tmp_path / "s.json"),
               **change}
    argv = ["ikat", "from-trec", str(CAST2021_DOC_RUNS[0]), *[item for pair in options.items() for item in pair]]
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own usage error
        code = stop.code
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("year, edit, message", [
    (2023, lambda run: run["turns"][0].update(turn_id="9-1_1 "),
     ": turns[0].turn_id: '9-1_1 ' holds whitespace or a NUL byte, which would split its TREC run line"),
    (2023, lambda run: run["turns"][0]["responses"][0]["passage_provenance"][0].update(
        id="clueweb22-en0004-67-08978:7 "),
     " (record turn 9-1_1): passage_provenance id 'clueweb22-en0004-67-08978:7 ' holds whitespace or a NUL byte, "
     "which would split its TREC run line"),
    (2025, lambda line: line.update(references={"clueweb22-en0000-00-00000:1\u00000": 1.0}),
     ":1: references: passage id 'clueweb22-en0000-00-00000:1\\x000' holds whitespace or a NUL byte, "
     "which would split its TREC run line"),
    (2025, lambda line: line.update(turn_id="1_1\t", references={"clueweb22-en0000-00-00000:1": 1.0}),
     ":1: turn_id '1_1\\t' holds whitespace or a NUL byte, which would split its TREC run line"),
    (2025, lambda line: line.update(responses=[{"ptkb_provenance": ["1 x"]}]),
     ":1: ptkb_provenance id '1 x' holds whitespace or a NUL byte, which would split its TREC run line"),
])
def test_to_trec_of_an_id_holding_whitespace_names_the_submission_not_the_output(tmp_path, capsys, year, edit,
                                                                                 message):
    """The validators take such an id (a passage id is only looked up in the collection), but its
    TREC line would split at it: the submission is named, as for an empty id (was 'cannot write OUT')."""
    if year == 2023:
        run = json.loads(SAMPLE_2023.read_text())
        edit(run)
        text = json.dumps(run)
    else:
        line = {"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1_1",
                "responses": [], "references": {}}
        edit(line)
        text = json.dumps(line) + "\n"
    path, out, ptkb_out = tmp_path / ("run.json" if year == 2023 else "run.jsonl"), tmp_path / "out.run", tmp_path / "p.run"
    path.write_text(text)
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path}{message}\n"
    assert not out.exists() and not ptkb_out.exists()


@pytest.mark.parametrize("year, edit, message", [
    (2023, lambda run: (run["turns"][0].update(turn_id="9-1_1 "), run["turns"][1]["responses"][0].update(rank=-1)),
     " (record turn 9-1_2): a response has rank -1: its scale 1 / (rank + 1) is a division by zero; ranks start at 1"),
    (2025, lambda lines: (lines[0].update(turn_id="1_1\t"), lines.append("{")),
     ":2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
])
def test_to_trec_names_a_part_that_does_not_read_before_an_earlier_id_that_cannot_be_written(
        tmp_path, capsys, year, edit, message):
    """Ids are checked once the whole submission has been read: of two problems, a later turn or
    line that does not read is the one named, not an earlier id holding whitespace."""
    if year == 2023:
        run = json.loads(SAMPLE_2023.read_text())
        edit(run)
        path, text = tmp_path / "run.json", json.dumps(run)
    else:
        lines: list[Any] = [{"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1_1",
                             "responses": [], "references": {"clueweb22-en0000-00-00000:1": 1.0}}]
        edit(lines)
        path, text = tmp_path / "run.jsonl", "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                                                      for line in lines)
    path.write_text(text)
    out = tmp_path / "out.run"
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path}{message}\n"
    assert not out.exists()


def test_to_trec_of_a_2025_turn_given_twice_takes_the_later_line_whole(tmp_path, capsys):
    """Its passages and its PTKB statements alike (a PTKB ranking of the earlier line was kept
    beside the later line's passages, and its bad id was named by the later line)."""
    first = {"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1_1",
             "responses": [{"ptkb_provenance": ["1 x"]}], "references": {"clueweb22-en0000-00-00000:1": 1.0}}
    later = {**first, "responses": [{"ptkb_provenance": ["2"]}], "references": {"clueweb22-en0000-00-00001:1": 1.0}}
    path, out, ptkb_out = tmp_path / "run.jsonl", tmp_path / "out.run", tmp_path / "p.run"
    path.write_text(json.dumps(first) + "\n" + json.dumps(later) + "\n")
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 0
    assert out.read_text().split()[2] == "clueweb22-en0000-00-00001:1"
    assert ptkb_out.read_text().split()[:3] == ["1_1", "Q0", "2"]


def _ptkb_2025(tmp_path: Path, provenance: Any) -> tuple[Path, Path, Path]:
    """A 2025 submission of one turn whose response's ptkb_provenance is `provenance`: (it, out, ptkb out)."""
    line = {"metadata": {"team_id": "t", "run_id": "r", "run_type": "automatic"}, "turn_id": "1-1_1",
            "responses": [{"text": "A.", "citations": {}, "ptkb_provenance": provenance}],
            "references": {"clueweb22-en0000-00-00000:1": 1.0}}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path, tmp_path / "out.run", tmp_path / "p.run"


def test_a_2025_ptkb_provenance_null_is_none_as_a_missing_one_is(tmp_path, capsys):
    """JSON's null for a field is its default; the 2025 validator takes it: no PTKB provenance,
    not a ptkb_provenance that is no list of ids."""
    path, out, ptkb_out = _ptkb_2025(tmp_path, None)
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 2
    assert "lists no PTKB provenance for any turn" in capsys.readouterr().err
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0
    assert out.read_text().split()[2] == "clueweb22-en0000-00-00000:1"


def _sample_2023_without(provenance: str, folder: Path) -> tuple[Path, Path, Path]:
    """The official 2023 sample with every response's `provenance` list emptied, and where its
    passage and PTKB runs would go."""
    run = json.loads(SAMPLE_2023.read_text())
    for turn in run["turns"]:
        for response in turn["responses"]:
            response[provenance] = []
    path = folder / "run.json"
    path.write_text(json.dumps(run))
    return path, folder / "out.run", folder / "out.ptkb.run"


def test_a_submission_listing_no_ptkb_provenance_is_an_error_with_ptkb_out_not_an_empty_ptkb_run(tmp_path, capsys):
    """As a file ranking no passage is (eval refuses an empty run): the official 2023 sample
    with its PTKB provenance left out (from-trec without --ptkb-run writes such a file), and
    neither run is written."""
    path, out, ptkb_out = _sample_2023_without("ptkb_provenance", tmp_path)
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 2
    assert capsys.readouterr().err == (
        f"harness ikat to-trec: error: {path}: lists no PTKB provenance for any turn: its PTKB run would rank "
        "nothing: convert its passages alone, or write it with PTKB provenance (harness ikat from-trec --ptkb-run)\n")
    assert not out.exists() and not ptkb_out.exists()
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0 and read_run(out).scores


def test_a_submission_listing_ptkb_provenance_alone_is_an_error_not_an_empty_passage_run(tmp_path, capsys):
    """The official 2023 sample with its passage provenance left out: its PTKB provenance does
    not make an empty passage run a run (it was written, 0 bytes, and exit 0)."""
    path, out, ptkb_out = _sample_2023_without("passage_provenance", tmp_path)
    for extra in ([], ["--ptkb-out", str(ptkb_out)]):
        assert main(["ikat", "to-trec", str(path), "--output", str(out), *extra]) == 2
        assert capsys.readouterr().err.endswith(f"{path}: ranks no passage for any turn: its passage run would rank "
                                                "nothing; it lists PTKB provenance alone\n")
        assert not out.exists() and not ptkb_out.exists()


@pytest.mark.parametrize("provenance", [3, [None], [{"id": 1}], [True]])
def test_a_2025_ptkb_provenance_that_is_not_a_list_of_ids_stops_only_the_ptkb_run(tmp_path, capsys, provenance):
    """Neither the 2025 validator nor generate_run.py reads the field: the passage run is
    written (a hosted board scores it), a PTKB run cannot be, and nothing is written then
    (an entry that is no id was written as `None`)."""
    path, out, ptkb_out = _ptkb_2025(tmp_path, provenance)
    line = json.loads(path.read_text())
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 2
    assert capsys.readouterr().err == (f"harness ikat to-trec: error: {path}:1: ptkb_provenance: expected a list of "
                                       "statement ids (strings or integers)\n")
    assert not out.exists() and not ptkb_out.exists()
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 0
    assert out.read_text().split() == ["1-1_1", "Q0", "clueweb22-en0000-00-00000:1", "1", "1.000000", "r"]
    out.unlink()  # the turn given again with a list: that later line is the turn's, so the PTKB run is written
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "responses": [{"ptkb_provenance": [2]}]}) + "\n")
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 0
    assert ptkb_out.read_text().split()[:3] == ["1-1_1", "Q0", "2"]


@pytest.mark.parametrize("statement, problem", [
    ("1 x", "'1 x' holds whitespace or a NUL byte, which would split its TREC run line"),
    ("", "is missing or empty"),
])
def test_to_trec_checks_ptkb_ids_before_writing_either_run(tmp_path, capsys, statement, problem):
    """The passage run was written, then the PTKB run failed with 'cannot write PTKB_OUT': half the job done."""
    run = json.loads(SAMPLE_2023.read_text())
    run["turns"][0]["responses"][0]["ptkb_provenance"][0]["id"] = statement
    path, out, ptkb_out = tmp_path / "run.json", tmp_path / "out.run", tmp_path / "out.ptkb.run"
    path.write_text(json.dumps(run))
    assert main(["ikat", "to-trec", str(path), "--output", str(out), "--ptkb-out", str(ptkb_out)]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path} (record turn 9-1_1): ptkb_provenance id {problem}\n"
    assert not out.exists() and not ptkb_out.exists()


@pytest.mark.parametrize("name, message", [
    ("empty-turn-id@1.jsonl", ":1: expected a non-empty turn_id (string)"),
    ("empty-passage-id@2.jsonl", ":2: expected references {passage id: score}, each passage id non-empty"),
])
def test_to_trec_of_a_2025_line_says_which_id_is_empty(tmp_path, capsys, name, message):
    path, out = Path(__file__).parent / "malformed" / "ikat2025" / name, tmp_path / "out.run"
    assert main(["ikat", "to-trec", str(path), "--output", str(out)]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {path}{message}\n"
    assert not out.exists()
