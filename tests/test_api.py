"""The notebook API gives the CLI's numbers, as pandas DataFrames."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import warnings

import pandas as pd
import pytest

import harness
from harness.cli import main
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS, CAST2021_QRELS

RUNS = [str(path) for path in CAST2021_PASSAGE_RUNS[:3]]
MEASURES = ["nDCG@3", "P(rel=2)@5", "AP"]


def _cli_json(capsys, args: list[str]) -> dict:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_equals_harness_eval(capsys):
    cli = _cli_json(capsys, ["eval", "--qrels", str(CAST2021_QRELS), *RUNS, "--measures", *MEASURES,
                             "--depth", "100", "--passage-separator", "-", "--per-query", "--format", "json"])
    per_query, aggregate = harness.evaluate(RUNS, CAST2021_QRELS, MEASURES, depth=100, passage_separator="-")
    assert list(aggregate.run) == list(cli)
    for _, row in aggregate.iterrows():
        assert {m: row[m] for m in MEASURES} == {m: cli[row.run][m] for m in MEASURES}
    for _, row in per_query.iterrows():
        assert all(row[m] == cli[row.run]["per_query"][m][row.qid] for m in MEASURES)
    assert len(per_query) == 3 * aggregate.queries[0] == 3 * 158


def test_evaluate_takes_dataframes_as_pyterrier_gives_them():
    from harness.trec import read_qrels, read_run

    run = read_run(RUNS[0])
    frame = pd.DataFrame([(q, d, s) for q, docs in run.scores.items() for d, s in docs.items()],
                         columns=["qid", "docno", "score"])
    qrels = read_qrels(CAST2021_QRELS)
    qrels_frame = pd.DataFrame([(q, d, g) for q, docs in qrels.judgments.items() for d, g in docs.items()],
                               columns=["qid", "docno", "label"])
    from_files = harness.evaluate(RUNS[0], CAST2021_QRELS, MEASURES).aggregate
    from_frames = harness.evaluate({run.name: frame}, qrels_frame, MEASURES).aggregate
    pd.testing.assert_frame_equal(from_files, from_frames)


@pytest.mark.slow
def test_compare_equals_harness_compare(capsys):
    cli = _cli_json(capsys, ["compare", *RUNS, "--qrels", str(CAST2021_QRELS), "--measures", *MEASURES,
                             "--passage-separator", "-", "--format", "json"])
    board = harness.compare(RUNS, CAST2021_QRELS, MEASURES, passage_separator="-")
    for _, row in board.iterrows():
        assert row["mean"] == cli["runs"][row.run][row.measure]["mean"]
        assert (row.ci_low, row.ci_high) == (cli["runs"][row.run][row.measure]["ci_low"],
                                             cli["runs"][row.run][row.measure]["ci_high"])
    baseline = cli["baselines"][0]
    for comparison in cli["comparisons"]:
        row = board[(board.run == comparison["run"]) & (board.measure == comparison["measure"])].iloc[0]
        assert row[f"p vs {baseline}"] == comparison["p_adjusted"]
        assert row[f"significant vs {baseline}"] == comparison["significant"]


@pytest.mark.slow
@pytest.mark.java
def test_run_equals_harness_run(tmp_path, capsys):
    config = tmp_path / "ptkb.yaml"
    config.write_text("experiments:\n  - name: ikat2023-ptkb\n    task: ptkb\n    topics: ikat2023:test\n"
                      "    retrievers: [bm25]\n    preset: ptkb\n", encoding="utf-8")
    assert main(["run", str(config), "--output", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    per_query, aggregate = harness.run(config, output=tmp_path / "api", quiet=True)
    recorded = json.loads((tmp_path / "cli" / f"{aggregate.run[0]}.json").read_text(encoding="utf-8"))
    evaluation = recorded["scores"]["evaluation"]
    assert aggregate.iloc[0][evaluation["measures"]].to_dict() == evaluation["means"]
    assert list(aggregate.experiment) == ["ikat2023-ptkb"] and aggregate.retriever[0] == "bm25"
    for measure in evaluation["measures"]:
        assert dict(zip(per_query.qid, per_query[measure])) == evaluation["per_query"][measure]


@pytest.mark.slow
def test_run_gives_counts_as_whole_numbers_fresh_or_resumed(tmp_path):
    """A fresh run's frames gave NumRet 5505.0, its resumed run's (read from the JSON) 5505."""
    config = {"output": str(tmp_path / "runs"), "experiments": [
        {"task": "ptkb", "topics": "ikat2023:test", "retrievers": ["bm25"], "measures": ["RR", "NumRet", "NumRel"]}]}
    fresh = harness.run(config, quiet=True)
    resumed = harness.run(config, quiet=True)
    for made, reused in zip(fresh, resumed):
        pd.testing.assert_frame_equal(made, reused)
        assert all(pd.api.types.is_integer_dtype(made[count]) for count in ("NumRet", "NumRel"))
    assert fresh.aggregate.NumRet[0] == fresh.per_query.NumRet.sum()


def test_run_warns_the_notes_harness_run_says_on_stderr_and_keeps_them_in_attrs(tmp_path, capsys):
    """As harness.responses.evaluate gives its notes: each a UserWarning naming the caller's line,
    in the command's words less its 'warning: ', and in aggregate.attrs["notes"]; not on stderr."""
    config = {"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["twice"]}]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, aggregate = harness.run(config, retrievers={"twice": lambda query, k: [("d1", 2.0), ("d1", 1.0)]})
    said = ("run pragmaticqa-val.raw.twice: retriever twice answered a document again for the same query 1526 times "
            "(the first: document d1 for query 1_1); each document is kept once, at its best score")
    assert said in aggregate.attrs["notes"]
    assert [str(w.message) for w in caught] == aggregate.attrs["notes"]
    assert {(w.category, w.filename) for w in caught} == {(UserWarning, __file__)}
    err = capsys.readouterr().err
    assert "answered a document again" not in err and "pragmaticqa-val.raw.twice" in err  # the progress stays


def test_run_stopped_by_an_error_carries_the_notes_said_so_far_on_it_not_as_warnings(tmp_path):
    """A warning turned into an error (-W error) would hide the error that stopped the run: the
    notes said before it ride on that error, as its notes."""
    def broken(query, k):
        raise ValueError("the model is gone")

    config = {"k": 10, "output": str(tmp_path / "runs"), "experiments": [
        {"topics": "pragmaticqa:val", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["twice", "broken"]}]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Exception) as stopped:
            harness.run(config, retrievers={"twice": lambda query, k: [("d1", 2.0), ("d1", 1.0)], "broken": broken})
    assert "the model is gone" in str(stopped.value)
    assert any("retriever twice answered a document again" in note for note in stopped.value.__notes__)


def test_one_measure_may_be_given_as_a_string():
    as_string = harness.evaluate(RUNS[0], CAST2021_QRELS, "nDCG@3", passage_separator="-").aggregate
    as_list = harness.evaluate(RUNS[0], CAST2021_QRELS, ["nDCG@3"], passage_separator="-").aggregate
    pd.testing.assert_frame_equal(as_string, as_list)
    assert list(as_string.columns) == ["run", "nDCG@3", "queries"]


@pytest.mark.parametrize("name", ["evaluate", "compare", "run"])
def test_api_functions_show_their_own_signature_and_docstring(name):
    """help(harness.evaluate) documents the function, not the package harness/evaluate, even
    after that package is imported (which binds a subpackage to its parent's attribute)."""
    import pydoc

    import harness.evaluate.measures  # noqa: F401

    function = getattr(harness, name)
    assert inspect.isfunction(function) and function.__module__ == "harness.api"
    assert "runs" in inspect.signature(function).parameters or name == "run"
    text = pydoc.render_doc(function, renderer=pydoc.plaintext)
    assert "*args" not in text and function.__doc__.split()[0] in text


def test_import_harness_imports_no_api_and_no_pandas():
    """The API is imported on first use, so `import harness` stays fast (about 13 ms)."""
    code = "import sys, harness; print(sorted(m for m in ('harness.api', 'harness.evaluate', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    run = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["a", "b", "c"], "label": [1, 2, 1]})
    return run, qrels


@pytest.mark.parametrize("score", [float("nan"), float("inf"), "high"])
def test_a_dataframe_score_that_is_not_a_finite_number_is_refused_naming_the_row(score):
    """As a run file's `nan`, `inf` or text score is (trec_eval and Python would order them differently)."""
    run, qrels = _frames()
    run["score"] = run["score"].astype(object)
    run.loc[2, "score"] = score
    with pytest.raises(harness.errors.HarnessError,
                       match=rf"the run DataFrame's score {re.escape(repr(score))} at row 2 \(qid '2', docno 'c'\) "
                             "is not a finite number"):
        harness.evaluate(run, qrels, "nDCG@3")


def test_a_dataframe_run_repeating_a_document_keeps_its_highest_score_as_a_run_file_does():
    run, qrels = _frames()
    repeated = pd.concat([run, pd.DataFrame({"qid": ["1"], "docno": ["b"], "score": [5.0]})])
    as_file = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["b", "a", "c"], "score": [5.0, 2.0, 1.0]})
    said = r"^mine: 2 judged queries; 1 duplicate documents dropped \(highest score kept\)$"
    with pytest.warns(UserWarning, match=said):
        kept = harness.evaluate({"mine": repeated}, qrels, "RR(rel=2)").aggregate["RR(rel=2)"][0]
    assert kept == harness.evaluate(as_file, qrels, "RR(rel=2)").aggregate["RR(rel=2)"][0] == 0.5


