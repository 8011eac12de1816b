"""Bring your own system: plug-ins by entry point and `python:` spec, and the Python API's objects.

The plug-in package is tests/plugin_example (a word-overlap search function taking the
corpus and a `boost`, and a strategy joining a turn with the one before it), installed into
a temporary venv for the entry-point test; the `python:` tests import the same module from
the folder `harness run` starts in. iKAT 2023 test (its provenance passages as corpus; no Java).
"""

from __future__ import annotations

import builtins
import enum
import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import types
from pathlib import Path

import pytest
import yaml

import harness
from harness.cli import main
from harness.queries import history
from harness.runner.config import ConfigError, parse_config
from tests.conftest import child_env, extra

PLUGIN = Path(__file__).parent / "plugin_example"
MODULE = "harness_plugin_example"
MEASURES = ["nDCG@10", "R@20"]


def _experiment(strategies: list, retrievers: list) -> dict:
    return {"topics": "ikat2023:test", "strategies": strategies, "retrievers": retrievers, "measures": MEASURES}


def _config(folder: Path, strategies: list, retrievers: list) -> Path:
    path = folder / "mine.yaml"
    path.write_text(yaml.safe_dump({"k": 20, "output": "runs", "experiments": [_experiment(strategies, retrievers)]}),
                    encoding="utf-8")
    return path


def _harness(python: Path | str, folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`harness ARGS` in `folder`, as a user runs it there."""
    return subprocess.run([str(python), "-c", "import sys; from harness.cli import main; sys.exit(main())", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.fixture
def in_folder(tmp_path, monkeypatch) -> Path:
    """A folder holding the plug-in module, made the current folder."""
    shutil.copy(PLUGIN / f"{MODULE}.py", tmp_path / "mine.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory) -> Path:
    """A venv seeing the shared one's packages, with the example plug-in installed as a user
    installs a package (pip, no network)."""
    root = tmp_path_factory.mktemp("plugin-venv")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "shared-venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    source = shutil.copytree(PLUGIN, root / "plugin_example")  # the build writes beside the sources
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    str(source)], check=True, timeout=300)
    return python


@pytest.mark.slow
def test_an_installed_plugin_is_used_by_its_entry_point_name(plugin_python, tmp_path):
    config = _config(tmp_path, ["raw", "last_two"], [{"name": "overlap", "params": {"boost": 2}}])
    done = _harness(plugin_python, tmp_path, "run", str(config))
    assert done.returncode == 0, done.stderr
    assert "| ikat2023-test.last_two.overlap |" in (tmp_path / "runs" / "leaderboard.md").read_text()
    record = json.loads((tmp_path / "runs" / "ikat2023-test.last_two.overlap.json").read_text())
    plugins = json.loads(record["hashes"]["plugins"])
    assert plugins["retriever overlap"]["entry_point"] == "harness.retrievers:overlap"
    assert (plugins["retriever overlap"]["distribution"], plugins["retriever overlap"]["version"]) == \
        ("harness-plugin-example", "0.1.0")
    assert plugins["strategy"]["entry_point"] == "harness.strategies:last_two"
    listing = _harness(plugin_python, tmp_path, "components", "retriever").stdout
    assert "Documents sharing the most words with the query.  [harness-plugin-example]" in listing
    assert "boost: a number = 1.0" in listing
    # without the package, the name is unknown, as any other
    done = _harness(sys.executable, tmp_path, "run", str(config), "--dry-run")
    assert done.returncode == 2 and "experiments[0].strategies[1]: unknown query strategy 'last_two'" in done.stderr


@pytest.mark.slow
def test_the_readme_tables_list_no_installed_plugin_and_import_none(plugin_python):
    """`harness components --format markdown` writes the harness's own components only."""
    probe = ("import sys; from harness.runner.cli_components import markdown; table = markdown('retriever'); "
             f"print('| `bm25` |' in table, '`overlap`' in table, {MODULE!r} in sys.modules)")
    done = subprocess.run([str(plugin_python), "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False", "False"], done.stderr


def test_a_python_spec_names_a_function_in_the_current_folder(in_folder):
    config = _config(in_folder, ["python:mine:last_two"], ["python:mine:overlap"])
    assert main(["run", str(config)]) == 0
    lines = (in_folder / "runs" / "ikat2023-test.python-mine-last_two.python-mine-overlap.run").read_text().splitlines()
    assert len(lines) > 100 and lines[0].split()[3] == "1"


def test_a_wrong_signature_is_caught_when_the_config_is_read_naming_the_key(in_folder):
    (in_folder / "bad.py").write_text("def search(query):\n    return []\n\nclass Thing:\n    pass\n")
    with pytest.raises(ConfigError, match=r"x.yaml: experiments\[0\].retrievers\[0\]: retriever 'python:bad:search': "
                                          r"search\(query\) cannot be called as f\(query, k\)"):
        parse_config(in_folder / "x.yaml", {"experiments": [_experiment(["raw"], ["python:bad:search"])]})
    with pytest.raises(ConfigError, match=r"experiments\[0\].retrievers\[0\]: .*class Thing has no search"):
        parse_config(in_folder / "x.yaml", {"experiments": [_experiment(["raw"], ["python:bad:Thing"])]})
    with pytest.raises(ConfigError, match=r"experiments\[0\].retrievers\[0\]: retriever 'python:nope:f': cannot import nope"):
        parse_config(in_folder / "x.yaml", {"experiments": [_experiment(["raw"], ["python:nope:f"])]})


def test_a_plugin_module_beside_the_config_but_not_on_the_path_is_said_to_be_there(tmp_path, monkeypatch):
    """Imported from the folder harness runs in and PYTHONPATH, not the config's: the error says where it is."""
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(PLUGIN / f"{MODULE}.py", project / "beside.py")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"retrievers\[0\]: retriever 'python:beside:overlap': cannot import beside "
                                          r"\(ModuleNotFoundError: No module named 'beside'\); beside.py is beside the "
                                          rf"config \({re.escape(str(project))}\): run harness from there or add it "
                                          r"to PYTHONPATH$"):
        parse_config(project / "x.yaml", {"experiments": [_experiment(["raw"], ["python:beside:overlap"])]})


@pytest.mark.parametrize("dry", [["--dry-run"], []], ids=["dry run", "run"])
def test_a_plugin_module_missing_everywhere_names_the_key_the_module_the_folders_searched_and_the_missing_file(
        tmp_path, monkeypatch, capsys, dry):
    """A config handed in without its module: one line saying so, where it was looked for (from the
    config's folder, then from another), not only Python's 'No module named'. (A module name that no
    other test imports: `mine` stays in sys.modules.)"""
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    elsewhere.mkdir(parents=True)
    project.mkdir()
    config = _config(project, ["raw"], ["python:handed_in:search"])
    head = ("harness run: error: {}: experiments[0].retrievers[0]: retriever 'python:handed_in:search': cannot import "
            "handed_in (ModuleNotFoundError: No module named 'handed_in'); the module's file is missing: no "
            "handed_in.py or handed_in/ {}, and no module handed_in importable from the environment (PYTHONPATH, "
            "installed packages)\n")
    monkeypatch.chdir(project)
    assert main(["run", "mine.yaml", *dry]) == 2
    assert capsys.readouterr().err == head.format("mine.yaml",
                                                  f"in the config's folder, where harness runs ({project})")
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(config), *dry]) == 2
    assert capsys.readouterr().err == head.format(
        config, f"beside the config ({project}) or in the folder harness runs in ({elsewhere})")


def test_a_plugin_parameter_is_checked_against_its_signature(in_folder):
    experiment = _experiment(["raw"], [{"name": "python:mine:overlap", "params": {"boost": "fast"}}])
    with pytest.raises(ConfigError, match=r"experiments\[0\].retrievers\[0\].params.boost: expected a number, got 'fast'"):
        parse_config(in_folder / "x.yaml", {"experiments": [experiment]})
    experiment["retrievers"][0]["params"] = {"boots": 2}
    with pytest.raises(ConfigError, match=r"params.boots: unknown parameter of retriever 'python:mine:overlap'; "
                                          r"known: boost"):
        parse_config(in_folder / "x.yaml", {"experiments": [experiment]})


@pytest.mark.parametrize("written, shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf"), ("1e400", "inf")])
def test_a_plugin_parameter_taken_as_a_number_refuses_one_not_finite_at_its_key(in_folder, written, shown):
    """A score multiplied by it would fail after the search, and a `score > threshold` filter keep nothing."""
    from harness.runner.config import load_config

    config = in_folder / "x.yaml"  # (a config file reads 1e400 as a number, as YAML 1.2 does)
    config.write_text("experiments:\n- {topics: 'ikat2023:test', strategies: [raw], measures: [RR],\n"
                      f"   retrievers: [{{name: 'python:mine:overlap', params: {{boost: {written}}}}}]}}\n")
    with pytest.raises(ConfigError, match=rf"experiments\[0\].retrievers\[0\].params.boost: expected a number, "
                                          rf"got {shown}$"):
        load_config(config)


def _typed(query: str, k: int, span: tuple[str, int] = ("a", 1), ids=(1, 2), weights: dict[str, float] | None = None):
    return []


@pytest.mark.parametrize("params", [{"span": ["b", 2]}, {"ids": [3, 4]}, {"weights": {"b": 0.5}}])
def test_a_plugin_parameter_typed_a_tuple_takes_the_list_a_config_writes(params):
    """YAML has lists, not tuples: `tuple[str, int]` takes ["b", 2] (a string, then an
    integer), and a parameter whose default is a tuple takes a list."""
    from harness.retrieve import RETRIEVERS

    with RETRIEVERS.using({"typed": _typed}):
        parse_config(Path("x.yaml"), {"experiments": [_experiment(["raw"], [{"name": "typed", "params": params}])]})


@pytest.mark.parametrize("params, message", [
    ({"span": ["b", 2, 3]}, "params.span: expected a list of 2 (a string, an integer), got ['b', 2, 3]"),
    ({"span": [2, "b"]}, "params.span: expected a list of 2 (a string, an integer), got [2, 'b']"),
    ({"weights": {"b": "high"}}, "params.weights: expected a mapping of strings to numbers or null, got {'b': 'high'}"),
])
def test_a_plugin_parameter_of_the_wrong_shape_says_the_shape_its_type_asks_for(params, message):
    from harness.retrieve import RETRIEVERS

    with RETRIEVERS.using({"typed": _typed}), pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(Path("x.yaml"), {"experiments": [_experiment(["raw"], [{"name": "typed", "params": params}])]})


@pytest.mark.slow
def test_a_changed_plugin_is_run_again_not_reused(in_folder):
    config = _config(in_folder, ["raw"], ["python:mine:overlap"])
    tag = "ikat2023-test.raw.python-mine-overlap"
    assert _harness(sys.executable, in_folder, "run", str(config)).returncode == 0
    again = _harness(sys.executable, in_folder, "run", str(config))
    assert f"{tag}: finished with the same inputs, skipped" in again.stderr
    with open(in_folder / "mine.py", "a", encoding="utf-8") as handle:
        handle.write("\n# a changed ranking function\n")
    changed = _harness(sys.executable, in_folder, "run", str(config))
    assert changed.returncode == 0 and "skipped" not in changed.stderr


