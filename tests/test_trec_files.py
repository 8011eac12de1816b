"""The one ranking type (`Run` of best-first `Hit`s), run writing (atomic, streaming, strictly
decreasing scores) and passage -> document runs."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from harness.errors import HarnessError
from harness.trec import Hit, Run, kept_ranking, maxp, passage_document, read_run, write_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS


def test_a_run_maps_each_query_to_its_ranking_as_hits_best_first():
    run = Run.of({"q1": [("d3", 3.5), ("d1", 2.25)], "q2": []})
    assert list(run) == ["q1", "q2"] and "q2" in run and "q3" not in run
    assert run["q1"] == [Hit("d3", 3.5), Hit("d1", 2.25)] and run["q1"][0].docid == "d3" and run["q2"] == []
    assert list(run.pairs("q1", 1)) == [("d3", 3.5)] and list(run.pairs("q3")) == []


def test_a_document_repeated_in_a_ranking_keeps_its_first_score_as_read_run_keeps_it(tmp_path):
    ranking = [("d1", 2.0), ("d2", 1.5), ("d1", 1.0)]
    run = Run.of({"q1": ranking})
    assert run["q1"] == [("d1", 2.0), ("d2", 1.5)] and run.duplicates == 1
    write_run(tmp_path / "r.run", [("q1", ranking)], tag="t")
    assert read_run(tmp_path / "r.run").scores == run.scores


def test_rankings_kept_where_they_were_found_make_the_run_of_their_hits():
    """A retriever's worker threads keep each ranking as a Run keeps it (`kept_ranking`): the
    same run, repeats, their count and the first of them included (a plug-in answering a
    document twice is told which, whichever way its run was made)."""
    rankings = {"q1": [("d1", 2.0), ("d2", 1.5), ("d2", 1.2), ("d1", 1.0)], "q2": [("d2", 1.0)], "q3": []}
    kept = {qid: kept_ranking(ranking) for qid, ranking in rankings.items()}
    assert kept["q1"] == ({"d1": 2.0, "d2": 1.5}, 2, "d2")
    assert Run.of_kept(kept) == Run.of(rankings) and Run.of_kept(kept).duplicates == 2
    assert Run.of_kept(kept).repeated == Run.of(rankings).repeated == ("q1", "d2")


def test_two_runs_are_equal_only_when_they_rank_in_the_same_order():
    assert Run.of({"q": [("a", 1.0), ("b", 1.0)]}) == Run.of({"q": [("a", 1.0), ("b", 1.0)]})
    assert Run.of({"q": [("a", 1.0), ("b", 1.0)]}) != Run.of({"q": [("b", 1.0), ("a", 1.0)]})


def test_a_run_written_reads_back_as_the_same_rankings(tmp_path):
    """What is scored (the file read back) is what the retriever answered."""
    run = Run.of({"q1": [("d3", 3.5), ("d1", 2.25)], "q2": [("d2", 1.0)]})
    write_run(tmp_path / "r.run", ((qid, run.pairs(qid)) for qid in run), tag="t")
    assert dict(read_run(tmp_path / "r.run")) == dict(run)


def test_a_run_is_hashed_as_it_is_written_to_the_sha256_of_the_file(tmp_path):
    """`harness run` records the run file's sha256 from the bytes it writes, not by reading the file back."""
    path, digest = tmp_path / "r.run", hashlib.sha256()
    lines = write_run(path, [("q1", [("d3", 3.5), ("d1", 2.25)]), ("q2", []), ("q3", [("d\u00e9", 1.0)])], tag="t",
                      digest=digest)
    assert lines == 3 and digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_written_run_reads_back_with_the_same_order(tmp_path):
    path = tmp_path / "r.run"
    write_run(path, [("q1", [("d3", 3.5), ("d1", 2.25)]), ("q2", [("d2", 1.0)])], tag="demo")
    assert path.read_text() == (
        "q1 Q0 d3 1 3.500000 demo\nq1 Q0 d1 2 2.250000 demo\nq2 Q0 d2 1 1.000000 demo\n")
    assert read_run(path).ranked("q1") == [("d3", 3.5), ("d1", 2.25)]


