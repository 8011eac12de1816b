"""`harness run` says `harness compare`'s depth warning (harness.evaluate.depths) of the runs its leaderboard
shows side by side, on stderr, in leaderboard.md and in report.html, the hint in the config's words (k:):
PragmatiCQA val, BM25 at k: 20 beside BM25 at k: 1000 (681 spans for 9 in 10 judged queries: BM25 ranks the
spans sharing a term with the query alone), measured with R@1000 and AP."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import warnings
from html import escape
from pathlib import Path

import pytest
import yaml

import harness
from harness.cli import main
from harness.evaluate.depths import unequal_depths

pytestmark = [pytest.mark.slow, pytest.mark.java]
WARNING = ("R@1000 and AP reach past the depth of pqa-k20 (at most 20 documents for 9 in 10 of its judged queries) "
           "while pqa-k1000 ranks 681: these compare depths, not systems; cut every run to 20 (k: 20) or rerun "
           "pqa-k20 deeper")


def _config(folder: Path, measures: list[str], k: int = 1000, output: str = "runs") -> Path:
    """Two experiments alike but for k (pqa-k20's 20, pqa-k1000's `k`): at other k their runs are scored apart
    (the depth is k), in adjacent sections."""
    path = folder / f"{output}-{'-'.join(measures)}.yaml"
    same = {"topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"], "measures": measures}
    path.write_text(yaml.safe_dump({"tag": "{name}", "output": str(folder / output), "experiments": [
        {"name": "pqa-k20", "k": 20, **same}, {"name": "pqa-k1000", "k": k, **same}]}), encoding="utf-8")
    return path


def _run(*argv: str) -> tuple[str, list[str]]:
    """`harness run` as the command line runs it: its stdout, and the depth warnings of its stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["run", *argv]) == 0
    return out.getvalue(), [line for line in err.getvalue().splitlines() if "past the depth" in line]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """The config, run once with --report: its folder, the leaderboard printed and the warnings said."""
    folder = tmp_path_factory.mktemp("run-depths")
    config = _config(folder, ["nDCG@10", "R@1000", "AP"])
    board, said = _run(str(config), "--report")
    return config, board, said


def test_harness_run_warns_of_runs_of_other_depths_side_by_side_once_on_stderr(made):
    """Before: the k: 20 run's R@1000 0.1599 under the k: 1000 run's 0.5950 without a word (R@1000, not AP, drew
    the k warning)."""
    _, _, said = made
    assert said == [f"warning: {WARNING}"]


def test_the_leaderboard_says_it_once_under_the_last_table_of_the_runs_it_names(made):
    config, printed, _ = made
    board = (config.parent / "runs" / "leaderboard.md").read_text(encoding="utf-8")
    assert printed.startswith(board)  # (then where the report is written)
    assert board.count(WARNING) == 1
    assert board.index("## pragmaticqa:val — retrieval (pqa-k1000)") < board.index(WARNING)
    assert board.endswith(f"\nWarning: {WARNING}.\n")


def test_the_report_says_it_after_the_families_of_the_runs_it_names(made):
    config, _, _ = made
    page = (config.parent / "runs" / "report.html").read_text(encoding="utf-8")
    assert page.count(f"Warning: {escape(WARNING)}.") == 1
    assert page.index("pqa-k1000: pragmaticqa:val") < page.index(escape(WARNING))


def test_the_python_api_warns_of_it(made):
    config, _, _ = made
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        harness.run(config, quiet=True)  # the finished runs, reused
    assert [str(w.message) for w in caught if "past the depth" in str(w.message)] == [WARNING]


def test_measures_that_stop_at_the_shallowest_depth_say_nothing(made):
    config, _, _ = made
    _, said = _run(str(_config(config.parent, ["nDCG@10", "R@20", "P@20"])))  # the same runs, scored again
    assert said == []


def test_following_its_hint_k_20_for_every_run_silences_it(made):
    """The hint is the config's: every experiment at k: 20 ranks every run 20 deep, and the runs are one family."""
    config, _, _ = made
    _, said = _run(str(_config(config.parent, ["nDCG@10", "R@1000", "AP"], k=20, output="cut")))
    assert said == []


def test_a_run_recorded_before_runs_recorded_their_depth_is_scored_again_not_left_out(made, tmp_path):
    """A JSON written before `usual_depth` was (2026-11-28): its scores were reused with a depth of 0, a run
    ranking nothing, which the warning leaves out: the k: 20 run alone against nothing, not a word."""
    config, _, _ = made
    out = tmp_path / "runs"
    shutil.copytree(config.parent / "runs", out)
    path = out / "pqa-k20.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["scores"]["evaluation"]["usual_depth"]
    path.write_text(json.dumps(record), encoding="utf-8")
    _, said = _run(str(config), "--output", str(out))
    assert said == [f"warning: {WARNING}"]
    assert json.loads(path.read_text(encoding="utf-8"))["scores"]["evaluation"]["usual_depth"] == 20