@pytest.mark.parametrize("source", [
    "import weights\n\n\ndef search(query, k):\n    return [('a', weights.A), ('b', 1.0)]\n",
    "def search(query, k):\n    from weights import A\n\n    return [('a', A), ('b', 1.0)]\n",  # imported when it runs
], ids=["when-it-loads", "inside-a-function"])
def test_a_plugin_whose_helper_module_changed_is_run_again_not_reused(tmp_path, source):
    """A module beside the plug-in that it imports is keyed too (hashes.plugins' helpers), whether
    its module imports it when it loads or a function imports it when it runs: editing it changes
    the ranking as editing the plug-in does."""
    (tmp_path / "ranked.py").write_text(source, encoding="utf-8")
    config = _config(tmp_path, ["raw"], ["python:ranked:search"])
    run = tmp_path / "runs" / "ikat2023-test.raw.python-ranked-search.run"
    for weight, skipped in (("2.0", False), ("2.0", True), ("0.25", False)):  # (another size: no stale .pyc)
        (tmp_path / "weights.py").write_text(f"A = {weight}\n", encoding="utf-8")
        done = _harness(sys.executable, tmp_path, "run", str(config))
        assert done.returncode == 0, done.stderr
        assert ("finished with the same inputs, skipped" in done.stderr) is skipped
        assert run.read_text().split()[2] == ("a" if weight == "2.0" else "b")
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.python-ranked-search.json").read_text())
    assert list(json.loads(record["hashes"]["plugins"])["retriever python:ranked:search"]["helpers"]) == ["weights"]


def test_a_helper_a_function_imports_is_keyed_without_importing_it_nor_a_library_it_imports(tmp_path, monkeypatch):
    """Keying a plug-in looks for the modules its functions import when they run, as the import
    system would, and loads none: not its helper, nor a library (numpy's seconds) it may never use."""
    from harness.registry import object_origin

    plug, lib = tmp_path / "plug", tmp_path / "lib"
    (lib / "heavy").mkdir(parents=True)
    (lib / "heavy" / "__init__.py").write_text("raise AssertionError('imported')\n", encoding="utf-8")
    (lib / "heavy" / "part.py").write_text("", encoding="utf-8")
    plug.mkdir()
    (plug / "lazy_weights.py").write_text("A = 2.0\n", encoding="utf-8")
    (plug / "lazy_ranked.py").write_text("def search(query, k):\n    import heavy.part\n"
                                         "    from lazy_weights import A\n\n    return [('a', A)]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.syspath_prepend(str(plug))
    monkeypatch.delitem(sys.modules, "lazy_ranked", raising=False)
    from lazy_ranked import search

    assert list(object_origin(search)["helpers"]) == ["lazy_weights"]
    assert "heavy" not in sys.modules and "lazy_weights" not in sys.modules
    del sys.modules["lazy_ranked"]


def test_a_plugins_helpers_are_what_it_imports_not_the_other_plugins_a_config_lists(tmp_path):
    """pb's key is the same whether or not the config lists pa, beside it, before it: a run made by one config is
    finished for the other. Its helpers are what it imports, a module whose function it imports too."""
    for name in ("pa", "pb"):
        (tmp_path / f"{name}.py").write_text(f"from {name}_weights import weight\n\n\ndef search(query, k):\n"
                                             "    return [('a', weight()), ('b', 1.0)]\n", encoding="utf-8")
        (tmp_path / f"{name}_weights.py").write_text("def weight():\n    return 2.0\n", encoding="utf-8")
    both = _config(tmp_path, ["raw"], ["python:pa:search", "python:pb:search"])
    assert _harness(sys.executable, tmp_path, "run", str(both)).returncode == 0
    only_b = _config(tmp_path, ["raw"], ["python:pb:search"])
    done = _harness(sys.executable, tmp_path, "run", str(only_b))
    assert done.returncode == 0, done.stderr
    assert "ikat2023-test.raw.python-pb-search: finished with the same inputs, skipped" in done.stderr
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.python-pb-search.json").read_text())
    assert list(json.loads(record["hashes"]["plugins"])["retriever python:pb:search"]["helpers"]) == ["pb_weights"]


def test_a_run_whose_plugin_reads_a_changed_file_named_by_a_path_parameter_is_run_again(tmp_path, capsys):
    """The file's sha256 enters the resume key (hashes.files), as the plug-in's source does."""
    from harness.retrieve import RETRIEVERS

    def weighted(query: str, k: int, weights: Path = Path("w.txt")):
        return [("d1", float(Path(weights).read_text()))]  # (passed as the config writes it: a string)

    weights = tmp_path / "w.txt"
    config = tmp_path / "w.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"), "experiments": [{
        "topics": "ikat2023:test", "strategies": ["raw"], "measures": ["RR"],
        "retrievers": [{"name": "weighted", "params": {"weights": str(weights)}}]}]}), encoding="utf-8")
    run = tmp_path / "runs" / "ikat2023-test.raw.weighted.run"
    with RETRIEVERS.using({"weighted": weighted}):
        for weight in ("2", "2", "3"):
            weights.write_text(weight, encoding="utf-8")
            capsys.readouterr()
            assert main(["run", str(config)]) == 0
            assert run.read_text().split("\n")[0].split()[4] == f"{weight}.000000"
        assert "skipped" not in capsys.readouterr().err  # the third, after the file changed
        assert main(["run", str(config)]) == 0
        assert "finished with the same inputs, skipped" in capsys.readouterr().err


def test_a_plug_in_run_made_under_earlier_plug_in_rules_is_made_again(tmp_path, capsys, monkeypatch):
    """A run a plug-in made before harness run ranked its answer in trec_eval's order (or before
    strategies stopped being handed the turn's answer) holds other numbers: it is not resumed."""
    from harness.retrieve import RETRIEVERS
    from harness.runner import provenance

    def tied(query: str, k: int):
        return [("d1", 1.0), ("d2", 1.0)]

    config = tmp_path / "t.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"), "experiments": [{
        "topics": "ikat2023:test", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["tied"]}]}))
    with RETRIEVERS.using({"tied": tied}):
        monkeypatch.setattr(provenance, "PLUGIN_RULES", provenance.PLUGIN_RULES - 1)
        assert main(["run", str(config)]) == 0
        monkeypatch.undo()
        capsys.readouterr()
        assert main(["run", str(config)]) == 0
        assert "skipped" not in capsys.readouterr().err
        assert main(["run", str(config)]) == 0
        assert "finished with the same inputs, skipped" in capsys.readouterr().err


def _indexed(query: str, k: int, index: Path = Path("idx")):
    """A plug-in searching a folder: the score is what its one file holds."""
    return [("d1", float((Path(index) / "score").read_text()))]


@pytest.mark.parametrize("where", ["a parameter", "the corpus"])
def test_a_run_over_a_rebuilt_index_folder_is_run_again_not_reused(tmp_path, capsys, monkeypatch, where):
    """A folder a parameter (or `corpus: {index: ...}`) names enters the resume key by its
    files' names, sizes and mtimes: rebuilt in place, its runs are made again."""
    from harness.retrieve import RETRIEVERS

    monkeypatch.setattr("harness.paths.SETTLED_NS", 0)  # not waited for (a real folder: 2 s after a change)

    index = tmp_path / "idx"
    index.mkdir()
    experiment = {"topics": "ikat2023:test", "strategies": ["raw"], "measures": ["RR"], "retrievers": ["indexed"]}
    if where == "a parameter":
        experiment["retrievers"] = [{"name": "indexed", "params": {"index": str(index)}}]
    else:
        experiment["corpus"] = {"index": str(index)}
    config = tmp_path / "i.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"), "experiments": [experiment]}),
                      encoding="utf-8")
    run = tmp_path / "runs" / "ikat2023-test.raw.indexed.run"
    with RETRIEVERS.using({"indexed": _indexed}):
        for score, rebuilt in (("2", False), ("2", False), ("3", True)):
            (index / "score").write_text(score, encoding="utf-8")
            if rebuilt:  # a rebuild writing a file of the same size
                os.utime(index / "score", ns=(1, 1))
            capsys.readouterr()
            assert main(["run", str(config)]) == 0
            assert run.read_text().split("\n")[0].split()[4] == f"{score}.000000"
        assert "skipped" not in capsys.readouterr().err  # the third, after the rebuild
        assert main(["run", str(config)]) == 0
        assert "finished with the same inputs, skipped" in capsys.readouterr().err


class Mode(enum.Enum):
    FAST = "fast"
    EXACT = "exact"


def _moded(query: str, k: int, mode: Mode = Mode.FAST):
    """A plug-in whose score says which member it was given (a string would score 0)."""
    return [("d1", {Mode.FAST: 1.0, Mode.EXACT: 2.0}.get(mode, 0.0))]


@pytest.mark.parametrize("written", ["exact", "EXACT"])
def test_a_plugin_parameter_typed_with_an_enum_takes_a_members_value_or_name(written):
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"moded": _moded}):
        parse_config(Path("x.yaml"), {"experiments": [_experiment(["raw"], [{"name": "moded", "params": {"mode": written}}])]})
        run = build("moded", corpus=None, mode=written).search([SearchQuery("q1", "a query")], 1)
        assert run["q1"][0].score == 2.0
        with pytest.raises(ConfigError, match=re.escape("params.mode: expected one of 'fast', 'exact' (or a member's "
                                                        "name), got 'slow'")):
            parse_config(Path("x.yaml"), {"experiments": [_experiment(["raw"], [
                {"name": "moded", "params": {"mode": "slow"}}])]})


def _moded_strategy(conversation, turn_index, mode: Mode = Mode.FAST):
    """A strategy whose query says which member it was given (a string would give 'str')."""
    return mode.name if isinstance(mode, Mode) else type(mode).__name__


@pytest.mark.parametrize("written", ["exact", "EXACT"])
def test_a_plugin_strategy_argument_typed_with_an_enum_is_passed_the_member(written):
    """As a retriever's parameter is: `moded:exact` hands the strategy Mode.EXACT, not 'exact'."""
    from harness.queries import stream
    from harness.topics import load

    with harness.queries.STRATEGIES.using({"moded": _moded_strategy}):
        queries = list(stream(load("ikat2023:test").conversations[:1], f"moded:{written}"))
    assert {query.text for query in queries} == {"EXACT"}


def _prefixed(conversation, turn_index, path: Path):
    return Path(path).read_text() + conversation.turns[turn_index].utterance


def test_a_plugin_strategy_argument_typed_a_path_is_looked_for_when_the_config_is_read(tmp_path):
    """As a retriever's `Path` parameter is: it was the plug-in's FileNotFoundError traceback, at run time."""
    (tmp_path / "there.txt").write_text("x ")
    with harness.queries.STRATEGIES.using({"prefixed": _prefixed}):
        parse_config(Path("x.yaml"), {"experiments": [_experiment([f"prefixed:{tmp_path / 'there.txt'}"], ["bm25"])]})
        with pytest.raises(ConfigError, match=re.escape(
                f"experiments[0].strategies[0]: prefixed's path: no such file or folder '{tmp_path / 'nope.txt'}' "
                "(prefixed:path)")):
            parse_config(Path("x.yaml"), {"experiments": [_experiment([f"prefixed:{tmp_path / 'nope.txt'}"],
                                                                      ["bm25"])]})


def test_a_plugin_strategy_argument_typed_a_path_reads_a_tilde_as_the_home_folder(tmp_path, monkeypatch):
    """`prefixed:~/x`: the shell expands `~` at a word's start only; the check found the file, the plug-in
    was handed '~/there.txt'."""
    from harness.queries import stream
    from harness.topics import load

    (tmp_path / "there.txt").write_text("x ")
    monkeypatch.setenv("HOME", str(tmp_path))
    with harness.queries.STRATEGIES.using({"prefixed": _prefixed}):
        queries = list(stream(load("ikat2023:test").conversations[:1], "prefixed:~/there.txt"))
    assert all(query.text.startswith("x ") for query in queries)


