"""`harness eval` on the command line: formats, presets, errors, and a light start-up."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate.presets import DEFAULT_MEASURES, PRESETS
from harness.paths import REPO_ROOT
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_PASSAGE_RUNS, CAST2021_QRELS

README = REPO_ROOT / "README.md"


def test_json_maps_run_stem_to_measure_to_mean(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", *map(str, CAST2021_DOC_RUNS),
                 "--measures", "nDCG@3", "P(rel=2)@3", "--depth", "1000", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(result) == sorted(path.stem for path in CAST2021_DOC_RUNS)
    assert set(result["org_convdr"]) == {"nDCG@3", "P(rel=2)@3"}
    assert f"{result['org_convdr']['nDCG@3']:.4f}" == "0.3542"  # trec_eval -c -M1000 ndcg_cut_3


def test_counts_are_whole_numbers_in_json_as_in_the_table_and_csv(capsys):
    """NumRel, NumRet and the other counts: 5505, not 5505.0, on `all` and per query."""
    argv = ["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "P@5", "NumRel",
            "NumRet(rel=1)", "num_q", "--per-query"]
    assert main([*argv, "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)["org_convdr"]
    assert main([*argv, "--format", "csv"]) == 0
    all_row = capsys.readouterr().out.splitlines()[-1].split(",")
    counts = {name: result[name] for name in ("NumRel", "NumRet(rel=1)", "num_q")}
    assert all(type(value) is int for value in counts.values()) and type(result["P@5"]) is float
    assert [str(value) for value in counts.values()] == all_row[3:]
    assert all(type(value) is int for name in counts for value in result["per_query"][name].values())


def test_csv_values_are_the_jsons_unrounded_so_statistics_from_them_are_the_harnesss(capsys):
    """A CSV is for pandas: its 4 decimals (the table's) moved a paired-t p recomputed from it
    (0.133674 against compare's 0.133691); each value is now the float JSON gives."""
    runs = [str(path) for path in CAST2021_DOC_RUNS[:2]]
    argv = ["eval", "--qrels", str(CAST2021_QRELS), *runs, "--measures", "nDCG@3", "AP", "--per-query"]
    assert main([*argv, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert main([*argv, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for row in rows:
        scores = document[row["run"]]
        for measure in ("nDCG@3", "AP"):
            expected = scores[measure] if row["qid"] == "all" else scores["per_query"][measure][row["qid"]]
            assert float(row[measure]) == expected, (row, measure)
    assert len(rows) == 2 * (158 + 1)


@pytest.mark.parametrize("command", [["eval", "--qrels"], ["compare", "--qrels"], ["qrels", "rank-agree"]])
def test_a_depth_shallower_than_a_measure_reads_is_a_warning_as_harness_run_gives(capsys, command):
    """nDCG@500 at --depth 10 is nDCG@10 under nDCG@500's name: said as `harness run` says it of k
    (rank-agree: with each of its two qrels, here the same file)."""
    runs = [str(path) for path in CAST2021_DOC_RUNS[:2]]
    qrels = [str(CAST2021_QRELS)] * (2 if command[0] == "qrels" else 1)
    assert main([*command, *qrels, *runs, "--preset", "cast2021", "--depth", "10", "--format", "json"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --depth 10 keeps 10 documents per query, fewer than nDCG@500 (500), "
                        "AP(rel=2)@500 (500), R(rel=2)@500 (500) reads: scored on the top 10 alone; ask for nDCG@10, "
                        "AP(rel=2)@10 and R(rel=2)@10, which read no deeper, or give --depth 500 where every run "
                        "ranks that deep"]


def test_compare_counts_the_judged_column_it_adds_in_the_depth_warning(capsys):
    """compare shows Judged@10 beside the measures: at --depth 5 it reads 5 of its 10 ranks."""
    runs = [str(path) for path in CAST2021_DOC_RUNS[:2]]
    assert main(["compare", "--qrels", str(CAST2021_QRELS), *runs, "--measures", "nDCG@3", "--depth", "5",
                 "--format", "json"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --depth 5 keeps 5 documents per query, fewer than Judged@10 (10) reads: scored on "
                        "the top 5 alone; give --depth 10 where every run ranks that deep"]


def test_a_presets_depth_shallower_than_a_measure_given_is_named_as_the_presets(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--preset", "cast2021",
                 "--measures", "R@1000", "nDCG@3", "--format", "json"]) == 0
    assert ("warning: the cast2021 preset's depth 500 keeps 500 documents per query, fewer than R@1000 (1000) reads: "
            "scored on the top 500 alone; ask for R@500, which reads no deeper, or give --depth 1000 where every run "
            "ranks that deep\n") in capsys.readouterr().err


def test_a_depth_as_deep_as_every_measure_reads_draws_no_warning(capsys):
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "R@10", "AP",
                 "--depth", "10"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_per_query_json_has_every_judged_query(capsys):
    main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]),
          "--measures", "RR", "--per-query", "--format", "json"])
    per_query = json.loads(capsys.readouterr().out)["org_convdr"]["per_query"]["RR"]
    assert len(per_query) == 158  # judged turns of CAsT 2021


def test_preset_cast2021_judges_passage_runs_at_document_level(capsys):
    main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_PASSAGE_RUNS[0]),
          "--preset", "cast2021", "--format", "csv"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "run,qid,nDCG@3,nDCG@5,nDCG@500,AP(rel=2)@500,RR(rel=2),R(rel=2)@500"
    assert out[1].startswith("org_convdr,all,")


def test_help_names_the_default_measures_and_what_every_preset_computes(capsys):
    """Not only harness/evaluate/presets.py: --measures and --preset are chosen reading --help."""
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default: {' '.join(DEFAULT_MEASURES)}, or --preset's" in text
    for name in PRESETS.names():
        preset = PRESETS.get(name)
        assert f"{name}: {' '.join(preset.measures)}" + (f", depth {preset.depth}" if preset.depth else "") in text


def test_the_readme_names_the_default_measures():
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"compute {', '.join(DEFAULT_MEASURES[:-1])} and {DEFAULT_MEASURES[-1]}" in text


def test_coverage_is_reported_on_stderr(capsys):
    main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]), "--measures", "RR"])
    assert "158 judged queries; 81 unjudged in the run (ignored)" in capsys.readouterr().err


