"""The leaderboard as an organiser runs it through a season: what its log says, what its public
board says of runs it does not rank, what a browser and an uptime monitor are answered, and
withdrawing runs. One test per rule; in-process (TestClient) unless the rule is about the server
process (HEAD's empty body is uvicorn's)."""

from __future__ import annotations

import logging
import socket

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install -e '.[serve]')")

from harness.cli import main  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.serve import store as st  # noqa: E402
from harness.serve.cli_submit import _wait  # noqa: E402
from tests.serve_support import TASK, ServerProcess, team_token, trec_run, write_config  # noqa: E402
from tests.test_serve_api import (  # noqa: E402
    SUBMIT, auth, login, login_csrf, open_client, post, scored, stale_row)

pytestmark = pytest.mark.server
BOARD = f"/api/tasks/{TASK}/leaderboard"


def serve_log(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "harness.serve"]


# --- the organisers' log -------------------------------------------------------------------


def test_each_refused_upload_is_a_log_line_naming_its_team_task_and_why(tmp_path, caplog):
    """The log held uvicorn's access lines alone ('POST ... 422'): no team, no task, no reason."""
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path, quota=1, rejects_per_hour=2, max_upload_mb=1)
    broken = tmp_path / "broken.trec"
    broken.write_text("9-1_1 Q0 doc one 1.0 tag\n")
    big = tmp_path / "big.trec"
    big.write_bytes(b"x" * ((1 << 20) + 100))  # over the file's limit, within the form's slack
    with client:
        assert [post(client, path).status_code for path in (broken, big)] == [422, 413]
        assert post(client, broken).status_code == 429  # 2 refused in the hour
        assert post(client, trec_run(tmp_path / "r0.trec", seed=10), team="team1").status_code == 202
        assert post(client, trec_run(tmp_path / "r1.trec", seed=11), team="team1").status_code == 429  # the quota
        with broken.open("rb") as handle:
            client.post("/api/tasks/nope/submissions", headers=auth("team1"), files={"file": handle})
    refused = [line for line in serve_log(caplog) if " refused " in line]
    assert refused == [
        "upload of team team0 for task 'ikat2023' from testclient refused (422): broken.trec is not a valid run for "
        "ikat2023: 1 error; first: broken.trec:1 [trec]: rank 'one' is not an integer: line 1 looks like a header "
        "row ('9-1_1 Q0 doc one 1.0 tag'); TREC run files have none: delete it",
        "upload of team team0 for task 'ikat2023' from testclient refused (413): the file is larger than the 1 MiB "
        "allowed",
        "upload of team team0 for task 'ikat2023' from testclient refused (429): team team0 had 2 uploads refused in "
        "the last hour; try again in 60 min",
        "upload of team team1 for task 'ikat2023' from testclient refused (429): team team1 has used its 1 uploads "
        "today (UTC) across all tasks",
        "upload of team team1 for task 'nope' from testclient refused (404): no task 'nope'",
    ]
    assert team_token("team0") not in caplog.text and team_token("team1") not in caplog.text


def test_a_body_refused_before_it_is_read_is_logged_with_its_address(tmp_path, caplog):
    """A Content-Length over the limit is answered before any token is read: the address says who."""
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path, max_upload_mb=1)
    with client:
        assert client.post(SUBMIT, headers=auth(), files={"file": ("big.trec", b"x" * (3 << 20))}).status_code == 413
    assert serve_log(caplog)[-1] == (f"POST {SUBMIT} from testclient refused (413): the request body is larger than "
                                     "the 2 MiB allowed here (a file of at most 1 MiB, and its form)")


def test_wrong_tokens_and_the_lockout_they_earn_are_logged_by_address_never_the_token(tmp_path, caplog):
    """A team mailing "I am locked out" could not be checked from the log."""
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path)
    wrong = {"Authorization": "Bearer wrong-token-4567"}
    with client:
        assert [client.get("/api/submissions/x", headers=wrong).status_code for _ in range(6)] == [401] * 5 + [429]
        assert client.get("/api/submissions/x").status_code == 429
    assert serve_log(caplog) == [
        *(f"GET /api/submissions/x from testclient: a wrong token ({n} in a row from this address; after 5 it must "
          "wait, longer after each)" for n in range(1, 6)),
        "GET /api/submissions/x from testclient refused (429): locked out for wrong tokens for 1 s more",
        "GET /api/submissions/x from testclient refused (429): locked out for wrong tokens for 1 s more",
    ]
    assert "wrong-token-4567" not in caplog.text


