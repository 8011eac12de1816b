"""Judge plug-ins (`--judge python:module:attr`, entry points of `harness.judges`): the members
of the `Judge` protocol the harness uses are checked when the plug-in is made, and its labels
are checked against its scale before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.judge.base import read_provenance
from harness.judge.model import Judgment
from harness.judge.scales import RELEVANCE_0_4

QIDS = ("0_1", "0_2")  # iKAT 2024 turns (the topics ship with the harness)


class Lengths:
    """labels a passage 2 when it is long, else 0; leaves the counts out of its provenance"""

    name = "lengths"
    scale = RELEVANCE_0_4

    def __init__(self, label: int = 2) -> None:
        self.label = label

    def judge(self, items, progress=False):
        return [Judgment(item.key, self.label, "ok", "", False) for item in items]

    def provenance(self):
        return {"judge": self.name, "scale": self.scale.name}


class NoProvenance:
    """a judge without provenance()"""

    name = "bare"
    scale = RELEVANCE_0_4

    def judge(self, items, progress=False):
        return []


def _judge(tmp_path: Path, spec: str) -> int:
    run, corpus = tmp_path / "a.run", tmp_path / "corpus.jsonl"
    run.write_text("".join(f"{q} Q0 d{q} 1 1.0 mine\n" for q in QIDS))
    corpus.write_text("".join(json.dumps({"id": f"d{q}", "contents": "text"}) + "\n" for q in QIDS))
    return main(["judge", str(run), "--topics", "ikat2024", "--corpus", str(corpus),
                 "--output", str(tmp_path / "out.qrels"), "--judge", spec])


def test_a_plugin_lacking_a_judge_member_is_one_line_naming_it_and_the_member(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:NoProvenance") == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert "'python:tests.test_judge_plugins:NoProvenance' (NoProvenance) has no provenance()" in error
    assert not (tmp_path / "out.qrels").exists()


def test_a_plugin_label_off_its_scale_is_refused_before_the_qrels_is_written(tmp_path, capsys):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Lengths:7") == 2
    assert "judge 'lengths' gave label 7, which is not on its scale relevance-0-4 (0 to 4)" in capsys.readouterr().err
    assert not (tmp_path / "out.qrels").exists()


def test_a_plugin_provenance_without_counts_gets_the_harness_counts(tmp_path):
    assert _judge(tmp_path, "python:tests.test_judge_plugins:Lengths:2") == 0
    assert (tmp_path / "out.qrels").read_text() == "".join(f"{q} 0 d{q} 2\n" for q in QIDS)
    assert read_provenance(tmp_path / "out.qrels")["counts"]["ok"] == len(QIDS)