def test_a_partials_origin_is_its_functions_source_and_its_arguments():
    """Its function's file (changed, the plug-in is run again), not functools' (never changes)."""
    from harness.paths import file_sha256
    from harness.registry import object_origin

    origin = object_origin(functools.partial(_experiment, ["raw"]))
    origin.pop("helpers", None)  # (the other test modules loaded beside this one)
    assert origin == {"module": __name__, "sha256": file_sha256(__file__),
                      "repr": "functools.partial(<function _experiment>, ['raw'])"}


def test_a_partials_origin_is_the_same_in_every_process_though_python_lists_its_sets_in_another_order(tmp_path):
    """A set's members are listed in their hashes' order, which each process draws anew
    (PYTHONHASHSEED): in the origin, and so the resume key, they are sorted."""
    words = ", ".join(repr(f"word{number}") for number in range(20))
    (tmp_path / "wordy.py").write_text(
        f"import functools\n\n\ndef _search(query, k, words, stop):\n    return []\n\n\n"
        f"search = functools.partial(_search, words={{{words}}}, stop=frozenset({{{words}}}))\n")
    probe = ("import json, wordy; from harness.retrieve import RETRIEVERS; name = 'python:wordy:search'; "
             "RETRIEVERS.get(name); print(json.dumps([RETRIEVERS.origin(name), repr(wordy.search)]))")
    found = []
    for seed in ("1", "2", "3"):
        environment = child_env(PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=environment, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        found.append(json.loads(done.stdout))
    assert len({plain for _, plain in found}) > 1  # the processes did list the sets differently
    assert found[0][0] == found[1][0] == found[2][0]
    assert "words={'word0', 'word1', 'word10', " in found[0][0]["repr"]


@pytest.mark.slow
def test_the_python_api_takes_objects_for_named_components_and_writes_the_leaderboard(in_folder):
    sys.path.insert(0, str(in_folder))
    try:
        import mine
    finally:
        sys.path.remove(str(in_folder))
    config = {"k": 20, "output": str(in_folder / "api"),
              "experiments": [_experiment(["raw", "two"], ["mine", {"name": "rrf", "params": {
                  "retrievers": [{"name": "mine"}, {"name": "bm25ish"}]}}])]}
    _, aggregate = harness.run(config, retrievers={"mine": mine.overlap, "bm25ish": lambda query, k: [("x", 1.0)]},
                               strategies={"two": mine.last_two}, quiet=True, leaderboard=True, report=True)
    assert list(aggregate.run) == ["ikat2023-test.raw.mine", "ikat2023-test.two.mine",
                                   "ikat2023-test.raw.rrf", "ikat2023-test.two.rrf"]
    board = (in_folder / "api" / "leaderboard.md").read_text()
    assert "| ikat2023-test.two.rrf | two | rrf |" in board and (in_folder / "api" / "report.html").is_file()
    # the objects were this call's only: the registries and a config read afterwards do not know them
    with pytest.raises(ConfigError, match=r"unknown retriever 'mine'"):
        parse_config(in_folder / "x.yaml", {"experiments": [_experiment(["raw"], ["mine"])]})


def test_reading_a_config_leaves_no_llm_endpoint_behind(tmp_path, monkeypatch):
    from harness.queries.llm import endpoint

    monkeypatch.delenv("HARNESS_LLM_BASE_URL", raising=False)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("{utterance}\n", encoding="utf-8")
    first = parse_config(tmp_path / "a.yaml", {
        "llm": {"local": {"model": "m", "base_url": "http://127.0.0.1:9/v1", "prompt": str(prompt)}},
        "experiments": [_experiment(["llm:local"], ["bm25"])]})
    assert first.llm["local"].model == "m"
    with pytest.raises(harness.errors.HarnessError, match="llm:local has no endpoint"):
        endpoint("local")
    second = parse_config(tmp_path / "b.yaml", {"experiments": [_experiment(["raw"], ["bm25"])]})
    assert second.llm == {} and first.llm["local"].model == "m"


def test_components_lists_each_retriever_with_the_parameters_a_config_may_give(capsys):
    from harness.registry import describe_type
    from harness.retrieve import RETRIEVERS

    assert main(["components", "retriever"]) == 0
    listing = capsys.readouterr().out
    assert listing.startswith("retriever:\n  bm25")
    for param in RETRIEVERS.declaration("bm25").params:  # as bm25 declares them (k1, rm3, ...)
        assert f"{param.name}: {describe_type(param.type)} = {param.default!r}" in listing
    assert not re.search(r"^ +corpus: ", listing, re.M)  # the harness passes the corpus, not a config
    assert "k1: a number of 0 or more = 0.9" in listing and "rm3: true or false = False" in listing


def test_a_search_function_may_bring_a_batch_form_and_its_hits_come_best_first():
    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit

    batches = []

    def search(query, k):
        raise AssertionError("the batch form answers batches")

    def batch(queries, k):
        batches.append(list(queries))
        return [[("d2", 1.0), ("d1", 3.0), ("d3", 2.0)] for _ in queries]

    search.batch = batch
    with RETRIEVERS.using({"mine": search}):
        hits = build("mine").search([SearchQuery("q1", "a"), SearchQuery("q2", "b")], k=2)
    assert batches == [["a", "b"]]
    assert dict(hits) == {qid: [Hit("d1", 3.0), Hit("d3", 2.0)] for qid in ("q1", "q2")}


def _pyterrier(pairs: list) -> object:
    """A PyTerrier transformer answering `pairs` for every query, in their order."""
    import pandas as pd
    import pyterrier as pt

    return pt.apply.generic(lambda topics: pd.DataFrame(
        [(qid, docno, score) for qid in topics["qid"] for docno, score in pairs], columns=["qid", "docno", "score"]))


@pytest.mark.parametrize("form", ["function", "object", "pyterrier"])
def test_a_plugin_answering_the_same_pairs_in_another_order_ranks_them_alike_ties_by_docid_descending(form):
    """trec_eval's order whatever the plug-in's list order: its numbers are those `harness eval`
    gives its pairs, and the cut at k keeps the same tied documents."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit

    pairs = [("d1", 2.0), ("d3", 1.0), ("d2", 2.0), ("d4", 2.0), ("d0", 3.0)]

    def plugin(answer: list) -> object:
        if form == "function":
            return lambda query, k: answer
        if form == "object":
            return type("Mine", (), {"search": lambda self, queries, k: {q.qid: answer for q in queries}})()
        return _pyterrier(answer)

    runs = []
    for answer in (pairs, pairs[::-1]):
        with RETRIEVERS.using({"mine": plugin(answer)}):
            runs.append(build("mine").search([SearchQuery("q", "a")], k=3))
    assert runs[0]["q"] == runs[1]["q"] == [Hit("d0", 3.0), Hit("d4", 2.0), Hit("d2", 2.0)]


@pytest.mark.slow
def test_the_example_plugins_numbers_are_the_same_in_every_process_and_those_of_harness_evaluate(in_folder):
    """Python lists a set in another order per PYTHONHASHSEED: harness run scores a plug-in's
    (docid, score) pairs as trec_eval and harness.evaluate do, whatever order it lists its ties
    in, and `overlap` cuts its tied counts at k (20 here) alike in every process."""
    from harness.topics import load
    from harness.trec import Run

    measures = ["nDCG@3", "RR", "R@100"]
    numbers = {}
    for k in (1000, 20):
        config = {"k": k, "output": "runs", "experiments": [{"topics": "ikat2023:test", "strategies": ["raw"],
                                                              "retrievers": ["python:mine:overlap"],
                                                              "measures": measures}]}
        (in_folder / "ov.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        script = ("import json, harness; _, aggregate = harness.run('ov.yaml', force=True, quiet=True); "
                  f"print(json.dumps(aggregate[{measures!r}].iloc[0].tolist()))")
        for seed in ("1", "2"):
            done = subprocess.run([sys.executable, "-c", script], cwd=in_folder, capture_output=True, text=True,
                                  timeout=300, env=child_env(PYTHONHASHSEED=seed))  # mine.py: in the current folder
            assert done.returncode == 0, done.stderr
            numbers[k, seed] = json.loads(done.stdout)
    assert numbers[20, "1"] == numbers[20, "2"]
    sys.path.insert(0, str(in_folder))
    try:
        import mine
    finally:
        sys.path.remove(str(in_folder))
    benchmark = load("ikat2023:test")
    pairs = Run.of({turn.qid: mine.overlap(turn.utterance, 1000, corpus=benchmark.corpus)
                    for conversation in benchmark.conversations for turn in conversation.turns})
    _, aggregate = harness.evaluate(pairs, benchmark.qrels(), measures)
    assert numbers[1000, "1"] == numbers[1000, "2"] == pytest.approx(aggregate[measures].iloc[0].tolist(), abs=1e-12)


def test_a_plugin_answering_a_document_again_keeps_k_distinct_documents_its_repeat_counted():
    """Repeats are dropped (the first, best, kept) before the answer is cut to k: a plug-in that
    gave k distinct documents among its repeats ranks k, not fewer."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit

    with RETRIEVERS.using({"mine": lambda query, k: [("d1", 3.0), ("d1", 2.5), ("d2", 2.0), ("d3", 1.0)]}):
        run = build("mine").search([SearchQuery("q", "a")], k=2)
    assert run["q"] == [Hit("d1", 3.0), Hit("d2", 2.0)]
    assert (run.duplicates, run.repeated) == (1, ("q", "d1"))


def test_an_object_plugin_answer_becomes_a_run_at_the_edge():
    """A retriever object's {qid: pairs} answer is checked and made a Run, best first, cut at
    k; an answer that is no mapping is one line naming the plug-in."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit, Run

    class Mine:
        def search(self, queries, k):
            return {query.qid: [("d2", 1.0), ("d1", 3.0), ("d3", 2.0)] for query in queries}

    class Wrong:
        def search(self, queries, k):
            return [("d1", 1.0)]

    with RETRIEVERS.using({"mine": Mine(), "wrong": Wrong()}):
        found = build("mine").search([SearchQuery("q1", "a")], k=2)
        assert isinstance(found, Run) and found["q1"] == [Hit("d1", 3.0), Hit("d3", 2.0)]
        with pytest.raises(harness.errors.HarnessError, match=r"retriever 'wrong': search\(queries, k\) answered list"):
            build("wrong").search([SearchQuery("q1", "a")], k=2)


def test_an_object_plugin_answering_a_run_is_checked_as_any_other_answer():
    """A Run answered by a plug-in object is cut at k and put best first like {qid: pairs},
    and a non-finite score in it is refused."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit, Run

    class Mine:
        def search(self, queries, k):
            return Run.of({query.qid: [("d2", 1.0), ("d1", 3.0), ("d3", 2.0)] for query in queries})

    class Infinite:
        def search(self, queries, k):
            return Run.of({query.qid: [("d1", float("inf"))] for query in queries})

    with RETRIEVERS.using({"mine": Mine(), "infinite": Infinite()}):
        assert build("mine").search([SearchQuery("q1", "a")], k=2)["q1"] == [Hit("d1", 3.0), Hit("d3", 2.0)]
        with pytest.raises(harness.errors.HarnessError, match="finite score"):
            build("infinite").search([SearchQuery("q1", "a")], k=2)


def test_an_object_plugin_is_summarised_by_its_own_docstring():
    from harness.retrieve import RETRIEVERS

    class Mine:
        """My own retriever."""

        def search(self, queries, k):
            return {}

    with RETRIEVERS.using({"mine": Mine()}):
        assert RETRIEVERS.declaration("mine").summary == "My own retriever."


def test_a_plugin_answering_no_pairs_is_one_line_naming_it_and_the_query():
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"mine": lambda query, k: ["d1"]}):
        with pytest.raises(harness.errors.HarnessError,
                           match=r"retriever 'mine' answered 'd1' for query q1; expected \(docid, score\) pairs"):
            build("mine").search([SearchQuery("q1", "a")], k=10)


