"""`harness compare`: a leaderboard of the CAsT 2021 organiser runs with corrected tests and
breakdowns by turn depth, conversation and any qid grouping."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re

import numpy as np
import pytest
from scipy import stats as scipy_stats

from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.evaluate import Evaluation, evaluate
from harness.evaluate.presets import PRESETS
from harness.paths import data_root
from harness.report import breakdown as bd
from harness.report import stats
from harness.report.compare import RunScores, align, comparison_pairs, leaderboard
from harness.topics import load
from harness.trec import read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

PRESET = PRESETS.get("cast2021")


@pytest.fixture(scope="module")
def evaluations():
    qrels = read_qrels(CAST2021_QRELS)
    return [evaluate(qrels, read_run(path), list(PRESET.measures), PRESET.depth) for path in CAST2021_DOC_RUNS]


@pytest.fixture(scope="module")
def board(evaluations):
    return leaderboard(evaluations, ["org_manual_bm25"], test="paired-t", correction="holm")


def test_leaderboard_ranks_runs_by_the_first_measure(board):
    means = [board.summaries[run, "nDCG@3"].mean for run in board.ranked_runs]
    assert means == sorted(means, reverse=True)
    assert f"{board.summaries['org_convdr', 'nDCG@3'].mean:.4f}" == "0.3542"  # trec_eval -c -M500


def test_the_leaderboard_means_are_the_evaluations_bit_for_bit(board, evaluations):
    """trec_eval's `all` (and harness eval's mean) adds the queries one by one; numpy's pairwise
    sum differs in the last bit, which shows in the 4th decimal where a mean falls on a half."""
    assert {(e.run_name, m): board.summaries[e.run_name, m].mean for e in evaluations for m in PRESET.measures} == \
        {(e.run_name, m): e.means[m] for e in evaluations for m in PRESET.measures}


def test_manual_ance_beats_bm25_significantly_and_convdr_does_not(board):
    assert board.marks("org_manual_ance", "nDCG@3") == "▲a"
    assert board.marks("org_convdr", "nDCG@3") == ""


def test_family_is_runs_times_baselines_times_measures_and_holm_corrected(board):
    assert len(board.comparisons) == 4 * 1 * len(PRESET.measures)
    raw = [c.p_value for c in board.comparisons]
    assert [c.p_adjusted for c in board.comparisons] == stats.holm(raw)


def test_each_comparison_is_a_paired_test_on_all_judged_queries(board, evaluations):
    by_name = {e.run_name: e for e in evaluations}
    c = next(c for c in board.comparisons if c.run == "org_convdr" and c.measure == "nDCG@3")
    qids = sorted(by_name["org_convdr"].per_query["nDCG@3"])
    a = [by_name["org_convdr"].per_query["nDCG@3"][q] for q in qids]
    b = [by_name["org_manual_bm25"].per_query["nDCG@3"][q] for q in qids]
    assert len(qids) == 158
    assert c.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue)
    assert c.wins + c.ties + c.losses == 158
    assert c.ci_low < c.difference < c.ci_high


def test_a_query_missing_from_a_run_scores_zero(evaluations):
    full = evaluations[0]
    dropped = sorted(full.per_query["nDCG@3"])[0]
    partial = Evaluation("partial", full.measures, {m: {q: v for q, v in values.items() if q != dropped}
                                                    for m, values in full.per_query.items()}, full.means)
    scores = align([full, partial])
    assert scores.qids == sorted(full.per_query["nDCG@3"])
    assert scores.per_query("nDCG@3", "partial")[dropped] == 0.0
    assert scores.per_query("nDCG@3", "org_convdr")[dropped] == full.per_query["nDCG@3"][dropped]


def test_runs_scored_with_different_measures_cannot_be_compared(evaluations):
    qrels = read_qrels(CAST2021_QRELS)
    other = evaluate(qrels, read_run(CAST2021_DOC_RUNS[1]), ["RR"])
    with pytest.raises(HarnessError, match="was scored with"):
        align([evaluations[0], other])


def test_two_baselines_are_compared_once(board):
    assert comparison_pairs(["a", "b", "c"], ["a", "b"]) == [("b", "a"), ("c", "a"), ("c", "b")]


def test_a_baseline_named_twice_is_tested_against_once(evaluations):
    """`--baseline org_convdr org_convdr.run` doubled the family (Holm over 4 comparisons, not 2) and the marks."""
    once = leaderboard(evaluations, ["org_convdr"])
    twice = leaderboard(evaluations, ["org_convdr", "org_convdr"])
    assert twice.baselines == ["org_convdr"] and twice.comparisons == once.comparisons


def test_unknown_baseline_is_an_error(evaluations):
    with pytest.raises(HarnessError, match="baseline 'nope' is not among the runs"):
        leaderboard(evaluations, ["nope"])


def test_legend_names_test_correction_and_family(evaluations):
    board = leaderboard(evaluations, ["org_manual_bm25"], test="permutation", correction="bonferroni",
                        resampling=stats.Resampling(500, 3))
    legend = board.legend()
    assert "permutation test with 500 resamples (seed 3)" in legend
    assert "bonferroni-corrected over the family of 24 comparisons" in legend


def test_turn_depth_is_the_last_integer_of_the_qid_and_the_conversation_what_comes_before():
    assert bd.depths(["106_3", "9-1-12"]) == {"106_3": 3, "9-1-12": 12}
    assert bd.conversations(["106_3", "9-1-12"]) == {"106_3": "106", "9-1-12": "9-1"}
    with pytest.raises(HarnessError, match="cannot read a turn depth from qid 'q7x'"):
        bd.depths(["106_3", "q7x"])


def test_compare_on_qids_without_a_depth_says_which_option_gives_one(tmp_path, capsys):
    """CoSRec's qids (`CoSRec-Curated_10_0_0#0`) end in no turn number: the command line's way to
    the breakdowns is --topics, not the Python API's mapping."""
    from harness.paths import qrels_root

    qrels = qrels_root() / "cosrec" / "curated.qrels"
    judged = read_qrels(qrels).judgments
    run = tmp_path / "mine.run"
    run.write_text("".join(f"{qid} Q0 {next(iter(docs))} 1 1.0 mine\n" for qid, docs in judged.items()))
    assert main(["compare", "--qrels", str(qrels), str(run), "--measures", "nDCG@10", "--format", "md"]) == 0
    err = capsys.readouterr().err
    assert "(expected it to end in _N or -N); give --topics NAME, the benchmark whose turns they are (harness " \
           "topics list names them)" in err