def test_logins_and_logouts_are_logged_with_the_team_and_address(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path)
    with client:
        csrf = login(client, "team1")
        assert client.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert serve_log(caplog) == ["team team1 logged in from testclient", "team team1 logged out from testclient"]


# --- the public board ----------------------------------------------------------------------


def test_a_board_whose_only_run_is_held_off_it_says_so_not_only_that_none_is_scored(tmp_path):
    """'No scored runs yet.' alone read as 'nobody has submitted' on a board whose run went stale."""
    client, service = open_client(tmp_path)
    page = client.get(f"/tasks/{TASK}").text
    assert "No scored runs yet." in page and 'id="unranked"' not in page  # nobody submitted: nothing more to say
    service.store.close()
    stale_row(tmp_path)
    client, _ = open_client(tmp_path)  # no lifespan: no start's rescoring, no worker
    page = client.get(f"/tasks/{TASK}").text
    assert "No scored runs yet." in page
    assert ('<p id="unranked">Not ranked: 1 run held off the board until scored again with the task&#39;s current '
            "settings.</p>") in page
    assert client.get(BOARD).json()["unranked"] == {"queued": 0, "stale": 1, "failed": 0, "withdrawn": 0}


# --- browsers and monitors -----------------------------------------------------------------


def test_a_refusal_a_browser_s_form_meets_is_a_page_not_json(tmp_path):
    """The guard's 413, 403 and 429 reached the submit and login forms as raw JSON."""
    client, _ = open_client(tmp_path, max_upload_mb=1, rejects_per_hour=1)
    broken = ("broken.trec", b"9-1_1 Q0 doc one 1.0 tag\n")
    with client:
        csrf = login(client)
        answers = {
            "over the limit": client.post("/submit", data={"task": TASK, "csrf": csrf},
                                          files={"file": ("big.trec", b"x" * (3 << 20))}),
            "no csrf": client.post("/submit", data={"task": TASK}, files={"file": broken}),
            "refused once": client.post("/submit", data={"task": TASK, "csrf": csrf}, files={"file": broken}),
            "rejects": client.post("/submit", data={"task": TASK, "csrf": csrf}, files={"file": broken}),
            "cross-site login": client.post("/login", data={"token": team_token("team0"), "csrf": login_csrf(client)},
                                            headers={"Origin": "http://evil.example"}),
        }
    says = {
        "over the limit": (413, "the request body is larger than the 2 MiB allowed here"),
        "no csrf": (403, "missing or wrong CSRF token; reload the page and try again"),
        "refused once": (422, "broken.trec is not a valid run for ikat2023"),
        "rejects": (429, "team team0 had 1 uploads refused in the last hour"),
        "cross-site login": (403, "cross-site form refused"),
    }
    for case, (status, detail) in says.items():
        answer = answers[case]
        assert answer.status_code == status, case
        assert answer.headers["content-type"].startswith("text/html"), case
        assert 'id="errors">' in answer.text and detail in answer.text, case
    assert 'action="/submit"' in answers["no csrf"].text and 'action="/login"' in answers["cross-site login"].text
    assert int(answers["rejects"].headers["retry-after"]) > 3000  # kept on the page