def test_a_plugin_answering_none_or_a_mapping_for_a_query_is_one_line_naming_it_and_the_query():
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"none": lambda query, k: None, "scores": lambda query, k: {"d1": 1.0}}):
        with pytest.raises(harness.errors.HarnessError,
                           match=r"retriever 'none' answered None for query q1; expected a list of \(docid, score\)"):
            build("none").search([SearchQuery("q1", "a")], k=10)
        with pytest.raises(harness.errors.HarnessError, match=r"retriever 'scores' answered \{'d1': 1.0\} for query q1"):
            build("scores").search([SearchQuery("q1", "a")], k=10)


def test_a_batch_form_answering_another_number_of_rankings_than_queries_is_refused():
    """zip would silently drop the queries past the answers (scored 0) or misalign them."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    def search(query, k):
        return []

    search.batch = lambda queries, k: [[("d1", 1.0)]]
    with RETRIEVERS.using({"mine": search}):
        with pytest.raises(harness.errors.HarnessError,
                           match=r"retriever 'mine': batch\(queries, k\) answered 1 ranking for 2 queries"):
            build("mine").search([SearchQuery("q1", "a"), SearchQuery("q2", "b")], k=10)


def test_an_object_plugin_answering_a_query_it_was_not_asked_is_refused():
    """An int qid (or another batch's) would leave the asked query empty, scored 0, without a word."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    class Mine:
        def search(self, queries, k):
            return {int(query.qid): [("d1", 1.0)] for query in queries}

    with RETRIEVERS.using({"mine": Mine()}):
        with pytest.raises(harness.errors.HarnessError,
                           match=r"retriever 'mine': search\(queries, k\) answered query 1, which it was not asked"):
            build("mine").search([SearchQuery("1", "a")], k=10)


def test_an_object_plugin_consuming_the_list_of_queries_it_is_handed_has_its_answers_taken():
    """It emptied the harness's own list (`queries.pop()`), and was told it answered queries it was not asked
    (asked: )."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    class Stack:
        def search(self, queries, k):
            answer = {}
            while queries:
                query = queries.pop()
                answer[query.qid] = [("d1", 1.0)]
            return answer

    with RETRIEVERS.using({"stack": Stack()}):
        run = build("stack").search([SearchQuery("1", "a"), SearchQuery("2", "b")], k=10)
    assert sorted(run) == ["1", "2"]


@pytest.mark.parametrize("qids, shown", [(lambda qid: qid.replace("_", "-"), "'9-1-1'"),
                                         (lambda qid: 0, "0")])
def test_a_pyterrier_plugin_answering_a_query_it_was_not_asked_is_refused_as_an_objects_is(qids, shown):
    """A mangled or int qid in the result frame would leave the asked query empty, scored 0, without a word."""
    import pandas as pd
    import pyterrier as pt

    from harness.retrieve import RETRIEVERS, SearchQuery, build

    answer = pt.apply.generic(lambda topics: pd.DataFrame({"qid": [qids(qid) for qid in topics["qid"]],
                                                           "docno": "d1", "score": 1.0}))
    with RETRIEVERS.using({"pt": answer}):
        with pytest.raises(harness.errors.HarnessError,
                           match=rf"^retriever 'pt': the transformer's result has query {shown}, which it was not "
                                 r"asked \(asked: 9-1_1, 9-1_2\); expected the qid column"):
            build("pt").search([SearchQuery("9-1_1", "a"), SearchQuery("9-1_2", "b")], k=10)


@pytest.mark.parametrize("docid", ["doc 1", "doc\x001"])
def test_a_plugin_docid_that_would_break_a_trec_line_is_refused_naming_the_plugin_not_the_run_file(docid):
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"mine": lambda query, k: [(docid, 1.0)]}):
        with pytest.raises(harness.errors.HarnessError, match=rf"retriever 'mine' answered \({re.escape(repr(docid))}, "
                                                              r"1.0\) for query q1; expected a docid string \(non-empty, "
                                                              r"no whitespace or NUL byte\)"):
            build("mine").search([SearchQuery("q1", "a")], k=10)


def test_a_plugin_module_failing_to_import_is_one_line_saying_where_in_its_code(in_folder):
    (in_folder / "broken.py").write_text("import os\n\nvalue = undefined_name\n")
    with pytest.raises(ConfigError, match=r"retriever 'python:broken:f': cannot import broken \(NameError at "
                                          r".*broken\.py:3: name 'undefined_name' is not defined\)"):
        parse_config(in_folder / "x.yaml", {"experiments": [_experiment(["raw"], ["python:broken:f"])]})


@pytest.mark.parametrize("score, shown", [("3.5", "'3.5' (str)"), (True, "True (bool)"), (None, "None (NoneType)")])
def test_a_plugin_score_that_is_no_number_is_refused_naming_the_plugin_query_and_document(score, shown):
    """float() would take "3.5" and True: the document would be ranked by a plug-in's mistake."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"mine": lambda query, k: [("d1", 2.0), ("d2", score)]}):
        with pytest.raises(harness.errors.HarnessError, match=re.escape(
                f"retriever 'mine' answered the score {shown} for query q1, document 'd2'; expected a number "
                "(an int or a float, numpy's too; not a bool or a string)")):
            build("mine").search([SearchQuery("q1", "a")], k=10)


def test_a_plugin_score_may_be_any_int_or_float_numpy_s_included_but_not_numpy_s_bool():
    import numpy as np

    from harness.retrieve import RETRIEVERS, SearchQuery, build
    from harness.trec import Hit

    scores = [np.float32(0.5), np.int64(3), 2, np.float64(1.5)]
    with RETRIEVERS.using({"mine": lambda query, k: list(zip(["a", "b", "c", "d"], scores)),
                           "flags": lambda query, k: [("a", np.bool_(True))]}):
        found = build("mine").search([SearchQuery("q1", "x")], k=10)["q1"]
        assert found == [Hit("b", 3.0), Hit("c", 2.0), Hit("d", 1.5), Hit("a", 0.5)]
        assert all(type(hit.score) is float for hit in found)
        with pytest.raises(harness.errors.HarnessError, match=r"the score np.True_ \(bool\) for query q1, document 'a'"):
            build("flags").search([SearchQuery("q1", "x")], k=10)


def test_a_plugin_missing_a_module_of_its_own_is_named_not_sent_to_an_extra(in_folder, monkeypatch, capsys):
    """faiss is a module the [dense] extra brings, but the plug-in's code is what needs it here."""
    (in_folder / "heavy.py").write_text("def search(query, k):\n    import faiss\n    return []\n")
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed: importing it fails
    assert main(["run", str(_config(in_folder, ["raw"], ["python:heavy:search"]))]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "harness run: error: retriever 'python:heavy:search' (module heavy) cannot import faiss, which its own code "
        f"needs (ModuleNotFoundError at {in_folder / 'heavy.py'}:2: import of faiss halted; None in sys.modules)")
    monkeypatch.setitem(sys.modules, "spacy", None)  # the harness's own optional import still names its extra
    history._stopwords.cache_clear()  # looked for anew, as in a fresh process (a test before may have read them)
    assert main(["topics", "export", "cast2019", "--strategy", "hqe"]) == 2
    assert capsys.readouterr().err == ("harness topics export: error: this needs spacy, from the [segment] extra: "
                                       "pip install 'convsearch-harness[segment]' (or 'convsearch-harness[all]')\n")


def test_a_plugin_missing_a_module_in_another_module_of_its_package_is_named_too(in_folder, monkeypatch, capsys):
    """The code that runs may live in a module other than the one the spec names."""
    (in_folder / "heavypkg").mkdir()
    (in_folder / "heavypkg" / "__init__.py").write_text("from heavypkg.base import Base\n\n\nclass Searcher(Base):\n"
                                                        "    pass\n")
    (in_folder / "heavypkg" / "base.py").write_text("class Base:\n    def search(self, query, k):\n"
                                                    "        import faiss\n        return []\n")
    monkeypatch.setitem(sys.modules, "faiss", None)
    assert main(["run", str(_config(in_folder, ["raw"], ["python:heavypkg:Searcher"]))]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "harness run: error: retriever 'python:heavypkg:Searcher' (module heavypkg) cannot import faiss, which its "
        f"own code needs (ModuleNotFoundError at {in_folder / 'heavypkg' / 'base.py'}:3: ")


def _installed(tmp_path: Path, monkeypatch, module: str, entry_points: str) -> Path:
    """broken_plugin 0.1 with `module` and `entry_points`, installed as pip installs a package: a
    dist-info folder on the PYTHONPATH of the harness run as a user runs it (importlib.metadata
    finds the entry points there), without installing into the shared venv."""
    site = tmp_path / "site"
    (site / "broken_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "broken_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\n"
                                                                   "Version: 0.1\n")
    (site / "broken_plugin-0.1.dist-info" / "entry_points.txt").write_text(f"[harness.retrievers]\n{entry_points}")
    (site / "broken_plugin.py").write_text(module)
    monkeypatch.setenv("PYTHONPATH", f"{Path(harness.__file__).parents[1]}{os.pathsep}{site}")
    return site


@pytest.mark.parametrize("module", [
    "import faiss_not_installed\n\n\ndef search(query, k):\n    return []\n",  # on loading the entry point
    "def search(query, k):\n    import faiss_not_installed\n    return []\n",  # when it is first called
], ids=["on loading", "when called"])
def test_an_entry_point_plugin_missing_a_module_is_one_line_naming_it_its_entry_point_and_the_module(
        tmp_path, monkeypatch, module):
    site = _installed(tmp_path, monkeypatch, module, "broken = broken_plugin:search\n")
    done = _harness(sys.executable, tmp_path, "run", str(_config(tmp_path, ["raw"], ["broken"])))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if "error" in line]  # after any progress bar
    assert "retriever 'broken'" in line and "entry point broken_plugin:search of broken-plugin 0.1" in line
    assert re.search(fr"\(ModuleNotFoundError at {re.escape(str(site / 'broken_plugin.py'))}:[12]: "
                     r"No module named 'faiss_not_installed'\)$", line)


_FINE_AND_WRONG = 'def search(query: str, k: int):\n    """fine"""\n    return []\n\n\ndef wrong(query):\n    return []\n'


def test_components_lists_the_plugins_that_load_and_marks_a_broken_one_with_its_package(tmp_path, monkeypatch):
    """One entry point of the wrong signature made `harness components` list nothing, in an
    error naming no package: it is the command a user runs to find such a plug-in."""
    _installed(tmp_path, monkeypatch, _FINE_AND_WRONG, "fine = broken_plugin:search\nwrong = broken_plugin:wrong\n")
    done = _harness(sys.executable, tmp_path, "components", "retriever")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    listing = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ") and line[2] != " "}
    assert "bm25" in listing and listing["fine"].endswith("fine  [broken-plugin]")
    assert re.fullmatch(r"  wrong +BROKEN: wrong\(query\) cannot be called as f\(query, k\); .* "
                        r"\(entry point broken_plugin:wrong of broken-plugin 0\.1\)", listing["wrong"])
    assert done.stderr == "harness components: 1 plug-in cannot be loaded (marked BROKEN)\n"
    as_json = json.loads(_harness(sys.executable, tmp_path, "components", "retriever", "--format", "json").stdout)
    wrong = next(c for c in as_json["retriever"] if c["name"] == "wrong")
    assert wrong["error"].endswith("(entry point broken_plugin:wrong of broken-plugin 0.1)")


