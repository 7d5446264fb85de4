"""API errors as Bencher shapes them: ``{"message", "request_id", "error_code"?}``.

Handlers raise :class:`ApiError` (built by the helpers below). At the boundary, FastAPI's
validation errors become 400 (not FastAPI's 422), a value the database refuses to store (e.g.
text with a NUL character on PostgreSQL) becomes 400, and anything else unexpected becomes a
500 in the same shape, with ``Connection: close`` so that a client never sends its next request
on a connection the server is about to drop. The traceback goes to the log, never to the client.
"""

from __future__ import annotations

import logging
import uuid

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from benchrunner.api.base import refusal_message
from benchrunner.server.blobs.blob_store import BlobStoreUnavailable

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code
        self.headers = headers or {}


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, error_code="bad_request")


def not_found(what: str, ref: str) -> ApiError:
    return ApiError(404, f"{what} {ref!r} not found", error_code="not_found")


def conflict(message: str) -> ApiError:
    return ApiError(409, message, error_code="conflict")


def forbidden(message: str) -> ApiError:
    return ApiError(403, message, error_code="forbidden")


def unauthorized(
    message: str = "authentication required: send Authorization: Bearer <token>",
) -> ApiError:
    return ApiError(401, message, error_code="unauthorized", headers={"WWW-Authenticate": "Bearer"})


def error_body(message: str, error_code: str | None) -> dict[str, str]:
    """Every error's JSON body, whichever layer answers it."""
    body = {"message": message, "request_id": str(uuid.uuid4())}
    if error_code:
        body["error_code"] = error_code
    return body


def _validation_message(exc: RequestValidationError) -> str:
    return refusal_message(exc.errors())


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.message, exc.error_code), status_code=exc.status, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(_validation_message(exc), "bad_request"), status_code=400)

    @app.exception_handler(sqlalchemy.exc.DataError)
    async def _unstorable(_request: Request, exc: sqlalchemy.exc.DataError) -> JSONResponse:
        # The driver's own message (not str(exc): that has the statement and its parameters).
        reason = str(exc.orig).splitlines()[0] if exc.orig is not None else "invalid value"
        return JSONResponse(
            error_body(f"invalid request: a value cannot be stored: {reason}", "bad_request"),
            status_code=400,
        )

    @app.exception_handler(BlobStoreUnavailable)
    async def _store_down(_request: Request, exc: BlobStoreUnavailable) -> JSONResponse:
        log.error("%s", exc)  # the store's own words stay in the log: they name its endpoint
        return JSONResponse(
            error_body("the blob store is unavailable; try again later", "unavailable"),
            status_code=503,
            headers={"Retry-After": "30", "Connection": "close"},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        body = error_body("internal server error", "internal_error")
        # The traceback is logged once, by uvicorn, right after this line.
        log.error("internal server error %s: %s", body["request_id"], type(exc).__name__)
        return JSONResponse(body, status_code=500, headers={"Connection": "close"})

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            error_body(str(exc.detail), None), status_code=exc.status_code, headers=exc.headers
        )
