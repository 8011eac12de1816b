"""A leaderboard that can be put on the internet: the cost of every request bounded, safe
defaults. One test per rule of issue 28; in-process (TestClient) unless the rule is about the
process (slow clients, logs, two processes, a second start). Runs from the shipped iKAT 2023
topics and qrels."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import extra

extra("fastapi", "serve")

import yaml  # noqa: E402

from harness.cli import main  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.runner.config import Node  # noqa: E402
from harness.serve import service as service_module  # noqa: E402
from harness.serve import store as st  # noqa: E402
from harness.serve.config import load_serve_config  # noqa: E402
from harness.serve.service import Service  # noqa: E402
from tests.serve_support import (  # noqa: E402
    TASK, ServerProcess, Upload, postgres, submit_concurrently, team_token, trec_run, wait_scored, write_config,  # noqa: F401
)
from tests.test_serve_api import SUBMIT, auth, login_csrf, open_client, post, scored  # noqa: E402

pytestmark = pytest.mark.server


@pytest.fixture
def server(tmp_path):
    client, service = open_client(tmp_path, max_upload_mb=4)
    with client:
        yield client, service


def upload_bytes(client, data: bytes, team: str = "team0", name: str = "run.json"):
    return client.post(SUBMIT, headers=auth(team), files={"file": (name, data)})


def audit_events(service: Service) -> list[str]:
    with service.store.session() as session:
        return [row.event for row in session.scalars(st.select(st.Audit))]


# --- one upload cannot take the server down ------------------------------------------------


def test_body_limit_is_enforced_while_reading_a_chunked_upload(server):
    client, service = server
    boundary = b"harness-chunked"

    def body():  # no Content-Length: 6 MiB in 64 KiB chunks against a 4 MiB limit (+1 MiB slack)
        yield b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="r.trec"\r\n\r\n'
        for _ in range(96):
            yield b"x" * (64 << 10)

    answer = client.post(SUBMIT, headers={**auth(), "Content-Type": f"multipart/form-data; boundary={boundary.decode()}"},
                         content=body())
    assert answer.status_code == 413 and "5 MiB allowed here" in answer.json()["detail"]
    assert [p for p in service.store.storage.rglob("*") if p.is_file()] == []


def test_login_body_is_limited_chunked_or_not(server):
    client, _ = server
    big = {"token": "x" * (100 << 10), "csrf": login_csrf(client)}
    assert client.post("/login", data=big).status_code == 413
    chunks = (b"token=" + b"x" * (32 << 10) for _ in range(4))
    answer = client.post("/login", content=chunks, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 413 and 'id="errors">the request body is larger than the 64 KiB' in answer.text


@pytest.mark.parametrize(("payload", "message"), [
    (b"[" * 200_000 + b"]" * 200_000, "nested more than "),
    (b'{"run_name": "r", "turns": [], "n": ' + b"7" * 100_000 + b"}", "an integer of 100000 digits"),
])
def test_deep_nesting_and_huge_integers_are_422_with_an_audit_row(server, payload, message):
    client, service = server
    answer = upload_bytes(client, payload)
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["check"] == "json" and message in answer.json()["errors"][0]["message"]
    assert audit_events(service) == ["rejected"]


def test_json_beyond_what_the_topics_need_is_refused_in_one_error_before_decoding(server):
    client, _ = server
    turns = upload_bytes(client, json.dumps({"run_name": "r", "run_type": "automatic", "turns": [{}] * 1000}).encode())
    assert turns.status_code == 422
    assert turns.json()["errors"] == [{"level": "error", "check": "turn-count", "file": "run.json", "line": None,
                                       "turn": None, "message": "1000 turns, more than twice the 332 turns of the "
                                                                "task's topics"}]
    empty_objects = b'{"turns": [' + b"{}," * 700_000 + b"{}]}"  # 2.1 MB: 700k objects for 332 turns
    answer = upload_bytes(client, empty_objects)
    assert answer.status_code == 422 and [e["check"] for e in answer.json()["errors"]] == ["size"]
    assert "more than the 664000 a run of 332 turns x 1000 results could hold" in answer.json()["errors"][0]["message"]


def test_findings_are_capped_per_check_at_what_is_returned(server):
    client, _ = server
    turns = [{"turn_id": f"99-{i}_1", "responses": []} for i in range(600)]  # 600 unknown turns
    answer = upload_bytes(client, json.dumps({"run_name": "r", "run_type": "automatic", "turns": turns}).encode())
    assert answer.status_code == 422
    body = answer.json()
    assert len(body["errors"]) == 200 and int(body["detail"].split(": ")[1].split()[0]) <= 201 * 4


def test_refused_uploads_are_rate_limited_per_team_and_per_address(tmp_path):
    client, _ = open_client(tmp_path, teams=3, rejects_per_hour=2)
    with client:
        bad = b"not a run\n"
        assert [upload_bytes(client, bad, name="r.trec").status_code for _ in range(3)] == [422, 422, 429]
        refused = upload_bytes(client, bad, team="team0")
        assert "team team0 had 2 uploads refused in the last hour" in refused.json()["detail"]
        assert int(refused.headers["retry-after"]) > 3000
        # other teams from the same address: the address allows twice a team's rate
        assert [upload_bytes(client, bad, team="team1").status_code for _ in range(2)] == [422, 422]
        assert "your address had 4 uploads refused" in upload_bytes(client, bad, team="team2").json()["detail"]


def test_concurrent_validations_are_bounded(server, tmp_path, monkeypatch):
    client, service = server
    runtime = service.tasks[TASK]
    check, running, most = runtime.check, [0], [0]
    lock = threading.Lock()

    def counted(*args):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        try:
            return check(*args)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(runtime, "check", counted)
    runs = [trec_run(tmp_path / f"r{i}.trec", seed=100 + i) for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda run: post(client, run, team=f"team{runs.index(run) % 2}"), runs))
    assert [a.status_code for a in answers] == [202] * 6
    assert most[0] == service_module.VALIDATIONS == 2


def test_public_board_is_built_once_per_change(server, tmp_path, monkeypatch):
    client, _ = server
    builds = []
    build = service_module._board
    monkeypatch.setattr(service_module, "_board", lambda *args: builds.append(1) or build(*args))
    for team, seed in (("team0", 1), ("team1", 2)):
        scored(client, post(client, trec_run(tmp_path / f"{team}.trec", seed=seed), team=team).json()["id"], team)
    builds.clear()
    with ThreadPoolExecutor(10) as pool:
        pages = list(pool.map(lambda _: client.get(f"/tasks/{TASK}"), range(10)))
    assert {page.status_code for page in pages} == {200} and len(builds) <= 1
    assert all("trec-1" in page.text and "trec-2" in page.text for page in pages)


def test_wrong_tokens_from_one_address_back_off(server):
    client, _ = server
    wrong = {"Authorization": "Bearer guess"}
    assert [client.get("/api/submissions/x", headers=wrong).status_code for _ in range(5)] == [401] * 5
    blocked = client.get("/api/submissions/x", headers=wrong)
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
    assert client.get("/api/submissions/x", headers=auth()).status_code == 429  # not even looked up meanwhile
    answer = client.post("/login", data={"token": "guess", "csrf": login_csrf(client)})
    assert answer.status_code == 429 and "too many wrong tokens from your address" in answer.text


def test_per_query_scores_can_be_turned_off_per_task(tmp_path):
    path = write_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["tasks"][0]["per_query_scores"] = False
    path.write_text(yaml.safe_dump(config))
    service = Service(load_serve_config(path))
    from fastapi.testclient import TestClient

    from harness.serve.app import create_app

    with TestClient(create_app(service)) as client:
        body = scored(client, post(client, trec_run(tmp_path / "r.trec", seed=3)).json()["id"])
    assert body["status"] == "scored" and body["measures"]["nDCG@5"] > 0 and body["per_query"] is None


# --- safe defaults ---------------------------------------------------------------------------


def test_files_are_private_and_a_planted_link_is_replaced_not_followed(server, tmp_path):
    client, service = server
    run = trec_run(tmp_path / "run.trec", seed=9)
    digest = st.hashlib.sha256(run.read_bytes()).hexdigest()
    secret = tmp_path / "secret.trec"
    secret.write_text("a file the server did not write\n")
    service.store.file(digest).symlink_to(secret)
    ident = post(client, run).json()["id"]
    assert scored(client, ident)["status"] == "scored"
    stored = service.store.file(digest)
    assert not stored.is_symlink() and stored.read_bytes() == run.read_bytes()
    assert secret.read_text() == "a file the server did not write\n"
    database = service.config.database.removeprefix("sqlite:///")
    for path, mode in ((stored, 0o600), (database, 0o600), (os.path.dirname(database), 0o700),
                       (service.store.storage, 0o700), (service.store.incoming, 0o700)):
        assert stat.S_IMODE(os.stat(path).st_mode) == mode, path


def test_a_second_server_on_the_same_sqlite_database_refuses_to_start(tmp_path, capsys):
    path = write_config(tmp_path)
    first = Service(load_serve_config(path))
    try:
        assert main(["serve", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("harness serve: error: another harness serve is running on ") and err.count("\n") == 1
        assert "with SQLite one process serves a database, with PostgreSQL several may" in err
    finally:
        first.store.close()
    second = Service(load_serve_config(path))  # free again once the first closed
    try:
        with pytest.raises(HarnessError, match="another harness serve is running"):  # in-process too
            Service(load_serve_config(path))
    finally:
        second.store.close()


def test_an_upload_in_flight_in_another_process_survives_a_start(tmp_path):
    first = st.Store(f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "files")
    with trec_run(tmp_path / "r.trec", seed=4).open("rb") as upload:
        received = first.receive(upload, 1 << 20)
    (first.incoming / "left-by-a-kill.part").write_bytes(b"half")
    second = st.Store(f"sqlite:///{tmp_path / 'b.db'}", tmp_path / "files")  # PostgreSQL: one storage, two processes
    assert second.discard_incomplete() == 1
    assert [p.name for p in first.incoming.iterdir()] == [received.path.name]
    received.done()
    first.close()
    second.close()


def test_demo_token_is_refused_off_loopback(tmp_path, capsys):
    path = write_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["teams"][0]["token_sha256"] = st.sha256_hex("demo-token-replace-me")
    path.write_text(yaml.safe_dump(config))
    assert main(["serve", str(path), "--host", "0.0.0.0"]) == 2
    assert capsys.readouterr().err == (
        "harness serve: error: team team0 has the demo token 'demo-token-replace-me', which anyone can read in the "
        "README: give it its own (harness serve --new-token) before listening on 0.0.0.0\n")


def test_scoring_failure_is_logged_as_failed_not_scored(tmp_path, caplog):
    client, service = open_client(tmp_path)  # no lifespan: no worker, scored by hand below
    service.tasks[TASK].prepare(Node(tmp_path / "leaderboard.yaml", "tasks[0]", None))
    ident = post(client, trec_run(tmp_path / "r.trec", seed=5)).json()["id"]
    service.store.file(service.submission(ident).sha256).unlink()
    caplog.set_level(logging.INFO, logger="harness.serve")
    assert service.score_next()
    assert service.submission(ident).status == "failed"
    [logged] = [r.getMessage() for r in caplog.records]  # with the message: the log is the organisers'
    assert logged.startswith(f"scoring submission {ident} failed: FileNotFoundError: [Errno 2] No such file")
    service.store.close()


# --- as a process ------------------------------------------------------------------------------


def closed_without_an_answer(connection: socket.socket, within: float) -> bool:
    """Send a byte every 0.5 s (which does not keep it open) until the server closes it."""
    connection.settimeout(0.5)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            connection.sendall(b"X")
            return connection.recv(100) == b""  # closed (b"") or answered (anything else)
        except socket.timeout:
            continue
        except OSError:  # reset or broken pipe: closed
            return True
    return False


def _listening_on(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} writes them) of the sockets listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    found.append(local.rsplit(":", 1)[0])
    return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads listening sockets from Linux's /proc/net/tcp")
def test_the_server_listens_on_loopback_alone_unless_told_a_host(tmp_path):
    """A board's hidden qrels stay off the network by default: `harness serve` without --host
    listens on 127.0.0.1 alone, and says so."""
    with ServerProcess(write_config(tmp_path)) as server:
        assert _listening_on(server.port) == ["0100007F"]  # 127.0.0.1, little-endian; no 0.0.0.0, no ::
    assert f"on http://127.0.0.1:{server.port}/" in server.log.read_text()


@pytest.mark.slow
def test_slow_clients_are_timed_out(tmp_path):
    with ServerProcess(write_config(tmp_path, client_timeout_s=1)) as server:
        head = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        head.sendall(b"GET /health HTTP/1.1\r\n")
        assert closed_without_an_answer(head, within=5)
        body = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        body.sendall(f"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                     f"Content-Type: application/x-www-form-urlencoded\r\n\r\ntoken=".encode())
        assert body.recv(1000).startswith(b"HTTP/1.1 408 ")
        import httpx

        assert httpx.get(f"{server.url}/health", timeout=5).text == "ok"


def test_a_score_that_is_no_number_is_refused_at_once_however_long_and_the_board_keeps_answering(tmp_path):
    """Checking a score takes time linear in its length: a line as long as a board takes, its score
    a run of digits ending in a letter (a minute or more of backtracking for the score pattern that
    tried every split of the digits, the event loop held), gets its 422 well within the timeout,
    and the board answers others meanwhile."""
    import httpx

    from harness.serve.tasks import MAX_TREC_LINE

    head, tail = b"10-1_1 Q0 clueweb22-en0000-00-00000:0 1 ", b"x tag\n"
    line = head + b"9" * (MAX_TREC_LINE - len(head) - len(tail)) + tail
    with ServerProcess(write_config(tmp_path)) as server, ThreadPoolExecutor(1) as pool:
        upload = pool.submit(httpx.post, f"{server.url}{SUBMIT}", headers=auth(), timeout=30,
                             files={"file": ("long.trec", line)})
        assert httpx.get(f"{server.url}/health", timeout=30).text == "ok"
        answer = upload.result()
    assert answer.status_code == 422 and "is not a number" in answer.json()["errors"][0]["message"]


@pytest.mark.slow
def test_logs_are_clean_no_traceback_on_a_client_drop_and_tokens_redacted(tmp_path):
    run = trec_run(tmp_path / "r.trec", seed=6, depth=200).read_bytes()
    with ServerProcess(write_config(tmp_path)) as server:
        dropped = socket.create_connection(("127.0.0.1", server.port))
        dropped.sendall(f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {team_token('team0')}\r\n"
                        f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {len(run) + 200}\r\n\r\n"
                        f"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"r\"\r\n\r\n".encode()
                        + run[: len(run) // 2])
        time.sleep(0.5)
        dropped.close()
        import httpx

        httpx.get(f"{server.url}/tasks/{TASK}?token=secret-in-the-url", timeout=10)
        time.sleep(1)
    log = server.log.read_text()
    assert "Traceback" not in log and "the client went away before sending the whole request" in log
    assert "secret-in-the-url" not in log and "token=***" in log


@pytest.mark.slow
def test_two_processes_on_postgresql_share_the_quota_and_score_each_run_once(postgres, tmp_path):
    config = write_config(tmp_path, quota=5, database=postgres)
    runs = [Upload("team0", trec_run(tmp_path / f"r{i}.trec", seed=200 + i)) for i in range(8)]
    with ServerProcess(config, log_name="a.log") as a, ServerProcess(config, log_name="b.log") as b:
        with ThreadPoolExecutor(2) as pool:
            halves = list(pool.map(lambda pair: submit_concurrently(pair[0].url, pair[1]), ((a, runs[0::2]), (b, runs[1::2]))))
        answers = [answer for half in halves for answer in half]
        assert sorted(answer.status for answer in answers) == [202] * 5 + [429] * 3
        accepted = {answer.id: team_token("team0") for answer in answers if answer.status == 202}
        assert {body["status"] for body in wait_scored(a.url, accepted, timeout=120).values()} == {"scored"}
    logs = a.log.read_text() + b.log.read_text()
    assert sorted(line.split("scored submission ")[1].split()[0] for line in logs.splitlines()
                  if "scored submission " in line) == sorted(accepted)