def test_a_config_naming_an_entry_point_of_the_wrong_signature_is_an_error_naming_its_package(
        tmp_path, monkeypatch):
    _installed(tmp_path, monkeypatch, _FINE_AND_WRONG, "wrong = broken_plugin:wrong\n")
    done = _harness(sys.executable, tmp_path, "run", str(_config(tmp_path, ["raw"], ["wrong"])), "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "retriever 'wrong'" in done.stderr and "(entry point broken_plugin:wrong of broken-plugin 0.1)" in done.stderr


def test_a_name_two_packages_or_a_package_and_a_built_in_claim_is_an_error_only_where_a_config_names_it(
        tmp_path, monkeypatch):
    """Two packages registering `dup`, one also the built-in `bm25`: every config was refused, at the key of
    whatever it named first; `harness components` listed nothing."""
    site = _installed(tmp_path, monkeypatch, _FINE_AND_WRONG,
                      "fine = broken_plugin:search\ndup = broken_plugin:search\nbm25 = broken_plugin:search\n")
    other = site / "other_plugin-0.2.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other-plugin\nVersion: 0.2\n")
    (other / "entry_points.txt").write_text("[harness.retrievers]\ndup = broken_plugin:search\n")
    done = _harness(sys.executable, tmp_path, "run", str(_config(tmp_path, ["raw"], ["fine"])), "--dry-run")
    assert done.returncode == 0, done.stderr
    for named, problem in (("dup", "retriever 'dup' is registered twice, by the entry points of broken-plugin 0.1 "
                                   "and other-plugin 0.2: rename one there, or uninstall one of the packages"),
                           ("bm25", "retriever 'bm25' is built in; the entry point of broken-plugin 0.1 cannot take "
                                    "its name: rename it there, or uninstall that package")):
        done = _harness(sys.executable, tmp_path, "run", str(_config(tmp_path, ["raw"], ["fine", named])), "--dry-run")
        assert done.returncode == 2 and f"experiments[0].retrievers[1]: {problem}" in done.stderr, done.stderr
    done = _harness(sys.executable, tmp_path, "components", "retriever")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    listing = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ") and line[2] != " "}
    assert listing["fine"].endswith("fine  [broken-plugin]") and "dense" in listing
    assert re.fullmatch(r"  dup +BROKEN: retriever 'dup' is registered twice, .*", listing["dup"])
    assert re.fullmatch(r"  bm25 +BROKEN: retriever 'bm25' is built in; .*", listing["bm25"])
    assert done.stderr == "harness components: 2 plug-ins cannot be loaded (marked BROKEN)\n"


def test_a_plugin_score_beyond_any_float_is_refused_as_not_finite():
    """float(10**400) raises OverflowError: it was a traceback."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    with RETRIEVERS.using({"mine": lambda query, k: [("d1", 10**400)]}):
        with pytest.raises(harness.errors.HarnessError, match=r"retriever 'mine' answered tuple \('d1', 1000+\.\.\. "
                                                              r"for query q1; expected a docid string .* finite score"):
            build("mine").search([SearchQuery("q1", "a")], k=10)


class _Reversible:
    """A retriever object whose class keeps object's repr: its repr shows no argument."""

    def __init__(self, reverse: bool = False, model=None):
        self.reverse, self.model = reverse, model

    def search(self, queries, k):
        return {query.qid: [("a", 1.0 if self.reverse else 2.0), ("b", 1.5)] for query in queries}


def _first_of(folder: Path) -> str:
    return next(iter((folder / "runs" / "ikat2023-test.raw.mine.run").open())).split()[2]


def test_an_object_whose_repr_shows_no_argument_is_keyed_by_its_attributes(tmp_path):
    """Mine(reverse=True) after Mine(reverse=False) is run again, not reused: object's repr is the same."""
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    for reverse in (False, True):
        harness.run(config, retrievers={"mine": _Reversible(reverse)}, quiet=True)
        assert _first_of(tmp_path) == ("b" if reverse else "a")


def test_an_object_whose_repr_shows_no_argument_nor_plain_attributes_is_never_resumed(tmp_path, capsys):
    """Its attributes (a model, say) have no text that tells two apart: its runs are made again, and it is said."""
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"),
                                      "experiments": [_experiment(["raw"], ["mine"])]}), encoding="utf-8")
    from harness.retrieve import RETRIEVERS

    for reverse in (False, True):
        with RETRIEVERS.using({"mine": _Reversible(reverse, model=_Reversible())}):
            assert main(["run", str(config)]) == 0
        assert _first_of(tmp_path) == ("b" if reverse else "a")
    err = capsys.readouterr().err
    assert "skipped" not in err
    assert "warning: retriever mine: its runs are made again every time, never resumed: its class keeps " \
           "object's repr" in err


def test_a_run_of_a_plug_in_never_resumed_that_only_leaves_out_is_said_to_be_never_resumed(tmp_path, capsys):
    """Not 'its files were made from other inputs': they may be of these very inputs, which such
    a plug-in gives no way to know."""
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"),
                                      "experiments": [_experiment(["raw"], ["mine", "plain"])]}), encoding="utf-8")
    from harness.retrieve import RETRIEVERS

    with RETRIEVERS.using({"mine": _Reversible(model=_Reversible()), "plain": lambda query, k: [("a", 1.0)]}):
        assert main(["run", str(config)]) == 0
        capsys.readouterr()
        assert main(["run", str(config), "--only", "ikat2023-test.raw.plain"]) == 0
    assert ("ikat2023-test.raw.mine: left out of the leaderboard: retriever mine is never resumed, so its files are "
            "not known to be of the current inputs (select it with --only ikat2023-test.raw.mine to make it again): "
            "its class keeps object's repr") in capsys.readouterr().err


def test_a_run_left_out_for_two_plug_ins_never_resumed_names_the_plug_in_of_each_reason(tmp_path, capsys):
    """Each reason follows the plug-in it is of: joined bare, which was whose was not said."""
    from harness.queries import STRATEGIES
    from harness.retrieve import RETRIEVERS

    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"),
                                      "experiments": [_experiment(["kept"], ["mine", "plain"])]}), encoding="utf-8")
    model = object()

    def kept(conversation, turn_index):  # captures `model`, which has no text that tells two apart
        return model and conversation.turns[turn_index].utterance

    with RETRIEVERS.using({"mine": _Reversible(model=_Reversible()), "plain": lambda query, k: [("a", 1.0)]}), \
            STRATEGIES.using({"kept": kept}):
        assert main(["run", str(config)]) == 0
        capsys.readouterr()
        assert main(["run", str(config), "--only", "ikat2023-test.kept.plain"]) == 0
    left_out = next(line for line in capsys.readouterr().err.splitlines() if "left out" in line)
    assert left_out.startswith("ikat2023-test.kept.mine: left out of the leaderboard: strategy kept and retriever mine "
                               "are never resumed, ")
    assert re.search(r"to make it again\): strategy kept: it captured a value that is not plain.*; retriever mine: "
                     r"its class keeps object's repr", left_out)


def test_a_function_with_no_source_to_read_is_never_resumed(tmp_path):
    """Typed into the interpreter or read from stdin (`python -`), a changed function is run again."""
    script = (
        "import harness\n"
        f"config = {{'k': 20, 'output': {str(tmp_path / 'runs')!r}, "
        f"'experiments': [{_experiment(['raw'], ['mine'])!r}]}}\n"
        "def first(query, k):\n    return [('a', 2.0), ('b', 1.0)]\n"
        "harness.run(config, retrievers={'mine': first})\n"
        "def first(query, k):\n    return [('b', 2.0), ('a', 1.0)]\n"
        "harness.run(config, retrievers={'mine': first})\n")
    done = subprocess.run([sys.executable, "-"], input=script, cwd=tmp_path, env=child_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr and _first_of(tmp_path) == "b"
    assert "UserWarning: retriever mine: its runs are made again every time, never resumed: its source cannot be " \
           "read" in done.stderr


def test_two_objects_of_one_script_handed_over_in_turn_under_one_name_are_each_run(tmp_path):
    """The script's file keys both, so which object it is keys it too: two functions, two lambdas, two methods of one
    object, two classes' objects of one repr: each second one reused the first's run."""
    (tmp_path / "two.py").write_text(
        "import harness\n"
        f"config = {{'k': 20, 'output': {str(tmp_path / 'runs')!r}, "
        f"'experiments': [{_experiment(['raw'], ['mine'])!r}]}}\n"
        "def first(query, k):\n    return [('a', 2.0), ('b', 1.0)]\n"
        "def second(query, k):\n    return [('b', 2.0), ('a', 1.0)]\n"
        "class Ranker:\n"
        "    def first(self, query, k):\n        return [('a', 2.0), ('b', 1.0)]\n"
        "    def second(self, query, k):\n        return [('b', 2.0), ('a', 1.0)]\n"
        "class First:\n    def __repr__(self):\n        return 'Ranker()'\n"
        "    def __call__(self, query, k):\n        return [('a', 2.0), ('b', 1.0)]\n"
        "class Second(First):\n    def __call__(self, query, k):\n        return [('b', 2.0), ('a', 1.0)]\n"
        "def first_of():\n    return open('runs/ikat2023-test.raw.mine.run').readline().split()[2]\n"
        "for pair in ((first, second), (lambda query, k: [('a', 2.0), ('b', 1.0)],\n"
        "                               lambda query, k: [('b', 2.0), ('a', 1.0)]),\n"
        "             (Ranker().first, Ranker().second), (First(), Second())):\n"
        "    for search in pair:\n"
        "        harness.run(config, retrievers={'mine': search}, quiet=True)\n"
        "        print(first_of())\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "two.py"], cwd=tmp_path, env=child_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["a", "b"] * 4


def test_a_bound_methods_origin_is_its_objects_attributes_too():
    """`Mine(reverse=True).search` handed as a search function keys as its object does."""
    from harness.registry import object_origin

    assert object_origin(_Reversible(True).search) != object_origin(_Reversible(False).search)
    assert object_origin(_Reversible(True).search)["state"] == _sha256("{'reverse': True, 'model': None}")


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_an_objects_attributes_are_keyed_by_their_sha256_not_written_into_every_runs_json(tmp_path):
    """A retriever holding its documents (a dict of strings) keeps a run JSON of a few kB, not its documents."""
    documents = {f"d{number}": "some words of a document " * 20 for number in range(2000)}
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": _Reversible(model=documents)}, quiet=True)
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.mine.json").read_text())
    origin = json.loads(record["hashes"]["plugins"])["retriever mine"]
    assert origin["state"] == _sha256(f"{{'reverse': False, 'model': {documents!r}}}")
    assert len(record["hashes"]["plugins"]) < 1000


def _ranking(first):
    """A search function made by a factory: only the value its closure captured says which document is first."""
    def search(query, k):
        return [(first, 2.0), ("b" if first == "a" else "a", 1.0)]
    return search


def _first_by_default(query, k, first="a", *, second="b"):
    return [(first, 2.0), (second, 1.0)]


@pytest.mark.parametrize("wrap", [lambda search: search, functools.partial], ids=["function", "partial"])
def test_a_functions_captured_values_enter_its_key(tmp_path, wrap):
    """make_search(0.7) after make_search(0.3) is run again, not reused: both are the same file's code."""
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    for first in ("a", "b"):
        harness.run(config, retrievers={"mine": wrap(_ranking(first))}, quiet=True)
        assert _first_of(tmp_path) == first


def test_a_functions_defaults_changed_at_run_time_enter_its_key(tmp_path):
    """__defaults__ or __kwdefaults__ set anew: run again; as the source writes them, keyed by the file alone."""
    from harness.registry import object_origin

    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    assert set(object_origin(_first_by_default)) <= {"module", "sha256", "helpers"}
    try:
        for defaults, kwdefaults, first in ((("a",), {"second": "b"}, "a"), (("b",), {"second": "b"}, "b"),
                                            (("c",), {"second": "b"}, "c"), (("c",), {"second": "d"}, "c")):
            _first_by_default.__defaults__, _first_by_default.__kwdefaults__ = defaults, kwdefaults
            harness.run(config, retrievers={"mine": _first_by_default}, quiet=True)
            found = [line.split()[2] for line in (tmp_path / "runs" / "ikat2023-test.raw.mine.run").open()][:2]
            assert found == [first, kwdefaults["second"]]
    finally:
        _first_by_default.__defaults__, _first_by_default.__kwdefaults__ = ("a",), {"second": "b"}


def test_a_lambda_made_in_a_loop_is_keyed_by_the_value_it_captured(tmp_path):
    """`lambda query, k, first=first: ...` for each value: each is run, none reuses another's run."""
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    for first, search in zip("ab", [lambda query, k, first=first: [(first, 2.0), ("c", 1.0)] for first in "ab"]):
        harness.run(config, retrievers={"mine": search}, quiet=True)
        assert _first_of(tmp_path) == first


def test_a_function_that_captured_a_value_not_plain_is_never_resumed(tmp_path, capsys):
    """A captured model has no text that tells two apart: its runs are made again, and it is said."""
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"),
                                      "experiments": [_experiment(["raw"], ["mine"])]}), encoding="utf-8")
    from harness.retrieve import RETRIEVERS

    def searching(model):
        return lambda query, k: [("a" if model.reverse else "b", 2.0)]

    for reverse in (True, False):
        with RETRIEVERS.using({"mine": searching(_Reversible(reverse))}):
            assert main(["run", str(config)]) == 0
        assert _first_of(tmp_path) == ("a" if reverse else "b")
    err = capsys.readouterr().err
    assert "skipped" not in err
    assert "warning: retriever mine: its runs are made again every time, never resumed: it captured a value " \
           "that is not plain" in err