def test_evaluate_warns_of_a_relevance_level_no_judgment_reaches_where_harness_eval_says_it_on_stderr(capsys):
    """P(rel=9) is 0 on every query of qrels graded 0-4: a warning at the caller's line, not a print."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        harness.evaluate(RUNS[0], CAST2021_QRELS, ["P(rel=9)@10"], passage_separator="-")
    said = f"P(rel=9)@10: no judgment in qrels {CAST2021_QRELS} reaches grade 9 (the highest is 4), so it is 0 on " \
           "every query"
    assert said in [str(w.message) for w in caught if w.filename == __file__]
    assert "reaches grade" not in capsys.readouterr().err


def test_evaluate_warns_of_judged_queries_no_judgment_of_a_measures_level_reaches_as_harness_eval_notes_them():
    """CAsT 2021: one of its 158 judged turns has no document of grade 2; said once, not per run."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        harness.evaluate(RUNS[:2], CAST2021_QRELS, ["nDCG@3", "R(rel=2)@1000"], passage_separator="-")
    assert [str(w.message) for w in caught if w.filename == __file__] == [
        "1 of 158 judged queries has no judgment of grade >= 2: R(rel=2)@1000 scores 0 there for every run "
        "(R(rel=2)@1000 can reach at most 0.9937)"]