def test_depth_breakdown_covers_every_query(board):
    depth = bd.breakdown(board.scores, "nDCG@3", bd.depths(board.scores.qids), bd.DEPTH)
    assert depth.groups[0] == 1 and sum(depth.counts.values()) == 158 and depth.unassigned == 0
    turn_one = [q for q in board.scores.qids if q.endswith("_1")]
    expected = np.mean([board.scores.per_query("nDCG@3", "org_convdr")[q] for q in turn_one])
    assert depth.means["org_convdr"][1] == pytest.approx(expected)


def test_conversation_mean_averages_turns_first(board):
    per_query = board.scores.per_query("nDCG@3", "org_convdr")
    by_topic: dict[str, list[float]] = {}
    for qid, value in per_query.items():
        by_topic.setdefault(qid.split("_")[0], []).append(value)
    expected = np.mean([np.mean(v) for v in by_topic.values()])
    got = bd.conversation_means(board.scores, "nDCG@3", bd.conversations(board.scores.qids))
    assert got["org_convdr"] == pytest.approx(expected)


def test_any_qid_grouping_can_be_read_from_a_file(board, tmp_path):
    groups = tmp_path / "intent.tsv"
    groups.write_text("# qid intent\n106_1 search\n106_2 recommendation\n")
    by_intent = bd.breakdown(board.scores, "nDCG@3", bd.read_groups(groups), "intent")
    assert by_intent.groups == ["recommendation", "search"] and by_intent.unassigned == 156


def test_a_group_mean_adds_its_queries_one_by_one_as_trec_eval_does():
    """As the all line: numpy's mean of these P@20 values prints 0.2938, trec_eval 0.2937."""
    from harness.report.compare import Scores

    qids = [f"1_{turn}" for turn in range(1, 9)]
    scores = Scores(["r"], ["P@20"], qids, {"P@20": {"r": np.array([0, .25, .15, .3, .35, .1, .4, .8])}})
    assert f"{bd.breakdown(scores, 'P@20', dict.fromkeys(qids, 'all'), 'group').means['r']['all']:.4f}" == "0.2937"


def test_a_conversation_macro_mean_adds_the_conversations_one_by_one_as_trec_eval_does():
    """Eight one-turn conversations with the P@20 values above: numpy's mean of their means
    printed 0.2938, where adding them in conversation order gives trec_eval's 0.2937."""
    from harness.report.compare import Scores

    qids = [f"{topic}_1" for topic in range(1, 9)]
    scores = Scores(["r"], ["P@20"], qids, {"P@20": {"r": np.array([0, .25, .15, .3, .35, .1, .4, .8])}})
    assert f"{bd.conversation_means(scores, 'P@20', bd.conversations(qids))['r']:.4f}" == "0.2937"


def test_malformed_group_file_names_file_and_line(tmp_path):
    groups = tmp_path / "groups.tsv"
    groups.write_text("106_1 search\n106_2\n")
    with pytest.raises(InputError, match=r"groups.tsv:2: expected 2 fields"):
        bd.read_groups(groups)


def test_a_compressed_group_file_names_its_breakdown_as_the_plain_file_does(tmp_path):
    """intent.tsv.gz breaks results down 'by intent', as intent.tsv does (not 'by intent.tsv')."""
    groups = tmp_path / "intent.tsv.gz"
    groups.write_bytes(gzip.compress(b"106_1 search\n106_2 recommendation\n"))
    out = tmp_path / "board.md"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                 "--groups", str(groups), "--output", str(out)]) == 0
    assert "## RR by intent\n" in out.read_text()


def test_cli_markdown_has_marked_leaderboard_breakdowns_and_arena(tmp_path):
    out = tmp_path / "board.md"
    votes = data_root() / "crsarena" / "votes_open.csv"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS),
                 "--baseline", "org_manual_bm25", "--preset", "cast2021", "--out", str(out),
                 "--arena-votes", str(votes), "--arena-bootstrap", "50"]) == 0
    text = out.read_text()
    assert "| 1 | org_manual_ance | 0.5300▲a |" in text
    assert "two-sided paired-t test on 158 queries, p-values holm-corrected" in text
    assert "## nDCG@3 by turn depth" in text and "## Mean over conversations" in text
    assert "## Arena ratings" in text and "| 1 | chatgpt_opendialkg | 1056 |" in text


def test_on_a_log_or_a_pipe_evaluating_many_runs_draws_no_bar(tmp_path, capsys):
    """A bar redrawn on a stream that is not a terminal is a line per refresh (`> log`, CI)."""
    out = tmp_path / "board.md"
    assert len(CAST2021_DOC_RUNS) >= 3  # where a terminal gets a bar
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS), "--measures", "RR",
                 "--output", str(out)]) == 0
    assert capsys.readouterr().err == f"report written to {out}\n"

def test_a_run_missing_judged_queries_is_named_with_how_many_its_tests_score_0(tmp_path, capsys):
    """eval says it; compare paired the missing queries' 0s with the other runs' scores without a word."""
    first = CAST2021_DOC_RUNS[1].read_text().split()[0]
    cut = tmp_path / "cut.run"
    cut.write_text("".join(line + "\n" for line in CAST2021_DOC_RUNS[1].read_text().splitlines()
                           if line.split()[0] != first))
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), str(cut), "--measures", "RR",
                 "--output", str(tmp_path / "board.md")]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        "note: cut: 158 judged queries; 1 missing from the run (scored as empty rankings)")


@pytest.mark.parametrize("command", [["compare"], ["eval"], ["qrels", "rank-agree"]])
def test_two_runs_of_one_file_name_are_refused_naming_both_paths_before_any_is_scored(tmp_path, capsys, command):
    """One system's runs from two output folders share a name: the error says which files,
    before scoring (the second is no run file at all: reading it would be the error)."""
    other = tmp_path / "other" / CAST2021_DOC_RUNS[0].name
    other.parent.mkdir()
    other.write_text("not a run\n")
    qrels = ["--qrels", str(CAST2021_QRELS)]
    if command[0] == "qrels":  # rank-agree orders the runs under two qrels, A and B
        qrels = [str(CAST2021_QRELS), str(tmp_path / "b.qrels")]
        (tmp_path / "b.qrels").write_bytes(CAST2021_QRELS.read_bytes())
    prog = f"harness {' '.join(command)}"
    assert main([*command, *qrels, str(CAST2021_DOC_RUNS[0]), str(other), "--measures", "RR"]) == 2
    assert capsys.readouterr().err == (
        f"{prog}: error: two runs share the name {other.stem}: {CAST2021_DOC_RUNS[0]} and {other}; "
        "rename one run file (its name, less the suffix, names the run)\n")
    assert main([*command, *qrels, str(other), str(other), "--measures", "RR"]) == 2
    assert capsys.readouterr().err == f"{prog}: error: {other} is given twice\n"


