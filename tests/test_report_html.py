"""The HTML report is one self-contained file, and it renders in a real headless browser."""

from __future__ import annotations

import base64
import io
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from harness.evaluate import evaluate
from harness.evaluate.presets import PRESETS
from harness.paths import data_root
from harness.report import breakdown as bd
from harness.report.cli_arena import build_arena
from harness.report.compare import leaderboard
from harness.report.formats import write_report
from harness.report.model import Report
from harness.trec import read_qrels, read_run
from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS, CHROMIUM, extra, needs_chromium

BAR_BLUE = np.array([0x1F, 0x77, 0xB4]) / 255  # matplotlib C0: the best run's bars


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    preset = PRESETS.get("cast2021")
    qrels = read_qrels(CAST2021_QRELS)
    evaluations = [evaluate(qrels, read_run(p), list(preset.measures), preset.depth) for p in CAST2021_DOC_RUNS]
    board = leaderboard(evaluations, ["org_manual_bm25"])
    scores = board.scores
    report = Report(board, title="CAsT 2021 organiser runs")
    report.breakdowns = [bd.breakdown(scores, m, bd.depths(scores.qids), bd.DEPTH) for m in board.measures]
    report.breakdowns.append(bd.breakdown(scores, "nDCG@3", bd.conversations(scores.qids), bd.CONVERSATION))
    crsarena = data_root() / "crsarena"
    report.arena = build_arena([crsarena / "votes_open.csv", crsarena / "votes_closed.csv"],
                               [crsarena / "crs_arena_dial_open.json"], seed=42, resamples=100)
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(report, "html", path)
    return path