def test_a_page_route_s_refusal_is_a_page_for_a_browser_and_json_for_a_script(tmp_path):
    client, _ = open_client(tmp_path)
    page = client.get("/tasks/nope", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 404 and 'id="errors">no task &#39;nope&#39;<' in page.text
    assert '<a href="/">Back to the leaderboards</a>' in page.text
    script = client.get("/tasks/nope")
    assert (script.status_code, script.json()) == (404, {"detail": "no task 'nope'"})
    api = client.get("/api/tasks/nope/leaderboard", headers={"Accept": "text/html"})  # the API is JSON, asked or not
    assert (api.status_code, api.json()) == (404, {"detail": "no task 'nope'"})


def test_the_submit_form_without_a_file_says_so_to_a_browser_user(tmp_path):
    """It said to send 'the multipart field file', an API client's words."""
    client, _ = open_client(tmp_path)
    with client:
        csrf = login(client)
        answer = client.post("/submit", data={"task": TASK, "csrf": csrf}, files={"other": ("x", b"x")})
    assert answer.status_code == 422 and "no file: choose the run file to upload" in answer.text


def _raw(port: int, method: str, path: str) -> tuple[bytes, bytes]:
    """A request's answer as sent: its head and its body, read to the connection's close."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := connection.recv(1 << 16):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.slow
def test_head_of_the_public_pages_answers_as_get_without_a_body(tmp_path):
    """Uptime monitors ask HEAD: / and /tasks/<task> answered 405."""
    with ServerProcess(write_config(tmp_path)) as server:
        for path in ("/", f"/tasks/{TASK}", "/health", "/api/tasks", BOARD):
            head, body = _raw(server.port, "HEAD", path)
            got, got_body = _raw(server.port, "GET", path)
            assert head.startswith(b"HTTP/1.1 200 ") and body == b"", path
            length = next(line for line in got.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            assert length in head.split(b"\r\n") and int(length.split(b":")[1]) == len(got_body), path


# --- what a description may hold -------------------------------------------------------------


def test_a_description_that_is_not_text_is_422_naming_the_field_and_latin1_is_read_as_such(tmp_path):
    """A UTF-16 description was stored as 'ÿþ' and NULs (read as Latin-1) and shown on the public
    board. Text that is not UTF-8 is read as Latin-1 (the form parser's reading), as documented."""
    client, service = open_client(tmp_path)
    run = trec_run(tmp_path / "run.trec", seed=2)

    def upload(description: bytes):
        return client.post(SUBMIT, headers=auth(), files={"file": (run.name, run.read_bytes()),
                                                          "description": (None, description)})

    answer = upload("ours".encode("utf-16"))
    assert (answer.status_code, answer.json()["detail"]) == (422, (
        "description: holds the control character U+0000 (character 4), which is no text: send it as UTF-8 (text "
        "in another encoding, such as UTF-16 or Windows-1252, is read as Latin-1)"))
    assert [p for p in service.store.storage.rglob("*") if p.is_file()] == []
    assert upload("“ours”".encode("cp1252")).status_code == 422  # its quotes are C1 controls in Latin-1
    answer = upload("BM25, réglé".encode("latin-1"))
    assert answer.status_code == 202
    assert client.get(f"/api/submissions/{answer.json()['id']}", headers=auth()).json()["description"] == "BM25, réglé"
    service.store.close()


# --- the roster through a season --------------------------------------------------------------


def test_a_team_is_its_token_renamed_it_keeps_its_runs_and_a_new_team_of_its_old_name_starts_empty(tmp_path, caplog):
    """Renaming a team in `teams:` left its runs under the old name, out of its token's reach, and
    a new team given the old name owned them, their per-query scores and its quota."""
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path, quota=1)
    run = trec_run(tmp_path / "run.trec", seed=2)
    with client:
        ident = post(client, run, team="team1").json()["id"]
        assert scored(client, ident, team="team1")["status"] == "scored"
    client, _ = open_client(tmp_path, quota=1, roster={"team0": "team0", "team1-smith": "team1", "team1": "newcomer"})
    with client:
        body = client.get(f"/api/submissions/{ident}", headers=auth("team1")).json()
        assert body["team"] == "team1-smith" and body["per_query"]
        assert client.get(f"/api/submissions/{ident}", headers=auth("newcomer")).status_code == 404
        assert [row["team"] for row in client.get(BOARD).json()["rows"]] == ["team1-smith"]
        assert post(client, run, team="team1").json() == {"id": ident, "status": "duplicate"}
        assert post(client, trec_run(tmp_path / "new.trec", seed=3), team="newcomer").status_code == 202  # its quota
    assert "team team1 is now team1-smith (teams: gives its token that name): its submissions, scores and quota are " \
           "team1-smith's" in serve_log(caplog)
    assert not any("another token" in line for line in serve_log(caplog))  # the new team1 is no team1 of before


def test_a_team_given_a_new_token_keeps_its_runs_and_the_old_token_s_browser_sessions_end(tmp_path, caplog):
    """A lost token replaced under the same name: its runs stay its own; a browser logged in with
    the old token (whoever holds it) is logged in no more."""
    caplog.set_level(logging.INFO, logger="harness.serve")
    client, _ = open_client(tmp_path)
    with client:
        login(client, "team1")
        ident = post(client, trec_run(tmp_path / "run.trec", seed=2), team="team1").json()["id"]
        assert client.get("/team", follow_redirects=False).status_code == 200
        cookies = dict(client.cookies)
    client, _ = open_client(tmp_path, roster={"team0": "team0", "team1": "team1-again"})
    client.cookies.update(cookies)
    with client:
        assert client.get(f"/api/submissions/{ident}", headers=auth("team1-again")).json()["team"] == "team1"
        assert client.get("/team", follow_redirects=False).status_code == 303  # to /login
    assert any(line.startswith("team team1 has another token than at the last start") for line in serve_log(caplog))


def test_a_start_whose_teams_give_one_team_s_token_to_another_with_runs_is_refused(tmp_path):
    client, _ = open_client(tmp_path)
    with client:
        for seed, team in ((2, "team0"), (3, "team1")):
            assert post(client, trec_run(tmp_path / f"r{seed}.trec", seed=seed), team=team).status_code == 202
    client, _ = open_client(tmp_path, roster={"team0": "team1", "team1": "team0"})  # the tokens swapped
    with pytest.raises(HarnessError, match=r"^teams: team1 has the token team team0 had at the last start, but team1 "
                                           r"is a team of its own \(with submissions, or renamed too\): a team is its "
                                           "token"):
        with client:
            pass


# --- withdrawing runs ----------------------------------------------------------------------


def test_an_organiser_withdraws_a_run_kept_in_the_database_off_the_board_its_team_told(tmp_path, capsys):
    """No way to pull a buggy run was there: a season always has a team asking for one."""
    config = write_config(tmp_path)
    client, service = open_client(tmp_path)  # no lifespan: scored here, one at a time
    run = trec_run(tmp_path / "run.trec", seed=2)
    ident = post(client, run).json()["id"]
    post(client, trec_run(tmp_path / "other.trec", seed=3), team="team1")
    assert service.score_next() and service.score_next()
    before = scored(client, ident)
    service.store.close()
    assert main(["serve", str(config), "--withdraw", ident, "--reason", "a bug in\nits ranker"]) == 0
    assert capsys.readouterr().out == (f"withdrew submission {ident} of team team0 for task {TASK} (trec-2): a bug in "
                                       "its ranker\n")
    client, service = open_client(tmp_path)
    with client:
        body = client.get(f"/api/submissions/{ident}", headers=auth()).json()
        assert (body["status"], body["error"]) == ("withdrawn", "withdrawn by the organisers: a bug in its ranker")
        assert body["measures"] == before["measures"]  # kept
        board = client.get(BOARD).json()
        assert [row["run_name"] for row in board["rows"]] == ["trec-3"] and board["unranked"]["withdrawn"] == 1
        assert post(client, run).json() == {"id": ident, "status": "duplicate"}  # the same file does not bring it back
        assert scored(client, ident)["status"] == "withdrawn"
        client.headers.update(auth())
        with pytest.raises(HarnessError, match=f"submission {ident} is not on the board: withdrawn by the organisers"):
            _wait(client, ident, 5)
    with service.store.session() as session:
        events = [(row.event, row.detail) for row in session.scalars(st.select(st.Audit))]
    assert ("withdrawn", f"{ident}: a bug in its ranker") in events


def test_a_team_taken_off_the_config_has_its_runs_withdrawn_by_name(tmp_path, capsys):
    """Its runs stayed on the public board, where the team, its token gone, could not even see them."""
    client, _ = open_client(tmp_path)
    with client:
        idents = [post(client, trec_run(tmp_path / f"r{seed}.trec", seed=seed), team="team1").json()["id"]
                  for seed in (2, 3)]
    config = write_config(tmp_path, teams=1)  # team1 taken off
    assert main(["serve", str(config), "--withdraw-team", "team1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"withdrew submission {ident} of team team1 for task {TASK} (trec-{seed})"
        for ident, seed in zip(idents, (2, 3))]
    assert main(["serve", str(config), "--withdraw-team", "team1"]) == 0
    assert capsys.readouterr().out == "nothing withdrawn: every submission named was withdrawn already\n"
    client, _ = open_client(tmp_path, teams=1)
    with client:
        assert client.get(BOARD).json()["unranked"]["withdrawn"] == 2


def test_withdrawing_an_unknown_submission_is_one_line_and_withdraws_nothing(tmp_path, capsys):
    client, service = open_client(tmp_path)
    ident = post(client, trec_run(tmp_path / "run.trec", seed=2)).json()["id"]
    service.store.close()
    assert main(["serve", str(write_config(tmp_path)), "--withdraw", ident, "--withdraw", "0123abcd"]) == 2
    assert capsys.readouterr().err == ("harness serve: error: no submission has the id '0123abcd' (a submission's id "
                                       "is the one its upload's 202 and the log's 'accepted submission' line give)\n")
    client, service = open_client(tmp_path)
    assert service.submission(ident).status == "queued"
    service.store.close()