def test_evaluate_warns_what_harness_eval_counts_on_stderr(tmp_path, capsys):
    """A judged query the run lacks (a 0 in the mean), unjudged ones and repeated documents: in
    `harness eval`'s words, one warning per run, named as the caller named it; the numbers unchanged."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "odd.run"
    qrels.write_text("q1 0 a 1\nq2 0 b 2\nq3 0 c 1\n", encoding="utf-8")
    run.write_text("q1 Q0 a 1 2 r\nq1 Q0 a 2 1 r\nq2 Q0 x 1 1 r\nq9 Q0 a 1 1 r\n", encoding="utf-8")
    assert main(["eval", "--qrels", str(qrels), str(run), "--measures", "nDCG@3", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    said = "3 judged queries; 1 missing from the run (scored as empty rankings); 1 unjudged in the run (ignored); " \
           "1 duplicate documents dropped (highest score kept)"
    assert err.splitlines() == [f"odd: {said}"]
    with pytest.warns(UserWarning) as caught:
        aggregate = harness.evaluate({"mine": str(run)}, str(qrels), "nDCG@3").aggregate
    assert [str(w.message) for w in caught] == [f"mine: {said}"]
    assert aggregate["nDCG@3"][0] == json.loads(out)["odd"]["nDCG@3"]


def test_a_run_whose_only_oddity_is_unjudged_queries_is_not_warned_of():
    """Runs answer every turn, qrels judge some (CAsT 2021: 239 and 158): no number changes."""
    run, qrels = _frames()
    extra = pd.concat([run, pd.DataFrame({"qid": ["9"], "docno": ["a"], "score": [1.0]})])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        harness.evaluate(extra, qrels, "nDCG@3")
        harness.evaluate(run, qrels, "nDCG@3")


def test_dir_harness_lists_the_api_for_tab_completion():
    assert {"evaluate", "compare", "breakdown", "run", "strategy", "declare", "Param"} <= set(dir(harness))


@pytest.mark.parametrize("label", [1.5, float("nan"), "relevant"])
def test_a_qrels_dataframe_label_that_is_not_an_integer_grade_is_refused_naming_the_row(label):
    """astype(int) cut 1.5 to 1 without a word, and failed deep in pandas on NaN or text."""
    run, qrels = _frames()
    qrels["label"] = qrels["label"].astype(object)
    qrels.loc[1, "label"] = label
    with pytest.raises(harness.errors.HarnessError,
                       match=rf"the qrels DataFrame's label {re.escape(repr(label))} at row 1 \(qid '1', docno 'b'\) "
                             "is not an integer grade"):
        harness.evaluate(run, qrels, "nDCG@3")


def test_a_qrels_dataframe_judging_a_document_twice_is_refused_as_a_qrels_file_is():
    run, qrels = _frames()
    twice = pd.concat([qrels, pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [0]})])
    with pytest.raises(harness.errors.HarnessError, match="the qrels DataFrame judges document 'a' twice for query '1'"):
        harness.evaluate(run, twice, "nDCG@3")


def test_a_dataframe_id_that_is_missing_is_refused_naming_the_row():
    """A NaN docno would have become the id 'nan' (or failed deep in the evaluator)."""
    run, qrels = _frames()
    run.loc[1, "docno"] = None
    with pytest.raises(harness.errors.HarnessError, match=r"the run DataFrame has no docno at row 1 \(NaN or None\)"):
        harness.evaluate(run, qrels, "nDCG@3")


def test_evaluate_warns_when_the_run_has_no_query_in_common_with_the_qrels():
    """Float qids (a pandas column with a NaN once in it) read as '1.0', not '1': every measure 0."""
    run, qrels = _frames()
    run["qid"] = [1.0, 1.0, 2.0]
    with pytest.warns(UserWarning, match="run 'run' has no query in common with the qrels DataFrame; every measure is 0"):
        assert harness.evaluate(run, qrels, "nDCG@3").aggregate["nDCG@3"][0] == 0


@pytest.mark.parametrize("preset, depth, warning", [
    (None, 10, "depth=10 keeps 10 documents per query, fewer than nDCG@500 (500) reads: scored on the top 10 alone; "
               "ask for nDCG@10, which reads no deeper, or give depth=500 where every run ranks that deep"),
    ("cast2021", None, "the cast2021 preset's depth 500 keeps 500 documents per query, fewer than R@1000 (1000) "
                       "reads: scored on the top 500 alone; ask for R@500, which reads no deeper, or give depth=1000 "
                       "where every run ranks that deep")])
def test_a_depth_shallower_than_a_measure_reads_is_a_warning_as_harness_eval_gives(preset, depth, warning):
    """nDCG@500 at depth=10 is nDCG@10 under nDCG@500's name: said as `harness eval` says it of
    --depth, the depth named as the caller set it."""
    measures = ["R@1000" if preset else "nDCG@500", "nDCG@3"]
    with pytest.warns(UserWarning) as caught:
        harness.evaluate(RUNS[0], CAST2021_QRELS, measures, preset=preset, depth=depth, passage_separator="-")
    assert [str(w.message) for w in caught] == [warning]


@pytest.mark.parametrize("measures", [5, "ir_measures"])
def test_a_measure_that_is_not_a_name_is_refused_in_one_line(measures):
    if measures == "ir_measures":
        from ir_measures import nDCG

        measures = nDCG @ 3  # not a list: ir-measures' objects index by parameter name
    run, qrels = _frames()
    with pytest.raises(harness.errors.HarnessError, match=rf"a measure name is text such as 'nDCG@10', not {measures}"):
        harness.evaluate(run, qrels, measures)


def test_runs_or_qrels_of_another_type_are_refused_in_one_line():
    run, qrels = _frames()
    with pytest.raises(harness.errors.HarnessError, match=r"runs: got NoneType; expected a run"):
        harness.evaluate(None, qrels, "nDCG@3")
    with pytest.raises(harness.errors.HarnessError, match=r"a run: got dict; expected a TREC run file"):
        harness.evaluate([run.to_dict()], qrels, "nDCG@3")
    with pytest.raises(harness.errors.HarnessError, match=r"qrels: got list; expected a qrels file"):
        harness.evaluate(run, [("1", "a", 1)], "nDCG@3")


def test_compare_warns_what_harness_compare_warns_on_stderr(capsys):
    """Resamples too few for any comparison to be significant: the API's frame had nothing significant, without
    a word of why."""
    runs = [str(path) for path in CAST2021_DOC_RUNS[:2]]
    assert main(["compare", *runs, "--qrels", str(CAST2021_QRELS), "--measures", "nDCG@3", "--test", "bootstrap",
                 "--resamples", "10"]) == 0
    said = [line.removeprefix("warning: ") for line in capsys.readouterr().err.splitlines()
            if line.startswith("warning: ")]
    with pytest.warns(UserWarning) as caught:
        harness.compare(runs, CAST2021_QRELS, "nDCG@3", test="bootstrap", resamples=10)
    assert said[0].endswith("give --resamples 20 or more")
    # the advice in the caller's words: the API has no --resamples
    assert [str(w.message) for w in caught] == [said[0].replace("--resamples 20", "resamples=20"), *said[1:]]
    assert {w.filename for w in caught} == {__file__}  # the caller's line


def test_responses_compare_warns_what_responses_eval_warns_on_stderr():
    """One turn: no test, Cohen's d or interval, said on stderr by `responses eval`, and now by the API."""
    from harness.responses import compare
    from harness.responses.model import NuggetBank
    from tests.test_responses import A, B, CountingJudge, run_of

    bank = NuggetBank("bank", {"1_1": (A, B)}, "rule")
    with pytest.warns(UserWarning, match="^one turn cannot be tested") as caught:
        compare([run_of("one", {"1_1": "a"}), run_of("two", {"1_1": "b"})], bank, CountingJudge())
    assert {w.filename for w in caught} == {__file__}


