"""The hosted leaderboard's API and pages, in-process (FastAPI's TestClient): one test per rule
of the issue. Runs are built from the shipped iKAT 2023 topics and qrels."""

from __future__ import annotations

import contextlib
import gzip
from collections import Counter
import io
import json
import logging
import re
import socket
import subprocess
import sys
import time
from html import escape
from pathlib import Path

import pytest
import yaml

from tests.conftest import extra

extra("fastapi", "serve")

from fastapi.testclient import TestClient  # noqa: E402

from harness.cli import main  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.serve import store as st  # noqa: E402
from harness.paths import qrels_root  # noqa: E402
from harness.serve.app import create_app  # noqa: E402
from harness.serve.cli_submit import _wait  # noqa: E402
from harness.serve.config import load_serve_config  # noqa: E402
from harness.serve.service import Service  # noqa: E402
from tests.conftest import child_env  # noqa: E402
from tests.serve_support import (  # noqa: E402,F401
    NOT_TEXT, QRELS, TASK, ikat_run, postgres, team_token, trec_run, write_config)

pytestmark = pytest.mark.server
SUBMIT = f"/api/tasks/{TASK}/submissions"


def auth(team: str = "team0") -> dict[str, str]:
    return {"Authorization": f"Bearer {team_token(team)}"}


def post(client: TestClient, path: Path, team: str = "team0", description: str = ""):
    with path.open("rb") as handle:
        return client.post(SUBMIT, headers=auth(team), files={"file": (path.name, handle)},
                           data={"description": description})


def scored(client: TestClient, ident: str, team: str = "team0", timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/submissions/{ident}", headers=auth(team)).json()
        if body["status"] != "queued":
            return body
        time.sleep(0.1)
    raise AssertionError(f"{ident} not scored in {timeout} s")


def open_client(folder: Path, **settings) -> tuple[TestClient, Service]:
    service = Service(load_serve_config(write_config(folder, **settings)))
    return TestClient(create_app(service), base_url="http://testserver"), service


@pytest.fixture
def server(tmp_path):
    client, service = open_client(tmp_path)
    with client:
        yield client, service


def login(client: TestClient, team: str = "team0") -> str:
    """Log in through the form; the CSRF token of the pages that follow."""
    answer = client.post("/login", data={"token": team_token(team), "csrf": login_csrf(client)}, follow_redirects=False)
    assert answer.status_code == 303
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/submit").text)[1]


def login_csrf(client: TestClient) -> str:
    return re.search(r'action="/login"><input type="hidden" name="csrf" value="([^"]+)"', client.get("/login").text)[1]


def harness_eval(run: Path, tmp_path: Path, capsys, qrels: Path = QRELS, *options: str) -> dict[str, float]:
    """What `harness ikat to-trec` + `harness eval --preset ikat2023 [options]` print for the file."""
    if run.suffix == ".json":
        assert main(["ikat", "to-trec", str(run), "--out", str(tmp_path / "converted.run")]) == 0
        run = tmp_path / "converted.run"
    capsys.readouterr()
    assert main(["eval", "--qrels", str(qrels), "--run", str(run), "--preset", "ikat2023", *options,
                 "--format", "json"]) == 0
    return next(iter(json.loads(capsys.readouterr().out).values()))


# --- accepting and scoring -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ikat-json", "trec"])
def test_scores_equal_harness_eval_on_the_same_file(server, tmp_path, capsys, kind):
    client, _ = server
    run = ikat_run(tmp_path / "run.json", seed=1) if kind == "ikat-json" else trec_run(tmp_path / "run.trec", seed=2)
    answer = post(client, run)
    assert answer.status_code == 202
    body = scored(client, answer.json()["id"])
    assert body["status"] == "scored"
    assert body["measures"] == harness_eval(run, tmp_path, capsys)


def test_a_run_scored_before_the_task_s_measures_changed_is_scored_again_at_start(tmp_path):
    """Its old scores lack the new main measure: the board was a KeyError (500) on every visit,
    and a measure added beside the main one read 0 on every query of the runs scored before."""
    client, _ = open_client(tmp_path)
    run = trec_run(tmp_path / "run.trec", seed=2)
    with client:
        ident = post(client, run).json()["id"]
        assert scored(client, ident)["status"] == "scored"
    task = {"name": TASK, "topics": "ikat2023", "qrels": str(QRELS), "measures": ["nDCG@5", "nDCG@10"],
            "depth": 1000, "main_measure": "nDCG@10", "formats": ["trec"]}
    client, _ = open_client(tmp_path, tasks=[task])
    with client:
        body = scored(client, ident)
        assert body["status"] == "scored" and set(body["measures"]) == {"nDCG@5", "nDCG@10"}
        board = client.get(f"/api/tasks/{TASK}/leaderboard")
        assert board.status_code == 200
        assert board.json()["rows"][0]["measures"] == body["measures"] and body["measures"]["nDCG@10"] > 0


def changed_qrels(tmp_path: Path) -> Path:
    """The shipped qrels less every other judgment: other content, the same turns judged."""
    path = tmp_path / "fewer.qrels"
    path.write_text("".join(QRELS.read_text().splitlines(keepends=True)[::2]))
    return path


@pytest.mark.parametrize("change", ["qrels", "depth"])
def test_a_run_scored_before_the_task_s_qrels_or_depth_changed_is_scored_again_at_start(tmp_path, capsys, change):
    """Under the same measure names, its old scores were kept and ranked beside new ones scored
    on other judgments or another depth. A start with nothing changed scores nothing again."""
    run = trec_run(tmp_path / "run.trec", seed=2)
    client, service = open_client(tmp_path)
    with client:
        ident = post(client, run).json()["id"]
        before = scored(client, ident)
    scored_at = service.submission(ident).scored_at
    client, service = open_client(tmp_path)
    with client:
        pass
    assert (service.submission(ident).status, service.submission(ident).scored_at) == ("scored", scored_at)
    task = {"name": TASK, "topics": "ikat2023", "qrels": str(QRELS), "preset": "ikat2023", "main_measure": "nDCG@5",
            "formats": ["trec"], **({"qrels": str(changed_qrels(tmp_path))} if change == "qrels" else {"depth": 3})}
    client, _ = open_client(tmp_path, tasks=[task])
    with client:
        body = scored(client, ident)
    expected = (harness_eval(run, tmp_path, capsys, Path(task["qrels"])) if change == "qrels"
                else harness_eval(run, tmp_path, capsys, QRELS, "--depth", "3"))
    assert body["status"] == "scored" and body["measures"] == expected != before["measures"]


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def test_a_run_scored_before_scores_were_recorded_with_their_qrels_is_scored_again_once(tmp_path, caplog, request,
                                                                                         database):
    """A database of an earlier version has no `scored_with` column: it is added at start (not a
    crash on the first read), and each row scored without it is scored again, once."""
    url = request.getfixturevalue("postgres") if database == "postgresql" else f"sqlite:///{tmp_path / 'board.db'}"
    client, service = open_client(tmp_path, database=url)
    with client:
        ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
        means = scored(client, ident)["measures"]
    engine = st.create_engine(st.database_url(url))
    with engine.begin() as connection:
        connection.execute(st.text("ALTER TABLE submissions DROP COLUMN scored_with"))
    engine.dispose()
    caplog.set_level(logging.INFO, logger="harness.serve")
    for _ in range(2):  # the second start scores nothing again
        client, service = open_client(tmp_path, database=url)
        with client:
            body = scored(client, ident)
        assert body["status"] == "scored" and body["measures"] == means and service.submission(ident).scored_with
        rescored = [r.getMessage() for r in caplog.records if "to score again" in r.getMessage()]
        assert rescored == [f"task {TASK}: 1 scored submissions to score again (scored by an earlier version, which "
                            "did not record what it was scored with)"]


def test_runs_are_scored_again_when_the_task_s_passage_separator_changes(tmp_path):
    """The cast2021 preset's measures and depth given by hand drop its separator ('-': MaxP
    over documents): the same measure names, other scores (service._stale)."""
    from harness.evaluate.presets import PRESETS
    from harness.serve.service import _stale
    from harness.serve.tasks import TaskRuntime

    def runtime(**task) -> TaskRuntime:
        task = {"name": TASK, "topics": "ikat2023", "qrels": str(QRELS), "main_measure": "nDCG@5",
                "formats": ["trec"], **task}
        return TaskRuntime(load_serve_config(write_config(tmp_path, tasks=[task])).tasks[TASK])

    before = runtime(preset="cast2021")
    row = st.Submission(means=dict.fromkeys(before.config.measures, 0.5), scored_with=before.scored_with)
    assert _stale(row, before) is None
    after = runtime(measures=list(PRESETS.get("cast2021").measures), depth=500)
    assert _stale(row, after) == "the task's passage_separator changed"
    assert _stale(row, runtime(measures=list(PRESETS.get("cast2021").measures), depth=500, passage_separator="-")) \
        is None  # the task's own `passage_separator:` gives it back
    assert runtime(preset="cast2021", passage_separator=":").scored_with["passage_separator"] == ":"  # the key wins


def test_a_passage_run_on_a_task_judging_documents_is_warned_of_to_its_team_and_not_once_the_task_reads_it_so(
        tmp_path, caplog):
    """CAsT 2021's passage run on a task with its own measures over the document qrels scores 0: the
    team is told why, as `harness eval` says it, in words for a team, which cannot change the task
    (nor see its qrels), and the log tells the organisers. Given the task's `passage_separator:`, a
    start scores the run again, without the warning."""
    from tests.conftest import CAST2021_PASSAGE_RUNS, CAST2021_QRELS

    run = CAST2021_PASSAGE_RUNS[0]
    task = {"name": "cast2021", "topics": "cast2021", "qrels": str(CAST2021_QRELS), "measures": ["nDCG@3"],
            "main_measure": "nDCG@3", "formats": ["trec"]}
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path, tasks=[task])
    with client, run.open("rb") as handle:
        answer = client.post("/api/tasks/cast2021/submissions", headers=auth(), files={"file": (run.name, handle)})
        body = scored(client, ident := answer.json()["id"])
    warning = ("scoring: only 0 of the 1580 documents in the run's top 10s are judged in the task's qrels, so nearly "
               "every measure is 0; its ids look like passage ids of judged documents (")
    assert body["measures"] == {"nDCG@3": 0.0} and body["warnings"][0].startswith(warning)
    assert body["warnings"][0].endswith("), and the task judges documents: ask its organisers to judge each document "
                                        "by its best passage (passage_separator: '-' on the task)")
    assert CAST2021_QRELS.name not in body["warnings"][0]  # the qrels are hidden
    assert any(f"task cast2021: submission {ident}: {body['warnings'][0].removeprefix('scoring: ')}" == r.getMessage()
               for r in caplog.records)
    client, _ = open_client(tmp_path, tasks=[task | {"passage_separator": "-"}])
    with client:
        body = scored(client, ident)
    assert body["measures"]["nDCG@3"] > 0.3 and not any(w.startswith("scoring: ") for w in body["warnings"])


