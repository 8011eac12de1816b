"""The HTTP side: the JSON API (Bearer tokens) and the pages (a login session + CSRF token).

Tokens and session ids are stored only as SHA-256 hashes (they are 256-bit random, so a
plain hash is enough). A page form carries a CSRF token derived from the session id, which
a cross-site page cannot read; a request whose Origin is another site is refused too, and
the session cookie is SameSite=Strict and HttpOnly.

What a client may cost (harness/serve/limits.py): a body limit per route counted while
reading, a timeout on slow bodies, a rate of refused uploads per team and per address
(checked before the body is read), and a doubling wait after repeated wrong tokens.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from contextlib import asynccontextmanager
from datetime import timedelta
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy import delete
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect

from harness.serve import pages
from harness.serve import store as st
from harness.serve.limits import Backoff, BodyLimit, Window, too_many
from harness.serve.service import Outcome, Service

log = logging.getLogger("harness.serve")

SESSION_COOKIE = "harness_session"
LOGIN_COOKIE = "harness_login"
SESSION_HOURS = 12
MULTIPART_SLACK = 1 << 20  # form fields and boundaries around the file
FORM_LIMIT = 64 << 10  # any other request body (the login form holds a 43-character token)
UPLOAD_ROUTES = ("/submit", "/api/tasks/")  # POST: multipart uploads
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def create_app(service: Service) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        service.start()
        yield
        service.stop()

    app = FastAPI(title="harness leaderboard", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    config = service.config
    rejected_by_team, rejected_by_address = Window(config.rejects_per_hour), Window(2 * config.rejects_per_hour)
    wrong_tokens = Backoff()

    def body_limit(method: str, path: str) -> int:
        upload = method == "POST" and path.startswith(UPLOAD_ROUTES)
        return config.max_upload_bytes + MULTIPART_SLACK if upload else FORM_LIMIT

    app.add_middleware(BodyLimit, limit_of=body_limit, timeout=lambda: config.client_timeout_s)

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, _problem: ClientDisconnect):
        log.info("%s %s: the client went away before sending the whole request", request.method, request.url.path)
        return Response(status_code=400)

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    # --- who is asking -------------------------------------------------------------------

    def address(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    def check_token(request: Request, token: object):
        """The token's team, or None; after a few wrong tokens from one address, 429 until
        the address's wait is over (wrong tokens are not even looked up meanwhile)."""
        wait = wrong_tokens.wait(address(request))
        if wait > 0:
            raise too_many(wait, f"too many wrong tokens from your address; try again in {wait:.0f} s")
        team = config.team_by_hash(st.sha256_hex(token)) if isinstance(token, str) and token else None
        (wrong_tokens.failed if team is None else wrong_tokens.succeeded)(address(request))
        return team

    def bearer_team(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        team = check_token(request, token.strip() if scheme.lower() == "bearer" else "")
        if team is None:
            raise HTTPException(401, "missing or wrong token", headers={"WWW-Authenticate": "Bearer"})
        return team.name

    def check_rejections(request: Request, team: str) -> None:
        """429 before the body is read, for a team or address whose uploads were refused
        (422, 413) `rejects_per_hour` times (twice that per address) in the last hour."""
        for window, key, who in ((rejected_by_team, team, f"team {team}"),
                                 (rejected_by_address, address(request), "your address")):
            wait = window.wait(key)
            if wait > 0:
                raise too_many(wait, f"{who} had {window.per_hour} uploads refused in the last hour; "
                                     f"try again in {wait / 60:.0f} min")

    def count_rejection(request: Request, team: str, status: int) -> None:
        if status in (413, 422):
            rejected_by_team.add(team)
            rejected_by_address.add(address(request))

    def session_of(request: Request) -> tuple[str, str] | None:
        """(team, csrf token) of a logged-in browser."""
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        with service.store.session() as session:
            row = session.get(st.WebSession, st.sha256_hex(cookie))
        if row is None or row.expires_at < st.now() or row.team not in config.teams:
            return None
        return row.team, csrf_token(cookie)

    def check_form(request: Request, form, csrf: str) -> None:
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "cross-site form refused")
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, csrf):
            raise HTTPException(403, "missing or wrong CSRF token; reload the page and try again")

    async def accept(team: str, task: str, form) -> Outcome:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            return Outcome(422, detail="no file: send the run as the multipart field 'file'")
        description = form.get("description")
        description = description if isinstance(description, str) else ""
        return await run_in_threadpool(service.submit, team, task, upload.file, upload.filename, description)

    # --- API -----------------------------------------------------------------------------

    @app.get("/api/tasks")
    def api_tasks():
        return [{"name": t.name, "title": t.title, "measures": list(t.measures), "main_measure": t.main_measure,
                 "formats": list(t.formats)} for t in config.tasks.values()]

    @app.post("/api/tasks/{task}/submissions")
    async def api_submit(task: str, request: Request):
        team = bearer_team(request)
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        check_rejections(request, team)
        try:
            async with request.form() as form:  # closes (deletes) the spooled upload afterwards
                outcome = await accept(team, task, form)
        except HTTPException as refused:  # the body limit, counted while reading
            count_rejection(request, team, refused.status_code)
            raise
        count_rejection(request, team, outcome.status)
        return JSONResponse(outcome.body(), status_code=outcome.status)

    @app.get("/api/submissions/{ident}")
    def api_submission(ident: str, request: Request):
        team = bearer_team(request)
        row = service.submission(ident)
        if row is None or row.team != team:  # another team's submission is as good as absent
            raise HTTPException(404, "no such submission of your team")
        served = config.tasks.get(row.task)  # None: a task since removed from the config (renamed for a new board)
        return {
            "id": row.id, "task": row.task, "team": row.team, "run_name": row.run_name,
            "description": row.description, "format": row.format, "sha256": row.sha256,
            "submitted": row.created_at.isoformat() + "Z", "status": row.status,
            # when its measures were scored (a version before kept the time of a failed try, means or none)
            "scored": row.scored_at.isoformat() + "Z" if row.scored_at and row.means is not None else None,
            "measures": row.means, "warnings": row.warnings, "error": row.error,
            "per_query": row.per_query if served is not None and served.per_query_scores else None,
        }

    @app.get("/api/tasks/{task}/leaderboard")
    def api_leaderboard(task: str):
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        board = service.board(task)
        return {key: board[key] for key in ("task", "title", "main_measure", "measures", "rows", "legend", "notes")}

    # --- pages ---------------------------------------------------------------------------

    def page(request: Request, name: str, status: int = 200, **values) -> HTMLResponse:
        who = session_of(request)
        team, csrf = who if who else (None, "")
        return HTMLResponse(pages.render(name, team=team, csrf=csrf, **values), status_code=status)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request):
        return page(request, "index.html", title="Leaderboards", tasks=list(config.tasks.values()))

    @app.get("/tasks/{task}", response_class=HTMLResponse)
    def leaderboard_page(task: str, request: Request):
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        board = service.board(task, pages.depth_plot)  # built and drawn once per set of scored runs
        return page(request, "leaderboard.html", title=f"Leaderboard: {board['title']}", board=board,
                    depth_plot=board["depth_plot"])

    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request):
        return _login_form(request)

    def _login_form(request: Request, status: int = 200, error: str = "") -> HTMLResponse:
        """Login CSRF: the form's token must equal the one in the form's own cookie."""
        token = secrets.token_urlsafe(32)
        response = page(request, "login.html", status, title="Log in", login_csrf=token, error=error)
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.post("/login")
    async def login(request: Request):
        form = await request.form()
        check_form(request, form, request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(32))
        team = check_token(request, form.get("token"))
        if team is None:
            return _login_form(request, 401, "Wrong token.")
        cookie = secrets.token_urlsafe(32)
        with service.store.session() as session:
            session.execute(delete(st.WebSession).where(st.WebSession.expires_at < st.now()))
            session.add(st.WebSession(token_sha256=st.sha256_hex(cookie), team=team.name,
                                      expires_at=st.now() + timedelta(hours=SESSION_HOURS)))
            session.commit()
        response = RedirectResponse("/team", status_code=303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict", max_age=SESSION_HOURS * 3600)
        response.delete_cookie(LOGIN_COOKIE)
        return response

    @app.post("/logout")
    async def logout(request: Request):
        who = session_of(request)
        if who:
            check_form(request, await request.form(), who[1])
            with service.store.session() as session:
                session.execute(delete(st.WebSession).where(
                    st.WebSession.token_sha256 == st.sha256_hex(request.cookies[SESSION_COOKIE])))
                session.commit()
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @app.get("/submit", response_class=HTMLResponse)
    def submit_page(request: Request, task: str | None = None):
        if session_of(request) is None:
            return RedirectResponse("/login", status_code=303)
        return submit_form(request, chosen=task)

    def submit_form(request: Request, status: int = 200, **values) -> HTMLResponse:
        values.setdefault("description", "")
        return page(request, "submit.html", status, title="Submit a run", tasks=list(config.tasks.values()),
                    quota=config.quota, **values)

    @app.post("/submit")
    async def submit(request: Request):
        who = session_of(request)
        if who is None:
            raise HTTPException(401, "log in first")
        team, csrf = who
        check_rejections(request, team)
        try:
            async with request.form() as form:
                check_form(request, form, csrf)
                task = form.get("task")
                outcome = await accept(team, task if isinstance(task, str) else "", form)
                description = form.get("description")
        except HTTPException as refused:
            count_rejection(request, team, refused.status_code)
            if refused.status_code != 413:
                raise
            return submit_form(request, 413, detail=refused.detail)
        count_rejection(request, team, outcome.status)
        if outcome.status == 202:
            return RedirectResponse(f"/team?accepted={outcome.id}", status_code=303)
        return submit_form(request, outcome.status, detail=outcome.detail, messages=outcome.messages,
                           chosen=task, description=description if isinstance(description, str) else "")

    @app.get("/team", response_class=HTMLResponse)
    def team_page(request: Request, accepted: str | None = None):
        who = session_of(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        submissions = service.team_submissions(who[0])
        shown = accepted if accepted in {s.id for s in submissions} else None
        return page(request, "team.html", title=f"Team {who[0]}", submissions=submissions, accepted=shown)

    @app.get("/health")
    def health():
        return Response("ok", media_type="text/plain")

    return app


def csrf_token(session_cookie: str) -> str:
    """Derived from the session id, so only the hash of the id needs storing."""
    return hmac.new(session_cookie.encode(), b"harness-csrf", "sha256").hexdigest()