def test_responses_compare_takes_resamples_as_harness_compare_does():
    """Its too-few-resamples warning advises resamples=, which it did not take; checked before the judge's work."""
    from harness.responses import compare
    from harness.responses.model import NuggetBank
    from tests.test_responses import A, B, CountingJudge, run_of

    bank = NuggetBank("bank", {"1_1": (A, B), "1_2": (A, B)}, "rule")
    runs = [run_of("one", {"1_1": "a", "1_2": "a"}), run_of("two", {"1_1": "b", "1_2": "a b"})]
    with pytest.warns(UserWarning, match=r"^10 resamples: .* give resamples=\d+ or more$"):
        compare(runs, bank, CountingJudge(), test="bootstrap", resamples=10)
    judge = CountingJudge()
    with pytest.raises(harness.errors.HarnessError, match=r"^resamples must be a whole number of 1 or more, not 0"):
        compare(runs, bank, judge, resamples=0)
    assert judge.asked == []


@pytest.mark.parametrize("given, error", [
    ({"depth": "10"}, r"^depth must be a positive number of documents, not '10'"),
    ({"passage_separator": 1}, r"^passage_separator must be the character\(s\) .* not 1"),
    ({"alpha": 5}, r"alpha must be a number above 0 and at most 1, not 5"),
    ({"resamples": 0}, r"resamples must be a whole number of 1 or more, not 0"),
    ({"seed": -1}, r"seed must be a whole number from 0 to 4294967295, not -1"),
    ({"baseline": pd.DataFrame()}, r"baseline: expected a run's name or a list of names, not DataFrame"),
])
def test_compare_checks_its_arguments_as_the_command_line_does(given, error):
    """alpha=5 made every difference significant, resamples=0 fell back to the default; the
    others were tracebacks from deep inside."""
    run, qrels = _frames()
    with pytest.raises(harness.errors.HarnessError, match=error):
        harness.compare({"a": run, "b": run.assign(score=[1.0, 2.0, 1.0])}, qrels, "AP", **given)


