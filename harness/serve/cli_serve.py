"""`harness serve CONFIG`: run the leaderboard server (uvicorn), or print a new team token."""

from __future__ import annotations

import argparse
import secrets
import sys

from harness.errors import HarnessError

DEMO_TOKEN = "demo-token-replace-me"  # configs/leaderboard.yaml's demo team, printed in the README


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="leaderboard config, e.g. configs/leaderboard.yaml")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--new-token", action="store_true",
                        help="print a new random team token and the config line holding its hash, then exit")


def run(args: argparse.Namespace) -> int:
    if args.new_token:
        from harness.serve.store import sha256_hex

        token = secrets.token_urlsafe(32)
        print(f"token (give it to the team; it is not stored): {token}")
        print(f"config line under teams:  - {{name: TEAM, token_sha256: {sha256_hex(token)}}}")
        return 0
    if not args.config:
        raise HarnessError("give the leaderboard config (e.g. configs/leaderboard.yaml), or --new-token")
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
    service = Service(config)  # a second server on the same SQLite database stops here, in one line
    try:
        service.prepare()  # a malformed qrels or topics file: one line, before uvicorn starts
    except BaseException:
        service.store.close()
        raise
    print(f"harness serve: {len(config.tasks)} tasks, {len(config.teams)} teams, database {_redacted(config.database)}, "
          f"on http://{args.host}:{args.port}/", file=sys.stderr)
    HeadTimeoutH11.head_timeout = config.client_timeout_s
    uvicorn.run(create_app(service), host=args.host, port=args.port, log_level="info", http=HeadTimeoutH11,
                timeout_keep_alive=5, limit_concurrency=1000)
    return 0


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