@pytest.mark.parametrize(("ids", "why"), [
    (str.lower, "; 1099 of them are judged ids written in another case (e.g. 'marco_d1599536'; ids are compared "
                "exactly, as trec_eval compares them): write the run's ids as the task's collection writes them"),
    (lambda docid: "other-" + docid, "; check that the run's ids are the document ids of the task's collection"),
], ids=["another case", "another collection"])
def test_a_run_of_ids_the_task_never_judged_is_warned_of_to_its_team_without_the_qrels_it_never_sees(
        tmp_path, ids, why):
    """`harness eval` tells its user to write the ids as the qrels write them, or to check that
    the run and the qrels share a collection: a team, which never sees the task's qrels, is
    pointed to the task's collection."""
    from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

    run = tmp_path / "run.trec"
    run.write_text("".join(f"{qid} Q0 {ids(docid)} {rest}" for qid, _, docid, rest in
                           (line.split(" ", 3) for line in CAST2021_DOC_RUNS[0].read_text().splitlines(True))))
    task = {"name": "cast2021", "topics": "cast2021", "qrels": str(CAST2021_QRELS), "measures": ["nDCG@3"],
            "main_measure": "nDCG@3", "formats": ["trec"]}
    client, _ = open_client(tmp_path, tasks=[task])
    with client, run.open("rb") as handle:
        answer = client.post("/api/tasks/cast2021/submissions", headers=auth(), files={"file": (run.name, handle)})
        body = scored(client, answer.json()["id"])
    assert body["warnings"] == ["scoring: only 0 of the 1580 documents in the run's top 10s are judged in the task's "
                                f"qrels, so nearly every measure is 0{why}"]


@pytest.mark.parametrize("ids", [str.lower, lambda docid: "other-" + docid], ids=["another case", "another collection"])
def test_where_teams_see_means_only_the_warning_of_unjudged_ids_gives_no_count_and_no_id(tmp_path, ids):
    """With `per_query_scores: false` the warning says what to check, not how many of the run's top
    documents are judged (in another case) nor which: that told the hidden qrels' judged ids."""
    from tests.conftest import CAST2021_DOC_RUNS, CAST2021_QRELS

    run = tmp_path / "run.trec"
    run.write_text("".join(f"{qid} Q0 {ids(docid)} {rest}" for qid, _, docid, rest in
                           (line.split(" ", 3) for line in CAST2021_DOC_RUNS[0].read_text().splitlines(True))))
    task = {"name": "cast2021", "topics": "cast2021", "qrels": str(CAST2021_QRELS), "measures": ["nDCG@3"],
            "main_measure": "nDCG@3", "formats": ["trec"], "per_query_scores": False}
    client, _ = open_client(tmp_path, tasks=[task])
    with client, run.open("rb") as handle:
        answer = client.post("/api/tasks/cast2021/submissions", headers=auth(), files={"file": (run.name, handle)})
        body = scored(client, answer.json()["id"])
    assert body["warnings"] == ["scoring: many documents in the run's top 10s are not judged in the task's qrels as "
                                "they are written (which documents are judged is hidden on this task: no count or id "
                                "is given): check that the run's ids are the document ids of the task's collection, "
                                "written as it writes them, case included (ids are compared exactly, as trec_eval "
                                "compares them); where they are passage ids, ask the organisers whether the task "
                                "judges documents by their best passage"]