MATCHED = ("R@1000 and AP reach past the depth of pqa.raw (at most 681 documents for 9 in 10 of its judged queries) "
           "while pqa.all_history ranks 1000: pqa.raw was asked for 1000 documents a query and ranks no more because "
           "nothing more matched, so rerunning it deeper cannot help; to compare one depth, cut every run to 681 ")


@pytest.fixture(scope="module")
def matched(tmp_path_factory) -> tuple[Path, list[str]]:
    """BM25 at k: 1000 on the raw utterances (681 spans for 9 in 10 judged queries: no more share a term with
    them) and on all the conversation's utterances (1000): the folder of their runs and records, and the depth
    warnings `harness run` said making them."""
    folder = tmp_path_factory.mktemp("matched")
    config = folder / "matched.yaml"
    config.write_text(yaml.safe_dump({"tag": "{name}.{strategy}", "output": str(folder / "runs"), "experiments": [
        {"name": "pqa", "topics": "pragmaticqa:val", "strategies": ["raw", "all_history"], "retrievers": ["bm25"],
         "k": 1000, "measures": ["nDCG@10", "R@1000", "AP"]}]}), encoding="utf-8")
    _, said = _run(str(config))
    return folder / "runs", said


def test_a_run_ranking_all_that_matches_is_not_told_to_rerun_deeper(matched):
    """Before: 'or rerun pqa.raw deeper', which at k: 2000 ranks the same 681."""
    runs, said = matched
    assert said == [f"warning: {MATCHED}(k: 681)"]
    assert (runs / "leaderboard.md").read_text(encoding="utf-8").endswith(f"\nWarning: {MATCHED}(k: 681).\n")


def _said_of(capsys, command: str, *runs: Path) -> list[str]:
    """The depth warnings `harness eval` or `harness compare` says of the runs, scored on their folder's qrels."""
    assert main([command, "--qrels", str(runs[0].parent / "qrels" / "pragmaticqa-val-derived.qrels"),
                 *(["--run"] if command == "eval" else []), *map(str, runs),
                 "--measures", "nDCG@10", "R@1000", "AP"]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if "past the depth" in line]


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_eval_and_compare_read_what_a_run_was_asked_for_in_harness_run_s_record_beside_it(matched, command, capsys):
    runs, _ = matched
    assert _said_of(capsys, command, runs / "pqa.raw.run", runs / "pqa.all_history.run") == [
        f"warning: {MATCHED}(--depth 681)"]


def test_without_its_record_a_depth_that_is_no_round_cut_is_rerun_deeper_only_if_it_was_cut_there(matched, tmp_path,
                                                                                                  capsys):
    """Asked for what is not known, a run may have been cut at 681 or rank all that matches its queries."""
    folder, _ = matched
    (tmp_path / "qrels").mkdir()
    shutil.copy(folder / "qrels" / "pragmaticqa-val-derived.qrels", tmp_path / "qrels")
    runs = [Path(shutil.copy(folder / name, tmp_path)) for name in ("pqa.raw.run", "pqa.all_history.run")]
    assert _said_of(capsys, "eval", *runs) == [
        "warning: R@1000 and AP reach past the depth of pqa.raw (at most 681 documents for 9 in 10 of its judged "
        "queries) while pqa.all_history ranks 1000: these compare depths, not systems; cut every run to 681 "
        "(--depth 681) or rerun pqa.raw deeper if it was cut there (681 is no usual cut: a run ranking every "
        "document that matches its queries ranks no deeper)"]


def test_a_re_ranker_asked_for_its_depth_alone_is_told_to_rerun_deeper(matched, tmp_path, capsys):
    """A re-ranker of depth: 681 ranks the first stage's top 681 at k: 1000: a deeper depth ranks more (pqa.raw's
    record, as a re-ranker's reads)."""
    shutil.copytree(matched[0], tmp_path / "runs")
    path = tmp_path / "runs" / "pqa.raw.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["config"]["retriever"] = {"name": "rerank", "params": {"first_stage": "bm25", "depth": 681}}
    path.write_text(json.dumps(record), encoding="utf-8")
    assert _said_of(capsys, "eval", path.with_suffix(".run"), tmp_path / "runs" / "pqa.all_history.run") == [
        "warning: R@1000 and AP reach past the depth of pqa.raw (at most 681 documents for 9 in 10 of its judged "
        "queries) while pqa.all_history ranks 1000: these compare depths, not systems; cut every run to 681 "
        "(--depth 681) or rerun pqa.raw deeper"]


@pytest.mark.parametrize("api", [False, True])
def test_harness_run_works_out_the_depth_warning_once_for_stderr_the_leaderboard_and_the_report(made, monkeypatch,
                                                                                                api):
    """Each of the three grouped the runs into families, hashing each qrels' judgments, again."""
    from harness.runner import report

    config, _, _ = made
    worked: list[str | None] = []
    monkeypatch.setattr(report, "unequal_depths", lambda *a, **k: worked.append(unequal_depths(*a, **k)) or worked[-1])
    if api:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            harness.run(config, quiet=True, leaderboard=True, report=True)
    else:
        _run(str(config), "--report")
    assert worked == [WARNING]
