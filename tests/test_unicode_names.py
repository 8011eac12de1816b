"""A file named in one Unicode form and kept on disk in another (an archive made on macOS keeps
decomposed, NFD, names; Linux does not normalise them, so `café.run` typed, NFC, finds nothing):
the 'not found' of a run, qrels, config, topics or corpus file names the one file it would be."""

from __future__ import annotations

import shutil
from pathlib import Path
from unicodedata import normalize

import pytest
import yaml

from harness.cli import main
from harness.paths import data_root
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

TOPICS = data_root() / "ikat" / "2023" / "data" / "2023_test_topics.json"
CONFIG = {"k": 10, "output": "runs", "experiments": [
    {"topics": "pragmaticqa:val", "strategies": ["raw"], "retrievers": ["bm25"], "measures": ["RR"]}]}


def _config(**keys: str) -> bytes:
    experiment = {**CONFIG["experiments"][0], **keys}
    return yaml.safe_dump({**CONFIG, "experiments": [experiment]}, allow_unicode=True).encode()


def _decomposed(folder: Path, name: str, data: bytes) -> None:
    """`name` in the decomposed form (NFD), as macOS keeps it, holding `data` (c.yaml, ASCII, has one form)."""
    path = folder / normalize("NFD", name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.mark.parametrize("on_disk, argv, said", [
    ({"équipe/café.run": CAST2021_DOC_RUNS[0]}, ["eval", "--qrels", str(CAST2021_QRELS), "équipe/café.run"],
     "harness eval: error: équipe/café.run: no such file; did you mean 'e\\u0301quipe/cafe\\u0301.run'"),
    ({"qrels-é.txt": CAST2021_QRELS}, ["eval", "--qrels", "qrels-é.txt", str(CAST2021_DOC_RUNS[0])],
     "harness eval: error: qrels-é.txt: no such file; did you mean 'qrels-e\\u0301.txt'"),
    ({"café.yaml": _config()}, ["run", "café.yaml", "--dry-run"],
     "harness run: error: café.yaml: no such config file; did you mean 'cafe\\u0301.yaml'"),
    ({"qrels-é.txt": CAST2021_QRELS, "c.yaml": _config(qrels="qrels-é.txt")}, ["run", "c.yaml", "--dry-run"],
     "harness run: error: c.yaml: experiments[0].qrels: no such file: qrels-é.txt; did you mean 'qrels-e\\u0301.txt'"),
    ({"corpus-é.jsonl": b'{"id": "d1", "contents": "x"}\n', "c.yaml": _config(corpus="corpus-é.jsonl")},
     ["run", "c.yaml", "--dry-run"], "harness run: error: c.yaml: experiments[0].corpus: corpus file corpus-é.jsonl "
                                     "does not exist; did you mean 'corpus-e\\u0301.jsonl'"),
    ({"topics-é.json": TOPICS}, ["ikat", "validate", "--topics", "topics-é.json", "run.json"],
     "harness ikat validate: error: --topics topics-é.json: no such file; did you mean 'topics-e\\u0301.json'"),
], ids=["run", "qrels", "config", "config's qrels", "config's corpus", "topics"])
def test_a_name_not_found_that_is_a_file_s_in_another_unicode_form_names_that_file(tmp_path, monkeypatch, capsys,
                                                                                 on_disk, argv, said):
    for name, source in on_disk.items():
        _decomposed(tmp_path, name, source if isinstance(source, bytes) else source.read_bytes())
    monkeypatch.chdir(tmp_path)
    assert main([normalize("NFC", word) for word in argv]) == 2
    assert capsys.readouterr().err.startswith(f"{said} (the same name in another Unicode form)?")


def test_a_name_two_files_share_in_other_unicode_forms_is_only_not_found(tmp_path, monkeypatch, capsys):
    """ệ decomposes two ways short of NFD: which of two such files was meant is not known."""
    for name in ("e\u0323\u0302.run", "\u1eb9\u0302.run"):  # e, dot below, circumflex; ẹ, circumflex
        shutil.copy(CAST2021_DOC_RUNS[0], tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--qrels", str(CAST2021_QRELS), "\u1ec7.run"]) == 2
    assert capsys.readouterr().err == "harness eval: error: \u1ec7.run: no such file\n"