def test_runs_of_one_name_are_refused_by_the_python_api_too(evaluations):
    with pytest.raises(HarnessError, match=f"^two runs share the name {evaluations[0].run_name}; rename one$"):
        leaderboard([evaluations[0], evaluations[0]])


def test_a_single_run_gets_a_leaderboard_without_tests(evaluations):
    board = leaderboard(evaluations[:1])
    assert board.comparisons == [] and board.marks("org_convdr", "nDCG@3") == ""


def copied_run(tmp_path, name: str):
    """org_convdr under another name: a run whose means equal another's."""
    path = tmp_path / f"{name}.run"
    path.write_bytes(next(p for p in CAST2021_DOC_RUNS if p.stem == "org_convdr").read_bytes())
    return path


@pytest.mark.parametrize("fmt", ["md", "html", "csv", "json"])
def test_equal_means_share_a_rank_and_the_next_run_counts_them_in_every_format(tmp_path, capsys, fmt):
    """org_convdr and its copy tie on RR (0.6719): ranked 3 and 4 by input order before, now both 3rd
    (1, 2, 3, 3), as the hosted board ranks them; a run after them would be 5th."""
    runs = [p for p in CAST2021_DOC_RUNS if p.stem in ("org_manual_bm25", "org_convdr", "org_manual_ance")]
    args = ["compare", "--qrels", str(CAST2021_QRELS), *map(str, runs), str(copied_run(tmp_path, "convdr_copy")),
            "--measures", "RR", "AP", "--format", fmt]
    assert main(args) == 0
    out = capsys.readouterr().out
    expected = {"org_manual_ance": 1, "org_manual_bm25": 2, "org_convdr": 3, "convdr_copy": 3}
    if fmt == "md":
        rows = [line.split(" | ") for line in out.splitlines() if re.match(r"\| \d+ \| ", line)][:4]
        assert {cells[1].removesuffix(" (a)"): int(cells[0][2:]) for cells in rows} == expected
    elif fmt == "html":
        cells = re.findall(r"<tr><td class=l>(\d+)</td><td class=l>([^<(]+?)(?: \(a\))?</td>", out)
        assert {run: int(rank) for rank, run in cells[:4]} == expected
    elif fmt == "csv":
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["kind"] == "mean"]
        assert {r["run"]: int(r["rank"]) for r in rows if r["measure"] == "RR"} == expected
        assert {r["rank"] for r in rows if r["measure"] == "AP"} == {""}  # the first measure ranks
    else:
        assert json.loads(out)["ranks"] == expected


def test_means_equal_as_printed_but_not_as_floats_are_ranked_apart_as_the_hosted_board_ranks_them(evaluations):
    """The board ranks by the floats the means sort by: 1e-9 more on one query is a higher mean, though
    both print alike (and the tie they print as is broken by no input order)."""
    convdr = next(e for e in evaluations if e.run_name == "org_convdr")
    first = next(iter(convdr.per_query["nDCG@3"]))
    nudged = RunScores("nudged", convdr.measures, {m: {**values, first: values[first] + 1e-9} if m == "nDCG@3"
                                                    else values for m, values in convdr.per_query.items()})
    copy = RunScores("copy", convdr.measures, convdr.per_query)
    board = leaderboard([convdr, copy, nudged])
    means = {run: f"{board.summaries[run, 'nDCG@3'].mean:.4f}" for run in board.ranked_runs}
    assert len(set(means.values())) == 1
    assert board.ranks() == {"nudged": 1, "org_convdr": 2, "copy": 2}


def test_cli_csv_and_json_agree_to_the_last_bit(tmp_path, capsys):
    """The CSV is for programs: its numbers were rounded (6 decimals, p to 6 digits, d to 4), so
    what a reader recomputed from them drifted from the harness's; now each is the JSON's float."""
    args = ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "nDCG@3",
            "NumRel", "--depth", "500", "--test", "bootstrap", "--resamples", "1000"]
    main(args + ["--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    main(args + ["--format", "json"])
    document = json.loads(capsys.readouterr().out)
    comparison = next(c for c in document["comparisons"] if c["measure"] == "nDCG@3")
    row = next(r for r in rows if r["kind"] == "vs baseline" and r["measure"] == "nDCG@3")
    assert row["baseline"] == comparison["baseline"] == "org_convdr"  # default: the first run
    numbers = ("difference", "ci_low", "ci_high", "effect_size", "p_value", "p_adjusted")
    assert [float(row["value"]), *(float(row[k]) for k in numbers[1:])] == [comparison[k] for k in numbers]
    mean = next(r for r in rows if (r["kind"], r["run"], r["measure"]) == ("mean", "org_convdr", "nDCG@3"))
    assert [float(mean[k]) for k in ("value", "ci_low", "ci_high")] == [
        document["runs"]["org_convdr"]["nDCG@3"][k] for k in ("mean", "ci_low", "ci_high")]
    assert next(r["value"] for r in rows if r["kind"] == "mean" and r["measure"] == "NumRel") == "5505"
    assert document["test"] == "bootstrap" and document["resamples"] == 1000


def test_cli_csv_holds_every_table_below_the_leaderboard_as_json_has_it(tmp_path, capsys):
    """--groups (or --group-field), turn depth, conversation, the mean over conversations and the
    untested Judged@10: the CSV held the leaderboard's rows alone, and dropped these without a word.
    Their rows come after, kind 'by <name>' with the group and its queries in columns of their own,
    after the leaderboard's."""
    groups = tmp_path / "intent.tsv"
    groups.write_text("106_1 search\n106_2 recommendation\n106_3 recommendation\n")
    args = ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
            "nDCG@3", "--groups", str(groups)]
    assert main(args + ["--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n", 1)[0] == ("kind,run,measure,baseline,value,ci_low,ci_high,effect_size,p_value,p_adjusted,"
                                     "significant,wins,ties,losses,group,queries,rank")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert main(args + ["--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    runs = list(document["runs"])
    tables = {(r["kind"], r["measure"], r["group"], r["queries"], r["run"]): float(r["value"]) for r in rows
              if r["kind"].startswith("by ")}
    assert tables == {(f"by {b['name']}", b["measure"], str(g["group"]), str(g["queries"]), run): g[run]
                      for b in document["breakdowns"] for g in b["groups"] for run in runs}
    assert {kind for kind, *_ in tables} == {"by turn depth", "by conversation", "by intent"}
    assert ("by intent", "RR", "recommendation", "2", runs[0]) in tables
    assert {(r["run"], r["measure"]): float(r["value"]) for r in rows if r["kind"] == "mean over conversations"} == {
        (run, measure): means[run] for measure, means in document["conversation_means"].items() for run in runs}
    assert {(r["run"], r["measure"]): float(r["value"]) for r in rows if r["kind"] == "untested"} == {
        (run, measure): means[run] for measure, means in document["untested"].items() for run in runs}
    assert list(document["untested"]) == ["Judged@10"]


def test_cli_json_has_each_win_rate_and_its_pair_s_votes_as_numbers(capsys):
    votes = data_root() / "crsarena" / "votes_open.csv"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "RR",
                 "--arena-votes", str(votes), "--arena-bootstrap", "10", "--format", "json"]) == 0
    arena = json.loads(capsys.readouterr().out)["arena"]
    assert arena["win_rate_votes"].keys() == arena["win_rates"].keys()
    assert sum(arena["win_rate_votes"].values()) == 2 * 81
    assert "per vote of the pair (their number in brackets)" in arena["legend"]


def test_cli_csv_says_it_holds_no_arena_ratings(capsys):
    votes = data_root() / "crsarena" / "votes_open.csv"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "RR",
                 "--arena-votes", str(votes), "--arena-bootstrap", "10", "--format", "csv"]) == 0
    assert "note: the CSV holds no arena ratings (md, html and json do; harness arena --format csv writes them " \
           "alone)\n" in capsys.readouterr().err