@pytest.mark.slow
def test_a_run_whose_scoring_again_fails_keeps_its_scores_off_the_board_until_a_start_scores_it(tmp_path, caplog,
                                                                                                  capsys):
    """Its stored file gone, a run queued again after the qrels changed was marked failed: gone
    from the board for good, its old means unread in its row. Now it is stale: its owner sees
    its earlier scores and why, the board ranks only runs scored alike, and each start tries it
    again (the worker does not, in a loop); the config changed back, it is on the board as it was."""
    run = trec_run(tmp_path / "run.trec", seed=2)
    client, service = open_client(tmp_path)
    with client:
        ident = post(client, run).json()["id"]
        before = scored(client, ident)
    stored = service.store.file(before["sha256"])
    stored.unlink()
    task = {"name": TASK, "topics": "ikat2023", "qrels": str(changed_qrels(tmp_path)), "preset": "ikat2023",
            "main_measure": "nDCG@5", "formats": ["trec"]}
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, service = open_client(tmp_path, tasks=[task])
    with client:
        body = scored(client, ident)
        assert (body["status"], body["measures"]) == ("stale", before["measures"])
        assert "scoring it again with the task's current settings failed" in body["error"]
        assert client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"] == []
        client.headers.update(auth("team0"))  # `harness submit --wait`: its earlier scores, and why it is not shown
        with pytest.raises(HarnessError, match=f"submission {ident} is not on the board: scoring it again"):
            _wait(client, ident, 5)
        assert capsys.readouterr().out.splitlines()[0] == f"nDCG@5\t{before['measures']['nDCG@5']:.4f}"
        del client.headers["Authorization"]
        login(client)
        assert "stale" in client.get("/team").text
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        f"scoring submission {ident} of task {TASK} again failed: FileNotFoundError: [Errno 2] No such file or "
        f"directory: '{stored}'; its earlier scores are kept, off "
        "the board (status stale), and it is tried again at the next start"]
    client, service = open_client(tmp_path)  # the qrels it was scored with: its scores are the task's again
    with client:
        body = scored(client, ident)
        assert (body["status"], body["measures"], body["error"]) == ("scored", before["measures"], None)
        assert [row["run_name"] for row in client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"]] == ["trec-2"]
    client, service = open_client(tmp_path, tasks=[task])  # the changed qrels again, the file still gone
    with client:
        assert scored(client, ident)["status"] == "stale"
    stored.write_bytes(run.read_bytes())
    client, service = open_client(tmp_path, tasks=[task])  # its file back: a start scores it on the changed qrels
    with client:
        body = scored(client, ident)
        assert (body["status"], body["error"]) == ("scored", None) and body["measures"] != before["measures"]
        assert [row["run_name"] for row in client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"]] == ["trec-2"]


def test_the_exact_file_of_a_run_stale_for_want_of_its_stored_copy_restores_it_and_is_scored(tmp_path):
    """Answered `duplicate` and dropped, the bytes the server lacked left the run stale at every
    start; the only way out was a changed file, charged to a quota perhaps spent."""
    run = trec_run(tmp_path / "run.trec", seed=2)
    client, service = open_client(tmp_path)
    with client:
        ident = post(client, run).json()["id"]
        before = scored(client, ident)
    service.store.file(before["sha256"]).unlink()  # as after a restore that missed the storage folder
    task = {"name": TASK, "topics": "ikat2023", "qrels": str(changed_qrels(tmp_path)), "preset": "ikat2023",
            "main_measure": "nDCG@5", "formats": ["trec"]}
    client, service = open_client(tmp_path, tasks=[task], quota=1)
    with client:
        assert scored(client, ident)["status"] == "stale"
        assert post(client, run).json() == {"id": ident, "status": "restored"}  # not charged: quota 1 is spent
        assert service.store.file(before["sha256"]).read_bytes() == run.read_bytes()
        body = scored(client, ident)
        assert (body["status"], body["error"]) == ("scored", None) and body["measures"] != before["measures"]
        assert post(client, run).json() == {"id": ident, "status": "duplicate"}  # its file there: nothing to do


def stale_row(tmp_path: Path) -> str:
    """A scored submission whose scoring again has failed (status stale, its note set), scored
    with other qrels than its task's now: the next start queues it again. No worker runs."""
    client, service = open_client(tmp_path)
    ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
    assert service.score_next()
    with service.store.session() as session:
        row = session.get(st.Submission, ident)
        row.status, row.error = st.STALE, "scoring it again with the task's current settings failed"
        row.scored_with = {**row.scored_with, "qrels": "the hash of other qrels"}
        session.commit()
    service.store.close()
    return ident


def test_a_stale_run_queued_again_at_start_loses_the_note_of_its_failed_try(tmp_path):
    """Queued, it is being scored again: the note of the last try no longer says what it is."""
    ident = stale_row(tmp_path)
    service = Service(load_serve_config(write_config(tmp_path)))
    service._rescore_stale()  # what a start does before its worker runs
    row = service.submission(ident)
    assert (row.status, row.error) == ("queued", None)
    service.store.close()


def test_a_stale_run_s_scored_time_is_that_of_the_scores_it_shows_not_of_the_failed_try(tmp_path):
    """Its owner sees its earlier scores: `scored` says when those were scored."""
    ident = stale_row(tmp_path)
    client, service = open_client(tmp_path)
    row = service.submission(ident)
    service.store.file(row.sha256).unlink()  # scoring it again fails
    service._rescore_stale()
    assert service.score_next() and service.submission(ident).status == "stale"
    body = client.get(f"/api/submissions/{ident}", headers=auth()).json()
    assert body["scored"] == row.scored_at.isoformat() + "Z" and service.submission(ident).scored_at == row.scored_at
    service.store.close()


def test_a_submission_whose_scoring_failed_has_no_scored_time(tmp_path):
    client, service = open_client(tmp_path)
    ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
    service.store.file(service.submission(ident).sha256).unlink()
    assert service.score_next()
    body = client.get(f"/api/submissions/{ident}", headers=auth()).json()
    assert (body["status"], body["scored"], service.submission(ident).scored_at) == ("failed", None, None)
    service.store.close()


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def test_a_worker_scores_only_its_own_tasks_and_leaves_another_s_queued(tmp_path, request, database):
    """Processes sharing a database may serve different tasks: a worker claimed every queued
    submission, and one of a task it does not serve was marked failed (a KeyError)."""
    shared = {"database": request.getfixturevalue("postgres") if database == "postgresql"
              else f"sqlite:///{tmp_path / 'board.db'}", "storage": str(tmp_path / "files")}
    other = {"name": "ikat2023-other", "topics": "ikat2023", "qrels": str(QRELS), "preset": "ikat2023",
             "main_measure": "nDCG@5", "formats": ["trec"]}
    client, serving = open_client(tmp_path / "serving", **shared)  # no lifespan: no worker, scored by hand
    ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
    serving.store.close()  # SQLite: one process at a time
    elsewhere = Service(load_serve_config(write_config(tmp_path / "elsewhere", tasks=[other], **shared)))
    assert not elsewhere.score_next() and elsewhere.submission(ident).status == "queued"
    elsewhere.store.close()
    serving = Service(load_serve_config(write_config(tmp_path / "serving", **shared)))
    assert serving.score_next() and serving.submission(ident).status == "scored"
    serving.store.close()


def test_a_start_reads_a_scored_run_s_measures_from_its_means_and_scores_again_none_that_holds_them(tmp_path):
    """The means' keys say which measures a run was scored on; its per-query scores are read only
    where a measure has no mean (a response measure undefined on every turn): such a run holds
    every measure and was scored once, not again at every start."""
    client, service = open_client(tmp_path)
    with client:
        ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
        assert scored(client, ident)["status"] == "scored"
    with service.store.session() as session:
        row = session.get(st.Submission, ident)
        dropped = next(iter(row.means))
        row.means = {m: v for m, v in row.means.items() if m != dropped}  # as a mean undefined on every turn
        before = row.scored_at
        session.commit()
    client, service = open_client(tmp_path)
    with client, service.store.session() as session:
        row = session.get(st.Submission, ident)
        assert row.status == "scored" and row.scored_at == before and dropped not in row.means


def test_a_submission_of_a_task_since_removed_is_still_shown_to_its_team(tmp_path):
    """Renamed in the config (a new board), the old task's submissions were a KeyError: 500."""
    client, _ = open_client(tmp_path)
    with client:
        ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
        means = scored(client, ident)["measures"]
    task = {"name": "ikat2023-v2", "topics": "ikat2023", "qrels": str(QRELS), "preset": "ikat2023",
            "main_measure": "nDCG@5", "formats": ["trec"]}
    client, _ = open_client(tmp_path, tasks=[task])
    with client:
        answer = client.get(f"/api/submissions/{ident}", headers=auth())
        assert answer.status_code == 200
        assert answer.json()["measures"] == means and answer.json()["per_query"] is None


def test_stored_file_is_named_by_its_content_hash(server, tmp_path):
    client, service = server
    run = ikat_run(tmp_path / "run.json", seed=3)
    with run.open("rb") as handle:  # a path in the file name is never used as one
        answer = client.post(SUBMIT, headers=auth(), files={"file": ("../../evil name.json", handle)})
    assert answer.status_code == 202
    digest = st.hashlib.sha256(run.read_bytes()).hexdigest()
    stored = [p.name for p in service.store.storage.iterdir() if p.is_file()]
    assert stored == [digest]
    assert client.get(f"/api/submissions/{answer.json()['id']}", headers=auth()).json()["sha256"] == digest


def test_resubmitted_identical_file_returns_the_same_id(server, tmp_path):
    client, service = server
    run = ikat_run(tmp_path / "run.json", seed=4)
    first, second = post(client, run), post(client, run)
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["id"] == second.json()["id"]
    assert (first.json()["status"], second.json()["status"]) == ("accepted", "duplicate")  # no new submission
    assert len(service.team_submissions("team0")) == 1


def test_invalid_run_gets_422_with_the_validators_messages_and_only_an_audit_row(server, tmp_path):
    client, service = server
    run = ikat_run(tmp_path / "broken.json", seed=5)
    document = json.loads(run.read_text())
    turn = next(t for t in document["turns"] if t["responses"][0]["passage_provenance"])
    turn["responses"][0]["passage_provenance"][0]["score"] = "high"
    run.write_text(json.dumps(document))
    answer = post(client, run)
    assert answer.status_code == 422
    errors = answer.json()["errors"]
    assert errors[0]["file"] == "broken.json" and errors[0]["check"] == "schema"
    assert errors[0]["turn"] == turn["turn_id"] and "is not a number" in errors[0]["message"]
    assert service.team_submissions("team0") == []
    assert [p for p in service.store.storage.rglob("*") if p.is_file()] == []
    with service.store.session() as session:
        assert [(a.team, a.event) for a in session.scalars(st.select(st.Audit))] == [("team0", "rejected")]


def test_a_passage_id_holding_whitespace_is_422_at_upload_not_a_failed_scoring(server, tmp_path):
    """The validator takes it (ids are only looked up in a collection); its TREC line could not be
    written, so the converter's error is the upload's, before it is stored or counted."""
    client, service = server
    run = ikat_run(tmp_path / "spaced.json", seed=5)
    document = json.loads(run.read_text())
    turn = next(t for t in document["turns"] if t["responses"][0]["passage_provenance"])
    passage = turn["responses"][0]["passage_provenance"][0]
    passage["id"] += " "
    run.write_text(json.dumps(document))
    answer = post(client, run)
    assert answer.status_code == 422
    error = answer.json()["errors"][0]
    assert error["check"] == "convert" and error["file"] == "spaced.json"
    assert error["message"] == (f"passage_provenance id {passage['id']!r} holds whitespace or a NUL byte, "
                                "which would split its TREC run line")
    assert service.team_submissions("team0") == []


def test_a_passage_a_response_lists_again_is_warned_of_to_its_team(server, tmp_path):
    """The validator takes it, and the run keeps the passage once (the first, as the official
    generate_run.py): the team is told, as `harness ikat validate` notes it."""
    client, _ = server
    run = ikat_run(tmp_path / "again.json", seed=6)
    document = json.loads(run.read_text())
    provenance = next(t for t in document["turns"] if t["responses"][0]["passage_provenance"])["responses"][0][
        "passage_provenance"]
    provenance.append({**provenance[0], "score": 0.001})
    run.write_text(json.dumps(document))
    answer = post(client, run)
    assert answer.status_code == 202
    assert any("[passage-repeated]: 1 passage is listed again in the same response: the first is scored, the "
               "repeat dropped" in warning for warning in scored(client, answer.json()["id"])["warnings"])


@pytest.mark.parametrize("kind", ["trec", "json"])
@pytest.mark.parametrize("encoding", sorted(NOT_TEXT))
def test_a_compressed_or_utf16_upload_is_422_saying_so(server, tmp_path, encoding, kind):
    """Read as a TREC run (it does not start with `{`), a run.trec.gz's 422 listed garbage bytes as
    unknown query ids, and a UTF-16 file's its characters split by NUL bytes."""
    client, _ = server
    encode, check, message = NOT_TEXT[encoding]
    run = (trec_run if kind == "trec" else ikat_run)(tmp_path / f"run.{kind}", seed=6)
    packed = tmp_path / "upload"
    packed.write_bytes(encode(run.read_bytes()))
    answer = post(client, packed)
    assert answer.status_code == 422
    assert [(e["check"], e["message"]) for e in answer.json()["errors"]] == [(check, message)]


@pytest.fixture
def run_record(run_records) -> Path:
    """`harness run`'s record of a real run (PragmaticQA val, BM25), beside the run."""
    return run_records / "pragmaticqa-val.raw.bm25.json"


def test_a_harness_run_record_uploaded_is_422_naming_the_run_to_upload(server, run_record):
    """Uploaded for its run (from a browser too), a record drew 22 errors of the iKAT schema. The server cannot see
    the submitter's disk: it names the run, not where it is."""
    client, _ = server
    answer = post(client, run_record)
    assert answer.status_code == 422
    assert [(e["check"], e["message"]) for e in answer.json()["errors"]] == [(
        "format", "this is `harness run`'s record of pragmaticqa-val.raw.bm25.run (its provenance and scores), not a "
                  "run: upload that run instead")]


def test_an_ikat_only_task_refuses_a_harness_run_record_naming_from_trec_not_its_run(run_record, tmp_path):
    """It said 'upload that run instead', which a task taking `formats: [ikat-2023-json]` refuses ('this is a
    trec file')."""
    from harness.serve.config import load_serve_config
    from harness.serve.tasks import TaskRuntime

    task = TaskRuntime(load_serve_config(write_config(tmp_path, formats=("ikat-2023-json",))).tasks[TASK])
    verdict = task.check(run_record, "up.json")
    assert [(m.check, m.message) for m in verdict.errors] == [(
        "format", "this is `harness run`'s record of pragmaticqa-val.raw.bm25.run (its provenance and scores), not an "
                  "iKAT submission: this task takes ikat-2023-json: upload the submission `harness ikat from-trec` "
                  "makes of that run")]


def test_submit_refuses_a_harness_run_record_before_any_upload_saying_what_each_kind_of_task_takes(
        run_record, tmp_path, capsys):
    """Nothing listens at --server: the error comes before any request, not knowing the task, so it does not
    say 'submit that run', which a task of iKAT files or of responses refuses."""
    argv = ["submit", "--server", "http://127.0.0.1:9", "--token", "t", "--task", TASK]
    said = ("this is `harness run`'s record of pragmaticqa-val.raw.bm25.run (its provenance and scores), not a "
            "submission: to a task that takes TREC runs, submit")
    takes = ("; to one that takes iKAT files only, the submission `harness ikat from-trec` makes of it; to a response "
             "task, what the system answered (it takes no run)\n")
    assert main([*argv, str(run_record)]) == 2
    assert capsys.readouterr().err == (f"harness submit: error: {run_record}: {said} "
                                       f"{run_record.with_suffix('.run')}{takes}")
    alone = tmp_path / run_record.name
    alone.write_bytes(run_record.read_bytes())
    assert main([*argv, str(alone)]) == 2
    assert capsys.readouterr().err == (f"harness submit: error: {alone}: {said} pragmaticqa-val.raw.bm25.run (not "
                                       f"beside this record){takes}")


def test_submit_refuses_a_gzipped_harness_run_record_before_any_upload(run_record, tmp_path, capsys):
    """Gzipped to send it, a record was uploaded, refused by the board as compressed, and refused as a record
    only once unzipped: two round trips (R27 F5)."""
    zipped = tmp_path / (run_record.name + ".gz")
    zipped.write_bytes(gzip.compress(run_record.read_bytes()))
    assert main(["submit", "--server", "http://127.0.0.1:9", "--token", "t", "--task", TASK, str(zipped)]) == 2
    assert capsys.readouterr().err.startswith(f"harness submit: error: {zipped}: this is `harness run`'s record of "
                                              "pragmaticqa-val.raw.bm25.run (its provenance and scores), not a "
                                              "submission")


def test_trec_run_with_an_unknown_query_is_422_naming_it(server, tmp_path):
    client, _ = server
    run = trec_run(tmp_path / "run.trec", seed=6)
    run.write_text(run.read_text() + "99-9_9 Q0 some-doc 1 1.0 tag\n")
    answer = post(client, run)
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["message"] == "query '99-9_9' is not a turn of the task's topics"


# --- security ------------------------------------------------------------------------------


def test_wrong_or_missing_token_is_401(server, tmp_path):
    client, _ = server
    run = trec_run(tmp_path / "run.trec", seed=7)
    with run.open("rb") as handle:
        assert client.post(SUBMIT, files={"file": handle}).status_code == 401
    with run.open("rb") as handle:
        wrong = client.post(SUBMIT, files={"file": handle}, headers={"Authorization": "Bearer guess"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert client.get("/api/submissions/abc", headers={"Authorization": "Bearer guess"}).status_code == 401


def test_quota_over_is_429(tmp_path):
    client, service = open_client(tmp_path, quota=2)
    with client:
        answers = [post(client, trec_run(tmp_path / f"r{i}.trec", seed=10 + i)).status_code for i in range(3)]
        assert answers == [202, 202, 429]
        assert post(client, tmp_path / "r0.trec").status_code == 202  # the same file again is not a new one
        assert post(client, tmp_path / "r2.trec", team="team1").status_code == 202  # quotas are per team


def test_a_quota_429_says_in_retry_after_when_the_utc_day_frees_the_quota(tmp_path):
    """The README promises Retry-After with every 429; a client honouring it could not tell when
    the day's quota is spent until."""
    from datetime import datetime, timedelta, timezone
    client, service = open_client(tmp_path, quota=1)
    with client:
        assert post(client, trec_run(tmp_path / "r0.trec", seed=10)).status_code == 202
        over = post(client, trec_run(tmp_path / "r1.trec", seed=11))
    now = datetime.now(timezone.utc)
    tomorrow = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), timezone.utc)
    assert over.status_code == 429
    assert abs(int(over.headers["retry-after"]) - (tomorrow - now).total_seconds()) < 60


def test_the_daily_quota_is_one_pool_across_a_board_s_tasks_and_its_429_says_so(tmp_path):
    """An organiser reads a run quota as per task, as tracks set them: a ranking run charged to
    another task's quota must say it is the board's."""
    tasks = [{"name": name, "topics": "ikat2023", "qrels": str(QRELS), "preset": "ikat2023", "main_measure": "nDCG@5",
              "formats": ["trec"]} for name in (TASK, "other")]
    client, service = open_client(tmp_path, quota=1, tasks=tasks)
    with client:
        assert post(client, trec_run(tmp_path / "r0.trec", seed=10)).status_code == 202
        with trec_run(tmp_path / "r1.trec", seed=11).open("rb") as handle:
            over = client.post("/api/tasks/other/submissions", headers=auth(), files={"file": ("r1.trec", handle)})
    assert (over.status_code, over.json()["detail"]) == (429, "team team0 has used its 1 uploads today (UTC) across "
                                                              "all tasks")


def test_upload_over_the_size_limit_is_413_and_stores_nothing(tmp_path):
    client, service = open_client(tmp_path, max_upload_mb=1)
    with client:
        big = trec_run(tmp_path / "big.trec", seed=20, depth=1000)
        assert big.stat().st_size > 1 << 20
        assert post(client, big).status_code == 413
        big.write_bytes(big.read_bytes()[: (1 << 20) + 100])  # over the limit by less than the form's slack
        assert post(client, big).status_code == 413
        assert [p for p in service.store.storage.rglob("*") if p.is_file()] == []


def test_a_413_for_a_body_over_the_limit_names_the_file_s_limit_that_applies(tmp_path):
    """It said '2 MiB allowed here' (the file's 1 MiB and the form's slack), and a team that then
    sent 1.5 MiB was refused as over 1 MiB."""
    client, service = open_client(tmp_path, max_upload_mb=1)
    with client:
        big = tmp_path / "big.trec"
        big.write_bytes(b"x" * (3 << 20))
        assert post(client, big).json()["detail"] == (
            "the request body is larger than the 2 MiB allowed here (a file of at most 1 MiB, and its form)")


def test_a_team_sees_only_its_own_submissions_details(server, tmp_path):
    client, _ = server
    mine = post(client, trec_run(tmp_path / "a.trec", seed=30), team="team0").json()["id"]
    theirs = post(client, trec_run(tmp_path / "b.trec", seed=31), team="team1").json()["id"]
    assert scored(client, mine)["per_query"]
    assert client.get(f"/api/submissions/{theirs}", headers=auth("team0")).status_code == 404


def test_no_per_query_scores_of_any_team_are_shown(server, tmp_path):
    client, _ = server
    for team, seed in (("team0", 40), ("team1", 41)):
        scored(client, post(client, trec_run(tmp_path / f"{team}.trec", seed=seed), team=team).json()["id"], team)
    qid = re.compile(r"\b\d+-\d+_\d+\b")  # an iKAT turn id: 9-1_3
    board = client.get(f"/api/tasks/{TASK}/leaderboard")
    assert len(board.json()["rows"]) == 2 and "per_query" not in board.text and not qid.search(board.text)
    login(client, "team0")
    for path in ("/", f"/tasks/{TASK}", "/team"):
        assert not qid.search(client.get(path).text), path


def test_hidden_qrels_are_never_served_in_routes_errors_or_logs(server, tmp_path, caplog):
    client, _ = server
    caplog.set_level(logging.DEBUG)
    judged = set(QRELS.read_text().split())  # every qid, docid and grade token of the qrels
    passages = {token for token in judged if token.startswith("clueweb22-")}
    run = trec_run(tmp_path / "run.trec", seed=50)
    scored(client, post(client, run).json()["id"])
    broken = tmp_path / "broken.trec"
    broken.write_text("1 2 3\n")
    answers = [post(client, broken)]
    login(client)
    for path in ["/", f"/tasks/{TASK}", "/team", "/submit", "/login", "/api/tasks", f"/api/tasks/{TASK}/leaderboard",
                 f"/api/tasks/{TASK}/qrels", "/qrels", f"/{QRELS}", "/../qrels/ikat/2023-qrels.all-turns.txt",
                 "/files/..%2f..%2fqrels", f"/api/submissions/{'0' * 16}", "/tasks/nope", "/static/qrels"]:
        answers.append(client.get(path))
    server_logs = [r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    texts = [answer.text for answer in answers] + server_logs
    for text in texts:
        assert QRELS.name not in text and "qrels/" not in text
        assert not passages & set(re.findall(r"clueweb22-[\w:-]+", text))


def test_tokens_and_sessions_are_stored_hashed(server):
    client, service = server
    login(client)
    cookie = client.cookies["harness_session"]
    database = Path(service.config.database.removeprefix("sqlite:///"))
    stored = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
    assert cookie.encode() not in stored and st.sha256_hex(cookie).encode() in stored
    config_text = service.config.path.read_text()
    assert team_token("team0") not in config_text and st.sha256_hex(team_token("team0")) in config_text


def test_run_names_and_descriptions_are_escaped_in_pages(server, tmp_path):
    client, _ = server
    name = "<script>alert(1)</script>"
    run = ikat_run(tmp_path / "run.json", seed=60, run_name=name)
    ident = post(client, run, description='<img src=x onerror="alert(2)">').json()["id"]
    scored(client, ident)
    login(client)
    for path in (f"/tasks/{TASK}", "/team"):
        page = client.get(path).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
        assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in page and "<img src=x" not in page
    assert "script-src" not in client.get("/").headers["content-security-policy"]  # default-src 'none': no scripts


def test_forms_refuse_cross_site_requests(server, tmp_path):
    client, _ = server
    csrf = login(client)
    run = trec_run(tmp_path / "run.trec", seed=70)

    def submit(data: dict, headers: dict | None = None) -> int:
        with run.open("rb") as handle:
            return client.post("/submit", data={"task": TASK, **data}, files={"file": handle},
                               headers=headers or {}, follow_redirects=False).status_code

    assert submit({}) == 403  # no token
    assert submit({"csrf": "forged"}) == 403
    assert submit({"csrf": csrf}, {"Origin": "http://evil.example"}) == 403
    assert client.post("/login", data={"token": team_token("team0")}).status_code == 403  # login needs its form token
    assert submit({"csrf": csrf}, {"Origin": "http://testserver"}) == 303
    answer = client.post("/login", data={"token": team_token("team0"), "csrf": login_csrf(client)}, follow_redirects=False)
    assert "samesite=strict" in answer.headers["set-cookie"].lower() and "httponly" in answer.headers["set-cookie"].lower()


def test_a_wrong_token_at_login_is_401_on_a_fresh_login_form(server):
    client, _ = server
    first = login_csrf(client)
    answer = client.post("/login", data={"token": "guess", "csrf": first}, follow_redirects=False)
    assert answer.status_code == 401 and 'id="errors">Wrong token.<' in answer.text
    assert "harness_session" not in answer.cookies and answer.cookies["harness_login"] != first


def test_a_team_s_pages_need_a_login(server, tmp_path):
    client, _ = server
    for path in ("/submit", "/team"):
        answer = client.get(path, follow_redirects=False)
        assert (answer.status_code, answer.headers["location"]) == (303, "/login"), path
    with trec_run(tmp_path / "run.trec", seed=71).open("rb") as handle:
        answer = client.post("/submit", data={"task": TASK}, files={"file": handle})
    assert answer.status_code == 401 and 'id="errors">log in first<' in answer.text  # a page: the form's browser
    assert '<a href="/login">Back to the login form</a>' in answer.text


def test_logout_needs_the_page_s_csrf_token_and_ends_the_session_for_good(server):
    client, _ = server
    csrf = login(client)
    cookie = client.cookies["harness_session"]
    assert client.post("/logout", follow_redirects=False).status_code == 403
    assert client.get("/team", follow_redirects=False).status_code == 200  # still logged in
    answer = client.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/")
    assert 'harness_session=""' in answer.headers["set-cookie"]
    client.cookies.set("harness_session", cookie)  # the old cookie, replayed
    assert client.get("/team", follow_redirects=False).headers["location"] == "/login"


def test_an_upload_to_an_unknown_task_is_404_and_only_for_a_known_token(server, tmp_path):
    client, _ = server
    run = trec_run(tmp_path / "run.trec", seed=72)
    with run.open("rb") as handle:
        assert client.post("/api/tasks/nope/submissions", files={"file": handle}).status_code == 401
    with run.open("rb") as handle:
        answer = client.post("/api/tasks/nope/submissions", files={"file": handle}, headers=auth())
    assert (answer.status_code, answer.json()) == (404, {"detail": "no task 'nope'"})


def test_every_answer_carries_the_security_headers(server):
    client, _ = server
    answers = [client.get(path) for path in ("/health", "/api/tasks", "/tasks/nope", "/nothing", "/api/submissions/x")]
    assert [a.status_code for a in answers] == [200, 200, 404, 404, 401]
    for answer in answers:
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


def test_submit_page_shows_validation_errors_inline(server, tmp_path):
    client, _ = server
    csrf = login(client)
    broken = tmp_path / "broken.trec"
    broken.write_text("9-1_1 Q0 doc one 1.0 tag\n")
    with broken.open("rb") as handle:
        answer = client.post("/submit", data={"task": TASK, "csrf": csrf}, files={"file": (broken.name, handle)})
    assert answer.status_code == 422
    assert 'id="errors"' in answer.text and "broken.trec:1 [trec]:" in answer.text


def test_the_same_file_again_through_the_submit_page_is_said_to_be_already_received(server, tmp_path):
    """The API said `duplicate`; the page said it was stored and queued for scoring."""
    client, _ = server
    csrf = login(client)
    run = trec_run(tmp_path / "run.trec", seed=71)
    pages = []
    for _ in range(2):
        with run.open("rb") as handle:
            pages.append(client.post("/submit", data={"task": TASK, "csrf": csrf}, files={"file": (run.name, handle)}))
    assert "is stored and queued for scoring" in pages[0].text
    assert "was already received" in pages[1].text
    assert "queued for scoring" not in pages[1].text


# --- configuration -------------------------------------------------------------------------


def test_shipped_config_loads():
    config = load_serve_config(Path(__file__).parent.parent / "configs" / "leaderboard.yaml")
    task = config.tasks["ikat2023"]
    assert task.main_measure == "nDCG@5" and task.measures[0] == "nDCG@5" and task.depth == 1000
    assert task.formats == ("ikat-2023-json", "trec")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c.update(quota=0), "quota: expected a positive integer, found 0"),
    (lambda c: c.update(colour="red"), "colour: unknown key"),
    (lambda c: c["tasks"][0].update(main_measure="nDCG@7"), "tasks[0].main_measure: nDCG@7 is not among the task's measures"),
    (lambda c: c["tasks"][0].update(formats=["ikat-2023-json", "pdf"]), "tasks[0].formats[1]: unknown format 'pdf'"),
    (lambda c: c["tasks"][0].update(qrels="missing.qrels"), "tasks[0].qrels: no such file: missing.qrels"),
    (lambda c: c["tasks"][0].update(preset="ikat2099"), "tasks[0].preset: unknown measure preset 'ikat2099'"),
    (lambda c: c["tasks"][0].update(passage_separator=" "), "tasks[0].passage_separator: must be the character(s) "
     "between a document id and its passage number, such as '-' or ':', not ' '"),
    (lambda c: c["tasks"][0].update(topics="ikat2023:bogus"), "tasks[0].topics: ikat2023 has no split 'bogus'; known: test, train"),
    (lambda c: c["tasks"][0].update(topics="topics/nope.json"), "tasks[0].topics: topics/nope.json: no such file "
     "(give a topics file or a benchmark name such as ikat2023)"),  # no --topics: a config has no flags
    (lambda c: c["teams"][1].update(token_sha256="secret"), "teams[1].token_sha256: expected the 64 hex digits"),
    (lambda c: c["teams"][1].update(name="team0"), "teams: two teams are named 'team0'"),
])
def test_config_errors_name_the_key_path(tmp_path, edit, message):
    import yaml

    from harness.errors import InputError

    path = write_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    edit(config)
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(InputError) as error:
        load_serve_config(path)
    assert str(error.value).startswith(f"{path}: {message}")