def test_judged_queries_missing_from_the_run_are_counted_in_the_words_compare_and_run_use(tmp_path, capsys):
    """trec_eval -c scores them as empty rankings without a word (Evaluation.judged_note)."""
    first = CAST2021_DOC_RUNS[0].read_text().split()[0]
    cut = tmp_path / "cut.run"
    cut.write_text("".join(line + "\n" for line in CAST2021_DOC_RUNS[0].read_text().splitlines()
                           if line.split()[0] != first))
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(cut), "--measures", "RR"]) == 0
    assert ("cut: 158 judged queries; 1 missing from the run (scored as empty rankings); 81 unjudged in the run "
            "(ignored)") in capsys.readouterr().err


def test_malformed_run_exits_2_with_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.run"
    bad.write_text("106_1 Q0 KILT_1 1 9.0 t\n106_1 Q0 KILT_2 2\n")
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(bad)]) == 2
    assert f"{bad}:2: expected 6 fields" in capsys.readouterr().err


def test_malformed_run_among_many_is_named_from_the_worker_process(tmp_path, capsys):
    bad = tmp_path / "bad.run"
    bad.write_text("106_1 Q0 KILT_1 1 9.0 t\n106_1 Q0 KILT_2 x 1.0 t\n")
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "--run", *map(str, CAST2021_DOC_RUNS), str(bad)]) == 2
    assert f"{bad}:2: rank 'x' is not an integer" in capsys.readouterr().err


