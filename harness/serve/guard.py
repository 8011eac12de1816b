"""Who is asking, and what they may still try: the routes' one gate (harness/serve/app.py
says what it guards against, and how).

Its counts (wrong tokens per address, refused uploads per team and per address) live as long
as the app that built it, in its process (harness/serve/limits.py). What it refuses, and each
login, is a line of the organisers' log (`harness.serve`): the team where known, the task, the
address and why, never a token, so that a team's "my uploads are refused" or "I am locked out"
can be checked there.
"""

from __future__ import annotations

import hmac
import logging
import math
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from fastapi import HTTPException, Request
from sqlalchemy import delete
from starlette.datastructures import FormData

from harness.serve import store as st
from harness.serve.config import TeamConfig
from harness.serve.limits import Backoff, Window, too_many
from harness.serve.service import Service

log = logging.getLogger("harness.serve")
SESSION_COOKIE = "harness_session"
LOGIN_COOKIE = "harness_login"
SESSION_HOURS = 12


class Guard:
    """Token checks with a backoff per address, the refused-upload windows, the browser
    sessions and the form checks, over one service's config and store."""

    def __init__(self, service: Service) -> None:
        self.service, self.config = service, service.config
        self.rejected_by_team = Window(self.config.rejects_per_hour)
        self.rejected_by_address = Window(2 * self.config.rejects_per_hour)
        self.wrong_tokens = Backoff()

    def check_token(self, request: Request, token: object) -> TeamConfig | None:
        """The token's team, or None; after a few wrong tokens from one address, 429 until
        the address's wait is over (wrong tokens are not even looked up meanwhile)."""
        where = address(request)
        wait = self.wrong_tokens.wait(where)
        if wait > 0:
            log.warning("%s %s from %s refused (429): locked out for wrong tokens for %d s more", request.method,
                        request.url.path, where, math.ceil(wait))
            raise too_many(wait, f"too many wrong tokens from your address; try again in {wait:.0f} s")
        given = isinstance(token, str) and bool(token)
        team = self.config.team_by_hash(st.sha256_hex(token)) if given else None
        if team is not None:
            self.wrong_tokens.succeeded(where)
            return team
        failures = self.wrong_tokens.failed(where)
        log.warning("%s %s from %s: %s token (%d in a row from this address; after %d it must wait, longer after "
                    "each)", request.method, request.url.path, where, "a wrong" if given else "no", failures,
                    self.wrong_tokens.free)
        return None

    def bearer_team(self, request: Request) -> str:
        """The name of the team whose token the Authorization header carries; else 401."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        team = self.check_token(request, token.strip() if scheme.lower() == "bearer" else "")
        if team is None:
            raise HTTPException(401, "missing or wrong token", headers={"WWW-Authenticate": "Bearer"})
        return team.name

    def check_rejections(self, request: Request, team: str) -> None:
        """429 before the body is read, for a team or address whose uploads were refused
        (422, 413) `rejects_per_hour` times (twice that per address) in the last hour."""
        for window, key, who in ((self.rejected_by_team, team, f"team {team}"),
                                 (self.rejected_by_address, address(request), "your address")):
            wait = window.wait(key)
            if wait > 0:
                raise too_many(wait, f"{who} had {window.per_hour} uploads refused in the last hour; "
                                     f"try again in {wait / 60:.0f} min")

    def refused(self, request: Request, team: str, task: str, status: int, why: str) -> None:
        """Log an upload's refusal (any answer but a 202), and count it towards `check_rejections`
        where the upload was at fault (422, 413)."""
        log.info("upload of team %s for task %r from %s refused (%d): %s", team, task, address(request), status,
                 " ".join(why.split()))
        if status in (413, 422):
            self.rejected_by_team.add(team)
            self.rejected_by_address.add(address(request))

    def session_of(self, request: Request) -> tuple[str, str] | None:
        """(team, csrf token) of a logged-in browser."""
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        with self.service.store.session() as session:
            row = session.get(st.WebSession, st.sha256_hex(cookie))
        if row is None or row.expires_at < st.now() or row.team not in self.config.teams:
            return None
        return row.team, csrf_token(cookie)

    def open_session(self, request: Request, team: str) -> str:
        """A new session's cookie (its hash stored), sessions past their time cleared first."""
        log.info("team %s logged in from %s", team, address(request))
        cookie = secrets.token_urlsafe(32)
        with self.service.store.session() as session:
            session.execute(delete(st.WebSession).where(st.WebSession.expires_at < st.now()))
            session.add(st.WebSession(token_sha256=st.sha256_hex(cookie), team=team,
                                      expires_at=st.now() + timedelta(hours=SESSION_HOURS)))
            session.commit()
        return cookie

    def close_session(self, request: Request, team: str, cookie: str) -> None:
        log.info("team %s logged out from %s", team, address(request))
        with self.service.store.session() as session:
            session.execute(delete(st.WebSession).where(st.WebSession.token_sha256 == st.sha256_hex(cookie)))
            session.commit()

    @staticmethod
    def check_form(request: Request, form: FormData, csrf: str) -> None:
        """403 for a form posted from another site's page or without the expected CSRF token."""
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "cross-site form refused")
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, csrf):
            raise HTTPException(403, "missing or wrong CSRF token; reload the page and try again")


def address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def csrf_token(session_cookie: str) -> str:
    """Derived from the session id, so only the hash of the id needs storing."""
    return hmac.new(session_cookie.encode(), b"harness-csrf", "sha256").hexdigest()
