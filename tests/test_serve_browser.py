"""A real browser on the leaderboard: headless Debian Chromium (driven by Playwright) logs in,
submits an invalid run and sees the validator's errors inline, submits a valid one and sees
the board fill. Screenshots go to /tmp/harness-serve-*.png for a person to look at."""

from __future__ import annotations

import time

import pytest

from tests.conftest import CHROMIUM, extra, needs_chromium

extra("fastapi", "serve")
sync_api = extra("playwright.sync_api", "test")

from tests.serve_support import (  # noqa: E402
    TASK, ServerProcess, ikat_run, submit_concurrently, team_token, trec_run, Upload, write_config,
)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, needs_chromium]


def test_a_team_logs_in_submits_sees_errors_inline_and_the_board_update(tmp_path):
    config = write_config(tmp_path, teams=2)
    rival = trec_run(tmp_path / "rival.trec", seed=1, tag="rival-bm25")
    valid = ikat_run(tmp_path / "ours.json", seed=2, run_name="ours <b>bold</b>")
    invalid = tmp_path / "broken.trec"
    invalid.write_text("9-1_1 Q0 clueweb22-en0000-00-00000:0 first 1.0 tag\n")
    with ServerProcess(config) as server, sync_api.sync_playwright() as playwright:
        assert submit_concurrently(server.url, [Upload("team1", rival)])[0].status == 202
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(f"{server.url}/login")
            page.fill("#token", team_token("team0"))
            page.click("button[type=submit]")
            assert page.url.endswith("/team")

            page.goto(f"{server.url}/submit")
            page.set_input_files("#file", str(invalid))
            page.click("button[type=submit]")
            errors = page.inner_text("#errors")
            assert "broken.trec:1 [trec]: rank 'first' is not an integer" in errors
            page.screenshot(path="/tmp/harness-serve-invalid.png", full_page=True)

            page.set_input_files("#file", str(valid))
            page.fill("#description", "<i>first</i> try")
            page.click("button[type=submit]")
            assert "is stored and queued for scoring" in page.inner_text("#accepted")
            page.screenshot(path="/tmp/harness-serve-team.png", full_page=True)

            page.goto(f"{server.url}/tasks/{TASK}")
            deadline = time.monotonic() + 120
            while page.locator("#leaderboard tbody tr").count() < 2 and time.monotonic() < deadline:
                time.sleep(1)
                page.reload()
            board = page.inner_text("#leaderboard")
            assert "ours <b>bold</b>" in board and "<i>first</i> try" in board and "rival-bm25" in board
            assert page.locator("img[alt^='mean score by turn depth']").count() == 1
            page.screenshot(path="/tmp/harness-serve-board.png", full_page=True)
        finally:
            browser.close()


def test_the_leaderboard_fits_1400_and_1024_px_windows_with_a_wide_uncut_depth_plot(tmp_path):
    """Seven measures, the tiers, p (Holm) and long run names fit without a horizontal
    scrollbar (neither the page's nor the table's own); the depth plot is drawn 800 px wide.
    Screenshots: /tmp/harness-serve-board-<width>.png."""
    config = write_config(tmp_path, teams=4)
    uploads = [Upload(f"team{i}", trec_run(tmp_path / f"run{i}.trec", seed=10 + i,
                                           tag=f"ikat2023-test.ptkb_topk-{i}.bm25-rm3.monot5")) for i in range(4)]
    with ServerProcess(config) as server, sync_api.sync_playwright() as playwright:
        assert all(answer.status == 202 for answer in submit_concurrently(server.url, uploads))
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                page.goto(f"{server.url}/tasks/{TASK}")
                if page.locator("#leaderboard tbody tr").count() == len(uploads):
                    break
                time.sleep(1)
            for width in (1400, 1024):
                page.set_viewport_size({"width": width, "height": 900})
                page.goto(f"{server.url}/tasks/{TASK}")
                assert page.locator("#leaderboard tbody tr").count() == len(uploads)
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                box = page.evaluate("(e => [e.scrollWidth, e.clientWidth])(document.querySelector('.wide'))")
                assert box[0] <= box[1], f"the table scrolls inside its box at {width} px"
                plot = page.locator("img[alt^='mean score by turn depth']")
                assert plot.evaluate("img => img.naturalWidth") >= 800
                page.screenshot(path=f"/tmp/harness-serve-board-{width}.png", full_page=True)
        finally:
            browser.close()
