"""Errors at the HTTP boundary keep the API's shape, and say nothing of the server's inside."""

from __future__ import annotations

import asyncio

import httpx
import sqlalchemy.exc
from fastapi import FastAPI

from benchrunner.server.http import errors


def _app() -> FastAPI:
    app = FastAPI()
    errors.install(app)

    @app.get("/unexpected")
    async def unexpected() -> None:
        raise RuntimeError("secret detail")

    @app.get("/unstorable")
    async def unstorable() -> None:
        refused = Exception("PostgreSQL text fields cannot contain NUL (0x00) bytes\nDETAIL: x")
        raise sqlalchemy.exc.DataError("SELECT secret_statement", {"p": "secret"}, refused)

    return app


def _get(path: str) -> httpx.Response:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=_app(), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            return await client.get(path)

    return asyncio.run(call())


def test_an_unexpected_error_is_a_500_in_the_api_shape_that_closes_the_connection() -> None:
    response = _get("/unexpected")
    assert response.status_code == 500
    assert response.headers["connection"] == "close"
    body = response.json()
    assert body["error_code"] == "internal_error" and body["request_id"]
    assert "secret" not in response.text


def test_a_value_the_database_refuses_is_a_400_without_the_statement() -> None:
    response = _get("/unstorable")
    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == "bad_request"
    assert body["message"].endswith("cannot contain NUL (0x00) bytes")
    assert "secret" not in response.text and "DETAIL" not in response.text
