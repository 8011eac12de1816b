"""`harness serve CONFIG`: run the leaderboard server (uvicorn), print a new team token, queue failed
submissions again (--requeue-failed), or withdraw submissions from the board (--withdraw, --withdraw-team)."""

from __future__ import annotations

import argparse
import secrets
import socket
import sys

from harness.cli import number_in
from harness.errors import HarnessError, counted

DEMO_TOKEN = "demo-token-replace-me"  # configs/leaderboard.yaml's demo team, printed in the README


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?",
                        help="leaderboard config, e.g. configs/leaderboard.yaml (shipped as: leaderboard)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=number_in(0, 65535, whole=True), default=8000,
                        help="port (default 8000; 0: a free one, which the start line names)")
    parser.add_argument("--new-token", action="store_true",
                        help="print a new random team token and the config line holding its hash, then exit")
    parser.add_argument("--requeue-failed", action="store_true",
                        help="queue the config's failed submissions again, to be scored by its server, then exit "
                             "(SQLite: with the server stopped)")
    parser.add_argument("--task", action="append", default=[],
                        help="with --requeue-failed: only this task's (repeatable; default: every task of the config)")
    parser.add_argument("--withdraw", action="append", default=[], metavar="ID",
                        help="withdraw this submission (repeatable): kept in the database, off the board, its team "
                             "told; then exit (SQLite: with the server stopped)")
    parser.add_argument("--withdraw-team", action="append", default=[], metavar="TEAM",
                        help="withdraw every submission of this team (repeatable; one taken off teams: too)")
    parser.add_argument("--reason", default="",
                        help="with --withdraw or --withdraw-team: why, shown to the team and kept in the audit table")


def run(args: argparse.Namespace) -> int:
    if args.task and not args.requeue_failed:
        raise HarnessError("--task goes with --requeue-failed")
    withdrawing = bool(args.withdraw or args.withdraw_team)
    if args.reason and not withdrawing:
        raise HarnessError("--reason goes with --withdraw or --withdraw-team")
    if args.new_token:
        from harness.serve.store import sha256_hex

        token = secrets.token_urlsafe(32)
        print(f"token (give it to the team; it is not stored): {token}")
        print(f"config line under teams:  - {{name: TEAM, token_sha256: {sha256_hex(token)}}}")
        return 0
    if not args.config:
        raise HarnessError("give the leaderboard config (e.g. configs/leaderboard.yaml), or --new-token")
    if args.requeue_failed and withdrawing:
        raise HarnessError("--requeue-failed and --withdraw are two runs of harness serve: give one")
    if args.requeue_failed:
        return _requeue_failed(args.config, args.task)
    if withdrawing:
        return _withdraw(args.config, args.withdraw, args.withdraw_team, " ".join(args.reason.split()))
    import logging

    import uvicorn

    from harness.serve.app import create_app
    from harness.serve.config import load_serve_config
    from harness.serve.service import Service

    from harness.serve.limits import HeadTimeoutH11, RedactTokens
    from harness.serve.store import sha256_hex

    config = load_serve_config(args.config)
    demo = [team.name for team in config.teams.values() if team.token_sha256 == sha256_hex(DEMO_TOKEN)]
    if demo and not _loopback(args.host):
        raise HarnessError(f"team {demo[0]} has the demo token {DEMO_TOKEN!r}, which anyone can read in the README: "
                           f"give it its own (harness serve --new-token) before listening on {args.host}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("uvicorn.access").addFilter(RedactTokens())
    # Every input is checked before anything is made on disk: the address here, the tasks' topics
    # and qrels and then the database (a second server on one SQLite file) in Service, which
    # makes the storage last; a start that fails after that removes what it made (Store.discard).
    listening = _bind(args.host, args.port)
    try:
        service = Service(config)
    except BaseException:
        listening.close()
        raise
    server = None
    try:
        print(f"harness serve: {counted(len(config.tasks), 'task')}, {counted(len(config.teams), 'team')}, database "
              f"{_redacted(config.database)}, on http://{args.host}:{listening.getsockname()[1]}/", file=sys.stderr)
        HeadTimeoutH11.head_timeout = config.client_timeout_s
        server = uvicorn.Server(uvicorn.Config(create_app(service), log_level="info", http=HeadTimeoutH11,
                                               timeout_keep_alive=5, limit_concurrency=1000))
        server.run(sockets=[listening])
    except KeyboardInterrupt:  # Ctrl-C: uvicorn has shut down and raises it again, as uvicorn.run swallows it
        pass
    finally:
        listening.close()
        if server is None or not server.started:
            service.store.discard()
    return 0


def _requeue_failed(config_path: str, tasks: list[str]) -> int:
    """Failed submissions queued again in the config's database: a running server's worker
    (PostgreSQL) or the next start (SQLite, one process at a time) scores them. Nothing but
    the rows changes: a database or folder this call had to make is removed again."""
    from harness.serve.config import load_serve_config
    from harness.serve.store import Store

    config = load_serve_config(config_path)
    unknown = [task for task in tasks if task not in config.tasks]
    if unknown:
        raise HarnessError(f"--task {unknown[0]}: {config_path} has no such task; its tasks: {', '.join(config.tasks)}")
    tasks = list(dict.fromkeys(tasks)) or list(config.tasks)  # a task named twice is requeued and said once
    store = Store(config.database, config.storage)
    try:
        queued = store.requeue_failed(tasks)
    finally:
        store.discard()
    for task in tasks:
        print(f"task {task}: {counted(queued.get(task, 0), 'failed submission')} queued again")
    return 0


def _withdraw(config_path: str, idents: list[str], teams: list[str], reason: str) -> int:
    """Submissions withdrawn in the config's database, each said on stdout (and kept in its audit
    table): a running server's board drops them at its next build (PostgreSQL), or the next start's
    does (SQLite, one process at a time). Nothing but the rows changes."""
    from harness.serve.config import load_serve_config
    from harness.serve.store import Store

    config = load_serve_config(config_path)
    store = Store(config.database, config.storage)
    try:
        withdrawn = store.withdraw(idents, teams, reason)
    finally:
        store.discard()
    for row in withdrawn:
        print(f"withdrew submission {row.id} of team {row.team} for task {row.task} ({row.run_name})"
              + (f": {reason}" if reason else ""))
    if not withdrawn:
        print("nothing withdrawn: every submission named was withdrawn already")
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound (as uvicorn binds it) but not listening yet: an address that
    is taken or unknown is one line before anything is made."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise HarnessError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return sock


def _loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _redacted(url: str) -> str:
    """A database URL without its password, for the log."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