@pytest.mark.parametrize("key", ["database", "storage"])
def test_a_database_or_storage_below_a_file_is_a_one_line_error_naming_the_key(tmp_path, capsys, key):
    blocker = tmp_path / "f"
    blocker.write_text("a file\n")
    place = blocker / ("board.db" if key == "database" else "files")
    path = write_config(tmp_path, **{key: f"sqlite:///{place}" if key == "database" else str(place)})
    assert main(["serve", str(path)]) == 2  # before the server starts
    err = capsys.readouterr().err
    assert err == f"harness serve: error: {path}: {key}: cannot write {place}: {blocker} is a file, expected a folder\n"


# --- PostgreSQL ----------------------------------------------------------------------------


@pytest.mark.slow
def test_postgresql_by_url_through_the_same_code(postgres, tmp_path, capsys):
    client, service = open_client(tmp_path, database=postgres)
    with client:
        run = ikat_run(tmp_path / "run.json", seed=80)
        first, again = post(client, run), post(client, run)
        assert first.status_code == 202 and again.json()["id"] == first.json()["id"]
        body = scored(client, first.json()["id"])
        assert body["measures"] == harness_eval(run, tmp_path, capsys)
        assert client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"][0]["run_name"] == "run-80"


@pytest.mark.slow
def test_a_role_that_may_not_add_a_new_column_is_told_the_statement_the_owner_should_run(postgres, tmp_path, capsys):
    """A database of an earlier version, served by a role that is not its tables' owner: the start
    said only "cannot connect to database ...: must be owner of table submissions"."""
    client, _ = open_client(tmp_path, database=postgres)  # its tables made by their owner, then as before the column
    with client:
        pass
    engine = st.create_engine(st.database_url(postgres))
    with engine.begin() as connection:
        for statement in ("ALTER TABLE submissions DROP COLUMN scored_with", "CREATE ROLE board LOGIN",
                          "GRANT ALL ON ALL TABLES IN SCHEMA public TO board",
                          "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO board"):
            connection.execute(st.text(statement))
    engine.dispose()
    board = postgres.replace("harness@", "board@")
    assert main(["serve", str(write_config(tmp_path, database=board)), "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        f"harness serve: error: database {board}: table submissions lacks the column scored_with this version adds, "
        "and adding it failed (must be owner of table submissions); have the table's owner run: ALTER TABLE "
        "submissions ADD COLUMN IF NOT EXISTS scored_with JSON;\n")


# --- command line --------------------------------------------------------------------------


def test_new_token_prints_a_token_and_the_config_line_with_its_hash(capsys):
    assert main(["serve", "--new-token"]) == 0
    out = capsys.readouterr().out
    token = re.search(r"token \(give it to the team; it is not stored\): (\S+)", out)[1]
    assert f"token_sha256: {st.sha256_hex(token)}" in out


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def test_requeue_failed_queues_a_task_s_failed_submissions_again_for_its_worker_to_score(tmp_path, capsys, request,
                                                                                         database):
    """Submissions marked failed by the server's fault (a worker once claimed another task's
    and marked them failed) stayed failed; `--requeue-failed --task T` queues T's again, without
    their note, and leaves another task's failed. With PostgreSQL, beside the running server."""
    other = {"name": "ikat2023-other", "topics": "ikat2023", "qrels": str(QRELS), "preset": "ikat2023",
             "main_measure": "nDCG@5", "formats": ["trec"]}
    url = request.getfixturevalue("postgres") if database == "postgresql" else None
    config = write_config(tmp_path, database=url, tasks=[{**other, "name": TASK}, other])
    service = Service(load_serve_config(config))
    client = TestClient(create_app(service), base_url="http://testserver")  # no lifespan: no worker
    run = trec_run(tmp_path / "run.trec", seed=2)
    idents = [post(client, run).json()["id"]]
    with run.open("rb") as handle:
        idents.append(client.post("/api/tasks/ikat2023-other/submissions", headers=auth(),
                                  files={"file": (run.name, handle)}).json()["id"])
    stored = service.store.file(service.submission(idents[0]).sha256)
    stored.unlink()  # as the claiming worker's KeyError: a failure that is not the run's
    assert service.score_next() and service.score_next()
    stored.write_bytes(run.read_bytes())
    if database == "sqlite":  # one process at a time: the server stopped, started again after
        service.store.close()
    assert main(["serve", str(config), "--requeue-failed", "--task", TASK]) == 0
    assert capsys.readouterr().out == f"task {TASK}: 1 failed submission queued again\n"
    if database == "sqlite":
        service = Service(load_serve_config(config))
    assert [(service.submission(i).status, service.submission(i).error) for i in idents] == [
        ("queued", None), ("failed", "scoring failed; the organisers have been told")]
    assert service.score_next() and service.submission(idents[0]).status == "scored"
    service.store.close()


def test_requeue_failed_on_a_database_not_there_yet_queues_none_and_makes_nothing(tmp_path, capsys):
    assert main(["serve", str(write_config(tmp_path)), "--requeue-failed"]) == 0
    assert capsys.readouterr().out == f"task {TASK}: 0 failed submissions queued again\n"
    assert not (tmp_path / "state").exists()


def test_requeue_failed_says_a_task_named_twice_once(tmp_path, capsys):
    assert main(["serve", str(write_config(tmp_path)), "--requeue-failed", "--task", TASK, "--task", TASK]) == 0
    assert capsys.readouterr().out == f"task {TASK}: 0 failed submissions queued again\n"


@pytest.mark.parametrize(("options", "message"), [
    (["--requeue-failed", "--task", "ikat2099"], "--task ikat2099: {config} has no such task; its tasks: ikat2023"),
    (["--task", TASK], "--task goes with --requeue-failed"),
    (["--new-token", "--task", TASK], "--task goes with --requeue-failed"),
    (["--reason", "a bug"], "--reason goes with --withdraw or --withdraw-team"),
    (["--requeue-failed", "--withdraw", "0123abcd"], "--requeue-failed and --withdraw are two runs of harness serve: "
                                                     "give one"),
])
def test_requeue_failed_s_task_is_one_of_the_config_s_else_one_line(tmp_path, capsys, options, message):
    config = write_config(tmp_path)
    assert main(["serve", str(config), *options]) == 2
    assert capsys.readouterr().err == (f"harness serve: error: {message.format(config=config)} "
                                       "(`harness serve --help` lists the options)\n")
    assert not (tmp_path / "state").exists()  # nothing made


def test_serve_with_a_bad_config_is_a_one_line_error(tmp_path, capsys):
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace("quota: 5", "quota: many"))
    assert main(["serve", str(path)]) == 2
    assert capsys.readouterr().err == f"harness serve: error: {path}: quota: expected a positive integer, found 'many'\n"