def test_eval_does_not_import_pyserini_or_torch():
    code = (
        "import sys; from harness.cli import main; "
        f"main(['eval', '--qrels', {str(CAST2021_QRELS)!r}, '--run', {str(CAST2021_DOC_RUNS[0])!r}]); "
        "heavy = {'pyserini', 'torch', 'sentence_transformers', 'jnius', 'spacy', 'faiss'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.parametrize("command", [
    ["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0])],
    ["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2])],
])
def test_a_command_given_no_preset_scans_no_preset_entry_points(command):
    """--preset's names and help are what plug-ins add too: listed where --preset is given or help shown,
    not at each start (8-25 ms); with --preset the scan is seen, so the check sees it where it happens."""
    code = (
        "import importlib.metadata, sys\n"
        "scan, asked = importlib.metadata.entry_points, []\n"
        "importlib.metadata.entry_points = lambda **kwargs: asked.append(kwargs.get('group')) or scan(**kwargs)\n"
        "from harness.cli import main\n"
        "main(sys.argv[1:])\n"
        "print('harness.presets' in asked, file=sys.stderr)\n"
    )
    for argv, scanned in ((command, "False"), ([*command, "--preset", "cast2021"], "True")):
        done = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True, text=True)
        assert done.stderr.splitlines()[-1] == scanned


@pytest.mark.parametrize("command", [["eval", "--qrels", "q"], ["compare", "--qrels", "q"],
                                     ["qrels", "rank-agree", "a", "b"]])
def test_an_unknown_preset_is_a_usage_error_listing_the_presets(capsys, command):
    """rank-agree's too, which said 'unknown measure preset' once it ran."""
    with pytest.raises(SystemExit) as stop:
        main([*command, "a.run", "b.run", "--preset", "cast2O21"])
    assert stop.value.code == 2
    names = ", ".join(map(repr, PRESETS.names()))
    assert f"error: argument --preset: invalid choice: 'cast2O21' (choose from {names}) (`harness " \
        in capsys.readouterr().err


def test_run_files_are_positional_and_run_is_an_alias(capsys):
    common = ["--qrels", str(CAST2021_QRELS), "--measures", "RR", "--format", "json"]
    assert main(["eval", *common, *map(str, CAST2021_DOC_RUNS[:2])]) == 0
    positional = capsys.readouterr().out
    assert main(["eval", *common, "--run", *map(str, CAST2021_DOC_RUNS[:2])]) == 0
    assert capsys.readouterr().out == positional
    assert sorted(json.loads(positional)) == sorted(path.stem for path in CAST2021_DOC_RUNS[:2])


def test_no_run_file_is_one_line_error_before_the_qrels_are_read(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--qrels", "no-such.qrels", "--measures", "RR"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == ("harness eval: error: give at least one run file "
                                       "(`harness eval --help` lists the options)\n")


def test_output_and_its_alias_out_write_the_same_file(tmp_path):
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    assert main(["topics", "export", "cast2019", "--strategy", "manual", "--output", str(new)]) == 0
    assert main(["topics", "export", "cast2019", "--strategy", "manual", "--out", str(old)]) == 0
    assert new.read_bytes() == old.read_bytes() and new.stat().st_size > 0


def test_a_run_with_no_query_in_common_with_the_qrels_is_a_warning_that_every_measure_is_0(tmp_path, capsys):
    other = tmp_path / "other_year.run"  # the same run, its qids of another year's topics
    other.write_text("".join(f"x{line}" for line in CAST2021_DOC_RUNS[0].read_text().splitlines(keepends=True)))
    assert main(["eval", "--qrels", str(CAST2021_QRELS), str(other), "--measures", "RR"]) == 0
    assert (f"warning: run 'other_year' has no query in common with {CAST2021_QRELS}; every measure is 0\n"
            in capsys.readouterr().err)


def test_a_relevance_level_no_judgment_reaches_is_a_warning_that_the_measure_is_0(capsys):
    main(["eval", "--qrels", str(CAST2021_QRELS), "--run", str(CAST2021_DOC_RUNS[0]),
          "--measures", "P(rel=9)@5", "P(rel=4)@5"])
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: P(rel=9)@5: no judgment in qrels {CAST2021_QRELS} reaches grade 9 (the highest "
                        "is 4), so it is 0 on every query"]


def test_a_run_named_notes_is_refused_where_json_output_carries_the_fill_notes(tmp_path, capsys):
    """The notes key of `eval --fill --format json` would replace the scores of a run called notes."""
    human, fill, run = tmp_path / "human.qrels", tmp_path / "fill.qrels", tmp_path / "notes.run"
    human.write_text("1 0 a 1\n1 0 b 0\n")
    fill.write_text("1 0 c 2\n")
    run.write_text("1 Q0 a 1 3 s\n1 Q0 c 2 2 s\n")
    assert main(["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--fill", str(fill),
                 "--format", "json"]) == 2
    assert f"{run}: a run named 'notes' would share its key with the notes" in capsys.readouterr().err
    assert main(["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--format", "json"]) == 0  # no notes
    assert json.loads(capsys.readouterr().out) == {"notes": {"P@2": 0.5}}