def test_tied_scores_are_written_strictly_decreasing_so_trec_eval_keeps_the_order(tmp_path):
    path = tmp_path / "r.run"
    write_run(path, [("q1", [("a", 1.0), ("b", 1.0), ("c", 1.0)])], tag="t")
    assert [line.split()[4] for line in path.read_text().splitlines()] == ["1.000000", "0.999999", "0.999998"]
    assert [docid for docid, _ in read_run(path).ranked("q1")] == ["a", "b", "c"]


@pytest.mark.parametrize("score", [0.1, -9e9, 2.0 ** 33, 4852613493.920177, -4852613493.920177, 1e17, -1e300])
def test_tied_scores_of_any_size_are_written_strictly_decreasing(tmp_path, score):
    """Six decimals cannot tell every float from 2**32 on apart (4852613493.920177 printed
    twice), nor does a step of 1e-6 exist past 2**33 (1e17 printed thrice)."""
    path = tmp_path / "r.run"
    write_run(path, [("q1", [(f"d{i}", score) for i in range(20)])], tag="t")
    printed = [float(line.split()[4]) for line in path.read_text().splitlines()]
    assert all(above > below for above, below in zip(printed, printed[1:])) and printed[0] == round(score, 6)
    assert [docid for docid, _ in read_run(path).ranked("q1")] == [f"d{i}" for i in range(20)]


def test_a_tie_at_the_most_negative_float_is_kept_not_written_as_minus_inf(tmp_path):
    lowest = -sys.float_info.max
    write_run(tmp_path / "r.run", [("q1", [("a", 1.0), ("b", lowest), ("c", lowest)])], tag="t")
    assert read_run(tmp_path / "r.run").ranked("q1")[1:] == [("c", lowest), ("b", lowest)]  # as trec_eval reads ties


@pytest.mark.parametrize("qid, docid, tag", [
    ("31_1", "CAR_1 extra", "t"), ("31_1", "CAR_1\nq 0 x 1 1 t", "t"), ("31_1", "", "t"),
    ("31 1", "CAR_1", "t"), ("", "CAR_1", "t"), ("31_1", "CAR_1", "a b"), ("31_1", "CAR_1", ""),
    ("31_1", "CAR_1\x00x", "t"),
])
def test_no_line_is_written_with_a_field_that_would_shift_the_others(tmp_path, qid, docid, tag):
    path = tmp_path / "r.run"
    with pytest.raises(HarnessError, match="empty|whitespace"):
        write_run(path, [(qid, [(docid, 1.0)])], tag=tag)
    assert not path.exists() and not list(tmp_path.iterdir())


def test_a_no_break_space_stays_inside_an_id(tmp_path):
    path = tmp_path / "r.run"
    write_run(path, [("31_1", [("CAR_\u00a01", 1.0)])], tag="t")
    assert read_run(path).ranked("31_1") == [("CAR_\u00a01", 1.0)]


def test_a_failure_mid_stream_leaves_no_file_and_no_temp_file(tmp_path):
    def rankings():
        yield "q1", [("d1", 1.0)]
        raise RuntimeError("retriever crashed")

    with pytest.raises(RuntimeError):
        write_run(tmp_path / "r.run", rankings(), tag="t")
    assert list(tmp_path.iterdir()) == []


def test_a_failure_keeps_the_previous_finished_file(tmp_path):
    path = tmp_path / "r.run"
    write_run(path, [("q1", [("d1", 1.0)])], tag="old")

    def broken():
        yield "q1", [("d9", 1.0)]
        raise RuntimeError

    with pytest.raises(RuntimeError):
        write_run(path, broken(), tag="new")
    assert path.read_text() == "q1 Q0 d1 1 1.000000 old\n"


