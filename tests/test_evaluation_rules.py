"""One test per evaluation convention, on the real CAsT 2021 qrels.

Judgments used (from trec-cast-qrels-docs.2021.qrel): for 106_1, KILT_19782967 is graded 4,
KILT_262039 2, KILT_35286032 1, KILT_105219 0; for 106_2, KILT_18403722 is graded 4.
"""

from __future__ import annotations


import pytest
import pytrec_eval

from harness.errors import HarnessError, InputError
from harness.evaluate import evaluate
from harness.trec import read_qrels, read_run
from tests.conftest import write_run

PLAIN = "expected a plain decimal or scientific number such as 12.5 or 1e-3"
REL4, REL2, REL1, NONREL = "KILT_19782967", "KILT_262039", "KILT_35286032", "KILT_105219"


def test_ties_are_broken_by_docid_descending_like_trec_eval(tmp_path, qrels_106):
    # Same score: trec_eval ranks 'KILT_262039' (relevant) below 'MARCO_D1' (unjudged) since
    # 'MARCO_D1' > 'KILT_262039'; the file order and the rank column do not matter.
    path = write_run(tmp_path, ["106_1 Q0 KILT_262039 1 5.0 t", "106_1 Q0 MARCO_D1 2 5.0 t"])
    ours = evaluate(qrels_106, read_run(path), ["P@1", "RR"])
    reference = pytrec_eval.RelevanceEvaluator(qrels_106.judgments, {"P.1", "recip_rank"}).evaluate(
        {"106_1": {"KILT_262039": 5.0, "MARCO_D1": 5.0}})["106_1"]
    assert ours.per_query["P@1"]["106_1"] == reference["P_1"] == 0.0
    assert ours.per_query["RR"]["106_1"] == reference["recip_rank"] == 0.5


def test_rank_column_is_ignored(tmp_path, qrels_106):
    path = write_run(tmp_path, ["106_1 Q0 KILT_105219 1 1.0 t", "106_1 Q0 KILT_19782967 2 9.0 t"])
    assert evaluate(qrels_106, read_run(path), ["RR"]).per_query["RR"]["106_1"] == 1.0


def test_duplicate_document_keeps_its_highest_score_and_is_counted(tmp_path, qrels_106):
    """The first occurrence in a run written in rank order; the copy trec_eval -M keeps when
    the other falls below its depth, whatever the file order."""
    for lines in (["106_1 Q0 KILT_105219 1 9.0 t", "106_1 Q0 KILT_19782967 2 8.0 t", "106_1 Q0 KILT_105219 3 1.0 t"],
                  ["106_1 Q0 KILT_105219 3 1.0 t", "106_1 Q0 KILT_19782967 2 8.0 t", "106_1 Q0 KILT_105219 1 9.0 t"]):
        run = read_run(write_run(tmp_path, lines))
        assert run.duplicates == 1
        assert run.scores["106_1"]["KILT_105219"] == 9.0
        assert evaluate(qrels_106, run, ["RR"]).duplicates == 1


def test_strict_mode_rejects_a_duplicate_naming_file_and_line(tmp_path):
    path = write_run(tmp_path, ["106_1 Q0 KILT_105219 1 9.0 t", "106_1 Q0 KILT_105219 2 8.0 t"])
    with pytest.raises(InputError, match=r"run\.run:2: document 'KILT_105219' appears twice"):
        read_run(path, strict=True)


def test_query_missing_from_the_run_scores_zero_and_is_reported(tmp_path, qrels_106):
    path = write_run(tmp_path, ["106_1 Q0 KILT_19782967 1 9.0 t"])
    evaluation = evaluate(qrels_106, read_run(path), ["RR"])
    assert evaluation.missing_queries == ["106_2"]
    assert evaluation.per_query["RR"] == {"106_1": 1.0, "106_2": 0.0}
    assert evaluation.means["RR"] == 0.5  # trec_eval -c: averaged over both judged queries


def test_unjudged_query_in_the_run_is_ignored_and_counted(tmp_path, qrels_106):
    path = write_run(tmp_path, ["106_1 Q0 KILT_19782967 1 9.0 t", "999_9 Q0 KILT_19782967 1 9.0 t"])
    evaluation = evaluate(qrels_106, read_run(path), ["RR"])
    assert evaluation.unjudged_queries == ["999_9"]
    assert set(evaluation.per_query["RR"]) == {"106_1", "106_2"}


