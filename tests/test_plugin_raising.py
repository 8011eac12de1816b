"""A plug-in whose own code raises: its author sees the plug-in's frames of the traceback and
one line naming the plug-in and the error, not the harness's frames around them."""

from __future__ import annotations

import yaml

from harness.cli import main


def test_a_plugins_exception_shows_the_plugins_frames_and_names_the_plugin(tmp_path, monkeypatch, capsys):
    (tmp_path / "buggy_search.py").write_text("def search(query, k):\n    return _inner()\n\n\n"
                                              "def _inner():\n    raise ValueError('my bug')\n")
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"output": "runs", "experiments": [
        {"topics": "ikat2023:test", "strategies": ["raw"], "retrievers": ["python:buggy_search:search"],
         "measures": ["nDCG@3"]}]}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(config)]) == 2
    module = tmp_path / "buggy_search.py"
    assert capsys.readouterr().err.splitlines()[-6:] == [
        "Traceback of the plug-in's code (most recent call last):",
        f'  File "{module}", line 2, in search', "    return _inner()",
        f'  File "{module}", line 6, in _inner', "    raise ValueError('my bug')",
        "harness run: error: retriever 'python:buggy_search:search' (module buggy_search) raised ValueError: my bug"]
