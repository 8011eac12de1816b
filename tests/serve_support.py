"""What the leaderboard tests and benchmarks/serve_load.py share: real runs built from the
shipped iKAT 2023 topics and qrels, a config with teams, and a server in a subprocess."""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import lzma
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

from harness.paths import REPO_ROOT, qrels_root
from tests.conftest import extra

QRELS = qrels_root() / "ikat" / "2023-qrels.all-turns.txt"
TASK = "ikat2023"


def zipped(data: bytes) -> bytes:
    """`data` as the one file of a zip archive, dated so that its bytes are the same every day."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("run", date_time=(2026, 11, 27, 0, 0, 0)), data)
    return buffer.getvalue()


_COMPRESSED = "not UTF-8 text: upload the run itself, uncompressed"
_UTF16 = "not UTF-8 text: save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8"
_UTF32 = "not UTF-8 text: save it as UTF-8, e.g. iconv -f UTF-32 -t UTF-8"
# An upload that is no UTF-8 text, as made from a good one, and the check and message refusing it:
# the formats and their names are those the harness's readers say (harness.errors.not_text).
NOT_TEXT = {
    "gzip": (gzip.compress, "format", f"gzip-compressed, {_COMPRESSED}"),
    "bzip2": (bz2.compress, "format", f"bzip2-compressed, {_COMPRESSED}"),
    "xz": (lzma.compress, "format", f"xz-compressed, {_COMPRESSED}"),
    "zip": (zipped, "format", f"zip-compressed, {_COMPRESSED}"),
    "UTF-16": (lambda data: data.decode("utf-8").encode("utf-16"), "encoding",
               f"UTF-16 text (byte-order mark FF FE), {_UTF16}"),
    "UTF-16 BE": (lambda data: b"\xfe\xff" + data.decode("utf-8").encode("utf-16-be"), "encoding",
                  f"UTF-16 text (byte-order mark FE FF), {_UTF16}"),
    "UTF-32": (lambda data: b"\xff\xfe\x00\x00" + data.decode("utf-8").encode("utf-32-le"), "encoding",
               f"UTF-32 text (byte-order mark FF FE 00 00), {_UTF32}"),
}


@cache
def _judged() -> dict[str, list[str]]:
    from harness.trec import read_qrels

    return {qid: sorted(judged) for qid, judged in read_qrels(QRELS).judgments.items()}


@cache
def _topics():
    from harness.topics import load

    return load("ikat2023").conversations


def rankings(seed: int, depth: int = 20) -> dict[str, list[tuple[str, float]]]:
    """A ranking per judged turn: judged passages in a seeded random order (real ids, so
    every run scores differently), best first."""
    rng = random.Random(seed)
    result = {}
    for qid, docs in _judged().items():
        chosen = rng.sample(docs, min(depth, len(docs)))
        result[qid] = [(doc, round(1.0 - rank / (depth + 1), 4)) for rank, doc in enumerate(chosen)]
    return result


def ikat_run(path: Path, seed: int, run_name: str = "", depth: int = 20) -> Path:
    """A valid iKAT 2023 submission answering every test turn."""
    from harness.ikat.submission import build_submission, write_submission

    submission = build_submission(rankings(seed, depth), {}, run_name=run_name or f"run-{seed}",
                                  conversations=_topics())
    write_submission(path, submission, 2023)
    return path


def trec_run(path: Path, seed: int, tag: str = "", depth: int = 20) -> Path:
    from harness.trec import write_run

    write_run(path, rankings(seed, depth).items(), tag or f"trec-{seed}")
    return path


def team_token(name: str) -> str:
    return f"token-of-{name}-0123456789abcdef"


def write_config(folder: Path, teams: int = 2, quota: int = 5, max_upload_mb: int = 64,
                 database: str | None = None, formats: tuple[str, ...] = ("ikat-2023-json", "trec"),
                 roster: dict[str, str] | None = None, **settings) -> Path:
    """A config with `teams` teams (team0, team1, ...), or the `roster`'s (name -> the name its
    team_token is made from); `settings` are more top-level keys."""
    from harness.serve.store import sha256_hex

    config = {
        "database": database or f"sqlite:///{folder / 'state' / 'board.db'}",
        "storage": str(folder / "state" / "files"),
        "quota": quota,
        "max_upload_mb": max_upload_mb,
        "tasks": [{"name": TASK, "title": "iKAT 2023 test", "topics": "ikat2023", "qrels": str(QRELS),
                   "preset": "ikat2023", "main_measure": "nDCG@5", "formats": list(formats)}],
        "teams": [{"name": name, "token_sha256": sha256_hex(team_token(holder))}
                  for name, holder in (roster or {f"team{i}": f"team{i}" for i in range(teams)}).items()],
        **settings,
    }
    path = folder / "leaderboard.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def postgres(tmp_path):
    """A throwaway PostgreSQL cluster on 127.0.0.1 (initdb + pg_ctl), as the postgres user when root."""
    # Debian's postgresql package keeps them off PATH, in /usr/lib/postgresql/<version>/bin
    bins = [Path(p).parent for p in [shutil.which("initdb"), *sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))] if p]
    if not bins or not (bins[0] / "pg_ctl").exists():
        pytest.skip("PostgreSQL test: needs initdb and pg_ctl (apt-get install postgresql)")
    initdb, pg_ctl = str(bins[0] / "initdb"), str(bins[0] / "pg_ctl")
    extra("psycopg", "serve")  # psycopg 3
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))  # outside pytest's root-only tmp
    prefix = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(folder, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    data = folder / "data"
    subprocess.run([*prefix, initdb, "-D", str(data), "-U", "harness", "--auth=trust"], check=True, capture_output=True)
    subprocess.run([*prefix, pg_ctl, "-D", str(data), "-l", str(folder / "log"), "-w", "-o",
                    f"-h 127.0.0.1 -p {port} -k {folder}", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://harness@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class ServerProcess:
    """`harness serve CONFIG` in a subprocess on 127.0.0.1, its log in a file."""

    config: Path
    port: int = 0  # 0: the server binds a free port at its first start (no port picked, released, then taken)
    process: subprocess.Popen | None = None
    starts: int = 0
    log_name: str = "server.log"
    tree: Path = REPO_ROOT  # the harness checkout the server runs from (benchmarks: another branch's)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.config.parent / self.log_name

    def start(self, timeout: float = 60) -> "ServerProcess":
        import httpx

        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        logged = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", "serve", str(self.config), "--host", "127.0.0.1",
                 "--port", str(self.port)],
                cwd=self.config.parent, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        self.starts += 1
        deadline, started = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            if not started:  # its own startup line first: a /health answer before it is another server's
                started = re.search(r"^harness serve: .* on http://127\.0\.0\.1:(\d+)/$",
                                    self.log.read_bytes()[logged:].decode(errors="replace"), re.MULTILINE)
                if started:
                    self.port = int(started[1])  # a restart asks for the same port again
                time.sleep(0.05)
                continue
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not start in time")

    def kill9(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill9()

    def __enter__(self) -> "ServerProcess":
        return self if self.process is not None and self.process.poll() is None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_scored(url: str, owners: dict[str, str], timeout: float = 300) -> dict[str, dict]:
    """Poll until every submission (id -> its team's token) is scored; their API bodies."""
    import httpx

    pending, done = dict(owners), {}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=30) as client:
        while pending and time.monotonic() < deadline:
            for ident, token in sorted(pending.items()):
                body = client.get(f"/api/submissions/{ident}", headers={"Authorization": f"Bearer {token}"}).json()
                if body.get("status") in ("scored", "failed"):
                    done[ident] = body
                    del pending[ident]
            if pending:
                time.sleep(0.5)
    if pending:
        raise AssertionError(f"{len(pending)} submissions not scored within {timeout} s")
    return done


