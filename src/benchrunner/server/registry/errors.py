"""Registry errors in the Distribution Spec's shape: ``{"errors": [{"code", "message"}]}``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

# code -> HTTP status, as the Distribution Spec pairs them
STATUS = {
    "BLOB_UNKNOWN": 404,
    "BLOB_UPLOAD_INVALID": 400,
    "BLOB_UPLOAD_UNKNOWN": 404,
    "DIGEST_INVALID": 400,
    "MANIFEST_BLOB_UNKNOWN": 400,
    "MANIFEST_INVALID": 400,
    "MANIFEST_UNKNOWN": 404,
    "NAME_INVALID": 400,
    "NAME_UNKNOWN": 404,
    "SIZE_INVALID": 400,
    "UNAUTHORIZED": 401,
    "DENIED": 403,
    "UNSUPPORTED": 405,
    "TOOMANYREQUESTS": 429,
}


class RegistryError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or STATUS[code]
        self.headers = headers or {}


def error_response(exc: RegistryError, *, close: bool = False) -> JSONResponse:
    # Docker's client looks for this header, on the 401 of /v2/ too, to confirm a v2 registry.
    headers = {"Docker-Distribution-API-Version": "registry/2.0", **exc.headers}
    if close:
        headers["Connection"] = "close"
    return JSONResponse(
        {"errors": [{"code": exc.code, "message": exc.message}]},
        status_code=exc.status,
        headers=headers,
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(RegistryError)
    async def _registry_error(request: Request, exc: RegistryError) -> JSONResponse:
        # A refused upload may leave its body unread on the socket: close the connection so
        # the client does not send its next request into the rest of that body.
        return error_response(exc, close=request.method in ("POST", "PUT", "PATCH"))