# a failure other than the port's, on any free port: the default 8000 may be taken on the machine
ANY_PORT = ("--port", "0")


def _malformed_qrels(folder: Path) -> tuple[list[str], str]:
    qrels = folder / "bad.qrels"
    qrels.write_text("".join(Path(QRELS).read_text().splitlines(True)[:3]) + "9-1-1 0 only-three-fields\n")
    path = write_config(folder)
    config = yaml.safe_load(path.read_text())
    config["tasks"][0]["qrels"] = str(qrels)
    path.write_text(yaml.safe_dump(config))
    return [str(path), *ANY_PORT], f"{qrels}:4: expected 4 fields 'qid iter docid grade', found 3"


def _other_years_qrels(folder: Path) -> tuple[list[str], str]:
    """iKAT 2024's qrels on the 2023 topics: every run scored 0, and the board was a 500 for ever."""
    qrels = Path(QRELS).with_name("2024-qrels.txt")
    path = write_config(folder)
    config = yaml.safe_load(path.read_text())
    config["tasks"][0]["qrels"] = str(qrels)
    path.write_text(yaml.safe_dump(config))
    return [str(path), *ANY_PORT], (f"{path}: tasks[0].qrels: {qrels} judges none of the turns of ikat2023 (its "
                                    "first query '0_8', the topics' first turn '9-1_1'): give the topics' own qrels")