@pytest.mark.slow
def test_report_is_self_contained(report_file):
    html = report_file.read_text(encoding="utf-8")
    assert "http" not in html and "<script" not in html and "<link" not in html
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(sources) == 4  # mean bars, depth curves, per-conversation heat map, arena
    for source in sources:
        assert source.startswith("data:image/png;base64,")
        pixels = mpimg.imread(io.BytesIO(base64.b64decode(source.split(",", 1)[1])), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100


@pytest.mark.slow
def test_report_holds_leaderboard_legend_and_arena(report_file):
    html = report_file.read_text(encoding="utf-8")
    assert "<td class=l>org_manual_ance</td><td>0.5300▲a</td>" in html
    assert "two-sided paired-t test on 158 queries, p-values holm-corrected" in html
    assert "<td class=l>chatgpt_redial</td><td>1102</td>" in html


def test_heat_map_keeps_room_for_long_run_names_beside_few_conversations():
    """Two conversations and run names of 50 characters: the cells are drawn (matplotlib
    collapsed them to nothing, with a UserWarning, when the figure was sized by the groups alone)."""
    import warnings

    from harness.report.html import heat_map

    runs = ["a_very_long_run_name_that_goes_on_and_on_for_ever", "another_very_long_run_name_that_goes_on"]
    means = {run: {"1": 0.5, "2": 0.2 * i} for i, run in enumerate(runs)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        image = _images(heat_map(bd.Breakdown(bd.CONVERSATION, "nDCG@10", ["1", "2"], {"1": 1, "2": 1}, means, 0)))[0]
    assert image.shape[1] > 2 * image.shape[0]


@needs_chromium
@pytest.mark.browser
@pytest.mark.slow
def test_report_renders_in_headless_chromium(report_file, tmp_path):
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={screenshot}", "--window-size=1200,2000",
         report_file.resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    pixels = mpimg.imread(screenshot)[..., :3]
    assert pixels.shape[:2] == (2000, 1200)
    non_white = np.mean(np.any(pixels < 0.95, axis=-1))
    assert non_white > 0.05 and pixels.std() > 0.05  # not a blank page
    bar_pixels = np.count_nonzero(np.all(np.abs(pixels - BAR_BLUE) < 0.03, axis=-1))
    assert bar_pixels > 10_000  # the embedded bar chart was decoded and drawn


def _images(html: str) -> list[np.ndarray]:
    return [mpimg.imread(io.BytesIO(base64.b64decode(data)), format="png")[..., :3]
            for data in re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', html)]


def test_each_run_keeps_one_colour_in_every_plot(report_file):
    """Mean bars and turn-depth curves draw a run in the same colour; the baseline is grey."""
    from matplotlib.colors import to_rgb

    from harness.report.html import BASELINE_COLOURS, RUN_COLOURS

    bars, curves = _images(report_file.read_text(encoding="utf-8"))[:2]
    others = len(CAST2021_DOC_RUNS) - 1
    for colour in [BASELINE_COLOURS[0], *RUN_COLOURS[:others]]:
        rgb = np.array(to_rgb(colour))
        for image in (bars, curves):
            assert np.count_nonzero(np.all(np.abs(image - rgb) < 0.02, axis=-1)) > 50, colour
    unused = np.array(to_rgb(RUN_COLOURS[others]))
    assert not np.count_nonzero(np.all(np.abs(curves - unused) < 0.02, axis=-1))


def test_sparse_turn_depths_are_marked_with_their_counts(report_file):
    html = report_file.read_text(encoding="utf-8")
    assert "hollow points: few queries" in html  # the depth plot's alt text
    counts = re.search(r"<th class=l>turn depth</th><th>queries</th>.*?</table>", html).group(0)
    assert any(int(n) < 10 for n in re.findall(r"<tr><td class=l>\d+</td><td>(\d+)</td>", counts))


@pytest.mark.slow
def test_turn_depth_table_says_which_measure_it_shows(report_file):
    html = report_file.read_text(encoding="utf-8")
    assert "<table><caption>nDCG@3 by turn depth: mean per run</caption><thead><tr><th class=l>turn depth</th>" in html


def test_a_grouping_covering_some_queries_says_how_many_are_left_out_as_markdown_does(tmp_path):
    """The Markdown report said it under the table; the HTML page drew the groups without a word."""
    from harness.cli import main

    qids = sorted({line.split()[0] for line in CAST2021_QRELS.read_text().splitlines()})
    groups = tmp_path / "half.tsv"
    groups.write_text("".join(f"{qid} {'early' if i % 2 else 'late'}\n" for i, qid in enumerate(qids[:100])))
    note = f"{len(qids) - 100} compared queries have no half and are left out."
    for suffix in ("md", "html"):
        out = tmp_path / f"report.{suffix}"
        assert main(["compare", "--qrels", str(CAST2021_QRELS), *map(str, CAST2021_DOC_RUNS[:2]), "--measures", "RR",
                     "--groups", str(groups), "--output", str(out)]) == 0
        assert note in out.read_text()


def test_depth_plot_is_wide_and_its_legend_is_never_cut_off():
    """One plot is drawn 8 in wide (it was 4), and its legend below takes as many columns as
    fit: with long run names, nothing touches the image's left or right edge."""
    from harness.report.html import RUN_COLOURS, depth_curves

    groups = list(range(1, 13))
    runs = [f"team{i}/ikat2023-test.ptkb_topk.bm25-with-a-long-name ({i:06x})" for i in range(6)]
    means = {run: {g: (i + g) % 7 / 10 for g in groups} for i, run in enumerate(runs)}
    depth = bd.Breakdown(bd.DEPTH, "nDCG@5", groups, {g: 20 - g for g in groups}, means, 0)
    html = depth_curves([depth], {run: RUN_COLOURS[i] for i, run in enumerate(runs)})
    image = _images(html)[0]
    assert image.shape[1] >= 800
    edges = np.concatenate([image[:, :1], image[:, -1:]], axis=1)
    assert np.all(edges > 0.99), "something is drawn up to the image's edge (a cut-off legend)"


@needs_chromium
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 1024])
def test_report_fits_the_window_and_no_number_wraps(tmp_path, width):
    """At 1400 and 1024 px the page has no horizontal scrollbar, and every number cell (a
    p-value with its star included) is one line, with run names as long as `harness run`'s
    tags. Screenshots: /tmp/harness-report-<width>.png."""
    from dataclasses import replace

    preset = PRESETS.get("cast2021")
    qrels = read_qrels(CAST2021_QRELS)
    evaluations = [replace(evaluate(qrels, read_run(p), list(preset.measures), preset.depth),
                           run_name=f"cast2021-test.{p.stem}.passages-maxp") for p in CAST2021_DOC_RUNS]
    board = leaderboard(evaluations, [evaluations[0].run_name])
    report = Report(board, title="CAsT 2021 organiser runs")
    report.breakdowns = [bd.breakdown(board.scores, m, bd.depths(board.scores.qids), bd.DEPTH) for m in board.measures]
    report_file = tmp_path / "report.html"
    write_report(report, "html", report_file)
    sync_api = extra("playwright.sync_api", "test")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(report_file.resolve().as_uri())
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            lines = page.evaluate("""[...document.querySelectorAll('td:not(.l)')].map(td => {
                const range = document.createRange(); range.selectNodeContents(td);
                return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size; })""")
            assert lines and max(lines) == 1
            page.screenshot(path=f"/tmp/harness-report-{width}.png", full_page=True)
        finally:
            browser.close()