def one_query_args(tmp_path, queries: int = 1) -> list[str]:
    """compare of two CAsT 2021 runs on the qrels of one query (or of the first `queries`)."""
    lines = CAST2021_QRELS.read_text().splitlines()
    qids = list(dict.fromkeys(line.split()[0] for line in lines))[:queries]
    qrels = tmp_path / "one.qrel"
    qrels.write_text("".join(line + "\n" for line in lines if line.split()[0] in qids))
    return ["compare", "--qrels", str(qrels), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "nDCG@500"]


@pytest.mark.parametrize("test", ["paired-t", "bootstrap"])
def test_on_one_query_no_run_is_significantly_better_and_the_json_is_strict(tmp_path, capsys, test):
    """The bootstrap marked a difference on one query significant (p = 0) and paired-t gave p nan;
    Cohen's d there is undefined, which the JSON writes as null (it wrote Infinity, not JSON)."""
    args = one_query_args(tmp_path) + ["--test", test, "--resamples", "100"]
    assert main(args + ["--format", "json"]) == 0
    out, err = capsys.readouterr()
    (comparison,) = json.loads(out, parse_constant=lambda word: pytest.fail(f"{word} is not JSON"))["comparisons"]
    assert comparison["difference"] != 0 and comparison["effect_size"] is None
    assert not comparison["significant"]
    assert "Warning" not in err  # scipy's divide-by-zero warnings on one pair


