"""Which file a `python:` plug-in's module, or an entry point's, is loaded from: the one the
folder harness runs in finds, not a same-named module another folder's config loaded earlier
in the process, nor one beside the config that the current folder's hides, nor another
package's file of the same name in one `--target` folder.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

import harness
from harness.errors import HarnessError


def _config(folder: Path, retriever: str) -> dict:
    return {"k": 5, "output": str(folder / "runs"),
            "experiments": [{"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": [retriever],
                             "measures": ["nDCG@5"]}]}


def _graded_in_turn(tmp_path: Path, monkeypatch, files: dict[str, dict[str, str]], module: str) -> None:
    """A grading loop: each student's folder holding `files`, made the current folder, and harness.run there
    of a config naming `python:{module}:search` (`{student}` filled in); the first is graded, the second
    must be refused with the message of the `pytest.raises` around this call. Their modules are then
    forgotten, as a process of their own would."""
    try:
        for turn, (student, sources) in enumerate(files.items()):
            folder = tmp_path / student
            folder.mkdir()
            for name, source in sources.items():
                (folder / name).write_text(source, encoding="utf-8")
            monkeypatch.chdir(folder)
            harness.run(_config(folder, f"python:{module.format(student=student)}:search"), quiet=True)
            assert not turn, "the second student's run was made"
    finally:
        for name in {name.removesuffix(".py") for sources in files.values() for name in sources}:
            sys.modules.pop(name, None)


def test_a_python_module_imported_from_another_folder_earlier_in_the_process_is_refused_not_run(tmp_path,
                                                                                                  monkeypatch):
    """A grading loop, harness.run in each student's folder: bob's graded.py, not alice's already imported."""
    with pytest.raises(HarnessError, match=rf"retriever 'python:graded:search': module graded is "
                                           rf"{tmp_path / 'alice' / 'graded.py'}, imported earlier in this process, "
                                           rf"but from here .* it is {tmp_path / 'bob' / 'graded.py'}, another file"):
        _graded_in_turn(tmp_path, monkeypatch, {student: {
            "graded.py": f"def search(query, k):\n    return [({doc!r}, 1.0)]\n"}
            for student, doc in (("alice", "a"), ("bob", "b"))}, "graded")


def test_a_helper_module_imported_from_another_folder_earlier_in_the_process_is_refused_not_run(tmp_path,
                                                                                                 monkeypatch):
    """Modules of their own names, each importing its own folder's `scoring`: bob's is not alice's."""
    with pytest.raises(HarnessError, match=rf"retriever 'python:graded_bob:search': module graded_bob imports "
                                           rf"scoring, which is {tmp_path / 'alice' / 'scoring.py'}, imported "
                                           rf"earlier in this process, but .* it is "
                                           rf"{tmp_path / 'bob' / 'scoring.py'}, another file"):
        _graded_in_turn(tmp_path, monkeypatch, {student: {
            f"graded_{student}.py": "from scoring import doc\n\n\ndef search(query, k):\n    return [(doc, 1.0)]\n",
            "scoring.py": f"doc = {doc!r}\n"} for student, doc in (("alice", "a"), ("bob", "b"))}, "graded_{student}")


def test_a_python_module_beside_the_config_and_another_in_the_current_folder_is_refused_naming_both(tmp_path,
                                                                                                     monkeypatch):
    """`harness run students/bob/lab.yaml` from the TA's folder, which has its own marked.py: which was meant is
    not known, so neither runs. The same bytes in both places are the same code: no error."""
    from harness.runner.config import ConfigError, parse_config

    bob = tmp_path / "students" / "bob"
    bob.mkdir(parents=True)
    (tmp_path / "marked.py").write_text("def search(query, k):\n    return [('a', 1.0)]\n", encoding="utf-8")
    (bob / "marked.py").write_text("def search(query, k):\n    return [('b', 1.0)]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "marked", raising=False)
    config = {"experiments": _config(tmp_path, "python:marked:search")["experiments"]}
    try:
        with pytest.raises(ConfigError, match=rf"lab.yaml: experiments\[0\].retrievers\[0\]: python:marked:search: "
                                              rf"module marked is {tmp_path / 'marked.py'} \(found from the folder "
                                              rf"harness runs in, {tmp_path}, or PYTHONPATH\), and another marked is "
                                              rf"beside the config, {bob / 'marked.py'}: run harness in the config's "
                                              r"folder to use that one, or rename one of them$"):
            parse_config(bob / "lab.yaml", config)
        (bob / "marked.py").write_bytes((tmp_path / "marked.py").read_bytes())
        parse_config(bob / "lab.yaml", config)
    finally:
        sys.modules.pop("marked", None)


def _package(folder: Path, student: str, doc: str) -> Path:
    """A course template's package as a student fills it in: module lab_plugin, its own name and entry point."""
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{student}-lab"\nversion = "0.1.0"\n\n[tool.setuptools]\npy-modules = ["lab_plugin"]\n\n'
        f'[project.entry-points."harness.retrievers"]\n{student} = "lab_plugin:search"\n', encoding="utf-8")
    (folder / "lab_plugin.py").write_text(f"def search(query, k):\n    return [({doc!r}, 1.0)]\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_an_entry_point_whose_module_file_another_package_installed_is_refused_naming_both(tmp_path):
    """`pip install --target DIR` of two packages with a module of one name keeps the first's file: the second's
    entry point would run the first's code under its own package's name."""
    import subprocess

    target = tmp_path / "course"
    for student, doc in (("alice", "a"), ("bob", "b")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(target), str(_package(tmp_path / student, student, doc))],
                       check=True, timeout=300, capture_output=True)
    env = {**os.environ, "PYTHONPATH": f"{Path(harness.__file__).parents[1]}{os.pathsep}{target}"}
    listed = subprocess.run([sys.executable, "-m", "harness.cli", "components", "retriever"], env=env,
                            capture_output=True, text=True, timeout=120)
    lines = {line.split()[0]: line for line in listed.stdout.splitlines() if line.startswith("  ") and line[2] != " "}
    assert lines["alice"].rstrip().endswith("[alice-lab]")
    assert re.fullmatch(rf"  bob +BROKEN: the entry point lab_plugin:search of bob-lab 0\.1\.0 "
                        rf"would run {re.escape(str(target / 'lab_plugin.py'))}, which is alice-lab 0\.1\.0's, not the "
                        r"file bob-lab 0\.1\.0 installed \(their RECORDs say so\): two packages with a module of one "
                        r"name were installed into one folder \(pip install --target\): install each into a folder "
                        r"of its own", lines["bob"])
