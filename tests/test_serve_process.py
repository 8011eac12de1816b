"""The leaderboard server as a real process on 127.0.0.1: `kill -9` at several moments,
uploads cut off midway, and a bounded load of 50 concurrent submissions from 10 teams."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import extra

extra("fastapi", "serve")

from sqlalchemy import create_engine, func, select  # noqa: E402

from harness.serve import store as st  # noqa: E402
from tests.conftest import interruptible  # noqa: E402
from tests.serve_support import (  # noqa: E402
    TASK, ServerProcess, make_uploads, submit_concurrently, team_token, trec_run, wait_scored, write_config,
)

pytestmark = [pytest.mark.server, pytest.mark.slow]


def rows(folder, table) -> int:
    engine = create_engine(f"sqlite:///{folder / 'state' / 'board.db'}")
    try:
        with engine.connect() as connection:
            return connection.scalar(select(func.count()).select_from(table))
    finally:
        engine.dispose()


def stored_files(folder) -> list:
    return sorted(p for p in (folder / "state" / "files").iterdir() if p.is_file())


def test_acknowledged_submissions_survive_kill_9_and_are_scored_after_restart(tmp_path):
    config = write_config(tmp_path, teams=4, quota=100)
    uploads = make_uploads(tmp_path / "runs", teams=4, per_team=6)
    server = ServerProcess(config)
    acknowledged: dict[str, str] = {}
    per_round = []
    for number, delay in enumerate((0.3, 1.5, 4.0)):  # kill while uploading, validating, scoring
        server.start()
        batch = uploads[number * 8:(number + 1) * 8]
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(submit_concurrently, server.url, batch)
            time.sleep(delay)
            server.kill9()
            answers = future.result()
        ok = {a.id: team_token(a.upload.team) for a in answers if a.status == 202}
        per_round.append(len(ok))
        acknowledged.update(ok)
    assert acknowledged, "no submission was acknowledged before a kill; the test proved nothing"
    with server.start():
        results = wait_scored(server.url, acknowledged, timeout=240)
    print(f"kill -9: {len(per_round)} kills, {per_round} of 8 acknowledged per round "
          f"({len(acknowledged)} of {len(uploads)}), all {len(results)} scored after restart")
    assert {body["status"] for body in results.values()} == {"scored"}
    assert list((tmp_path / "state" / "files" / ".incoming").iterdir()) == []
    for path in stored_files(tmp_path):  # every stored file is whole: its name is its hash
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name
    assert "2023-qrels" not in server.log.read_text()


def _partial_upload(port: int, payload: bytes, part: float) -> socket.socket:
    """Send the headers and only `part` of a multipart upload, then stop (the socket stays open)."""
    boundary = "harness-cut-off"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"run.trec\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + payload + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST /api/tasks/{TASK}/submissions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {team_token('team0')}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    connection = socket.create_connection(("127.0.0.1", port))
    connection.sendall(head + body[: int(len(body) * part)])
    return connection


def test_an_upload_cut_off_midway_leaves_nothing_stored(tmp_path):
    config = write_config(tmp_path)
    payload = trec_run(tmp_path / "run.trec", seed=1, depth=200).read_bytes()
    server = ServerProcess(config)
    with server.start():
        _partial_upload(server.port, payload, 0.5).close()  # the client goes away
        time.sleep(1)
        hanging = _partial_upload(server.port, payload, 0.7)
        time.sleep(0.5)
        server.kill9()  # the server goes away mid-upload
        hanging.close()
        (tmp_path / "state" / "files" / ".incoming" / "0123456789abcdef.part").write_bytes(payload[:1000])
    with server.start():  # a restart clears what a kill left in .incoming
        time.sleep(0.5)
        assert list((tmp_path / "state" / "files" / ".incoming").iterdir()) == []
        assert stored_files(tmp_path) == []
        assert rows(tmp_path, st.Submission.__table__) == 0 and rows(tmp_path, st.Audit.__table__) == 0


def test_load_50_concurrent_submissions_from_10_teams_are_stored_once_and_scored(tmp_path):
    import numpy as np

    config = write_config(tmp_path, teams=10, quota=5)
    uploads = make_uploads(tmp_path / "runs", teams=10, per_team=5)
    with ServerProcess(config) as server:
        started = time.perf_counter()
        answers = submit_concurrently(server.url, uploads)
        stored_after = time.perf_counter() - started
        assert [a.status for a in answers] == [202] * 50
        owners = {a.id: team_token(a.upload.team) for a in answers}
        assert len(owners) == 50
        results = wait_scored(server.url, owners, timeout=300)
        scored_after = time.perf_counter() - started
        import httpx

        board = httpx.get(f"{server.url}/api/tasks/{TASK}/leaderboard", timeout=60).json()
    latency = np.percentile([a.seconds for a in answers], [50, 90, 99])
    print(f"load: 50 submissions from 10 teams: stored {50 / stored_after:.1f}/s, scored {50 / scored_after:.1f}/s; "
          f"latency p50 {latency[0]:.2f} s, p90 {latency[1]:.2f} s, p99 {latency[2]:.2f} s")
    assert {body["status"] for body in results.values()} == {"scored"}
    assert len(board["rows"]) == 50
    assert rows(tmp_path, st.Submission.__table__) == 50 and len(stored_files(tmp_path)) == 50


def test_harness_submit_uploads_waits_and_prints_the_measures(tmp_path, capsys):
    from harness.cli import main
    from tests.serve_support import ikat_run

    config = write_config(tmp_path)
    run = ikat_run(tmp_path / "run.json", seed=5)
    broken = tmp_path / "broken.trec"
    broken.write_text("9-1_1 Q0 doc 1\n")
    with ServerProcess(config) as server:
        common = ["submit", "--server", server.url, "--token", team_token("team0"), "--task", TASK]
        assert main([*common, str(run), "--wait"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines[0]) == 16 and lines[1].startswith("nDCG@5\t0.") and len(lines) == 8
        assert main([*common, str(run), "--description", "second"]) == 0  # the same file: not a new submission
        said = capsys.readouterr()
        assert said.out == lines[0] + "\n" and said.err == (
            f"already submitted: submission {lines[0]}, the same file (not a new submission; its description is kept "
            "as first given)\n")
        assert main([*common, str(broken)]) == 1
        assert capsys.readouterr().out == ("broken.trec:1 [trec]: expected 6 fields 'qid Q0 docid rank score tag', found "
                                           "4: this looks like a qrels line ('qid iter docid grade'): is the qrels file "
                                           "given as a run?\n")
        assert main([*common[:4], "wrong", *common[5:], str(run)]) == 2
        assert "the server answered 401: missing or wrong token" in capsys.readouterr().err


def test_harness_submit_wait_prints_the_servers_warnings_the_first_five_and_a_count(tmp_path, capsys):
    """A TREC run of the judged turns only leaves the others unanswered: not scored, said once.
    A run drawing a warning a turn (turns without passages) shows five, the rest counted."""
    from harness.cli import main
    from tests.serve_support import ikat_run

    def warnings(path) -> list[str]:
        assert main(["submit", "--server", server.url, "--token", team_token("team0"), "--task", TASK, str(path),
                     "--wait"]) == 0
        return [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]

    with ServerProcess(write_config(tmp_path, quota=10)) as server:
        assert warnings(trec_run(tmp_path / "judged-only.trec", seed=7)) == [
            "warning: judged-only.trec warning [coverage]: 156 turns have no results (not judged: not scored)"]
        many = warnings(ikat_run(tmp_path / "sparse.json", seed=8))
    assert len(many) == 6 and all(line.startswith("warning: sparse.json turn ") for line in many[:5])
    # every turn's warning counted, past the 200 the server keeps (it said 195 more)
    assert re.fullmatch(r"warning: \.\.\. and \d{3} more \(GET /api/submissions/[0-9a-f]{16} lists the first 200\)",
                        many[5])


def test_harness_submit_wait_says_why_a_passage_run_scores_0_on_a_task_judging_documents(tmp_path, capsys):
    """A task with its own measures over CAsT 2021's document qrels: the team learns why its passage
    run scores 0, as `harness eval` would have told it."""
    from harness.cli import main
    from tests.conftest import CAST2021_PASSAGE_RUNS, CAST2021_QRELS

    task = {"name": "cast2021", "topics": "cast2021", "qrels": str(CAST2021_QRELS), "measures": ["nDCG@3"],
            "main_measure": "nDCG@3", "formats": ["trec"]}
    with ServerProcess(write_config(tmp_path, teams=1, tasks=[task])) as server:
        assert main(["submit", "--server", server.url, "--token", team_token("team0"), "--task", "cast2021",
                     str(CAST2021_PASSAGE_RUNS[0]), "--wait"]) == 0
    said = capsys.readouterr()
    assert said.out.splitlines()[1] == "nDCG@3\t0.0000"
    assert said.err.splitlines()[1].startswith(
        "warning: scoring: only 0 of the 1580 documents in the run's top 10s are judged in the task's qrels, so nearly "
        "every measure is 0; its ids look like passage ids of judged documents (")
    assert "ask its organisers to judge each document by its best passage (passage_separator: '-' on the task)" \
        in said.err


def test_harness_submit_to_an_unknown_task_lists_the_server_s_tasks(tmp_path, capsys):
    from harness.cli import main

    with ServerProcess(write_config(tmp_path, teams=1)) as server:
        assert main(["submit", "--server", server.url, "--token", team_token("team0"), "--task", "ikat2024",
                     str(trec_run(tmp_path / "run.trec", seed=1))]) == 2
    assert capsys.readouterr().err == (f"harness submit: error: --task ikat2024: the server has no such task (its "
                                       f"tasks: {TASK}) (`harness submit --help` lists the options)\n")
    # the same server's start line, counts of one in the singular (a process of its own would cost 5 s)
    assert "harness serve: 1 task, 1 team, database " in server.log.read_text()


def _answer_then_stall(server: socket.socket, answer: bytes | None, heard: threading.Event) -> None:
    """One connection: read the upload, answer it with `answer` (None: never) and read on; `heard` is set once
    the request that gets no answer has come, as from a server too busy to answer it."""
    connection, _ = server.accept()
    with connection:
        received = b""
        while not received.endswith(b"--\r\n"):  # the multipart upload's closing boundary
            received += connection.recv(65536)
        if answer is not None:
            connection.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: "
                               + str(len(answer)).encode() + b"\r\n\r\n" + answer)
            while b"GET /api/submissions/" not in (received := connection.recv(65536)):
                pass
        heard.set()
        connection.recv(1)  # until the client goes


@pytest.mark.parametrize("answer, said", [
    (None, "interrupted: the server may have accepted the upload: run the same command again to learn whether it "
           "did (the same file again is not a new submission)"),
    (b'{"id": "9e90c1627de3fa02", "status": "accepted"}',
     "interrupted: submission 9e90c1627de3fa02 is on the server and is scored there without waiting: run the same "
     "command again to see its scores (the same file again is not a new submission)"),
], ids=["during the upload", "while waiting"])
def test_ctrl_c_on_submit_says_whether_the_upload_may_be_on_the_server_not_that_outputs_are_kept(
        tmp_path, answer, said):
    """submit writes nothing: 'finished outputs are kept' told a team nothing about its (quota-counted) upload."""
    heard = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as server:
        threading.Thread(target=_answer_then_stall, args=(server, answer, heard), daemon=True).start()
        child = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "submit", "--server", f"http://127.0.0.1:{server.getsockname()[1]}",
             "--token", "t", "--task", TASK, str(trec_run(tmp_path / "run.trec", seed=1)), "--wait"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
        assert heard.wait(60), "the upload never came"
        os.kill(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=30)
    assert child.returncode == 130 and err.splitlines()[-1].endswith(f"submit: {said}"), err