def test_an_object_never_resumed_is_run_again_by_the_same_process_too(tmp_path):
    """Handed to harness.run, changed, handed again by a second harness.run of the script: not
    the first run reused (its key is drawn anew each time, not once a process)."""
    (tmp_path / "mymine.py").write_text(
        "class Mine:\n"
        "    def __init__(self):\n        self.first, self.model = 'a', object()\n"
        "    def search(self, queries, k):\n"
        "        return {query.qid: [(self.first, 2.0), ('c', 1.0)] for query in queries}\n"
        "mine = Mine()\n", encoding="utf-8")
    script = (
        "import harness, mymine\n"
        f"config = {{'k': 20, 'output': {str(tmp_path / 'runs')!r}, "
        f"'experiments': [{_experiment(['raw'], ['mine'])!r}]}}\n"
        "harness.run(config, retrievers={'mine': mymine.mine})\nmymine.mine.first = 'b'\n"
        "harness.run(config, retrievers={'mine': mymine.mine})\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=child_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first = next(iter((tmp_path / "runs" / "ikat2023-test.raw.mine.run").open())).split()[2]
    assert "skipped" not in done.stderr and first == "b"


def test_the_resume_key_takes_params_as_they_act_a_default_written_out_or_a_member_by_name_keys_alike():
    """Writing a default out (bm25's k1 0.9, b 0.4) or an Enum member by name reruns nothing;
    a config that writes neither keys as it did."""
    from harness.retrieve import RETRIEVERS

    def retriever(spec) -> dict:
        config = parse_config(Path("x.yaml"), {"experiments": [_experiment(["raw"], [spec])]})
        return config.runs()[0].identity()["retriever"]

    with RETRIEVERS.using({"moded": _moded}):
        assert retriever({"name": "moded", "params": {"mode": "FAST"}}) == retriever({"name": "moded", "params": {
            "mode": "fast"}}) == retriever("moded") == {"name": "moded", "params": {}}
        assert retriever({"name": "moded", "params": {"mode": "EXACT"}}) == {"name": "moded",
                                                                            "params": {"mode": "exact"}}
    assert retriever({"name": "bm25", "params": {"k1": 0.9, "b": 0.4}}) == {"name": "bm25", "params": {}}
    assert retriever({"name": "bm25", "params": {"k1": 1.2, "b": 0.4}}) == {"name": "bm25", "params": {"k1": 1.2}}
    assert retriever({"name": "bm25", "params": {"k1": 1}})["params"] == {"k1": 1}  # not 1.0: kept as written


_ENGINE = ("import threading\n\n\nclass Engine:\n    def __init__(self):\n        self.lock = threading.Lock()\n\n"
           "    def search(self, queries, k):\n"
           "        return {query.qid: self.ranked(query.text, k) for query in queries}\n\n"
           "    def ranked(self, query, k):\n        return [('a', 2.0), ('b', 1.0)]\n\n\nengine = Engine()\n")


def test_a_module_level_object_a_config_names_is_keyed_by_its_modules_file_and_resumed(tmp_path):
    """`python:engine:engine`, whose class keeps object's repr and holds a lock, is built when its module loads:
    its module's file keys it, as before its attributes were keyed, so its runs resume (runs made then too)."""
    from harness.paths import file_sha256

    (tmp_path / "engine.py").write_text(_ENGINE, encoding="utf-8")
    config = _config(tmp_path, ["raw"], ["python:engine:engine"])
    for skipped in (False, True):
        done = _harness(sys.executable, tmp_path, "run", str(config))
        assert done.returncode == 0, done.stderr
        assert ("finished with the same inputs, skipped" in done.stderr) is skipped
        assert "never resumed" not in done.stderr
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.python-engine-engine.json").read_text())
    assert json.loads(record["hashes"]["plugins"])["retriever python:engine:engine"] == {
        "python": "engine:engine", "module": "engine", "sha256": file_sha256(tmp_path / "engine.py"),
        "repr": "<engine.Engine object>"}


def test_a_bound_method_a_config_names_is_keyed_by_its_modules_file_as_before(tmp_path):
    """`python:engine:engine.ranked`: its module's file keys it, not its object's settings, so its runs made before
    its object's settings were keyed stay finished."""
    from harness.paths import file_sha256

    (tmp_path / "engine.py").write_text(_ENGINE.replace("threading.Lock()", "'plain'"), encoding="utf-8")
    config = _config(tmp_path, ["raw"], ["python:engine:engine.ranked"])
    done = _harness(sys.executable, tmp_path, "run", str(config))
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.python-engine-engine.ranked.json").read_text())
    assert json.loads(record["hashes"]["plugins"])["retriever python:engine:engine.ranked"] == {
        "python": "engine:engine.ranked", "module": "engine", "sha256": file_sha256(tmp_path / "engine.py")}


def test_an_object_a_config_names_built_from_another_modules_class_is_keyed_by_the_module_that_built_it(tmp_path):
    """`engine = Engine("a")` in pd.py, Engine in mylib.py (object's repr, no argument in it):
    editing the arguments in pd.py reruns the run (it was keyed by mylib.py alone, and reused)."""
    (tmp_path / "mylib.py").write_text(
        "class Engine:\n"
        "    def __init__(self, first):\n        self.first = first\n"
        "    def search(self, queries, k):\n"
        "        return {query.qid: self.ranked(query.text, k) for query in queries}\n"
        "    def ranked(self, query, k):\n        return [(self.first, 2.0), ('c', 1.0)]\n", encoding="utf-8")
    for spec, first in (("python:pd:engine", "a"), ("python:pd:engine.ranked", "b")):
        (tmp_path / "pd.py").write_text(f"from mylib import Engine\n\nengine = Engine({first!r})\n", encoding="utf-8")
        config = _config(tmp_path, ["raw"], [spec])
        assert _harness(sys.executable, tmp_path, "run", str(config)).returncode == 0
        (tmp_path / "pd.py").write_text("from mylib import Engine\n\nengine = Engine('z')\n", encoding="utf-8")
        shutil.rmtree(tmp_path / "__pycache__", ignore_errors=True)  # same size, same second: a stale .pyc
        done = _harness(sys.executable, tmp_path, "run", str(config))
        assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
        run = next((tmp_path / "runs").glob(f"ikat2023-test.raw.{spec.replace(':', '-')}.run"))
        assert run.read_text().split()[2] == "z"


def _notebook(source: str) -> types.ModuleType:
    """A module as a notebook's cells make one: no file, its code's source kept by linecache (as IPython keeps it)."""
    import linecache

    module = types.ModuleType("notebook_cells")
    name = f"<cell {id(module)} {len(source)}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module


_BY_GLOBAL = ("FIRST = 'a'\n\n\ndef search(query, k):\n    return [(FIRST, 2.0), ('c', 1.0)]\n\n\n"
              "class Searcher:\n    def search(self, queries, k):\n"
              "        return {query.qid: [(FIRST, 2.0), ('c', 1.0)] for query in queries}\n")


def test_a_notebook_functions_key_holds_the_plain_globals_it_reads(tmp_path):
    """`MIN = 3` set anew in a notebook cell: the function is run again, not reused."""
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    cells = _notebook(_BY_GLOBAL)
    for cells.FIRST in ("a", "b", "a"):
        harness.run(config, retrievers={"mine": cells.search}, quiet=True)
        assert _first_of(tmp_path) == cells.FIRST


def test_a_scripts_function_or_object_is_keyed_by_the_plain_globals_its_code_reads(tmp_path):
    """`python mine.py a`, then `python mine.py b`, the function (or the object's method) reading the argument from
    a global: run again, not reused."""
    config = {"k": 20, "output": "runs", "experiments": [_experiment(["raw"], ["mine", "theirs"])]}
    (tmp_path / "mine.py").write_text(f"import sys\n\nimport harness\n\n{_BY_GLOBAL}\n\nFIRST = sys.argv[1]\n"
                                      f"harness.run({config!r}, retrievers={{'mine': search, 'theirs': Searcher()}}, "
                                      "quiet=True)\n")
    for first in ("a", "b"):
        done = subprocess.run([sys.executable, "mine.py", first], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        for name in ("mine", "theirs"):
            run = tmp_path / "runs" / f"ikat2023-test.raw.{name}.run"
            assert run.read_text().split()[2] == first, name


def test_a_modules_function_is_keyed_by_its_file_not_the_globals_it_fills_or_makes_from_its_location(
        tmp_path, monkeypatch):
    """A memo cache filled when it runs, a path made from `__file__`: keyed by their values, each call (and each
    checkout of the project) had another key, and its runs were made again."""
    from harness.registry import object_origin

    source = ("from pathlib import Path\n\n_CACHE = {}\nSTOP = Path(__file__).parent / 'stop.txt'\n\n\n"
              "def search(query, k):\n    _CACHE[query] = STOP.name\n    return [(_CACHE[query], 1.0)]\n")
    origins = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "memo_plugin.py").write_text(source, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path / folder))
        monkeypatch.delitem(sys.modules, "memo_plugin", raising=False)
        from memo_plugin import search

        origins.append(object_origin(search))
        search("q", 10)
        assert object_origin(search) == origins[0]
    assert set(origins[0]) == {"module", "sha256"}