def test_writer_streams_one_query_at_a_time(tmp_path):
    consumed = []

    def rankings():
        for index in range(3):
            consumed.append(index)
            yield f"q{index}", [("d", 1.0)]
            assert (tmp_path / "r.run").exists() is False  # nothing final before the end

    assert write_run(tmp_path / "r.run", rankings(), tag="t") == 3
    assert consumed == [0, 1, 2]


def test_passage_document_strips_only_a_numeric_passage_suffix():
    assert passage_document("WAPO_1fbc40f4-279c-11e3-b3e9-d97fb087acd6-3", "-") == \
        "WAPO_1fbc40f4-279c-11e3-b3e9-d97fb087acd6"
    assert passage_document("WAPO_1fbc40f4-279c-11e3-b3e9-d97fb087acd6", "-") == \
        "WAPO_1fbc40f4-279c-11e3-b3e9-d97fb087acd6"
    assert passage_document("clueweb22-en0000-32-08101:4", ":") == "clueweb22-en0000-32-08101"


def test_maxp_keeps_each_documents_best_passage():
    ranking = [("D1-2", 9.0), ("D2-1", 8.0), ("D1-1", 7.0)]
    assert maxp(ranking, "-") == [("D1", 9.0), ("D2", 8.0)]


def test_maxp_of_the_organiser_passage_runs_matches_their_document_runs():
    """The organisers' document runs are MaxP of their passage runs, except that their WAPO
    ids are cut at the first '-'; with that cut applied, both give the same rankings."""
    for passage_path, document_path in zip(CAST2021_PASSAGE_RUNS, CAST2021_DOC_RUNS, strict=True):
        assert passage_path.stem == document_path.stem
        derived = read_run(passage_path).to_documents("-")
        official = read_run(document_path)
        for qid in official.scores:
            ours = [d.split("-")[0] if d.startswith("WAPO_") else d for d, _ in derived.ranked(qid)]
            theirs = [d for d, _ in official.ranked(qid)]
            assert ours[: len(theirs)] == theirs, (passage_path.stem, qid)


def test_a_ranking_given_as_a_docid_score_mapping_is_read_as_its_pairs():
    """Iterating a mapping gives its docids alone (a two-letter docid would pass as a pair)."""
    assert Run.of({"q1": {"ab": 2.0, "cd": 1.0}})["q1"] == [("ab", 2.0), ("cd", 1.0)]


def test_a_compressed_run_is_named_by_its_file_name_without_both_suffixes(tmp_path, capsys):
    """org_convdr.run.gz names org_convdr, as org_convdr.run does, in every reader and command."""
    import gzip

    from harness.cli import main
    from harness.evaluate.tables import read_run_table
    from harness.trec import file_stem
    from tests.conftest import CAST2021_QRELS

    run = CAST2021_DOC_RUNS[0]
    packed = tmp_path / f"{run.name}.gz"
    packed.write_bytes(gzip.compress(run.read_bytes()))
    assert file_stem(packed) == file_stem(run) == run.stem == "org_convdr"
    assert read_run(packed).name == read_run_table(packed).name == "org_convdr"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(packed), str(CAST2021_DOC_RUNS[1]),
                 "--measures", "RR", "--baseline", str(packed), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["baselines"] == ["org_convdr"]


def test_a_score_that_is_no_number_is_refused_in_time_linear_in_its_length(tmp_path):
    """A megabyte of digits ending in a letter is one bad score, refused at once: the score pattern
    that tried every split of a digit run took hours on it (bounded here by the timeout, not timed)."""
    import subprocess

    from harness.paths import REPO_ROOT

    run = tmp_path / "long.run"
    run.write_text("q1 Q0 d1 1 " + "9" * 1_000_000 + "x tag\n", encoding="utf-8")
    read = ("import sys\nfrom harness.errors import InputError\nfrom harness.trec import read_run\n"
            "try:\n    read_run(sys.argv[1])\nexcept InputError as error:\n    print(error.problem[:40])")
    done = subprocess.run([sys.executable, "-c", read, str(run)], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO_ROOT)})
    assert done.stdout == "score '" + "9" * 33 + "\n"