def _port_taken(folder: Path, taken: socket.socket) -> tuple[list[str], str]:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    return [str(write_config(folder)), "--port", str(port)], f"cannot listen on 127.0.0.1:{port}: Address already in use"


def _database_unreachable(folder: Path) -> tuple[list[str], str]:
    path = write_config(folder, database="postgresql://u:secret@127.0.0.1:1/db")  # nothing listens on port 1
    return [str(path), *ANY_PORT], "cannot connect to database postgresql://u:***@127.0.0.1:1/db: connection failed: "


@pytest.mark.parametrize("failure", ["malformed qrels", "another year's qrels", "port taken", "database unreachable"])
def test_a_failed_start_is_one_line_and_leaves_nothing_new_on_disk(tmp_path, capsys, failure):
    """Every input is checked before the database and the storage are made (a malformed qrels
    file left an empty database); what fails after they are made removes them again. The
    malformed qrels run as a process on 127.0.0.1, bounded: had the server started, the timeout
    stops it; the other two fail before uvicorn could start, in-process."""
    with socket.socket() as taken:
        args, message = {"malformed qrels": lambda: _malformed_qrels(tmp_path),
                         "another year's qrels": lambda: _other_years_qrels(tmp_path),
                         "port taken": lambda: _port_taken(tmp_path, taken),
                         "database unreachable": lambda: _database_unreachable(tmp_path)}[failure]()
        before = sorted(tmp_path.rglob("*"))
        if failure == "malformed qrels":
            done = subprocess.run([sys.executable, "-m", "harness.cli", "serve", *args], cwd=tmp_path, timeout=120,
                                  capture_output=True, text=True, env=child_env())
            code, err = done.returncode, done.stderr
        else:
            code, err = main(["serve", *args]), capsys.readouterr().err
    assert code == 2 and err.startswith(f"harness serve: error: {message}") and err.count("\n") == 1, err
    assert "secret" not in err and sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("database, message", [
    ("mysql://u:secret@127.0.0.1/db", "database: mysql is not supported (no driver for it is installed with the "
                                      "harness); supported: sqlite:///FILE and postgresql://USER:PASSWORD@HOST/DB"),
    ("postgresql+psycopg2://u:secret@127.0.0.1/db", "database: the postgresql+psycopg2 driver (psycopg2) is not "
                                                     "installed; supported: sqlite:///FILE and postgresql://"),
])
def test_a_database_without_an_installed_driver_is_a_config_error_at_database(tmp_path, capsys, database, message):
    path = write_config(tmp_path, database=database)
    assert main(["serve", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harness serve: error: {path}: {message}") and err.count("\n") == 1 and "secret" not in err


def test_a_database_that_cannot_be_reached_is_one_line_without_the_password(tmp_path, capsys):
    path = write_config(tmp_path, database="postgresql://u:secret@127.0.0.1:1/db")  # nothing listens on port 1
    assert main(["serve", str(path), *ANY_PORT]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness serve: error: cannot connect to database postgresql://u:***@127.0.0.1:1/db: ")
    assert "Connection refused" in err and err.count("\n") == 1 and "secret" not in err


def test_leaderboard_legend_explains_the_tiers_and_p_values_it_shows_not_compare_marks(server, tmp_path):
    client, _ = server
    for seed, team in ((70, "team0"), (71, "team1")):
        scored(client, post(client, trec_run(tmp_path / f"run{seed}.trec", seed=seed), team=team).json()["id"], team=team)
    page = client.get(f"/tasks/{TASK}").text
    legend = " ".join(re.search(r'<p class="legend">(.*?)</p>', page, re.S)[1].split())
    assert "▲" not in page and "baseline x" not in legend
    assert "green, the top run; yellow, not significantly different from it; white, significantly lower" in legend
    assert "p-values holm-corrected over the family of 7 comparisons" in legend  # 1 run x the preset's 7 measures
    api = client.get(f"/api/tasks/{TASK}/leaderboard").json()
    assert "▲" not in api["legend"]


def test_equal_means_share_a_rank_and_the_next_run_counts_them(server, tmp_path):
    """Two teams' copies of one run (the same scores, other tags) are ranked alike, not 1 and 2 by
    upload time; a third run is 3rd below them, or 1st above them (then they are both 2nd)."""
    client, _ = server
    for seed, tag, team in ((70, "copy-a", "team0"), (70, "copy-b", "team1"), (71, "other", "team0")):
        run = trec_run(tmp_path / f"{tag}.trec", seed=seed, tag=tag)
        assert scored(client, post(client, run, team=team).json()["id"], team=team)["status"] == "scored"
    rows = client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"]
    ranks = {row["run_name"]: row["rank"] for row in rows}
    assert ranks["copy-a"] == ranks["copy-b"] and sorted(ranks.values()) in ([1, 1, 3], [1, 2, 2])
    assert [row["rank"] for row in rows] == sorted(ranks.values())
    page = client.get(f"/tasks/{TASK}").text
    assert [int(rank) for rank in re.findall(r'<tr class="tier-[a-z]+"><td>(\d+)</td>', page)] == sorted(ranks.values())


@pytest.mark.parametrize("per_query_scores", [True, False])
def test_the_public_depth_plot_pools_depths_of_few_judged_turns_and_counts_them_only_where_scores_are_shown(
        tmp_path, per_query_scores):
    """A point of the public by-depth plot holds 10 judged turns or more (iKAT 2023 judges one turn
    at depths 18, 19 and 20: each such point was that turn's score for every listed run), deeper
    depths pooled with shallower ones; where teams see their means only, no depth's count is drawn."""
    from harness.report import breakdown as bd
    from harness.report.html import FEW_QUERIES
    from harness.serve.service import Depths
    from harness.trec import read_qrels as _read_qrels

    client, service = open_client(tmp_path, tasks=[{
        "name": TASK, "topics": "ikat2023", "qrels": str(QRELS), "measures": ["nDCG@5"], "main_measure": "nDCG@5",
        "formats": ["trec"], "per_query_scores": per_query_scores}])
    with client:
        ident = post(client, trec_run(tmp_path / "run.trec", seed=3)).json()["id"]
        assert scored(client, ident)["status"] == "scored"
        board = service.board(TASK)
    depth = board["depth"]
    judged = bd.depths_from_topics(service.tasks[TASK].conversations)
    by_depth = Counter(judged[qid] for qid in _read_qrels(QRELS).judgments)
    assert min(by_depth.values()) == 1  # what the plot pooled
    assert all(count >= FEW_QUERIES for count in depth.counts.values())
    assert sum(depth.counts.values()) == sum(by_depth.values()) and all(isinstance(g, Depths) for g in depth.groups)
    assert [g.first for g in depth.groups] == sorted(g.first for g in depth.groups)
    assert str(depth.groups[-1]).endswith(f"-{max(by_depth)}") and board["depth_counts"] is per_query_scores


def test_the_board_notes_judged_turns_without_a_grade_2_passage_under_its_legend(server, tmp_path):
    """20 of the 176 turns the task's qrels judge have no passage of grade 2: its rel=2 measures are
    0 there for every team, as `harness compare` and `harness run` say under their tables."""
    client, _ = server
    scored(client, post(client, trec_run(tmp_path / "run70.trec", seed=70)).json()["id"])
    said = ("20 of 176 judged queries have no judgment of grade >= 2: P(rel=2)@20, AP(rel=2)@1000, R(rel=2)@1000 "
            "and RR(rel=2) score 0 there for every run (AP(rel=2)@1000, R(rel=2)@1000 and RR(rel=2) can reach at "
            "most 0.8864)")
    assert client.get(f"/api/tasks/{TASK}/leaderboard").json()["notes"] == [said]
    assert client.get(f"/tasks/{TASK}").text.count(f'<p class="legend">{escape(said)}</p>') == 1

def test_a_board_of_one_run_says_it_has_no_test_in_a_whole_sentence(server, tmp_path):
    """With one run there is no comparison: the legend read 'no paired-t test on 176 queries:  A query ...'."""
    client, _ = server
    scored(client, post(client, trec_run(tmp_path / "run70.trec", seed=70)).json()["id"])
    legend = client.get(f"/api/tasks/{TASK}/leaderboard").json()["legend"]
    page = " ".join(re.search(r'<p class="legend">(.*?)</p>', client.get(f"/tasks/{TASK}").text, re.S)[1].split())
    said = ("no paired-t test on 176 queries: a single run, with no other run to test it against. "
            "A query missing from a run scores 0.")
    assert legend == said and page.endswith(f"Test: {said}"), legend


def test_a_run_compared_on_one_query_is_untested_not_tied(tmp_path):
    """One query has no spread to test against: its tier read 'tied', as if tested and found not different."""
    lines = QRELS.read_text().splitlines()
    one = tmp_path / "one.qrel"
    one.write_text("".join(f"{line}\n" for line in lines if line.split()[0] == lines[0].split()[0]))
    task = {"name": TASK, "title": "one query", "topics": "ikat2023", "qrels": str(one), "main_measure": "nDCG@5",
            "measures": ["nDCG@5"], "formats": ["trec"]}
    client, _ = open_client(tmp_path / "board", tasks=[task])
    with client:
        for seed, team in ((70, "team0"), (71, "team1")):
            scored(client, post(client, trec_run(tmp_path / f"run{seed}.trec", seed=seed), team=team).json()["id"],
                   team=team)
        rows = client.get(f"/api/tasks/{TASK}/leaderboard").json()["rows"]
        assert [(row["tier"], row["p_adjusted"]) for row in rows] == [("top", None), ("untested", None)]
        page = client.get(f"/tasks/{TASK}").text
    assert "not tested (one query)" in page and "grey, not tested" in page and "not significantly different<" not in page


def test_a_trec_run_missing_one_turn_is_warned_of_in_the_singular(server, tmp_path):
    from harness.topics import load

    client, _ = server
    judged = {line.split()[0] for line in QRELS.read_text().splitlines()}
    turns = [turn.qid for conversation in load("ikat2023").conversations for turn in conversation.turns]
    left_out = next(qid for qid in turns if qid in judged)
    run = tmp_path / "all-but-one.trec"
    run.write_text("".join(f"{qid} Q0 clueweb22-en0000-00-00000:0 1 1.0 r\n" for qid in turns if qid != left_out))
    body = scored(client, post(client, run).json()["id"])
    assert ("all-but-one.trec warning [coverage]: 1 turn has no results (judged: scored 0, as empty rankings)"
            in body["warnings"])


CURATED = qrels_root() / "cosrec" / "curated.qrels"  # 268 of cosrec-curated's 368 turns judged


def personalised_and_judged_turns() -> tuple[list[str], list[str]]:
    """CoSRec curated's 225 personalised recommendation turns (`<intent>#<k>`), and its 268 judged ones."""
    from harness.topics import load

    turns = [turn.qid for conversation in load("cosrec-curated").conversations for turn in conversation.turns]
    return [qid for qid in turns if "#" in qid], sorted({line.split()[0] for line in CURATED.read_text().splitlines()})


def coverage_warnings(tmp_path: Path, runs: dict[str, list[str]], **task: object) -> dict[str, list[str]]:
    """The [coverage] warnings a CoSRec curated task gives TREC runs {file name: the turns it answers}."""
    task = {"name": TASK, "title": "CoSRec curated", "topics": "cosrec-curated", "qrels": str(CURATED),
            "measures": ["nDCG@10"], "main_measure": "nDCG@10", "formats": ["trec"], **task}
    client, _ = open_client(tmp_path / "board", tasks=[task])
    said = {}
    with client:
        for name, qids in runs.items():
            run = tmp_path / name
            run.write_text("".join(f"{qid} Q0 B004OA2B22 1 1.0 r\n" for qid in qids))
            said[name] = [w for w in scored(client, post(client, run).json()["id"])["warnings"] if "[coverage]" in w]
    return said


def test_a_trec_run_s_missing_turns_are_said_scored_0_where_judged_and_not_scored_where_not(tmp_path):
    """Only judged turns are scored: the 100 unjudged ones a run of the judged turns leaves out were
    said "scored 0", and a run of the 225 personalised recommendation turns was told 143 turns score 0
    where 43 do (`harness eval`: '43 missing from the run (scored as empty rankings)')."""
    personalised, judged = personalised_and_judged_turns()
    assert coverage_warnings(tmp_path, {"judged.trec": judged, "personalised.trec": personalised}) == {
        "judged.trec": ["judged.trec warning [coverage]: 100 turns have no results (not judged: not scored)"],
        "personalised.trec": ["personalised.trec warning [coverage]: 143 turns have no results: 43 judged (scored 0, "
                              "as empty rankings), 100 not judged (not scored)"]}


def test_a_task_showing_means_only_counts_missing_turns_among_all_its_turns(tmp_path):
    """With `per_query_scores: false`, which of its missing turns are judged would tell a team which
    turns the hidden qrels judge (as a response task's coverage would tell which have nuggets)."""
    personalised, _ = personalised_and_judged_turns()
    assert coverage_warnings(tmp_path, {"personalised.trec": personalised}, per_query_scores=False) == {
        "personalised.trec": ["personalised.trec warning [coverage]: 143 turns have no results (a judged turn "
                              "scores 0)"]}


def test_a_server_url_that_is_not_one_is_said_before_anything_is_sent(tmp_path, capsys):
    run = trec_run(tmp_path / "run.trec", seed=1)
    assert main(["submit", "--server", "http://", "--token", "t", "--task", TASK, str(run)]) == 2
    assert capsys.readouterr().err == ("harness submit: error: --server 'http://': the URL names no host: give the "
                                       "server's URL, such as http://127.0.0.1:8000 (`harness submit --help` lists the options)\n")
    assert main(["submit", "--server", "127.0.0.1:8000", "--token", "t", "--task", TASK, str(run)]) == 2
    assert "--server '127.0.0.1:8000': not an http:// or https:// URL" in capsys.readouterr().err
    assert main(["submit", "--server", "http://127.0.0.1:8000/api/", "--token", "t", "--task", TASK, str(run)]) == 2
    assert "--server 'http://127.0.0.1:8000/api/': the URL names the server's API, not the server: give the " \
           "server's URL" in capsys.readouterr().err  # the upload went to no route, which answered 413


def test_a_token_a_header_cannot_carry_is_said_before_anything_is_sent(tmp_path, capsys):
    """A token pasted from an e-mail with a curly quote, or with a line break, is one line naming
    --token and the character; nothing needs to listen at --server."""
    run = trec_run(tmp_path / "run.trec", seed=1)
    for token, said in (("tok\u2019", "'\u2019' (U+2019)"), ("t\u00e9", "'\u00e9' (U+00E9)"),
                        ("a\nb", "'\\n' (U+000A)")):
        assert main(["submit", "--server", "http://127.0.0.1:1", "--token", token, "--task", TASK, str(run)]) == 2
        assert capsys.readouterr().err == (
            f"harness submit: error: --token: holds {said}, which an HTTP header cannot carry: give the token as the "
            "organisers sent it (harness serve --new-token makes tokens of ASCII letters, digits, - and _) "
            "(`harness submit --help` lists the options)\n")


def test_warnings_past_the_200_kept_are_counted_by_the_last_and_by_submit():
    """A run without PTKB provenance draws a warning a turn: 332 are 200 kept and one saying so,
    and `submit --wait` says 327 more, not 195."""
    from harness.serve.cli_submit import _print_warnings
    from harness.serve.service import kept_warnings

    kept = kept_warnings([f"turn {i}: no PTKB provenance" for i in range(332)])
    assert len(kept) == 201 and kept[-1] == "... and 132 more warnings, not kept"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _print_warnings(kept, "abc")
    assert err.getvalue().splitlines()[-1] == "warning: ... and 327 more (GET /api/submissions/abc lists the first 200)"


@pytest.mark.parametrize("timeout", ["nan", "-1", "0", "soon"])
def test_a_wait_timeout_that_is_no_positive_number_is_a_usage_error(tmp_path, capsys, timeout):
    """--timeout nan or -1 sent the run, then said at once that it 'was not scored within nan s'."""
    run = trec_run(tmp_path / "run.trec", seed=1)
    with pytest.raises(SystemExit) as stop:
        main(["submit", "--server", "http://127.0.0.1:1", "--token", "t", "--task", TASK, str(run), "--wait",
              "--timeout", timeout])
    assert stop.value.code == 2 and "--timeout: " in capsys.readouterr().err