def test_depth_keeps_only_the_top_documents_like_trec_eval_M(tmp_path, qrels_106):
    path = write_run(tmp_path, ["106_1 Q0 KILT_105219 1 9.0 t", "106_1 Q0 KILT_19782967 2 8.0 t"])
    assert evaluate(qrels_106, read_run(path), ["RR"], depth=1).per_query["RR"]["106_1"] == 0.0
    assert evaluate(qrels_106, read_run(path), ["RR"], depth=2).per_query["RR"]["106_1"] == 0.5


def test_relevance_threshold_applies_to_binary_measures(tmp_path, qrels_106):
    path = write_run(tmp_path, ["106_1 Q0 KILT_35286032 1 9.0 t", "106_1 Q0 KILT_262039 2 8.0 t"])
    evaluation = evaluate(qrels_106, read_run(path), ["RR", "RR(rel=2)", "P(rel=2)@1"])
    assert evaluation.per_query["RR"]["106_1"] == 1.0  # grade 1 counts at the default level
    assert evaluation.per_query["RR(rel=2)"]["106_1"] == 0.5  # grade 1 does not at rel=2
    assert evaluation.per_query["P(rel=2)@1"]["106_1"] == 0.0


def test_run_and_qrels_with_no_common_query_score_zero(tmp_path, qrels_106):
    path = write_run(tmp_path, ["999_9 Q0 KILT_19782967 1 9.0 t"])
    evaluation = evaluate(qrels_106, read_run(path), ["nDCG@3"])
    assert evaluation.means["nDCG@3"] == 0.0
    assert evaluation.missing_queries == ["106_1", "106_2"]


@pytest.mark.parametrize(("line", "problem"), [
    ("106_1 Q0 KILT_1 1 9.0", "expected 6 fields 'qid Q0 docid rank score tag', found 5: this looks like "
                             "'qid Q0 docid rank score' without the run tag (the 6th field); add one, "
                             "e.g. awk '{print $0, \"myrun\"}'"),
    ("106_1 Q0 KILT_1 one 9.0 t", "rank 'one' is not an integer"),
    ("106_1 Q0 KILT_1 1 high t", f"score 'high' is not a number: {PLAIN}"),
    ("106_1 Q0 KILT_1 1 nan t", f"score 'nan' is not finite: {PLAIN}"),
])
def test_malformed_run_line_names_file_line_and_problem(tmp_path, line, problem):
    path = write_run(tmp_path, ["106_1 Q0 KILT_0 1 9.5 t", line])
    with pytest.raises(InputError) as raised:
        read_run(path)
    assert str(raised.value) == f"{path}:2: {problem}"


@pytest.mark.parametrize(("line", "problem"), [
    ("106_1 0 KILT_1", "expected 4 fields 'qid iter docid grade', found 3"),
    ("106_1 0 KILT_1 high", "grade 'high' is not an integer"),
    ("106_1 0 KILT_0 2", "document 'KILT_0' judged twice for query '106_1' (first on line 1)"),
])
def test_malformed_qrels_line_names_file_line_and_problem(tmp_path, line, problem):
    path = tmp_path / "bad.qrels"
    path.write_text(f"106_1 0 KILT_0 1\n{line}\n")
    with pytest.raises(InputError) as raised:
        read_qrels(path)
    assert str(raised.value) == f"{path}:2: {problem}"


def test_empty_run_and_empty_qrels_are_errors(tmp_path):
    (tmp_path / "empty.run").write_text("\n")
    (tmp_path / "empty.qrels").write_text("")
    with pytest.raises(InputError, match="empty run"):
        read_run(tmp_path / "empty.run")
    with pytest.raises(InputError, match="empty qrels"):
        read_qrels(tmp_path / "empty.qrels")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"nothere\.run: no such file"):
        read_run(tmp_path / "nothere.run")


def test_unknown_measure_gets_one_clear_sentence(qrels_106, tmp_path):
    path = write_run(tmp_path, ["106_1 Q0 KILT_19782967 1 9.0 t"])
    with pytest.raises(HarnessError, match="cannot read measure 'nDCG@@3'"):
        evaluate(qrels_106, read_run(path), ["nDCG@@3"])