def test_on_one_query_p_cohens_d_and_the_interval_are_na_in_every_format_with_one_warning(tmp_path, capsys):
    """One query: d was +inf in md and csv, null in JSON, p = 1 and a zero-width '95% interval', as the
    runs' means had still; the CSV's n/a is an empty cell, as the mean rows' other cells (it wrote 'n/a')."""
    args = one_query_args(tmp_path)
    main(args + ["--format", "json"])
    out, err = capsys.readouterr()
    (comparison,) = json.loads(out)["comparisons"]
    assert [comparison[k] for k in ("ci_low", "ci_high", "effect_size", "p_value", "p_adjusted")] == [None] * 5
    assert [(m["ci_low"], m["ci_high"]) for run in json.loads(out)["runs"].values() for m in run.values()] == [
        (None, None)] * 2
    assert err.count("warning: one query cannot be tested") == 1
    assert "one query cannot be tested" in json.loads(out)["legend"]
    main(args + ["--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    row = next(r for r in rows if r["kind"] == "vs baseline")
    assert [row[k] for k in ("ci_low", "ci_high", "effect_size", "p_value", "p_adjusted")] == [""] * 5
    assert [(r["ci_low"], r["ci_high"]) for r in rows if r["kind"] == "mean"] == [("", "")] * 2
    main(args + ["--format", "md"])
    line = next(line for line in capsys.readouterr().out.splitlines() if "(a) | nDCG@500" in line)
    assert line.split(" | ")[4:8] == ["n/a"] * 4 and "inf" not in line


@pytest.mark.parametrize("test, floor, enough", [("bootstrap", "1/", 20), ("permutation", "2/", 40)])
def test_too_few_resamples_for_any_significance_are_warned_of(capsys, test, floor, enough):
    """A bootstrap p is at least 1/(resamples + 1), a two-sided permutation p twice that (scipy doubles the
    smaller one-sided p: it was taken as 1/(R + 1), and not warned of), and Holm multiplies the smallest by
    the family's size: at 1 or 2 resamples a difference whose interval holds 0 was starred (p = 0). Below
    that no comparison can be significant: said, with the resamples needed."""
    args = ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "nDCG@3",
            "--test", test, "--format", "csv"]
    main(args + ["--resamples", str(enough)])
    assert "warning" not in capsys.readouterr().err
    main(args + ["--resamples", str(enough - 1)])
    assert (f"warning: {enough - 1} resamples: the {test} test's p-values are at least {floor}{enough}, which "
            "holm-corrected over 1 comparison is 0.05, not below alpha 0.05: no comparison can be significant; "
            f"give --resamples {enough} or more") in capsys.readouterr().err


def test_the_resamples_needed_are_counted_from_the_tests_floor_not_from_the_p_the_correction_capped(evaluations):
    """At 10 resamples over 24 comparisons Holm caps the smallest p, 24/11, at 1: the advice, taken
    from the capped p, was 220 resamples, where nothing is significant either; 24/(R + 1) < 0.05 at 480."""
    def warnings_at(resamples: int) -> list[str]:
        return leaderboard(evaluations, test="bootstrap", resampling=stats.Resampling(resamples)).warnings()

    (warning,) = warnings_at(10)
    assert warning.endswith("holm-corrected over 24 comparisons is 1, not below alpha 0.05: no comparison can be "
                            "significant; give --resamples 480 or more")
    assert warnings_at(479) and not warnings_at(480)


@pytest.mark.parametrize("resamples, why", [
    (10_000, "(exact on 5 queries: all 32 sign flips), which holm-corrected over 1 comparison is 0.0625, not below "
             "alpha 0.05: no comparison can be significant; no number of resamples can help: too few queries"),
    (20, "which holm-corrected over 1 comparison is 0.09524, not below alpha 0.05: no comparison can be significant; "
         "no number of resamples can help: on 5 queries the exact permutation test's p-values are at least 2/32 "
         "(too few queries)"),
])
def test_a_permutation_test_on_too_few_queries_for_any_significance_is_warned_of(tmp_path, capsys, resamples, why):
    """On 5 queries the exact permutation test's p is at least 2/2**5 = 0.0625, whatever the resamples: said
    (nothing was), and not as more resamples to give."""
    assert main(one_query_args(tmp_path, queries=5) + ["--test", "permutation", "--resamples", str(resamples)]) == 0
    assert why in capsys.readouterr().err


def test_the_bootstraps_floor_keeps_falling_with_the_resamples_on_few_queries(tmp_path, capsys):
    """Only the permutation test turns exact: the bootstrap's smallest p on 3 queries is 1/(resamples + 1)."""
    assert main(one_query_args(tmp_path, queries=3) + ["--test", "bootstrap", "--resamples", "10"]) == 0
    assert "0.09091, not below alpha 0.05: no comparison can be significant; give --resamples 20 or more\n" in (
        capsys.readouterr().err)


def test_a_float_strict_json_has_no_word_for_is_written_null():
    """One rule for the compare report's JSON, responses eval's rows and the judge's agreement JSON
    (evaluate.json_number)."""
    from harness.evaluate import json_number

    assert [json_number(v) for v in (float("inf"), -float("inf"), float("nan"), np.float64("nan"))] == [None] * 4
    assert [json_number(v) for v in (0.5, 3, "x", None)] == [0.5, 3, "x", None]


def test_topic_adapter_depths_agree_with_the_qid_convention_on_cast2021():
    benchmark = load("cast2021")
    from_topics = bd.depths_from_topics(benchmark.conversations)
    assert from_topics == bd.depths(from_topics)
    assert bd.conversations_from_topics(benchmark) == bd.conversations(from_topics)


@pytest.mark.parametrize("name", ["ikat2023", "ikat2024", "cast2019", "cast2020"])
def test_a_benchmark_whose_turns_are_its_dialogue_has_depth_its_turn_position(name):
    conversations = load(name).conversations
    assert all(turn.depth is None for c in conversations for turn in c.turns)
    assert bd.depths_from_topics(conversations) == {
        turn.qid: index + 1 for c in conversations for index, turn in enumerate(c.turns)}


def test_cosrec_turn_depth_is_the_user_utterance_so_every_opening_request_is_depth_1():
    """An utterance's intents and personalised copies are separate turns of the conversation; by
    position they spread the opening request over depths 1-5 and reach depth 33 in 20 dialogues."""
    turns = load("cosrec-curated").turns
    depths = bd.turn_groups(bd.DEPTH, [], load("cosrec-curated"))
    assert {depths[t.qid] for t in turns if t.utterance_index == 0} == {1}
    assert all(depths[t.qid] == t.utterance_index + 1 for t in turns)
    assert depths["CoSRec-Curated_1_0_0#3"] == 1 and depths["CoSRec-Curated_1_1_0#1"] == 2
    assert max(depths.values()) == 10


def test_opendialkg_depth_from_its_turns_is_the_dialogue_turn_of_its_qid():
    """Its conversations hold the recommendation turns only: by position, qid 11_3 was depth 1."""
    for split in ("test", "valid"):
        depths = bd.depths_from_topics(load(f"opendialkg:{split}").conversations)
        assert depths == bd.depths(depths)
    assert bd.turn_groups(bd.DEPTH, [], load("opendialkg:test"))["11_3"] == 3


def test_cast2022_conversation_groups_are_topics_whether_of_several_paths_or_one():
    """CAsT 2022's conversations are paths through a topic's tree, sharing their first turns:
    grouped by the topic, each judged turn counts once (a shared turn went to the last path),
    and a topic of one path is named by its topic too (it was its path's id, 137/1-12)."""
    benchmark = load("cast2022")
    groups = bd.conversations_from_topics(benchmark)
    assert set(groups) == {turn.qid for c in benchmark.conversations for turn in c.turns}
    assert groups["132_1-1"] == groups["132_2-13"] == groups["132_3-5"] == "132"
    paths = [c for c in benchmark.conversations if c.id.startswith("132/")]
    assert len(paths) > 1 and sum(v == "132" for v in groups.values()) == len({t.qid for c in paths for t in c.turns})
    (single,) = [c for c in benchmark.conversations if c.id.startswith("137/")]
    assert {groups[t.qid] for t in single.turns} == {"137"}
    assert set(groups.values()) == {c.id.split("/")[0] for c in benchmark.conversations}


def test_cosrec_intent_types_group_queries():
    groups = bd.groups_from_topics(load("cosrec-curated"), "type")
    assert set(groups.values()) == {"search", "recommendation", "product_details"}


def test_grouping_by_a_field_no_turn_has_is_an_error():
    with pytest.raises(HarnessError, match="carries the field 'intent'"):
        bd.groups_from_topics(load("cast2021"), "intent")


def test_compare_shows_judged_at_10_beside_the_measures_outside_the_tests(tmp_path):
    """A run whose documents are mostly unjudged shows it at a glance; Judged@10 is not tested."""
    out = tmp_path / "board.md"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS),
                 "--baseline", "org_manual_bm25", "--preset", "cast2021", "--out", str(out)]) == 0
    text = out.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| rank |"))
    assert header.split("|")[-2].strip() == "Judged@10"
    qrels = read_qrels(CAST2021_QRELS)
    judged = evaluate(qrels, read_run(CAST2021_DOC_RUNS[0]), ["Judged@10"], PRESET.depth).means["Judged@10"]
    row = next(line for line in text.splitlines() if f"| {CAST2021_DOC_RUNS[0].stem} |" in line)
    assert row.endswith(f"| {judged:.4f} |")
    assert "family of 24 comparisons" in text  # 4 runs x 6 measures: Judged@10 is not in the family


def test_a_run_with_no_query_in_common_with_the_qrels_is_named_in_the_warning_eval_gives(tmp_path, capsys):
    other = tmp_path / "other_year.run"  # the same run, its qids of another year's topics
    other.write_text("".join(f"x{line}" for line in CAST2021_DOC_RUNS[0].read_text().splitlines(keepends=True)))
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), str(other),
                 "--measures", "RR"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "no query in common" in line]
    assert warnings == [f"warning: run 'other_year' has no query in common with {CAST2021_QRELS}; every measure is 0"]


def test_dialogues_without_arena_votes_is_an_error_not_ignored(tmp_path, capsys):
    """Satisfaction rates belong to the arena table: without votes the dialogues were dropped without a word."""
    dialogues = data_root() / "crsarena" / "crs_arena_dial_open.json"
    out = tmp_path / "board.md"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--dialogues",
                 str(dialogues), "--output", str(out)]) == 2
    assert "--dialogues needs --arena-votes" in capsys.readouterr().err and not out.exists()


def test_a_baseline_matching_no_run_is_quoted_as_written(capsys):
    """A dotted run name is not cut at its last dot as a file's suffix would be."""
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                 "--baseline", "org.convdr"]) == 2
    assert "baseline 'org.convdr' is not among the runs (org_convdr, org_convdr_bert)" in capsys.readouterr().err