@dataclass(frozen=True)
class Upload:
    team: str
    path: Path


@dataclass(frozen=True)
class Answer:
    upload: Upload
    status: int | None  # None: no answer (connection broken)
    id: str | None
    seconds: float


def make_uploads(folder: Path, teams: int, per_team: int, seed: int = 0) -> list[Upload]:
    """Distinct real runs, alternating iKAT 2023 JSON and TREC files."""
    folder.mkdir(parents=True, exist_ok=True)
    uploads = []
    for number in range(teams * per_team):
        seed_n = seed + number
        path = (ikat_run(folder / f"run{seed_n}.json", seed_n) if number % 2 == 0
                else trec_run(folder / f"run{seed_n}.trec", seed_n))
        uploads.append(Upload(f"team{number % teams}", path))
    return uploads


def submit_concurrently(url: str, uploads: list[Upload], workers: int | None = None) -> list[Answer]:
    """POST every upload at once (one thread each unless `workers`); the answers, in order."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    def one(upload: Upload) -> Answer:
        started = time.perf_counter()
        try:
            with upload.path.open("rb") as handle:
                answer = httpx.post(f"{url}/api/tasks/{TASK}/submissions", files={"file": (upload.path.name, handle)},
                                    headers={"Authorization": f"Bearer {team_token(upload.team)}"}, timeout=300)
            body = answer.json()
            return Answer(upload, answer.status_code, body.get("id"), time.perf_counter() - started)
        except (httpx.HTTPError, ValueError):
            return Answer(upload, None, None, time.perf_counter() - started)

    with ThreadPoolExecutor(max_workers=workers or len(uploads)) as pool:
        return list(pool.map(one, uploads))
