"""A plug-in whose own code raises: its author sees the plug-in's frames of the traceback and
one line naming the plug-in and the error, not the harness's frames around them."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
import yaml

import harness
from harness.cli import main
from tests.conftest import child_env, extra


# what the plug-in was answering when it raised, on the error's line
ASKED = ", answering query 9-1_1 ('Can you help me find a diet for myself?')"


def _config(folder: Path, retriever: str) -> Path:
    """A config running ikat2023:test with `retriever`."""
    config = folder / "mine.yaml"
    config.write_text(yaml.safe_dump({"output": "runs", "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": [retriever], "measures": ["nDCG@3"]}]}),
        encoding="utf-8")
    return config


def _run_failing(tmp_path, monkeypatch, module: str, code: str) -> int:
    """`harness run` of ikat2023:test with `module:search` (`code`) as its retriever. Each test
    has its own module: a module once imported, or noted as a plug-in's, stays so."""
    (tmp_path / f"{module}.py").write_text(code)
    config = _config(tmp_path, f"python:{module}:search")
    monkeypatch.chdir(tmp_path)
    return main(["run", str(config)])


def test_a_plugin_package_named_like_a_standard_module_gets_its_own_frames_too(tmp_path):
    """Its frames are found by where its files lie, not by its name (`code` is also Python's). In
    a process of its own: the package shadows the standard `code` module for as long as it lives."""
    package = tmp_path / "code"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "search.py").write_text("def search(query, k):\n    return _inner()\n\n\n"
                                       "def _inner():\n    raise ValueError('my bug')\n")
    config = _config(tmp_path, "python:code.search:search")
    environment = child_env()
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(config)], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    module = package / "search.py"
    assert done.stderr.splitlines()[-6:] == [
        "Traceback of the plug-in's code (most recent call last):",
        f'  File "{module}", line 2, in search', "    return _inner()",
        f'  File "{module}", line 6, in _inner', "    raise ValueError('my bug')",
        "harness run: error: retriever 'python:code.search:search' (module code.search) raised ValueError: my bug"
        + ASKED]


def test_a_plugins_exception_shows_the_plugins_frames_and_names_the_plugin(tmp_path, monkeypatch, capsys):
    code = "def search(query, k):\n    return _inner()\n\n\ndef _inner():\n    raise ValueError('my bug')\n"
    assert _run_failing(tmp_path, monkeypatch, "buggy_search", code) == 2
    module = tmp_path / "buggy_search.py"
    assert capsys.readouterr().err.splitlines()[-6:] == [
        "Traceback of the plug-in's code (most recent call last):",
        f'  File "{module}", line 2, in search', "    return _inner()",
        f'  File "{module}", line 6, in _inner', "    raise ValueError('my bug')",
        "harness run: error: retriever 'python:buggy_search:search' (module buggy_search) raised ValueError: my bug"
        + ASKED]


# the plug-in's module, its code, and what `search` is made of
_CALLABLES = {
    "buggy_partial": "def _search(query, k, depth):\n    return _inner()\n\n\n"
                         "import functools\nsearch = functools.partial(_search, depth=3)\n",
    "buggy_object": "class _Search:\n    def __call__(self, query, k):\n        return _inner()\n\n\n"
                       "search = _Search()\n",
    "buggy_pyterrier": "def _rank(frame):\n    return _inner()\n\n\n"
                             "import pyterrier\nsearch = pyterrier.apply.generic(_rank)\n",
}


@pytest.mark.parametrize("module", list(_CALLABLES))
def test_a_plugin_that_is_not_a_plain_function_gets_its_own_frames_too(tmp_path, monkeypatch, capsys, module):
    """A functools.partial, a callable object, a PyTerrier transformer. Its frames are found by
    its code's module: a partial's function's, an object's class's, PyTerrier's (a library
    between the harness and the plug-in's function is the plug-in's)."""
    if module == "buggy_pyterrier":
        extra("pyterrier", "test")
    code = _CALLABLES[module] + "\n\ndef _inner():\n    raise ValueError('my bug')\n"
    assert _run_failing(tmp_path, monkeypatch, module, code) == 2
    err = capsys.readouterr().err
    asked = ASKED.replace(", answering ", ", answering a batch of 64 queries, the first ") \
        if module == "buggy_pyterrier" else ASKED  # (a transformer is handed the queries a batch at a time)
    assert err.splitlines()[-1] == (f"harness run: error: retriever 'python:{module}:search' "
                                    f"(module {module}) raised ValueError: my bug{asked}")
    own = err[err.index("Traceback of the plug-in's code (most recent call last):"):]
    assert f'File "{tmp_path / module}.py", line ' in own
    assert f'File "{Path(harness.__file__).parent}{os.sep}' not in own  # no frame of the harness's own code


