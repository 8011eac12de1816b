"""The browser's side: the public boards, and a team's login, submit and team pages, each
form checked for its CSRF token (the templates are harness/serve/pages.py)."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from harness.serve import pages
from harness.serve.api import accept
from harness.serve.guard import LOGIN_COOKIE, SESSION_COOKIE, SESSION_HOURS, Guard
from harness.serve.service import Service


def pages_router(service: Service, guard: Guard) -> APIRouter:
    router = APIRouter()
    config = service.config

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        who = guard.session_of(request)
        team, csrf = who if who else (None, "")
        return HTMLResponse(pages.render(name, team=team, csrf=csrf, **values), status_code=status)

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", title="Leaderboards", tasks=list(config.tasks.values()))

    @router.get("/tasks/{task}", response_class=HTMLResponse)
    def leaderboard_page(task: str, request: Request) -> HTMLResponse:
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        board = service.board(task, pages.depth_plot)  # built and drawn once per set of scored runs
        return page(request, "leaderboard.html", title=f"Leaderboard: {board['title']}", board=board,
                    depth_plot=board["depth_plot"])

    @router.get("/login", response_class=HTMLResponse)
    def login_page(request: Request) -> HTMLResponse:
        return login_form(request)

    def login_form(request: Request, status: int = 200, error: str = "") -> HTMLResponse:
        """Login CSRF: the form's token must equal the one in the form's own cookie."""
        token = secrets.token_urlsafe(32)
        response = page(request, "login.html", status, title="Log in", login_csrf=token, error=error)
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @router.post("/login", response_model=None)
    async def login(request: Request) -> HTMLResponse | RedirectResponse:
        form = await request.form()
        guard.check_form(request, form, request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(32))
        team = guard.check_token(request, form.get("token"))
        if team is None:
            return login_form(request, 401, "Wrong token.")
        cookie = guard.open_session(team.name)
        response = RedirectResponse("/team", status_code=303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict", max_age=SESSION_HOURS * 3600)
        response.delete_cookie(LOGIN_COOKIE)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> RedirectResponse:
        who = guard.session_of(request)
        if who:
            guard.check_form(request, await request.form(), who[1])
            guard.close_session(request.cookies[SESSION_COOKIE])
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
        guard.check_rejections(request, team)
        try:
            async with request.form() as form:
                guard.check_form(request, form, csrf)
                task = form.get("task")
                outcome = await accept(service, team, task if isinstance(task, str) else "", form)
                description = form.get("description")
        except HTTPException as refused:
            guard.count_rejection(request, team, refused.status_code)
            if refused.status_code != 413:
                raise
            return submit_form(request, 413, detail=refused.detail)
        guard.count_rejection(request, team, outcome.status)
        if outcome.status == 202:
            return RedirectResponse(f"/team?accepted={outcome.id}&answer={outcome.answer}", status_code=303)
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
