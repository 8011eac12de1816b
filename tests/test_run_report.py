"""`harness run --report`: leaderboard.md marks significant differences against each section's
first run, and report.html holds, per family of comparable runs (the leaderboard's sections),
the Holm-corrected tests, Judged@10 and the scores by turn depth, self-contained, rendering in
headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from matplotlib import image as mpimg

from harness.evaluate import evaluate
from harness.report.compare import leaderboard
from harness.topics import load
from harness.trec import read_run
from tests.conftest import CHROMIUM, needs_chromium

pytestmark = [pytest.mark.slow, pytest.mark.java]
TAGS = ["pragmaticqa-val.raw.bm25", "pragmaticqa-val.all_history.bm25"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("run-report")
    config = root / "pqa.yaml"
    same = {"topics": "pragmaticqa:val", "retrievers": ["bm25"], "measures": ["nDCG@10", "R@20"]}
    judgments = load("pragmaticqa:val").qrels().judgments
    lines = [f"{qid} 0 {docid} {grade}\n" for qid in sorted(judgments) for docid, grade in judgments[qid].items()]
    for version, kept in (("v1", lines), ("v2", lines[1:])):  # one file name, two sets of judgments
        (root / version).mkdir()
        (root / version / "qrels.txt").write_text("".join(kept), encoding="utf-8")
    config.write_text(yaml.safe_dump({"k": 20, "experiments": [
        {"name": "pqa", "strategies": ["raw"], **same},
        {"name": "pqa-history", "strategies": ["all_history"], **same},  # comparable: tested against pqa's run
        {**same, "name": "pqa-rr", "strategies": ["hqe"], "measures": ["RR"]},  # other measures: its own section
        # the same judgments as pqa's from a file: one family; other judgments under the same file name: not
        {**same, "name": "pqa-v1", "strategies": ["hqe"], "qrels": str(root / "v1" / "qrels.txt"),
         "tag": "{benchmark}.{strategy}.{retriever}.v1"},
        {**same, "name": "pqa-v2", "strategies": ["hqe"], "qrels": str(root / "v2" / "qrels.txt"),
         "tag": "{benchmark}.{strategy}.{retriever}.v2"},
    ]}), encoding="utf-8")
    return root, config


@pytest.fixture(scope="module")
def report(finished):
    root, config = finished
    out = root / "runs"
    result = subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
                             "run", str(config), "--output", str(out), "--report"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == f"report written to {(out / 'report.html').resolve()}"
    return out


def _board(out: Path):
    qrels = load("pragmaticqa:val").qrels()
    evaluations = [evaluate(qrels, read_run(out / f"{tag}.run"), ["nDCG@10", "R@20"], 20) for tag in TAGS]
    return leaderboard(evaluations, [TAGS[0]], correction="holm")


def test_leaderboard_marks_significant_differences_against_the_first_run(report):
    board = _board(report)
    text = (report / "leaderboard.md").read_text(encoding="utf-8")
    assert f"| {TAGS[0]} (a) |" in text and "holm-corrected" in text
    marks = board.marks(TAGS[1], "nDCG@10")
    assert marks  # all_history differs from raw significantly on 1480 queries
    row = next(line for line in text.splitlines() if line.startswith(f"| {TAGS[1]} |"))
    assert marks in row


def test_runs_are_tested_in_the_same_families_in_both_outputs(report):
    text = (report / "leaderboard.md").read_text(encoding="utf-8")
    html = (report / "report.html").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [f"## pragmaticqa:val — retrieval ({name})" for name in ("pqa + pqa-history + pqa-v1", "pqa-rr",
                                                                               "pqa-v2")]
    assert "<h2>pqa + pqa-history + pqa-v1: pragmaticqa:val, retrieval</h2>" in html
    assert "<h2>pqa-rr: pragmaticqa:val, retrieval</h2>" in html and "<h2>pqa-v2: pragmaticqa:val, retrieval</h2>" in html
    legend = f"a = {TAGS[0]}"
    assert text.count(legend) == html.count(legend) == 1  # only the family with pqa's judgments and measures


def test_report_holds_tests_judged_and_depths_in_one_file(report):
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "http" not in html and "<script" not in html
    assert "<th>Judged@10</th>" in html and "holm-corrected" in html and "Score by turn depth" in html
    recorded = json.loads((report / f"{TAGS[0]}.json").read_text(encoding="utf-8"))
    assert recorded["config"]["experiment"] == "pqa"
    row = re.search(rf"<td class=[^>]+>{re.escape(TAGS[0])} \(a\)</td>(.*?)</tr>", html).group(1)
    judged = float(re.findall(r"<td>([\d.]+)</td>", row)[-1])
    qrels = load("pragmaticqa:val").qrels()
    expected = evaluate(qrels, read_run(report / f"{TAGS[0]}.run"), ["Judged@10"], 20).means["Judged@10"]
    assert 0 < judged <= 1 and abs(judged - expected) < 5e-5  # as `harness eval` scores the run file


@pytest.mark.browser
@needs_chromium
def test_report_renders_in_headless_chromium(report, tmp_path):
    screenshot = tmp_path / "report.png"
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={screenshot}", "--window-size=1200,2400",
                    (report / "report.html").resolve().as_uri()], check=True, capture_output=True, timeout=120)
    pixels = mpimg.imread(screenshot)[..., :3]
    assert pixels.shape[:2] == (2400, 1200) and pixels.std() > 0.05
    grey = np.array([0x88, 0x88, 0x88]) / 255  # the baseline's bars and curve
    assert np.count_nonzero(np.all(np.abs(pixels - grey) < 0.03, axis=-1)) > 1000
