"""The browser's side: the public boards, and a team's login, submit and team pages, each
form checked for its CSRF token (the templates are harness/serve/pages.py). A refusal a
browser meets is a page too (`error_page`): the login and submit forms show theirs inline."""

from __future__ import annotations

import secrets
from http import HTTPStatus
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from harness.serve import pages
from harness.serve.api import accept
from harness.serve.guard import LOGIN_COOKIE, SESSION_COOKIE, SESSION_HOURS, Guard
from harness.serve.service import Service

FORMS = ("/login", "/logout", "/submit")  # posted by the pages' forms: a browser's, whatever it accepts
BACK = {"/login": "the login form", "/submit": "the submit form"}


def wants_page(request: Request) -> bool:
    """Whether a refusal goes to a browser (an HTML page) rather than to a script (JSON): the
    pages' forms, and any other page route asked for HTML; the API answers JSON whatever is asked."""
    path = request.url.path
    if path.startswith("/api/") or path == "/health":
        return False
    return path in FORMS or "text/html" in request.headers.get("accept", "")


def render_page(guard: Guard, request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
    who = guard.session_of(request)
    team, csrf = who if who else (None, "")
    return HTMLResponse(pages.render(name, team=team, csrf=csrf, **values), status_code=status)


def error_page(guard: Guard, request: Request, status: int, detail: str,
               headers: dict[str, str] | None = None) -> HTMLResponse:
    """A refusal (403, 404, 413, 429, ...) as a page, its headers (a 429's Retry-After) kept, with
    the way back to the form it came from."""
    path = "/login" if status == 401 else request.url.path  # a form of a session that ended: log in again
    shown = render_page(guard, request, "error.html", status, title=f"{status} {HTTPStatus(status).phrase}",
                        detail=detail, back=path if path in BACK else "/", back_to=BACK.get(path, "the leaderboards"))
    shown.headers.update(headers or {})
    return shown


def pages_router(service: Service, guard: Guard) -> APIRouter:
    router = APIRouter()
    config = service.config

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return render_page(guard, request, name, status, **values)

    @router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)  # HEAD: uptime monitors
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", title="Leaderboards", tasks=list(config.tasks.values()))

    @router.api_route("/tasks/{task}", methods=["GET", "HEAD"], response_class=HTMLResponse)
    def leaderboard_page(task: str, request: Request) -> HTMLResponse:
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        board = service.board(task, pages.depth_plot)  # built and drawn once per set of scored runs
        return page(request, "leaderboard.html", title=f"Leaderboard: {board['title']}", board=board,
                    depth_plot=board["depth_plot"])

    @router.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> HTMLResponse:
        return login_form(request)

    def login_form(request: Request, status: int = 200, error: str = "",
                   headers: dict[str, str] | None = None) -> HTMLResponse:
        """Login CSRF: the form's token must equal the one in the form's own cookie."""
        token = secrets.token_urlsafe(32)
        response = page(request, "login.html", status, title="Log in", login_csrf=token, error=error)
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict")
        response.headers.update(headers or {})
        return response

    @router.post("/login", response_model=None)
    async def login(request: Request) -> HTMLResponse | RedirectResponse:
        try:
            form = await request.form()
            guard.check_form(request, form, request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(32))
            team = guard.check_token(request, form.get("token"))
        except HTTPException as refused:  # another site's form, too many wrong tokens, too large a body
            return login_form(request, refused.status_code, refused.detail, refused.headers)
        if team is None:
            return login_form(request, 401, "Wrong token.")
        cookie = guard.open_session(request, team.name)
        response = RedirectResponse("/team", status_code=303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict", max_age=SESSION_HOURS * 3600)
        response.delete_cookie(LOGIN_COOKIE)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> RedirectResponse:
        who = guard.session_of(request)
        if who:
            guard.check_form(request, await request.form(), who[1])
            guard.close_session(request, who[0], request.cookies[SESSION_COOKIE])
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @router.get("/submit", response_class=HTMLResponse, response_model=None)
    def submit_page(request: Request, task: str | None = None) -> HTMLResponse | RedirectResponse:
        if guard.session_of(request) is None:
            return RedirectResponse("/login", status_code=303)
        return submit_form(request, chosen=task)

    def submit_form(request: Request, status: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("description", "")
        return page(request, "submit.html", status, title="Submit a run", tasks=list(config.tasks.values()),
                    quota=config.quota, **values)

    @router.post("/submit", response_model=None)
    async def submit(request: Request) -> HTMLResponse | RedirectResponse:
        who = guard.session_of(request)
        if who is None:
            raise HTTPException(401, "log in first")
        team, csrf = who
        task = ""  # the form's, once read
        try:
            guard.check_rejections(request, team)
            async with request.form() as form:
                guard.check_form(request, form, csrf)
                chosen = form.get("task")
                task = chosen if isinstance(chosen, str) else ""
                outcome = await accept(service, team, task, form, no_file="no file: choose the run file to upload")
                description = form.get("description")
        except HTTPException as refused:  # too many refusals, a missing CSRF token, the body limit
            guard.refused(request, team, task, refused.status_code, refused.detail)
            shown = submit_form(request, refused.status_code, detail=refused.detail, chosen=task)
            shown.headers.update(refused.headers or {})
            return shown
        if outcome.status == 202:
            return RedirectResponse(f"/team?accepted={outcome.id}&answer={outcome.answer}", status_code=303)
        guard.refused(request, team, task, outcome.status, outcome.why())
        shown = submit_form(request, outcome.status, detail=outcome.detail, messages=outcome.messages,
                            chosen=task, description=description if isinstance(description, str) else "")
        shown.headers.update(outcome.headers)
        return shown

    @router.get("/team", response_class=HTMLResponse, response_model=None)
    def team_page(request: Request, accepted: str | None = None,
                  answer: str = "accepted") -> HTMLResponse | RedirectResponse:
        """`answer`, the upload's (Outcome.answer): a duplicate is not said to be stored and queued."""
        who = guard.session_of(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        submissions = service.team_submissions(who[0])
        shown = accepted if accepted in {s.id for s in submissions} else None
        return page(request, "team.html", title=f"Team {who[0]}", submissions=submissions, accepted=shown,
                    answer=answer)

    return router
