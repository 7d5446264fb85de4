"""Putting the console on the application: its pages, its static files, ``/`` redirecting to
it, and errors on its pages answered as HTML pages instead of the API's JSON."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from benchrunner.server.console import pages
from benchrunner.server.console.nav import PREFIX
from benchrunner.server.console.templating import STATIC_PREFIX, render
from benchrunner.server.console.throttle import LoginThrottle
from benchrunner.server.console.viewer import ANONYMOUS, current_viewer
from benchrunner.server.http.errors import ApiError

STATIC_DIR = Path(__file__).with_name("static")


def page_routers() -> list[APIRouter]:
    """The ``router`` of every module in :mod:`benchrunner.server.console.pages`, by name."""
    routers = []
    for info in sorted(pkgutil.iter_modules(pages.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{pages.__name__}.{info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, APIRouter):
            routers.append(router)
    return routers


def _is_console(request: Request) -> bool:
    path = request.url.path
    return path == PREFIX or path.startswith(PREFIX + "/")


async def _error_page(request: Request, status: int, message: str) -> Response:
    try:
        viewer = await current_viewer(request, request.app.state.ctx)
    except Exception:  # the error may be the database's: still answer with a page
        viewer = ANONYMOUS
    return render(
        request, viewer, "error.html", {"status": status, "message": message}, status_code=status
    )


async def _delegate(handler: Any, request: Request, exc: Exception) -> Response:
    """Answer with the API's own handler (sync or async) for a path outside the console."""
    response = handler(request, exc)
    if inspect.isawaitable(response):
        response = await response
    assert isinstance(response, Response)
    return response


def _install_error_pages(app: FastAPI) -> None:
    api_error = app.exception_handlers[ApiError]
    http_error = app.exception_handlers[StarletteHTTPException]
    invalid = app.exception_handlers[RequestValidationError]

    async def on_api_error(request: Request, exc: Exception) -> Response:
        if _is_console(request) and isinstance(exc, ApiError):
            return await _error_page(request, exc.status, exc.message)
        return await _delegate(api_error, request, exc)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        if _is_console(request) and isinstance(exc, StarletteHTTPException):
            message = "page not found" if exc.status_code == 404 else str(exc.detail)
            return await _error_page(request, exc.status_code, message)
        return await _delegate(http_error, request, exc)

    async def on_invalid(request: Request, exc: Exception) -> Response:
        if _is_console(request) and isinstance(exc, RequestValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
                for e in exc.errors()
            )
            return await _error_page(request, 400, f"invalid request: {problems}")
        return await _delegate(invalid, request, exc)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_invalid)


def install(app: FastAPI) -> None:
    """Add the console to ``app``, after the API's error handlers (it wraps them)."""
    app.state.login_throttle = LoginThrottle()
    for router in page_routers():
        app.include_router(router, include_in_schema=False)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse(PREFIX, status_code=307)

    app.mount(STATIC_PREFIX, StaticFiles(directory=STATIC_DIR), name="console-static")
    _install_error_pages(app)
