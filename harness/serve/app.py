"""The HTTP side: the JSON API (Bearer tokens; harness/serve/api.py) and the pages (a login
session + CSRF token; harness/serve/web.py), both behind one Guard (harness/serve/guard.py).

Tokens and session ids are stored only as SHA-256 hashes (they are 256-bit random, so a
plain hash is enough). A page form carries a CSRF token derived from the session id, which
a cross-site page cannot read; a request whose Origin is another site is refused too, and
the session cookie is SameSite=Strict and HttpOnly.

What a client may cost (harness/serve/limits.py): a body limit per route counted while
reading, a timeout on slow bodies, a rate of refused uploads per team and per address
(checked before the body is read), and a doubling wait after repeated wrong tokens.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from harness.serve.api import api_router
from harness.serve.guard import Guard, address
from harness.serve.limits import BodyLimit, size
from harness.serve.service import Service
from harness.serve.web import error_page, pages_router, wants_page

log = logging.getLogger("harness.serve")

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
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        service.start()
        yield
        service.stop()

    app = FastAPI(title="harness leaderboard", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    config = service.config

    def body_limit(method: str, path: str) -> tuple[int, str]:
        """An upload's limit names the file's, which the team is held to (the form's slack is
        ours): '2 MiB allowed here' alone sent a team a 1.5 MiB file refused as over 1 MiB."""
        if method == "POST" and path.startswith(UPLOAD_ROUTES):
            file = size(config.max_upload_bytes)
            return config.max_upload_bytes + MULTIPART_SLACK, f" (a file of at most {file}, and its form)"
        return FORM_LIMIT, ""

    guard = Guard(service)

    async def refusal(request: Request, status: int, detail: str, headers: dict[str, str] | None) -> Response:
        """A page for a browser (a form's 403, 413 or 429 was a bare JSON page), JSON for a script."""
        if wants_page(request):  # the page's log-in state is read from the database: off the event loop
            return await run_in_threadpool(error_page, guard, request, status, detail, headers)
        return JSONResponse({"detail": detail}, status_code=status, headers=headers)

    async def body_refusal(scope, status: int, detail: str) -> Response:
        """BodyLimit's answer before the body is read (no team known yet: the log names the
        address); the connection closes after it."""
        request = Request(scope)
        log.info("%s %s from %s refused (%d): %s", request.method, request.url.path, address(request), status, detail)
        return await refusal(request, status, detail, {"Connection": "close"})

    app.add_middleware(BodyLimit, limit_of=body_limit, timeout=lambda: config.client_timeout_s, refuse=body_refusal)

    @app.exception_handler(HTTPException)
    async def refused(request: Request, problem: HTTPException) -> Response:
        return await refusal(request, problem.status_code, problem.detail, problem.headers)

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, _problem: ClientDisconnect) -> Response:
        log.info("%s %s: the client went away before sending the whole request", request.method, request.url.path)
        return Response(status_code=400)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    app.include_router(api_router(service, guard))
    app.include_router(pages_router(service, guard))
    return app