def test_the_command_line_names_its_flags_where_the_api_names_its_arguments(capsys):
    """One check behind both: harness.evaluate(depth=0) says depth, `harness eval --depth 0` says --depth."""
    run, qrels = _frames()
    with pytest.raises(harness.errors.HarnessError, match=r"^depth must be a positive number of documents, not 0"):
        harness.evaluate(run, qrels, "AP", depth=0)
    assert main(["eval", "--qrels", str(CAST2021_QRELS), RUNS[0], "--depth", "0"]) == 2
    assert "error: --depth must be a positive number of documents, not 0" in capsys.readouterr().err


def test_run_refuses_a_config_or_objects_of_another_type_in_one_line():
    with pytest.raises(harness.errors.HarnessError, match="config: expected a YAML file's path or the same document"):
        harness.run(5)
    with pytest.raises(harness.errors.HarnessError, match=r"retrievers: expected \{name: object\}.*; got list"):
        harness.run({"experiments": []}, retrievers=[lambda query, k: []])


def test_breakdown_gives_harness_compare_s_tables_by_turn_depth_and_conversation(tmp_path, capsys):
    runs, measures = [str(path) for path in CAST2021_DOC_RUNS[:2]], ["nDCG@3", "AP"]
    out = tmp_path / "compare.json"
    assert main(["compare", *runs, "--qrels", str(CAST2021_QRELS), "--measures", *measures, "--topics", "cast2021",
                 "--format", "json", "--output", str(out)]) == 0
    cli = json.loads(out.read_text(encoding="utf-8"))
    per_query, aggregate = harness.evaluate(runs, CAST2021_QRELS, measures)
    for by in ("turn depth", "conversation"):
        frame = harness.breakdown(per_query, by, topics="cast2021")
        pd.testing.assert_frame_equal(frame, harness.breakdown(per_query, by))  # CAsT 2021's qids say the same
        tables = [b for b in cli["breakdowns"] if b["name"] == by]
        assert tables
        for table in tables:
            rows = frame[frame.measure == table["measure"]].drop(columns="measure").rename(columns={by: "group"})
            assert rows.to_dict("records") == table["groups"]
    by_conversation = harness.breakdown(per_query, "conversation")
    for measure in measures:  # the mean over conversations: each conversation's turns averaged first
        means = by_conversation[by_conversation.measure == measure][list(aggregate.run)].mean()
        assert means.to_dict() == pytest.approx(cli["conversation_means"][measure], abs=1e-12)