def test_a_notebook_function_is_keyed_by_the_functions_it_calls_and_never_resumed_on_a_global_not_plain(
        tmp_path, capsys):
    """A helper's cell edited: run again. A model in a global has no text that tells two apart: never resumed."""
    from harness.retrieve import RETRIEVERS

    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"k": 20, "output": str(tmp_path / "runs"),
                                      "experiments": [_experiment(["raw"], ["mine"])]}), encoding="utf-8")
    search = "def search(query, k):\n    return [(first(), 2.0), ('c', 1.0)]\n"
    for first in ("a", "b"):
        cells = _notebook(f"def first():\n    return {first!r}\n\n\n{search}")
        with RETRIEVERS.using({"mine": cells.search}):
            assert main(["run", str(config)]) == 0
        assert _first_of(tmp_path) == first
    capsys.readouterr()
    cells = _notebook(f"MODEL = object()\n\n\ndef first():\n    return MODEL and 'a'\n\n\n{search}")
    with RETRIEVERS.using({"mine": cells.search}):
        assert main(["run", str(config)]) == 0
    assert "warning: retriever mine: its runs are made again every time, never resumed: it reads the global MODEL " \
           "(of type object), not a plain value" in capsys.readouterr().err


def _ranked_frame(first):
    """A PyTerrier retriever's function, which only the value its closure captured tells apart."""
    import pandas as pd

    def ranked(queries):
        return pd.DataFrame([{"qid": qid, "query": query, "docno": docno, "score": score}
                             for qid, query in zip(queries["qid"], queries["query"])
                             for docno, score in ((first, 2.0), ("c", 1.0))])
    return ranked


def test_a_pyterrier_apply_transformer_is_keyed_by_the_function_it_wraps(tmp_path):
    """pt.apply.generic(fn) is keyed by pyterrier's file and its repr `pt.apply.generic()`: a changed fn was reused."""
    pt = extra("pyterrier", "test")
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    for first in ("a", "b"):
        harness.run(config, retrievers={"mine": pt.apply.generic(_ranked_frame(first))}, quiet=True)
        assert _first_of(tmp_path) == first
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.mine.json").read_text())
    assert json.loads(record["hashes"]["plugins"])["retriever mine"]["functions"]["fn"]["closure"].startswith(
        "{'first': 'b'")


