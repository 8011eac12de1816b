"""A run whose documents are almost never judged is warned about, with what its ids look like
(harness.evaluate.coverage): the CAsT 2021 passage runs against the document qrels without
--preset, and a run with lower-cased ids, in `harness eval`, `harness compare`, `harness run` and
the Python API."""

from __future__ import annotations

import json
import re
import warnings

import pytest
import yaml

import harness
from harness.cli import main
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS, CAST2021_QRELS

QRELS = str(CAST2021_QRELS)


@pytest.mark.parametrize("run", CAST2021_PASSAGE_RUNS, ids=lambda path: path.stem)
def test_passage_ids_of_judged_documents_name_the_separator_and_the_preset(capsys, run):
    assert main(["eval", "--qrels", QRELS, str(run), "--measures", "nDCG@3"]) == 0
    warning = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:"))
    assert f"run {run.stem!r}: only 0 of the 1580 documents in its top 10s are judged" in warning
    assert "--passage-separator '-' (the preset cast2021 sets it)" in warning


def test_a_run_read_with_its_preset_is_not_warned_about(capsys):
    assert main(["eval", "--qrels", QRELS, str(CAST2021_PASSAGE_RUNS[0]), "--preset", "cast2021"]) == 0
    assert "warning:" not in capsys.readouterr().err


def test_lower_cased_ids_are_said_to_differ_from_the_qrels_in_case(tmp_path, capsys):
    lowered = tmp_path / "lowered.run"
    lowered.write_text(CAST2021_DOC_RUNS[0].read_text().lower())
    assert main(["eval", "--qrels", QRELS, str(lowered), "--measures", "nDCG@3"]) == 0
    err = capsys.readouterr().err
    assert "run 'lowered': only 0 of the 1580 documents in its top 10s are judged" in err
    shown, judged = re.search(r"judged ids written in another case \('(\S+)' is judged as '(\S+)';", err).groups()
    assert shown == judged.lower() != judged


def test_compare_warns_as_eval_does(capsys):
    assert main(["compare", "--qrels", QRELS, str(CAST2021_DOC_RUNS[0]), str(CAST2021_PASSAGE_RUNS[-1]),
                 "--measures", "nDCG@3"]) == 0
    err = capsys.readouterr().err
    assert f"warning: run {CAST2021_PASSAGE_RUNS[-1].stem!r}: only 0 of the 1580" in err
    assert f"run {CAST2021_DOC_RUNS[0].stem!r}" not in err


def test_the_python_api_warns_too_naming_its_own_argument():
    with pytest.warns(UserWarning, match="with passage_separator='-' \\(the preset cast2021 sets it\\)"):
        harness.evaluate(str(CAST2021_PASSAGE_RUNS[0]), QRELS, ["nDCG@3"])
    with warnings.catch_warnings(record=True) as caught:  # the preset's separator: no id-mismatch warning
        warnings.simplefilter("always")
        harness.evaluate(str(CAST2021_PASSAGE_RUNS[0]), QRELS, preset="cast2021")
    assert not [w for w in caught if "passage_separator" in str(w.message)]


@pytest.mark.parametrize("separator, advice", [
    ("-", "with passage_separator: '-' in the experiment (or preset: 'cast2021', which sets it with its measures "
          "and depth)"),
    (":", "with passage_separator: ':' in the experiment"),
], ids=["a preset's", "no preset's"])
def test_harness_run_names_the_config_s_way_to_judge_passages_by_document(tmp_path, capsys, separator, advice):
    from harness.retrieve import RETRIEVERS

    qrels, config = tmp_path / "qrels.txt", tmp_path / "passages.yaml"
    qrels.write_text("1_1 0 d1 1\n", encoding="utf-8")
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["passages"],
         "qrels": str(qrels)}]}), encoding="utf-8")
    with RETRIEVERS.using({"passages": lambda query, k: [(f"d1{separator}1", 2.0), (f"d2{separator}1", 1.0)]}):
        assert main(["run", str(config)]) == 0
    warning = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:"))
    assert f"passage ids of judged documents ('d1{separator}1' is passage 1 of 'd1'): judge documents by their " \
           f"best passage {advice}; read so, 1 of the 2 would be judged" in warning


def test_the_leaderboard_and_the_run_s_json_keep_the_warning_beside_the_zero(tmp_path, capsys):
    """leaderboard.md, the file opened later, says why a run scores 0, resumed or not, as stderr did."""
    from harness.retrieve import RETRIEVERS

    qrels, config = tmp_path / "qrels.txt", tmp_path / "ids.yaml"
    qrels.write_text("1_1 0 d1 1\n", encoding="utf-8")
    config.write_text(yaml.safe_dump({"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["other"],
         "qrels": str(qrels)}]}), encoding="utf-8")
    warning = f"run 'pragmaticqa-val.raw.other': only 0 of the 2 documents in its top 10s are judged in {qrels}"
    with RETRIEVERS.using({"other": lambda query, k: [("x1", 2.0), ("x2", 1.0)]}):
        for _ in range(2):
            assert main(["run", str(config)]) == 0
            assert f"warning: {warning}" in capsys.readouterr().err
            board = (tmp_path / "runs" / "leaderboard.md").read_text(encoding="utf-8")
            assert board.split("| 0.0000 |\n", 1)[1].startswith(f"\nWarning: {warning}")
    record = json.loads((tmp_path / "runs" / "pragmaticqa-val.raw.other.json").read_text(encoding="utf-8"))
    assert record["scores"]["warnings"][0].startswith(warning)