def test_a_baseline_matching_no_run_is_said_before_any_run_is_scored(tmp_path, capsys):
    """The second run file is no run at all: scoring it would be the error, so the misspelt
    --baseline is the one said, before any run is read."""
    broken = tmp_path / "broken.run"
    broken.write_text("not a run\n")
    assert main(["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), str(broken), "--measures",
                 "RR", "--baseline", "brokn"]) == 2
    assert capsys.readouterr().err == (f"harness compare: error: baseline 'brokn' is not among the runs "
                                       f"({CAST2021_DOC_RUNS[0].stem}, broken); nearest: broken\n")


def test_topics_sharing_no_turn_with_the_runs_are_named_as_the_mistake(capsys):
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                 "--topics", "ikat2023"]) == 2
    assert capsys.readouterr().err == (
        "harness compare: error: --topics ikat2023: none of its 332 turns is a compared query (its first turn is "
        "'9-1_1', the first compared query '106_1'): give the benchmark the runs answer "
        "(`harness compare --help` lists the options)\n")


@pytest.mark.parametrize("name, starts", [("board.html", "<!DOCTYPE html>"), ("board.json", "{"),
                                          ("board.txt", "# Run"), ("board", "# Run")])
def test_without_format_the_report_is_written_as_its_output_suffix_says(tmp_path, capsys, name, starts):
    out = tmp_path / name
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                 "--output", str(out)]) == 0
    assert out.read_text().startswith(starts)
    assert capsys.readouterr().err.endswith(f"report written to {out}\n")


def test_an_output_suffix_naming_no_report_format_is_an_error_unless_format_is_given(tmp_path, capsys):
    """Markdown written to board.pdf would be a file no PDF reader opens, said to be written."""
    out, args = tmp_path / "board.pdf", ["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]),
                                         "--measures", "RR"]
    assert main([*args, "--output", str(out)]) == 2
    assert capsys.readouterr().err == (f"harness compare: error: --output {out}: .pdf names no format this command writes (known: "
                                       ".csv .html .json .md .htm .markdown .txt); name the file so, or give --format "
                                       "(`harness compare --help` lists the options)\n")
    assert not out.exists()
    assert main([*args, "--output", str(out), "--format", "md"]) == 0
    assert out.read_text().startswith("# Run")


def test_a_single_run_s_report_has_no_empty_paired_comparisons_table_in_any_format(capsys):
    """The legend says "A single run: no paired tests"; no table of none follows (JSON keeps its key, empty)."""
    args = ["compare", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "RR", "--format"]
    outputs = {}
    for fmt in ("md", "html", "csv", "json"):
        assert main([*args, fmt]) == 0
        outputs[fmt] = capsys.readouterr().out
    assert "A single run: no paired tests" in outputs["md"] and "Paired comparisons" not in outputs["md"]
    assert "A single run: no paired tests" in outputs["html"] and "Paired comparisons" not in outputs["html"]
    assert "vs baseline" not in {row["kind"] for row in csv.DictReader(io.StringIO(outputs["csv"]))}
    assert json.loads(outputs["json"])["comparisons"] == []


def test_a_single_run_on_one_query_has_no_interval_and_its_legend_says_so(tmp_path, capsys):
    """Its interval is n/a (JSON null): the legend said "95% t-intervals on 1 query" still."""
    args = one_query_args(tmp_path)
    args.remove(str(CAST2021_DOC_RUNS[1]))
    assert main([*args, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [m["ci_low"] for run in document["runs"].values() for m in run.values()] == [None]
    assert document["legend"].startswith("A single run: no paired tests. Intervals: n/a on 1 query "
                                         "(one query has no spread to form an interval).")


def test_cast2022_tree_node_qids_give_no_depth_guessed_from_their_number(tmp_path, capsys):
    """132_2-1 is the 3rd user turn of its path (branch 2 starts below 1-4), not depth 1 of a
    conversation 132_2: without --topics compare says so rather than breaking down by a wrong depth."""
    qids = ["132_1-1", "132_1-3", "132_2-1"]
    assert bd.depths_from_topics(c for c in load("cast2022").conversations if c.id == "132/2-14")["132_2-1"] == 3
    qrels = tmp_path / "q.qrel"
    qrels.write_text("".join(f"{q} 0 d1 1\n" for q in qids))
    runs = []
    for name, docs in (("a", "d1 d2"), ("b", "d2 d1")):
        runs.append(tmp_path / name)
        runs[-1].write_text("".join(f"{q} Q0 {d} {i + 1} {2 - i} {name}\n" for q in qids
                                    for i, d in enumerate(docs.split())))
    assert main(["compare", "--qrels", str(qrels), *map(str, runs), "--measures", "RR", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note: no turn-depth or conversation breakdown: qid '132_1-1' names a CAsT 2022 tree node" in err
    assert "pass --topics cast2022" in err and not json.loads(out)["breakdowns"]
    assert main(["compare", "--qrels", str(qrels), *map(str, runs), "--measures", "RR", "--format", "json",
                 "--topics", "cast2022"]) == 0
    depth = next(b for b in json.loads(capsys.readouterr().out)["breakdowns"] if b["name"] == bd.DEPTH)
    assert {g["group"]: g["queries"] for g in depth["groups"]} == {1: 1, 2: 1, 3: 1}


def test_counts_are_summed_over_the_queries_as_trec_eval_and_harness_eval_give_them(tmp_path):
    """NumRet and NumRel(rel=1)... in a compare report are trec_eval's `all` values (sums, whole
    numbers), not per-query means; their differences are sums too, their tests unchanged."""
    qrels = read_qrels(CAST2021_QRELS)
    evaluations = [evaluate(qrels, read_run(path), ["NumRet", "nDCG@3"]) for path in CAST2021_DOC_RUNS[:2]]
    board = leaderboard(evaluations)
    first, second = (e.run_name for e in evaluations)
    for evaluation in evaluations:
        assert board.summaries[evaluation.run_name, "NumRet"].mean == evaluation.means["NumRet"]
        assert evaluation.means["NumRet"] == sum(evaluation.per_query["NumRet"].values())
    comparison = board.comparisons_of(second, "NumRet")[0]
    assert comparison.difference == evaluations[1].means["NumRet"] - evaluations[0].means["NumRet"]
    per_query = [np.array([e.per_query["NumRet"].get(q, 0.0) for q in board.scores.qids]) for e in evaluations]
    assert comparison.p_value == stats.paired_t(per_query[1], per_query[0], stats.Resampling())
    out = tmp_path / "report.md"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]),
                 "--measures", "NumRet", "nDCG@3", "--output", str(out)]) == 0
    assert f"| {evaluations[0].means['NumRet']:.0f}" in out.read_text()
    # JSON and CSV give a count's value and difference as the whole numbers they are, as the table prints them
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]),
                 "--measures", "NumRet", "nDCG@3", "--format", "json", "--output", str(out.with_suffix(".json"))]) == 0
    document = json.loads(out.with_suffix(".json").read_text())
    assert document["runs"][first]["NumRet"]["mean"] == evaluations[0].means["NumRet"]
    assert type(document["runs"][first]["NumRet"]["mean"]) is int
    assert [type(c["difference"]) for c in document["comparisons"]] == [int, float]
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]),
                 "--measures", "NumRet", "nDCG@3", "--output", str(out.with_suffix(".csv"))]) == 0
    rows = list(csv.reader(out.with_suffix(".csv").read_text().splitlines()))
    assert ["mean", first, "NumRet", "", f"{evaluations[0].means['NumRet']:.0f}"] == rows[1][:5]
    assert [row[4] for row in rows if row[:3] == ["vs baseline", second, "NumRet"]] == [f"{comparison.difference:.0f}"]