def test_a_plugin_module_changed_on_disk_after_it_was_loaded_is_an_error_not_a_stale_run(tmp_path, monkeypatch):
    """A notebook edits the plug-in, or reloads it: an entry point or `python:` spec is loaded once a process, an
    object handed over is the one made before; either ran the old code under a new key, or reused the old run."""
    (tmp_path / "edited_plugin.py").write_text("def search(query, k):\n    return [('a', 2.0)]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "edited_plugin", raising=False)
    import edited_plugin

    config = {"k": 20, "output": str(tmp_path / "runs"),
              "experiments": [_experiment(["raw"], ["python:edited_plugin:search", "mine"])]}
    harness.run(config, retrievers={"mine": edited_plugin.search}, quiet=True)
    (tmp_path / "edited_plugin.py").write_text("def search(query, k):\n    return [('b', 2.0)]\n", encoding="utf-8")
    changed = (f"module edited_plugin ({tmp_path / 'edited_plugin.py'}) changed on disk since it was loaded in this "
               "process, so the code that would run is not the code its resume key would say: restart the process")
    for retrievers in ({"mine": edited_plugin.search}, {"mine": lambda query, k: []}):
        with pytest.raises(harness.errors.HarnessError, match=re.escape(changed)):
            harness.run(config, retrievers=retrievers, quiet=True)


def test_a_bound_method_handed_over_whose_module_changed_on_disk_is_an_error(tmp_path, monkeypatch):
    """`mine.search`, a method of an object made before the edit: each look-up makes a new bound method, so its
    record was lost with it, and its old code ran under the edited file's key."""
    method = "class Mine:\n    def search(self, query, k):\n        return [({first!r}, 2.0)]\n"
    (tmp_path / "method_plugin.py").write_text(method.format(first="a"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "method_plugin", raising=False)
    import method_plugin

    mine = method_plugin.Mine()
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": mine.search}, quiet=True)
    _edit(tmp_path / "method_plugin.py", method.format(first="b"))
    with pytest.raises(harness.errors.HarnessError, match="module method_plugin .* changed on disk since it was"):
        harness.run(config, retrievers={"mine": mine.search}, quiet=True)


def test_a_python_spec_module_that_built_its_object_from_another_modules_class_changed_on_disk_is_an_error(
        tmp_path, monkeypatch):
    """`engine = Engine('a')` in the module the spec names, Engine in another: an edit of its arguments keys the run,
    but the object built before ran under the edited file's key, a run a new process then reused."""
    (tmp_path / "built_engine.py").write_text(_BUILT.format(first="a").split("\n\n\nengine")[0] + "\n")
    (tmp_path / "built_spec.py").write_text("from built_engine import Engine\n\nengine = Engine('a')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("built_engine", "built_spec"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    config = {"k": 20, "output": str(tmp_path / "runs"),
              "experiments": [_experiment(["raw"], ["python:built_spec:engine"])]}
    harness.run(config, quiet=True)
    _edit(tmp_path / "built_spec.py", "from built_engine import Engine\n\nengine = Engine('b')\n")
    with pytest.raises(harness.errors.HarnessError, match="module built_spec .* changed on disk since it was"):
        harness.run(config, quiet=True)


_RELOADED = ("SCORE = {score!r}\n\n\ndef first():\n    return {first!r}\n\n\n"
             "def search(query, k):\n    return [(first(), SCORE), ('c', 1.0)]\n")


def _reloadable(tmp_path, monkeypatch, name: str) -> types.ModuleType:
    """Plug-in module `name` in tmp_path, imported: its search ranks first the document its first() names, with
    the score its global SCORE holds."""
    (tmp_path / f"{name}.py").write_text(_RELOADED.format(first="a", score=2.0), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(name)


def _edit(path: Path, text: str) -> None:
    """Write the file a later time than it had: importlib.reload loads the cached bytecode of a file of the same
    size and mtime (to the second), an edit as quick as a test's."""
    before = path.stat().st_mtime
    path.write_text(text, encoding="utf-8")
    os.utime(path, (before + 10,) * 2)


def test_a_plugin_module_reloaded_after_an_edit_is_keyed_by_the_file_as_it_is_now(tmp_path, monkeypatch):
    """importlib.reload loaded the edit, and the objects handed over are the module's as reloaded (a function, an
    instance of its class made after): it was an error saying to restart the process; its runs are made again."""
    module = _reloadable(tmp_path, monkeypatch, "reloaded_plugin")
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": module.search}, quiet=True)
    _edit(tmp_path / "reloaded_plugin.py", _RELOADED.format(first="b", score=2.0))
    importlib.reload(module)
    harness.run(config, retrievers={"mine": module.search}, quiet=True)
    assert _first_of(tmp_path) == "b"


_CLASS = ("class Mine:\n    FIRST = {first!r}\n\n    def search(self, queries, k):\n"
          "        return {{q.qid: [(self.FIRST, 2.0)] for q in queries}}\n")
_BUILT = ("class Engine:\n    def __init__(self, first):\n        self.first = first\n\n"
          "    def search(self, queries, k):\n        return {{q.qid: [(self.first, 2.0)] for q in queries}}\n\n\n"
          "engine = Engine({first!r})\n")
_PICK = "class Pick:\n    def __init__(self, first):\n        self.first = first\n\n    def __call__(self):\n" \
        "        return self.first\n\n\npick = Pick({first!r})\n"
_TAKES_PICK = "from {helper} import pick\n\n\ndef search(query, k):\n    return [(pick(), 2.0)]\n"
# R19: what the plug-in runs is the module's code from before the reload, which a new process, keying it by the
# file as it is now, reused: (the module's source, given `first`; another module's, importing it, or None; whether
# it is imported anew rather than reloaded; the plug-in's names in the config; what is handed over, given the two)
_MADE_BEFORE = {
    "an instance made before, a class attribute edited": (_CLASS, None, False, ["mine"], lambda m, p: m.Mine()),
    "a python: spec's instance, built when its module ran": (_BUILT, None, False, ["python:{m}:engine"], None),
    "a function made before, a function it calls edited": (_RELOADED.replace("{score!r}", "2.0"), None, False,
                                                           ["mine"], lambda m, p: m.search),
    "a function made before, the module imported anew": (_RELOADED.replace("{score!r}", "2.0"), None, True,
                                                         ["mine"], lambda m, p: m.search),
    "a callable another module took from it": (_PICK, _TAKES_PICK, False, ["mine"], lambda m, p: p.search),
    "a function's default another module took": ("def pick(first={first!r}):\n    return first\n", _TAKES_PICK,
                                                 False, ["mine"], lambda m, p: p.search),
    "a global the file no longer binds, left by the code before": (
        _PICK.replace("\npick = ", "\npick_{first} = "), "import {helper}\n\n\ndef search(query, k):\n"
        "    return [({helper}.pick_a(), 2.0)]\n", False, ["mine"], lambda m, p: p.search),
}


@pytest.mark.parametrize("case", _MADE_BEFORE)
def test_a_plugin_reaching_an_object_made_before_its_module_was_reloaded_is_an_error(tmp_path, monkeypatch, case):
    """Its module was reloaded after an edit (or imported anew), but what the plug-in runs of it was made before:
    it ran the old code under the edited file's key, and a new process reused the run."""
    source, taker, anew, names, handed = _MADE_BEFORE[case]
    name = f"made_before_{list(_MADE_BEFORE).index(case)}"
    (tmp_path / f"{name}.py").write_text(source.format(first="a"), encoding="utf-8")
    if taker is not None:
        (tmp_path / f"{name}_taker.py").write_text(taker.format(helper=name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for each in (name, f"{name}_taker"):
        monkeypatch.delitem(sys.modules, each, raising=False)
    module = importlib.import_module(name)
    retrievers = {} if handed is None else {"mine": handed(module, taker and importlib.import_module(f"{name}_taker"))}
    config = {"k": 20, "output": str(tmp_path / "runs"),
              "experiments": [_experiment(["raw"], [each.format(m=name) for each in names])]}
    harness.run(config, retrievers=retrievers, quiet=True)
    _edit(tmp_path / f"{name}.py", source.format(first="b"))
    if anew:
        del sys.modules[name]
        importlib.import_module(name)
    else:
        importlib.reload(module)
    with pytest.raises(harness.errors.HarnessError, match="changed on disk since it was loaded|reloaded since"):
        harness.run(config, retrievers=retrievers, quiet=True)


def test_a_plugin_module_whose_comments_or_layout_alone_changed_is_no_error(tmp_path, monkeypatch):
    """The code loaded is what the file says: a comment added, a line broken, was an error saying to restart."""
    module = _reloadable(tmp_path, monkeypatch, "commented_plugin")
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": module.search}, quiet=True)
    _edit(tmp_path / "commented_plugin.py", "# a comment\n\n" + _RELOADED.format(first="a", score=2.0).replace(
        "[(first(), SCORE), ('c', 1.0)]", "[\n        (first(), SCORE),  # the one\n        ('c', 1.0),\n    ]"))
    harness.run(config, retrievers={"mine": module.search}, quiet=True)
    assert _first_of(tmp_path) == "a"


def test_a_plugin_module_edited_again_after_it_was_reloaded_is_an_error(tmp_path, monkeypatch):
    """The code loaded is the file's at the reload: an edit after it is not what the next run would run."""
    module = _reloadable(tmp_path, monkeypatch, "reedited_plugin")
    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": module.search}, quiet=True)
    for reload_first, first in ((True, "b"), (False, "c"), (True, "d")):  # reloaded, edited again (twice)
        _edit(tmp_path / "reedited_plugin.py", _RELOADED.format(first=first, score=2.0))
        if reload_first:
            importlib.reload(module)
            harness.run(config, retrievers={"mine": module.search}, quiet=True)
            assert _first_of(tmp_path) == first
    _edit(tmp_path / "reedited_plugin.py", _RELOADED.format(first="e", score=2.0))
    with pytest.raises(harness.errors.HarnessError, match="module reedited_plugin .* changed on disk since it was"):
        harness.run(config, retrievers={"mine": module.search}, quiet=True)


def test_a_helper_module_reloaded_keys_the_plugin_by_it_where_the_plugin_reaches_its_reloaded_values(
        tmp_path, monkeypatch):
    """The plug-in reads helper.FIRST when it runs: the reload reaches it. Another took `from helper import FIRST`
    when it loaded: it keeps the old value, so it is still an error (it was for both)."""
    (tmp_path / "reloaded_helper.py").write_text("FIRST = 'a'\n", encoding="utf-8")
    (tmp_path / "reads_helper.py").write_text("import reloaded_helper\n\n\ndef search(query, k):\n"
                                              "    return [(reloaded_helper.FIRST, 2.0), ('c', 1.0)]\n")
    (tmp_path / "took_helper.py").write_text("from reloaded_helper import FIRST\n\n\ndef search(query, k):\n"
                                             "    return [(FIRST, 2.0), ('c', 1.0)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("reloaded_helper", "reads_helper", "took_helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import reads_helper
    import reloaded_helper
    import took_helper

    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    for module in (reads_helper, took_helper):
        harness.run(config, retrievers={"mine": module.search}, quiet=True)
    _edit(tmp_path / "reloaded_helper.py", "FIRST = 'b'\n")
    importlib.reload(reloaded_helper)
    harness.run(config, retrievers={"mine": reads_helper.search}, quiet=True)
    assert _first_of(tmp_path) == "b"
    with pytest.raises(harness.errors.HarnessError, match="module reloaded_helper .* changed on disk since it was"):
        harness.run(config, retrievers={"mine": took_helper.search}, quiet=True)


@pytest.mark.parametrize(("mode", "handed", "reloaded"), [("2 --full", "autoreloaded_plugin.search", True),
                                                        ("2 --full", "search", False),
                                                        ("2", "autoreloaded_plugin.search", False)])
def test_a_plugin_module_ipythons_autoreload_reloaded_is_keyed_by_the_file_as_it_is_now_where_it_ran_it_again(
        tmp_path, monkeypatch, mode, handed, reloaded):
    """%autoreload 2 --full runs the edited module again, as importlib.reload does: the function it holds now is
    keyed by the file as it is now (it was an error saying to restart the kernel). Still an error: the function
    imported before (`from m import search`), into which it put the new code, and IPython 9's default, which puts
    a changed function's code, a global's value, into the module's objects without running it again: neither is
    told apart from an object the edit left as it was."""
    interactiveshell = extra("IPython.core.interactiveshell", "test")  # %autoreload
    from traitlets.config import Config

    if mode.endswith("--full") and pytest.importorskip("IPython").version_info < (9,):
        pytest.skip("IPython before 9 has no --full: its %autoreload 2 reloads whole modules, as --full does")
    module = _reloadable(tmp_path, monkeypatch, "autoreloaded_plugin")
    source = tmp_path / "autoreloaded_plugin.py"
    # what a shell changes in the process, put back after: its __main__, its builtins, its folder
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    for name in ("__IPYTHON__", "display"):
        monkeypatch.setattr(builtins, name, None, raising=False)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.enabled = False
    shell = interactiveshell.InteractiveShell.instance(config=config)
    try:
        shell.run_line_magic("load_ext", "autoreload")
        shell.run_line_magic("autoreload", mode)
        shell.user_ns.update(harness=harness, autoreloaded_plugin=module, search=module.search, config={
            "k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]})
        for first, score in (("a", 2.0), ("b", 2.0), ("b", 3.0)):  # a function edited, then a global alone
            _edit(source, _RELOADED.format(first=first, score=score))
            ran = shell.run_cell(f"harness.run(config, retrievers={{'mine': {handed}}}, quiet=True)")
            if first == "a" or reloaded:
                ran.raise_error()
                assert _first_of(tmp_path) == first
                assert float(next(iter((tmp_path / "runs" / "ikat2023-test.raw.mine.run").open())).split()[4]) == score
            else:
                assert isinstance(ran.error_in_exec, harness.errors.HarnessError)
                assert "changed on disk since it was loaded" in str(ran.error_in_exec)
                break
    finally:
        shell.run_line_magic("autoreload", "0")
        interactiveshell.InteractiveShell.clear_instance()


def test_a_helper_module_not_imported_yet_when_the_plugin_was_loaded_may_change_on_disk(tmp_path, monkeypatch):
    """Its function imports it when it runs, and has not yet: the code that will run is the file's as it is then,
    which the key says; it was an error saying to restart the process."""
    from harness.paths import file_sha256

    (tmp_path / "lazy_plugin.py").write_text("def search(query, k):\n    if k < 0:\n        import lazy_helper\n"
                                             "    return [('a', 2.0)]\n", encoding="utf-8")
    (tmp_path / "lazy_helper.py").write_text("FIRST = 'a'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_plugin", raising=False)
    from lazy_plugin import search

    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": search}, quiet=True)
    (tmp_path / "lazy_helper.py").write_text("FIRST = 'b'\n", encoding="utf-8")
    harness.run(config, retrievers={"mine": search}, quiet=True)
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.mine.json").read_text())
    assert json.loads(record["hashes"]["plugins"])["retriever mine"]["helpers"]["lazy_helper"] == file_sha256(
        tmp_path / "lazy_helper.py")


def test_a_helper_module_imported_by_a_run_then_changed_on_disk_is_an_error_not_a_stale_run(tmp_path, monkeypatch):
    """Not imported when the plug-in was first keyed, imported by its first run: the code loaded is the file's
    then, and an edit after it is not what the next run would run (it ran, keyed by the edited file)."""
    (tmp_path / "lazy_plugin2.py").write_text("def search(query, k):\n    import lazy_helper2\n"
                                              "    return [(lazy_helper2.FIRST, 2.0)]\n", encoding="utf-8")
    (tmp_path / "lazy_helper2.py").write_text("FIRST = 'a'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lazy_plugin2", "lazy_helper2"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from lazy_plugin2 import search

    config = {"k": 20, "output": str(tmp_path / "runs"), "experiments": [_experiment(["raw"], ["mine"])]}
    harness.run(config, retrievers={"mine": search}, quiet=True)
    assert "lazy_helper2" in sys.modules
    (tmp_path / "lazy_helper2.py").write_text("FIRST = 'b'\n", encoding="utf-8")
    with pytest.raises(harness.errors.HarnessError, match="module lazy_helper2 .* changed on disk since it was loaded"):
        harness.run(config, retrievers={"mine": search}, quiet=True)


def test_a_plugin_package_installed_not_editable_is_keyed_by_its_helper_modules_too(tmp_path):
    """`pip install .` puts the package under site-packages, whose modules were not keyed: a helper edited and
    installed again reused the run. Its own package's are keyed now, as an editable install's are."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "shared-venv.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    (site / "keyedplug").mkdir()
    (site / "keyedplug" / "__init__.py").write_text("")
    (site / "keyedplug" / "retr.py").write_text("from keyedplug.textutil import FIRST\n\n\ndef search(query, k):\n"
                                                "    return [(FIRST, 2.0), ('c', 1.0)]\n")
    (site / "keyedplug-0.1.dist-info").mkdir()
    (site / "keyedplug-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: keyedplug\nVersion: 0.1\n")
    (site / "keyedplug-0.1.dist-info" / "entry_points.txt").write_text("[harness.retrievers]\n"
                                                                       "keyed = keyedplug.retr:search\n")
    config = _config(tmp_path, ["raw"], ["keyed"])
    run = tmp_path / "runs" / "ikat2023-test.raw.keyed.run"
    for first in ("a", "bb"):  # (another size: no stale .pyc)
        (site / "keyedplug" / "textutil.py").write_text(f"FIRST = {first!r}\n")
        done = _harness(venv / "bin" / "python", tmp_path, "run", str(config))
        assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
        assert run.read_text().split()[2] == first
    record = json.loads((tmp_path / "runs" / "ikat2023-test.raw.keyed.json").read_text())
    assert list(json.loads(record["hashes"]["plugins"])["retriever keyed"]["helpers"]) == ["keyedplug",
                                                                                          "keyedplug.textutil"]
    # a notebook: the entry point loaded, its helper edited (and reloaded): an error, not the old run reused
    notebook = ("import harness, importlib, pathlib, keyedplug.textutil\n"
                f"config = {{'k': 20, 'output': 'runs', 'experiments': [{_experiment(['raw'], ['keyed'])!r}]}}\n"
                "harness.run(config, quiet=True)\n"
                "pathlib.Path(keyedplug.textutil.__file__).write_text('FIRST = \"ccc\"\\n')\n"
                "importlib.reload(keyedplug.textutil)\n"
                "harness.run(config, quiet=True)\n")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", notebook], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and "HarnessError: module keyedplug.textutil" in done.stderr, done.stderr


def test_a_global_too_large_to_write_out_makes_a_notebook_function_never_resumed_and_is_not_keyed_from_a_file(
        tmp_path, monkeypatch):
    """A corpus in a global (100,000 documents as sets of words took 9 s to write out, each time it was keyed); in
    a file, it is taken as the file writes it, as a model the module loads is."""
    from harness.registry import NOT_RESUMED, object_origin

    search = "def search(query, k):\n    return [(DOCS[0][:5], 1.0)]\n"
    origin = object_origin(_notebook(f"DOCS = ['x' * 2_000_000]\n\n\n{search}").search)
    assert origin[NOT_RESUMED].startswith("it reads the global DOCS of more than 1,000,000 values and characters, "
                                          "too large to write out")
    assert object_origin(_notebook(f"DOCS = ['x' * 20]\n\n\n{search}").search)["globals"] == {"DOCS": repr(["x" * 20])}
    (tmp_path / "large_global.py").write_text(f"DOCS = ['x' * 2_000_000]\n\n\n{search}", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "large_global", raising=False)
    from large_global import search as from_file

    assert set(object_origin(from_file)) == {"module", "sha256"}


class _Wrapping:
    """A retriever object with a repr of its own, which does not show the function it holds (as PyTerrier's)."""

    def __init__(self, fn):
        self.steps = [fn]

    def __repr__(self):
        return "Wrapping()"


def test_an_object_holding_a_function_that_cannot_be_keyed_is_never_resumed():
    """A function it holds captured a model: no text tells two apart, so neither does the object's repr."""
    from harness.registry import NOT_RESUMED, object_origin

    model = object()
    origin = object_origin(_Wrapping(lambda frame: model and frame))
    assert origin[NOT_RESUMED].startswith("its function steps[0] cannot be keyed: it captured a value that is not "
                                          "plain")
    assert object_origin(_Wrapping(_notebook(_BY_GLOBAL).search))["functions"]["steps[0]"]["globals"] == {
        "FIRST": "'a'"}


def test_a_plugin_strategy_argument_typed_a_path_under_no_known_user_s_home_is_no_such_file():
    """`prefixed:~nouser/x`: left as a shell leaves it, said as a missing file (was Path.expanduser's
    RuntimeError, a traceback)."""
    with harness.queries.STRATEGIES.using({"prefixed": _prefixed}):
        with pytest.raises(ConfigError, match=re.escape(
                "experiments[0].strategies[0]: prefixed's path: no such file or folder '~no-such-user-h5/x.txt' "
                "(prefixed:path)")):
            parse_config(Path("x.yaml"), {"experiments": [_experiment(["prefixed:~no-such-user-h5/x.txt"], ["bm25"])]})