def test_sparse_judgments_found_for_many_queries_are_not_taken_for_a_mismatch():
    """PragmatiCQA's derived qrels judge a few spans a turn: a run finding one for every fifth
    turn has few judged documents in its top 10s, yet reads the qrels' own ids."""
    import pandas as pd

    from harness.topics import load

    qrels = load("pragmaticqa:val").qrels()
    rows = [(qid, next(iter(judged)) if number % 5 == 0 and rank == 0 else f"unjudged-{rank}", 10 - rank)
            for number, (qid, judged) in enumerate(sorted(qrels.judgments.items())) for rank in range(10)]
    run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        harness.evaluate(run, qrels, ["nDCG@10"])


@pytest.mark.parametrize("ids, warned", [("as the catalogue writes them", False), ("of another collection", True)])
def test_a_popularity_recommender_over_sparse_recommendation_qrels_is_warned_of_only_with_other_ids(ids, warned):
    """OpenDialKG's derived qrels judge a turn's 1-2 recommended items: the most often
    recommended items rank one of them in the top 10 of few turns, yet they are the qrels' own
    ids (judged for other turns), so nothing is said; the same ranking in another collection's
    ids still is."""
    from collections import Counter

    import pandas as pd

    from harness.topics import load

    qrels = load("opendialkg:test").qrels()
    counts = Counter(item for judged in qrels.judgments.values() for item in judged)
    popular = [item for item, _ in counts.most_common(50)]
    spelt = popular if not warned else [f"other-{item}" for item in popular]
    run = pd.DataFrame([(qid, item, 50.0 - rank) for qid in qrels.judgments for rank, item in enumerate(spelt)],
                       columns=["qid", "docno", "score"])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        scores = harness.evaluate(run, qrels, ["R@10", "R@50"])
    assert [str(warning.message) for warning in said if "nearly every measure is 0" in str(warning.message)] == \
        ([f"run 'run': only 0 of the {10 * len(qrels.judgments)} documents in its top 10s are judged in the qrels "
          "opendialkg:test (derived), so nearly every measure is 0; check that the run and the qrels use the same "
          f"collection and document ids (query '3_1': the run ranks 'other-{popular[0]}' first; the qrels judge "
          "'1023')"] if warned else [])
    assert warned or scores.aggregate["R@50"].item() > 0.05


def test_ids_judged_only_in_another_case_on_part_of_the_benchmark_are_warned_of(tmp_path, capsys):
    """CoSRec judges Amazon ASINs for recommendation intents and MS MARCO ids for search ones: a
    recommender that lower-cases its ASINs scores 0 on the one and well on the other, so the run
    as a whole finds judged documents; the ids judged only once case is ignored are counted and
    one is shown with the qrels' spelling."""
    import re

    from harness.paths import qrels_root
    from harness.report import breakdown
    from harness.topics import load
    from harness.trec import read_qrels

    path = qrels_root() / "cosrec" / "curated.qrels"
    qrels = read_qrels(path)
    types = breakdown.groups_from_topics(load("cosrec-curated"), "type")
    as_written, lowered = tmp_path / "cosrec.run", tmp_path / "lowered.run"
    rows = [(qid, docid, rank) for qid, judged in qrels.judgments.items()
            for rank, docid in enumerate(sorted(judged, key=lambda docid: (-judged[docid], docid))[:10], start=1)]
    as_written.write_text("".join(f"{qid} Q0 {docid} {rank} {-rank} mine\n" for qid, docid, rank in rows))
    lowered.write_text("".join(f"{qid} Q0 {docid.lower() if types[qid] == 'recommendation' else docid} {rank} {-rank} "
                               "mine\n" for qid, docid, rank in rows))
    assert main(["eval", "--qrels", str(path), str(as_written), str(lowered), "--measures", "nDCG@10"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    only_case = sum(types[qid] == "recommendation" and docid.lower() not in qrels.judgments[qid]
                    for qid, docid, _ in rows)  # (two turns judge one ASIN in both cases)
    assert len(said) == 1 and said[0].startswith(
        f"warning: run 'lowered': {only_case} of the {len(rows)} documents in its top 10s are judged in {path} only "
        "once case is ignored, so each counts as unjudged (")
    assert said[0].endswith("; ids are compared exactly, as trec_eval compares them): write the run's ids as the qrels "
                            "write them")
    shown, judged = re.search(r"\('([^']+)' is judged as '([^']+)';", said[0]).groups()
    assert shown == judged.lower() != judged


def test_ids_of_another_space_are_shown_beside_an_id_the_qrels_judge(tmp_path, capsys):
    """The warning said to check the ids, and never showed what a judged id looks like: item names
    against OpenDialKG's catalogue numbers, side by side, for the same query."""
    names = tmp_path / "names.run"
    names.write_text("3_1 Q0 Panic_Room 1 2.0 mine\n")
    assert main(["eval", "--qrels", "benchmark:opendialkg:test", str(names), "--measures", "R@10"]) == 0
    warning = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:"))
    assert warning.endswith("check that the run and the qrels use the same collection and document ids (query '3_1': "
                            "the run ranks 'Panic_Room' first; the qrels judge '1023')")  # (its one recommended item)