@pytest.mark.parametrize("benchmark, field, grouping", [
    ("opendialkg:test", "entities", "no field of opendialkg:test groups"),
    ("cosrec-curated", "keywords", "the fields that group (one value per turn): utterance_index, type, user")])
def test_a_group_field_holding_a_list_is_refused_naming_the_fields_that_group(tmp_path, capsys, benchmark, field,
                                                                              grouping):
    """A list field made one group per distinct list, about one per query, printed as a Python tuple."""
    assert main(["compare", "--qrels", str(tmp_path / "q"), str(tmp_path / "a.run"), "--topics", benchmark,
                 "--group-field", field]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--group-field {field!r}: each turn of {benchmark} holds a list of strings" in err
    assert f"not one group; {grouping}; --groups FILE ('qid group' lines) takes any grouping" in err


def test_a_conversation_table_of_one_query_per_conversation_is_left_out_of_md_and_kept_in_csv(tmp_path, capsys,
                                                                                              board):
    """OpenDialKG's 1113 test conversations hold one or two recommendation turns: the md table by conversation
    was 1113 rows repeating the per-query scores. CAsT's conversations (many turns each) keep theirs."""
    from harness.trec import qrels_text

    benchmark = load("opendialkg:test")
    qrels = tmp_path / "odkg.qrels"
    qrels.write_text(qrels_text(benchmark.qrels()))
    judged = read_qrels(qrels).judgments
    run = tmp_path / "mine.run"
    run.write_text("".join(f"{qid} Q0 {docid} {rank} {-rank} mine\n" for qid, documents in judged.items()
                           for rank, docid in enumerate(sorted(documents, reverse=len(qid) % 2 == 0), start=1)))
    args = ["compare", "--qrels", str(qrels), str(run), "--measures", "R@1", "--topics", "opendialkg:test"]
    conversations = {turn.qid: c.id for c in benchmark.conversations for turn in c.turns if turn.qid in judged}
    single = sum(list(conversations.values()).count(c) == 1 for c in set(conversations.values()))
    assert main(args + ["--format", "md"]) == 0
    text = capsys.readouterr().out
    assert (f"## R@1 by conversation\n\nNot shown: {single} of the {len(set(conversations.values()))} conversations "
            "hold one compared query, so their rows would repeat the per-query scores; --format csv or json lists "
            "every conversation.\n") in text
    assert "| conversation |" not in text and "## Mean over conversations" in text
    assert main(args + ["--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["group"] for r in rows if r["kind"] == "by conversation"} == set(conversations.values())
    cast = bd.breakdown(board.scores, "nDCG@3", bd.conversations(board.scores.qids), bd.CONVERSATION)
    assert not bd.repeats_queries(cast) and bd.one_query_groups(cast) == 0


def test_each_group_is_tested_as_the_board_is_on_its_queries_alone_one_family_across_the_groups(board):
    """'Is my run better on recommendation intents?': each group of a breakdown runs the leaderboard's test on
    its queries alone; the comparisons of all the groups are one family, corrected at once (Holm here), so that
    k groups are not k tries at alpha. The group tables showed means alone."""
    qids = board.scores.qids
    groups = {qid: "early" if depth <= 3 else "late" for qid, depth in bd.depths(qids).items()}
    boards = bd.tested_groups(board, groups)
    assert list(boards) == ["early", "late"]
    raw = []
    for group, group_board in boards.items():
        indices = [i for i, qid in enumerate(qids) if groups[qid] == group]
        assert group_board.scores.qids == [qids[i] for i in indices]
        for c in group_board.comparisons:
            a, b = (board.scores.values[c.measure][run][indices] for run in (c.run, c.baseline))
            assert c.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-12)
            assert c.wins + c.ties + c.losses == len(indices)
            raw.append(c.p_value)
    assert len(raw) == 2 * len(board.comparisons)
    assert [c.p_adjusted for b in boards.values() for c in b.comparisons] == stats.holm(raw)
    assert all(b.family == len(raw) and b.test == "paired-t" for b in boards.values())
    marked = {(g, run): b.marks(run, "nDCG@3") for g, b in boards.items() for run in board.scores.runs}
    assert "▲a" in marked.values() and marked != {(g, run): board.marks(run, "nDCG@3") for g, run in marked}


def test_a_group_table_marks_its_runs_and_a_group_of_one_query_says_it_has_no_test(tmp_path, capsys):
    """The table of a --groups (or --group-field) grouping gives each group's comparisons and the legend the
    main table has; a group of one query has no spread to test against: n/a, said in the legend and warned of."""
    qids = sorted({line.split()[0] for line in CAST2021_QRELS.read_text().splitlines()})
    groups = tmp_path / "phase.tsv"
    groups.write_text("".join(f"{qid} {'solo' if i == 0 else 'rest'}\n" for i, qid in enumerate(qids)))
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures",
                 "nDCG@3", "--groups", str(groups), "--format", "md"]) == 0
    out, err = capsys.readouterr()
    table = out.split("## nDCG@3 by phase\n\n")[1]
    first, second = (path.stem for path in CAST2021_DOC_RUNS[:2])
    assert table.startswith(f"| phase | queries | {first} (a) | {second} |\n")
    assert "### Paired comparisons within each phase\n\n| phase | run | baseline | measure | Δ mean |" in table
    assert f"| solo | {second} | {first} (a) | nDCG@3 |" in table and "| n/a | n/a | n/a | n/a |" in table
    assert ("Within each phase, on its queries alone: ▲x / ▼x: significantly higher / lower than baseline x "
            f"(a = {first}); two-sided paired-t test, p-values holm-corrected over the family of 1 comparison "
            "(groups x runs x baselines x measures), alpha = 0.05. A group of one query cannot be tested (no spread "
            "to test a difference against): its p-values, Cohen's d and intervals are n/a (phase solo).") in table
    assert "warning: within phase 'solo': one query cannot be tested" in err



