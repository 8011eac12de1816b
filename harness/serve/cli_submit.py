"""`harness submit`: upload a run to a leaderboard server; with --wait, print its scores."""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

from harness.cli import number_in
from harness.errors import HarnessError, InputError, Interrupted, open_input
from harness.serve import NOT_KEPT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="the run: iKAT 2023/2024 JSON, 2025 JSONL or a TREC run")
    parser.add_argument("--server", required=True, help="e.g. http://127.0.0.1:8000")
    parser.add_argument("--token", required=True, help="your team's token")
    parser.add_argument("--task", required=True, help="task name (see the server's front page)")
    parser.add_argument("--description", default="", help="shown beside the run on the leaderboard")
    parser.add_argument("--wait", action="store_true", help="wait until it is scored and print the measures")
    parser.add_argument("--timeout", type=number_in(0, math.inf, open_low=True), default=600,
                        help="seconds --wait waits at most (default 600)")


def run(args: argparse.Namespace) -> int:
    import httpx

    open_input(args.file).close()  # a missing file or a folder is the one-line error every command gives
    refuse_run_record(args.file)
    base = server_url(args.server)
    headers = {"Authorization": f"Bearer {header_token(args.token)}"}
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client, args.file.open("rb") as handle:
            try:  # Ctrl-C here: the upload may have gone in, and a file given again is no new submission
                answer = client.post(f"/api/tasks/{args.task}/submissions",
                                     files={"file": (args.file.name, handle)}, data={"description": args.description})
                body = _json(answer)
            except KeyboardInterrupt:
                raise Interrupted("the server may have accepted the upload: run the same command again to learn "
                                  "whether it did (the same file again is not a new submission)") from None
            if answer.status_code == 422:
                for error in body.get("errors", []):
                    where = f":{error['line']}" if error.get("line") is not None else ""
                    turn = f" turn {error['turn']}" if error.get("turn") else ""
                    print(f"{error['file']}{where}{turn} [{error['check']}]: {error['message']}")
                print(f"harness submit: rejected: {body.get('detail')}", file=sys.stderr)
                return 1
            if answer.status_code == 404 and body.get("detail") == f"no task {args.task!r}":
                raise HarnessError(f"--task {args.task}: the server has no such task (its tasks: {_tasks(client)})")
            if answer.status_code != 202:
                raise HarnessError(f"the server answered {answer.status_code}: {body.get('detail', answer.text[:200])}")
            ident = body["id"]
            if body.get("status") == "duplicate":
                print(f"already submitted: submission {ident}, the same file (not a new submission; its description "
                      "is kept as first given)", file=sys.stderr)
            elif body.get("status") == "restored":
                print(f"restored: submission {ident}, the same file, whose stored copy the server had lost: stored "
                      "again (and queued for scoring where its scoring had failed for the want of it)", file=sys.stderr)
            else:
                print(f"accepted: submission {ident}", file=sys.stderr)
            print(ident)
            if args.wait:
                try:
                    return _wait(client, ident, args.timeout)
                except KeyboardInterrupt:
                    raise Interrupted(f"submission {ident} is on the server and is scored there without waiting: run "
                                      "the same command again to see its scores (the same file again is not a new "
                                      "submission)") from None
    except httpx.HTTPError as problem:
        raise HarnessError(f"cannot reach {base}: {problem}") from None
    return 0


def refuse_run_record(path: Path) -> None:
    """`harness run`'s record of a run (runs/<tag>.json beside runs/<tag>.run), refused before it
    is uploaded: teams sent it for their run, and a board answered it with 22 errors of the iKAT schema.
    Said before any request, not knowing what the task takes: its run is refused by a task that takes
    iKAT files only, and by a response task, so each is told what to submit."""
    from harness.trec import not_a_run, record_beside, recorded_run_of

    if (record := recorded_run_of(path)) is not None:
        run = record_beside(record, path) or f"{record.run} (not beside this record)"
        raise InputError(path, not_a_run(record, path, None, "a submission") + f": to a task that takes TREC runs, "
                         f"submit {run}; to one that takes iKAT files only, the submission `harness ikat from-trec` "
                         "makes of it; to a response task, what the system answered (it takes no run)")