@pytest.mark.parametrize("columns, problem", [
    ({"nDCG@3": [0.5, 0.2], "run": ["a", "a"], "qid": ["1_1", "1_2"]}, "no measure column after qid: expected"),
    ({"run": ["a", "a"], "qid": ["1_1", "1_2"], "nDCG@3": [0.5, 0.2], "note": ["x", "y"]},
     "column 'note' after qid holds 'x', not a measure's value"),
    ({"run": ["a", "a"], "qid": ["1_1", "1_1"], "nDCG@3": [0.5, 0.2]},
     "run 'a' has qid '1_1' on more than one row"),
])
def test_breakdown_refuses_a_frame_it_cannot_read_in_one_line(columns, problem):
    """No measures, a column of words, a run scored twice: pandas' own errors name neither column nor row."""
    with pytest.raises(harness.errors.HarnessError, match=f"^per_query: {re.escape(problem)}"):
        harness.breakdown(pd.DataFrame(columns))


def test_breakdown_names_its_own_argument_where_the_qids_tell_no_depth():
    """CAsT 2022's `132_2-1` names a node of the topic's tree: the command line says --topics."""
    per_query = pd.DataFrame({"run": ["r"], "qid": ["132_2-1"], "nDCG@3": [0.5]})
    with pytest.raises(harness.errors.HarnessError, match="names a CAsT 2022 tree node.*; pass topics='cast2022'$"):
        harness.breakdown(per_query)
