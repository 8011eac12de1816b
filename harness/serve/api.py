"""The JSON API, for `harness submit` and scripts: a team's Bearer token uploads runs and reads
its own submissions; the task list and the leaderboards are public. The public routes answer
HEAD as GET (uvicorn sends no body): uptime monitors ask HEAD, which was 405."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import FormData, UploadFile

from harness.serve.guard import Guard
from harness.serve.service import Outcome, Service


NO_FILE = "no file: send the run as the multipart field 'file'"


async def accept(service: Service, team: str, task: str, form: FormData, no_file: str = NO_FILE) -> Outcome:
    """An upload form (its `file`, and a `description`) handed to the service; the API's and the
    submit page's alike (`no_file`, the answer to a form without a file, worded for its user)."""
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        return Outcome(422, detail=no_file)
    description = form.get("description")
    description = description if isinstance(description, str) else ""
    return await run_in_threadpool(service.submit, team, task, upload.file, upload.filename, description)


def api_router(service: Service, guard: Guard) -> APIRouter:
    router = APIRouter()
    config = service.config

    @router.api_route("/api/tasks", methods=["GET", "HEAD"], response_model=None)
    def api_tasks() -> list[dict[str, Any]]:
        return [{"name": t.name, "title": t.title, "measures": list(t.measures), "main_measure": t.main_measure,
                 "formats": list(t.formats)} for t in config.tasks.values()]

    @router.post("/api/tasks/{task}/submissions")
    async def api_submit(task: str, request: Request) -> JSONResponse:
        team = guard.bearer_team(request)
        try:
            if task not in config.tasks:
                raise HTTPException(404, f"no task {task!r}")
            guard.check_rejections(request, team)
            async with request.form() as form:  # closes (deletes) the spooled upload afterwards
                outcome = await accept(service, team, task, form)
        except HTTPException as refused:  # also the body limit, counted while reading
            guard.refused(request, team, task, refused.status_code, refused.detail)
            raise
        if outcome.status != 202:
            guard.refused(request, team, task, outcome.status, outcome.why())
        return JSONResponse(outcome.body(), status_code=outcome.status, headers=outcome.headers)

    @router.get("/api/submissions/{ident}", response_model=None)
    def api_submission(ident: str, request: Request) -> dict[str, Any]:
        team = guard.bearer_team(request)
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

    @router.api_route("/api/tasks/{task}/leaderboard", methods=["GET", "HEAD"], response_model=None)
    def api_leaderboard(task: str) -> dict[str, Any]:
        if task not in config.tasks:
            raise HTTPException(404, f"no task {task!r}")
        board = service.board(task)
        return {key: board[key] for key in ("task", "title", "main_measure", "measures", "rows", "legend", "notes",
                                            "unranked")}

    @router.api_route("/health", methods=["GET", "HEAD"])
    def health() -> Response:
        return Response("ok", media_type="text/plain")

    return router