def test_a_plugin_strategys_exception_names_the_turn_it_was_building_the_query_of(tmp_path, monkeypatch, capsys):
    (tmp_path / "buggy_strategy.py").write_text(
        "def rewrite(conversation, turn_index):\n    raise ValueError('my bug')\n")
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"output": "runs", "experiments": [
        {"topics": "ikat2023:test", "strategies": ["python:buggy_strategy:rewrite"], "retrievers": ["bm25"],
         "measures": ["nDCG@3"]}]}),
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(config)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "harness run: error: query strategy 'python:buggy_strategy:rewrite' (module buggy_strategy) raised "
        "ValueError: my bug, building the query of turn 9-1_1")


def test_a_plugins_exception_in_the_python_api_is_noted_with_the_query_too():
    """Python prints an exception's notes under its traceback: a notebook shows the query too."""
    from harness.retrieve import RETRIEVERS, SearchQuery, build

    def search(query, k):
        yield ("d1", 1.0)
        raise ValueError("my bug")

    with RETRIEVERS.using({"mine": search}):
        with pytest.raises(ValueError, match="my bug") as raised:
            build("mine").search([SearchQuery("q1", "a"), SearchQuery("q2", "a longer query " * 5)], k=10)
    assert raised.value.__notes__ == ["answering query q1 ('a')"]


def _three_students(tmp_path, monkeypatch, student: str = "student") -> Path:
    """A config of three students' retrievers on ikat2023:test, the second's plug-in raising;
    their modules `{student}_ok` and `{student}_bug` (a module imported from another test's folder
    is not read again: its runs are never resumed)."""
    (tmp_path / f"{student}_ok.py").write_text("def search(query, k):\n    return [('d1', 1.0)]\n")
    (tmp_path / f"{student}_bug.py").write_text("def search(query, k):\n    raise ValueError('my bug')\n")
    config = tmp_path / "class.yaml"
    config.write_text(yaml.safe_dump({"output": "runs", "tag": "{retriever}", "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "measures": ["nDCG@3"], "retrievers": [
            {"name": f"python:{student}_ok:search", "label": "ann"},
            {"name": f"python:{student}_bug:search", "label": "bob"},
            {"name": f"python:{student}_ok:search", "label": "cy"}]}]}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return config


def test_keep_going_says_a_failed_run_in_one_line_makes_the_others_and_exits_1(tmp_path, monkeypatch, capsys):
    """One student's plug-in with a bug stopped the config: the others' runs were not made (W16 #12)."""
    config = _three_students(tmp_path, monkeypatch)
    assert main(["run", str(config), "--keep-going"]) == 1
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if "bob" in line or "Traceback" in line]
    assert said == [f"harness run: error: bob: retriever 'python:student_bug:search' (module student_bug) raised "
                    f"ValueError: my bug{ASKED}",
                    "harness run: 1 run failed, said above (bob); the leaderboard lists the finished ones; the same "
                    f"command again redoes the failed runs alone, and `harness run {config} --only bob` shows a "
                    "plug-in's traceback"]
    assert [line.split(" |")[0] for line in out.splitlines() if line.startswith(("| ann", "| bob", "| cy"))] == [
        "| ann (a)", "| cy"]
    assert sorted(path.name for path in (tmp_path / "runs").glob("*.run")) == ["ann.run", "cy.run"]