def test_a_group_file_takes_qids_holding_a_hash_and_comments_after_a_blank(tmp_path):
    """CoSRec's personalised copies are CoSRec-Curated_1_0_0#3: the '#' was read as a comment's start, and
    the line refused as 'expected 2 fields'."""
    qids = [turn.qid for turn in load("cosrec-curated").turns if "#" in turn.qid][:2]
    groups = tmp_path / "user.tsv"
    groups.write_text(f"# qid user\n{qids[0]} first  # the first user\n{qids[1]}\tsecond\n")
    assert bd.read_groups(groups) == {qids[0]: "first", qids[1]: "second"}


def test_a_hash_in_a_group_file_s_group_column_starts_a_comment_as_it_did(tmp_path):
    """`106_1 A#old` is group A, its '#old' a comment, as before qids holding a '#' were read: it was a group
    named 'A#old' of its own, without a word. A qid keeps its '#' (the test above)."""
    groups = tmp_path / "phase.tsv"
    groups.write_text("106_1 A#old\n106_2 A\n106_3 B#\n")
    assert bd.read_groups(groups) == {"106_1": "A", "106_2": "A", "106_3": "B"}


def test_a_group_file_covering_none_of_the_compared_queries_is_a_one_line_error(tmp_path, capsys):
    """Another year's qids, say: an IndexError traceback from the groups' tests."""
    groups = tmp_path / "other.tsv"
    groups.write_text("zz_1 A\nzz_2 B\n")
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures",
                 "nDCG@3", "--groups", str(groups)]) == 2
    assert capsys.readouterr().err == ("harness compare: error: the other mapping covers none of the 158 compared "
                                       "queries\n")


def test_a_group_field_set_on_none_of_the_compared_queries_is_a_one_line_error(tmp_path, capsys):
    """CAsT 2019's conversation 44 has no description: grouped by it, runs of its turns alone have no group."""
    (tmp_path / "q.qrels").write_text("".join(f"44_{turn} 0 d{turn} 1\n" for turn in (1, 2, 3)))
    for name, hit in (("a", 1), ("b", 2)):
        (tmp_path / f"{name}.run").write_text("".join(f"44_{turn} Q0 d{turn if turn == hit else 9} 1 2 {name}\n"
                                                      for turn in (1, 2, 3)))
    assert main(["compare", "--qrels", str(tmp_path / "q.qrels"), str(tmp_path / "a.run"), str(tmp_path / "b.run"),
                 "--measures", "RR", "--topics", "cast2019", "--group-field", "description"]) == 2
    assert capsys.readouterr().err.endswith(
        "harness compare: error: the description mapping covers none of the 3 compared queries\n")


def test_a_count_s_comparison_within_a_group_is_per_query_as_the_group_table_s_means(tmp_path):
    """The leaderboard gives a count's value and difference as sums over the queries (trec_eval's `all`), but a
    group's table gives per-query means: the group's Δ mean and interval under it are per query too, the
    difference of the table's means (they were sums over the group's queries: +40 under means 11.88, 13.06)."""
    count = "NumRet(rel=1)"  # relevant retrieved (NumRet is 1000 on every query), where BM25 and ConvDR differ
    runs = [path for path in CAST2021_DOC_RUNS if path.stem in ("org_convdr", "org_manual_bm25")]
    qrels = read_qrels(CAST2021_QRELS)
    evaluations = [evaluate(qrels, read_run(path), [count, "nDCG@3"]) for path in runs]
    board = leaderboard(evaluations)
    first, second = board.scores.runs
    groups = {qid: "early" if depth <= 3 else "late" for qid, depth in bd.depths(board.scores.qids).items()}
    table = bd.breakdown(board.scores, count, groups, "phase")
    for group, group_board in bd.tested_groups(board, groups).items():
        c = group_board.comparisons_of(second, count)[0]
        indices = [i for i, qid in enumerate(board.scores.qids) if groups[qid] == group]
        d = board.scores.values[count][second][indices] - board.scores.values[count][first][indices]
        half = scipy_stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        assert c.difference == pytest.approx(table.means[second][group] - table.means[first][group], rel=1e-12)
        assert (c.ci_low, c.ci_high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    groups_file = tmp_path / "phase.tsv"
    groups_file.write_text("".join(f"{qid} {group}\n" for qid, group in groups.items()))
    out = tmp_path / "board.json"
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, runs), "--measures",
                 count, "--groups", str(groups_file), "--format", "json", "--output", str(out)]) == 0
    phase = next(b for b in json.loads(out.read_text())["breakdowns"] if b["name"] == "phase")
    for row in phase["groups"]:
        [c] = row["comparisons"]
        assert c["difference"] == pytest.approx(row[second] - row[first], rel=1e-12)


def test_the_report_notes_queries_no_judgment_of_a_measures_level_reaches_once(capsys):
    """CAsT 2021: one judged turn has no document of grade 2, 30 none of grade 3: their rel=2 and
    rel=3 measures are 0 there for every run, which caps the board's means; nDCG@3 (grade 1
    everywhere) gets no note."""
    args = ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--depth", "1000",
            "--measures", "nDCG@3", "P(rel=2)@3", "R(rel=2)@1000", "RR(rel=3)"]
    notes = ["1 of 158 judged queries has no judgment of grade >= 2: P(rel=2)@3 and R(rel=2)@1000 score 0 there "
             "for every run (R(rel=2)@1000 can reach at most 0.9937)",
             "30 of 158 judged queries have no judgment of grade >= 3: RR(rel=3) scores 0 there for every run "
             "(RR(rel=3) can reach at most 0.8101)"]
    assert main([*args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == notes
    assert main([*args, "--format", "md"]) == 0
    markdown = capsys.readouterr().out
    assert [markdown.count(f"\n{note}\n") for note in notes] == [1, 1]


def test_a_group_file_s_group_holding_no_compared_query_is_a_warning_naming_it_and_a_qid(tmp_path, capsys):
    """Its qids mistyped (106-2 for 106_2), the group was left out of the breakdown without a word."""
    groups = tmp_path / "intent.tsv"
    groups.write_text("106_1 search\n106-2 recommendation\n106-3 recommendation\n")
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                 "--groups", str(groups), "--output", str(tmp_path / "board.md")]) == 0
    assert (f"warning: --groups {groups}: 1 group 'recommendation' (first qid '106-2') holds none of the 158 "
            "compared queries: it is left out; check the qids against the runs'\n") in capsys.readouterr().err