def server_url(given: str) -> str:
    """--server as the base URL of the requests; one that is not an http(s) URL with a host is
    said as such, before anything is sent (httpx would say "cannot reach http::")."""
    from urllib.parse import urlsplit

    parts = urlsplit(given)
    try:
        parts.port  # noqa: B018 (it raises for a port that is not a number from 0 to 65535)
        problem = ("not an http:// or https:// URL" if parts.scheme not in ("http", "https")
                   else "the URL names no host" if not parts.hostname else None)
    except ValueError:
        problem = "the port is not a number from 0 to 65535"
    if not problem and parts.path.rstrip("/").endswith("/api"):  # the requests add /api/...
        problem = "the URL names the server's API, not the server"
    if problem:
        raise HarnessError(f"--server {given!r}: {problem}: give the server's URL, such as http://127.0.0.1:8000")
    return given.rstrip("/")


def header_token(token: str) -> str:
    """--token as the Authorization header carries it: a character a header cannot (a curly quote
    pasted from an e-mail, a line break) is said as such before anything is sent; httpx raised
    UnicodeEncodeError for the one, and called the other the server's problem ("cannot reach")."""
    bad = next((character for character in token if not " " <= character <= "~"), None)
    if bad is not None:
        raise HarnessError(f"--token: holds {bad!r} (U+{ord(bad):04X}), which an HTTP header cannot carry: give the "
                           "token as the organisers sent it (harness serve --new-token makes tokens of ASCII letters, "
                           "digits, - and _)")
    return token


def _tasks(client) -> str:
    """The server's task names, as its GET /api/tasks lists them."""
    answer = client.get("/api/tasks")
    names = [task.get("name") for task in answer.json()] if answer.status_code == 200 else []
    return ", ".join(map(str, names)) or "none listed"


def _wait(client, ident: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = _json(client.get(f"/api/submissions/{ident}"))
        if body.get("status") in ("scored", "stale"):  # stale: its earlier scores, if any, off the board
            _print_warnings(body.get("warnings") or [], ident)
            for measure, value in (body["measures"] or {}).items():  # none: refused by the task's checks
                print(f"{measure}\t{value:.4f}")
            if body["status"] == "stale":
                raise HarnessError(f"submission {ident} is not on the board: {body.get('error')}")
            return 0
        if body.get("status") == "failed":
            raise HarnessError(f"submission {ident} could not be scored: {body.get('error')}")
        if body.get("status") == "withdrawn":  # by the organisers: never scored again
            raise HarnessError(f"submission {ident} is not on the board: {body.get('error')}")
        time.sleep(0.5)
    raise HarnessError(f"submission {ident} was not scored within {timeout:g} s; it stays queued on the server")


SHOWN_WARNINGS = 5  # a run missing PTKB provenance draws one per turn: the first few tell the story


def _print_warnings(warnings: list[str], ident: str) -> None:
    for warning in warnings[:SHOWN_WARNINGS]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(warnings) > SHOWN_WARNINGS:
        cut = re.fullmatch(re.escape(NOT_KEPT).replace(r"\{\}", r"(\d+)"), warnings[-1])
        more = len(warnings) - SHOWN_WARNINGS + (int(cut[1]) - 1 if cut else 0)
        listed = f"the first {len(warnings) - 1}" if cut else "them"
        print(f"warning: ... and {more} more (GET /api/submissions/{ident} lists {listed})", file=sys.stderr)


def _json(answer) -> dict:
    try:
        body = answer.json()
    except ValueError:
        return {"detail": answer.text[:200]}
    return body if isinstance(body, dict) else {"detail": str(body)[:200]}