def test_no_command_help_imports_a_heavy_library():
    """Every `harness COMMAND --help` answers at once: importing scipy alone took 2 s."""
    code = (
        "import sys\n"
        "from harness.cli import COMMANDS, main\n"
        "for name in COMMANDS:\n"
        "    try: main([name, '--help'])\n"
        "    except SystemExit: pass\n"
        "heavy = {'scipy', 'pandas', 'torch', 'pyserini', 'pyarrow', 'ray', 'sqlalchemy', 'fastapi', 'openai', "
        "'ir_measures', 'ir_datasets'} & {module.split('.')[0] for module in sys.modules}\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.parametrize("name, fmt", [("s.csv", "csv"), ("s.json", "json"), ("s.txt", "table"), ("scores", "table")])
def test_output_writes_the_format_its_suffix_names_and_says_where(tmp_path, capsys, name, fmt):
    """`eval --output`, as compare's and qrels agree's: the file holds what stdout would, in the
    format its suffix names (--format still wins), and stderr says where it went."""
    argv = ["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--measures", "P@5", "NumRel"]
    assert main([*argv, "--format", fmt]) == 0
    expected = capsys.readouterr().out
    assert main([*argv, "--output", str(tmp_path / name)]) == 0
    captured = capsys.readouterr()
    assert (tmp_path / name).read_text() == expected and captured.out == ""
    assert captured.err.splitlines()[-1] == f"scores written to {tmp_path / name}"
    assert main([*argv, "--output", str(tmp_path / "forced.csv"), "--format", "json"]) == 0
    assert json.loads((tmp_path / "forced.csv").read_text())["org_convdr"]["NumRel"] > 0
    assert (f"warning: --format json is written to --output {tmp_path / 'forced.csv'}, whose suffix names csv"
            in capsys.readouterr().err.splitlines())  # what reads a .csv would not read it


def test_an_output_suffix_naming_no_format_or_an_input_is_an_error_before_any_work(tmp_path, capsys):
    run = tmp_path / "r.run"
    run.write_text(CAST2021_DOC_RUNS[0].read_text())
    argv = ["eval", "--qrels", str(CAST2021_QRELS), str(run)]
    assert main([*argv, "--output", str(tmp_path / "scores.pdf")]) == 2
    assert capsys.readouterr().err.startswith(f"harness eval: error: --output {tmp_path / 'scores.pdf'}: .pdf names "
                                              "no format this command writes (known: .table .csv .json .txt)")
    assert main([*argv, "--output", str(run)]) == 2
    assert f"--output {run} would overwrite an input" in capsys.readouterr().err
    assert run.read_text() == CAST2021_DOC_RUNS[0].read_text() and not (tmp_path / "scores.pdf").exists()


def test_output_with_fill_keeps_the_notes_in_the_table_and_says_them_on_stderr(tmp_path, capsys):
    """The table written to --output carries the '#' notes; stderr says them too (the file is not
    on the screen)."""
    human, fill, run = tmp_path / "human.qrels", tmp_path / "fill.qrels", tmp_path / "sys.run"
    human.write_text("1 0 a 1\n1 0 b 0\n")
    fill.write_text("1 0 c 2\n")
    run.write_text("1 Q0 a 1 3 s\n1 Q0 c 2 2 s\n")
    out = tmp_path / "scores.txt"
    assert main(["eval", "--qrels", str(human), str(run), "--measures", "P@2", "--fill", str(fill),
                 "--output", str(out)]) == 0
    notes = [line[2:] for line in out.read_text().splitlines() if line.startswith("# ")]
    assert len(notes) == 5 and notes[0].startswith("holes filled from")  # then, after the table, the cell moved
    assert [line[6:] for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")] == notes


@pytest.mark.parametrize("given, what", [("", "an empty name"),
                                         ("-", "'-' is not stdout here (it would be a file named '-')")])
def test_an_empty_or_dash_output_is_refused_and_told_that_stdout_is_without_output(tmp_path, monkeypatch, capsys,
                                                                                  given, what):
    """`--output ''` named the current folder and `--output -` wrote a file named '-': scores go
    to stdout when --output is left out."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--qrels", str(CAST2021_QRELS), str(CAST2021_DOC_RUNS[0]), "--output", given])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"harness eval: error: argument --output/--out: {what}: leave --output out to "
                                       "print to stdout (`harness eval --help` lists the options)\n")
    assert not list(tmp_path.iterdir())


def _restricted_ikat2023_qrels(folder: Path) -> Path:
    """iKAT 2023's qrels restricted to the 894 shipped passages, as configs/default.yaml scores on."""
    from harness.runner.runner import concatenate, restrict_to_corpus
    from harness.topics import load
    from harness.trec import qrels_text

    corpus = concatenate([load("ikat2023:test").corpus, load("ikat2023:train").corpus])
    path = folder / "restricted.qrels"
    path.write_text(qrels_text(restrict_to_corpus(load("ikat2023:test").qrels(), corpus)), encoding="utf-8")
    return path


def _ideal_run(qrels: Path, path: Path) -> Path:
    """A run ranking each query's judged documents by grade: the best any run can do."""
    from harness.trec import read_qrels

    lines = [f"{qid} Q0 {docid} {rank} {-rank} ideal\n" for qid, judged in read_qrels(qrels).judgments.items()
             for rank, docid in enumerate(sorted(judged, key=judged.get, reverse=True), start=1)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_judged_queries_no_judgment_of_a_measures_level_reaches_are_a_note_with_the_exact_ceiling(tmp_path, capsys):
    """The demo board's qrels: 23 of 74 queries hold no passage of grade 2, so every rel=2 measure
    is 0 there; the ceiling is named only where a perfect run reaches it (it does here: 51/74),
    not for P(rel=2)@20 (few queries have 20 such passages). Once, whatever the runs."""
    qrels = _restricted_ikat2023_qrels(tmp_path)
    ideal = _ideal_run(qrels, tmp_path / "ideal.run")
    runs = [str(ideal), str(_ideal_run(qrels, tmp_path / "other.run"))]
    measures = ["nDCG@3", "P(rel=2)@20", "P(rel=2)@1", "AP(rel=2)@1000", "R(rel=2)@1000", "RR(rel=2)"]
    assert main(["eval", "--qrels", str(qrels), *runs, "--measures", *measures, "--depth", "1000",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert [line for line in err.splitlines() if "judged queries have no judgment" in line] == [
        "note: 23 of 74 judged queries have no judgment of grade >= 2: P(rel=2)@20, P(rel=2)@1, AP(rel=2)@1000, "
        "R(rel=2)@1000 and RR(rel=2) score 0 there for every run (P(rel=2)@1, AP(rel=2)@1000, R(rel=2)@1000 and "
        "RR(rel=2) can reach at most 0.6892)"]
    means = json.loads(out)["ideal"]
    assert {m: f"{means[m]:.4f}" for m in measures[2:]} == dict.fromkeys(measures[2:], "0.6892")  # reached
    assert means["P(rel=2)@20"] < 0.6892 and means["nDCG@3"] == 1  # every query has a grade-1 passage
    assert main(["eval", "--qrels", str(qrels), str(ideal), "--measures", *measures, "--depth", "1"]) == 0
    assert "(P(rel=2)@1 and RR(rel=2) can reach at most 0.6892)" in capsys.readouterr().err  # R, AP: not in 1


def test_a_query_set_where_every_query_reaches_the_level_has_no_ceiling_note(tmp_path, capsys):
    """iKAT 2024: every judged turn has a passage of grade 2 (the preset's rel=2 measures)."""
    from harness.paths import qrels_root

    qrels = qrels_root() / "ikat" / "2024-qrels.txt"
    assert main(["eval", "--qrels", str(qrels), str(_ideal_run(qrels, tmp_path / "ideal.run")),
                 "--preset", "ikat2024"]) == 0
    assert "no judgment of grade" not in capsys.readouterr().err