def test_keep_going_again_redoes_the_failed_runs_alone(tmp_path, monkeypatch, capsys):
    config = _three_students(tmp_path, monkeypatch)
    assert main(["run", str(config), "--keep-going"]) == 1
    capsys.readouterr()
    assert main(["run", str(config), "--keep-going"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err if line.startswith(("ann:", "cy:"))] == ["ann", "cy"]
    assert all("finished" in line for line in err if line.startswith(("ann:", "cy:")))
    assert sum(line.startswith("harness run: error: bob: ") for line in err) == 1


def test_keep_going_with_every_run_failing_says_none_is_finished(tmp_path, monkeypatch, capsys):
    config = _three_students(tmp_path, monkeypatch)
    config.write_text(config.read_text().replace("student_ok", "student_bug"), encoding="utf-8")
    assert main(["run", str(config), "--keep-going"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert "failed, said above (ann, bob, cy); no run is finished: the leaderboard is empty;" in last


def _api_run_keep_going(config, **objects) -> tuple[harness.Frames, list[str]]:
    """harness.run(config, keep_going=True), and the warnings it gave (UserWarning, as it warns: not a
    ResourceWarning or DeprecationWarning that garbage collection or a library gives meanwhile)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames = harness.run(config, keep_going=True, quiet=True, **objects)
    return frames, [str(warning.message) for warning in caught if warning.category is UserWarning]


def test_run_keep_going_returns_the_finished_runs_and_warns_the_failed_one(tmp_path, monkeypatch):
    """The notebook API lost the whole call, the finished runs' frames too, to one student's bug."""
    config = _three_students(tmp_path, monkeypatch, "api_student")
    (per_query, aggregate), said = _api_run_keep_going(config)
    line = f"retriever 'python:api_student_bug:search' (module api_student_bug) raised ValueError: my bug{ASKED}"
    assert list(aggregate["run"]) == ["ann", "cy"] and set(per_query["run"]) == {"ann", "cy"}
    assert aggregate.attrs["failed"] == {"bob": line}
    assert said[0] == f"bob: {line}"
    assert said[-1] == ("1 run failed, said above (bob); the frames hold the finished ones; the same call again "
                        "redoes the failed runs alone, and `harness.run(config, only=['bob'])` shows a plug-in's "
                        "traceback")
    assert aggregate.attrs["notes"] == said
    assert sorted(path.name for path in (tmp_path / "runs").glob("*.run")) == ["ann.run", "cy.run"]


def test_run_keep_going_again_redoes_the_failed_runs_alone(tmp_path, monkeypatch, capsys):
    config = _three_students(tmp_path, monkeypatch, "api_again")
    _api_run_keep_going(config)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        per_query, aggregate = harness.run(config, keep_going=True)  # its progress on stderr
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err if line.startswith(("ann:", "cy:"))] == ["ann", "cy"]
    assert all("finished" in line for line in err if line.startswith(("ann:", "cy:")))
    assert list(aggregate["run"]) == ["ann", "cy"] and list(aggregate.attrs["failed"]) == ["bob"]


def _retrievers_config(retrievers: dict[str, str], output: str = "runs", strategy: str = "raw") -> dict:
    """A config running ikat2023:test with each retriever by its name under its label."""
    return {"output": output, "tag": "{retriever}", "experiments": [
        {"topics": "ikat2023:test", "strategies": [strategy], "measures": ["nDCG@3"],
         "retrievers": [{"name": name, "label": label} for name, label in retrievers.items()]}]}


def _module(folder: Path, monkeypatch, name: str, code: str):
    """The module `name` of `code`, written into `folder` and imported from there."""
    (folder / f"{name}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    return importlib.import_module(name)


def test_run_keep_going_says_a_failing_function_handed_over_in_one_line(tmp_path, monkeypatch):
    """A notebook's own search function raising was taken for the harness's fault: keep_going
    raised it and lost the other runs."""
    monkeypatch.chdir(tmp_path)

    def fine(query, k):
        return [("d1", 1.0)]

    def buggy(query, k):
        raise ValueError("my bug")

    config = _retrievers_config({"fine": "ann", "buggy": "bob"})
    (_, aggregate), said = _api_run_keep_going(config, retrievers={"fine": fine, "buggy": buggy})
    assert list(aggregate["run"]) == ["ann"]
    assert said[0] == (f"bob: code handed to the Python API (module tests.test_plugin_raising) raised ValueError: "
                       f"my bug{ASKED}")
    with pytest.raises(ValueError, match="my bug"):  # without keep_going: raised, as before
        harness.run(config, retrievers={"fine": fine, "buggy": buggy}, quiet=True)


def test_run_keep_going_names_each_module_of_the_code_handed_over(tmp_path, monkeypatch):
    """Code handed over from handed_pkg/sub/mod.py was named by its top-level package, `(module
    handed_pkg)`, and of two modules of one package handed over, the last's alone (R28 F10)."""
    for name, code in {"__init__": "", "sub/__init__": "", "other": "def fine(query, k):\n    return [('d1', 1.0)]\n",
                       "sub/mod": "def buggy(query, k):\n    raise ValueError('my bug')\n"}.items():
        (tmp_path / "handed_pkg" / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "handed_pkg" / f"{name}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    other, mod = (importlib.import_module(f"handed_pkg.{name}") for name in ("other", "sub.mod"))
    monkeypatch.chdir(tmp_path)
    (_, aggregate), _ = _api_run_keep_going(_retrievers_config({"fine": "ann", "buggy": "bob"}),
                                            retrievers={"fine": other.fine, "buggy": mod.buggy})
    assert aggregate.attrs["failed"] == {"bob": "code handed to the Python API (modules handed_pkg.other, "
                                                f"handed_pkg.sub.mod) raised ValueError: my bug{ASKED}"}


def test_run_keep_going_says_a_python_plugin_in_one_line_after_a_call_handing_over_its_modules_code(
        tmp_path, monkeypatch):
    """A call handing over one function of a module while naming another of it by `python:` forgot,
    as it ended, the `python:` plug-in it loaded: the next call's failure of that plug-in was the
    harness's own fault, raised with its traceback (R28 F3)."""
    module = _module(tmp_path, monkeypatch, "handed_beside", "def search(query, k):\n    raise ValueError('my bug')\n"
                     "\n\ndef other(query, k):\n    return [('d1', 1.0)]\n")
    monkeypatch.chdir(tmp_path)
    _api_run_keep_going(_retrievers_config({"other": "o", "python:handed_beside:search": "s"}),
                        retrievers={"other": module.other})
    (_, aggregate), _ = _api_run_keep_going(_retrievers_config({"python:handed_beside:search": "s"}))
    assert aggregate.attrs["failed"] == {
        "s": f"retriever 'python:handed_beside:search' (module handed_beside) raised ValueError: my bug{ASKED}"}


def test_run_keep_going_says_a_failure_in_one_line_while_another_threads_call_hands_over_the_same_module(
        tmp_path, monkeypatch):
    """Two calls in threads handing over code of one module: the first to end took the module's
    code back from the other, whose failure then was the harness's own fault, raised (R28 F4)."""
    module = _module(tmp_path, monkeypatch, "handed_threads", (
        "import threading\n"
        "a_running, b_running, a_done = threading.Event(), threading.Event(), threading.Event()\n\n\n"
        "def fine(query, k):\n    a_running.set()\n    b_running.wait(60)\n    return [('d1', 1.0)]\n\n\n"
        "def buggy(query, k):\n    b_running.set()\n    a_done.wait(60)\n    raise ValueError('my bug')\n"))
    monkeypatch.chdir(tmp_path)
    failed: dict[str, object] = {}

    def call(name: str, **options) -> None:
        try:
            failed[name] = harness.run(_retrievers_config({name: name}, output=f"runs_{name}"), quiet=True,
                                       retrievers={name: getattr(module, name)}, **options).aggregate.attrs["failed"]
        except Exception as error:  # noqa: BLE001 - what the test is about
            failed[name] = f"raised {type(error).__name__}: {error}"
        finally:
            module.a_done.set()  # (its own run over: B's may fail; a timeout otherwise)

    a = threading.Thread(target=call, args=("fine",))
    b = threading.Thread(target=call, args=("buggy",), kwargs={"keep_going": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a.start()
        assert module.a_running.wait(60)  # A's objects are handed over first, B's while A still runs
        b.start()
        for thread in (a, b):
            thread.join(120)
    assert not a.is_alive() and not b.is_alive()
    assert failed == {"fine": {}, "buggy": {
        "buggy": f"code handed to the Python API (module handed_threads) raised ValueError: my bug{ASKED}"}}


def test_run_keep_going_says_the_call_that_shows_a_traceback_with_the_objects_and_output_it_was_given(
        tmp_path, monkeypatch):
    """The hint `harness.run(config, only=['bob'])` left out the retrievers=, strategies= and
    output= the call was given: that call raised `unknown retriever 'buggy'` (R28 F5)."""
    monkeypatch.chdir(tmp_path)

    def buggy(query, k):
        raise ValueError("my bug")

    def plain(conversation, turn_index, arg=None):
        return "diet"

    config = _retrievers_config({"buggy": "bob"}, strategy="plain")
    given = {"retrievers": {"buggy": buggy}, "strategies": {"plain": plain}, "output": tmp_path / "elsewhere"}
    _, said = _api_run_keep_going(config, **given)
    assert said[-1].endswith("and `harness.run(config, retrievers=..., strategies=..., output=..., only=['bob'])` "
                             "shows a plug-in's traceback")
    with pytest.raises(ValueError, match="my bug"):  # the call it names
        harness.run(config, **given, only=["bob"], quiet=True)
