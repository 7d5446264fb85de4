"""The app ``stack_floor`` serves: the server's libraries with no work of benchrunner's, so that
what they cost alone can be read beside what a job costs.

Routes (each answers ``{"ok": true}``):

- ``POST /asgi``: answered by a bare ASGI function in front of FastAPI, which parses the JSON
  body (uvicorn and httptools alone);
- ``POST /starlette``: a Starlette route that parses the JSON body;
- ``POST /fastapi``: a FastAPI route whose body is a pydantic model;
- ``POST /fastapi-db-thread``: the same, and one ``INSERT`` committed on PostgreSQL through
  psycopg's blocking connection in a worker thread (as the server's store does);
- ``POST /fastapi-db-loop``: the same ``INSERT`` and commit through psycopg's asyncio
  connection on the event loop;
- ``WS /ws``: each text message answered with a small text message.

Run by ``uvicorn`` with uvloop and httptools, as the server runs: ``STACK_FLOOR_DB`` names the
PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

INSERT = "INSERT INTO floor_row (name, value) VALUES (%s, %s)"


class Body(BaseModel):
    name: str
    value: int


class _Store:
    blocking: psycopg.Connection[tuple[object, ...]] | None = None
    looped: psycopg.AsyncConnection[tuple[object, ...]] | None = None


store = _Store()


@asynccontextmanager
async def _lifespan(_: FastAPI) -> AsyncIterator[None]:
    url = os.environ["STACK_FLOOR_DB"]
    store.blocking = psycopg.connect(url)
    store.blocking.execute(
        "CREATE TABLE IF NOT EXISTS floor_row (id bigserial PRIMARY KEY, name text, value bigint)"
    )
    store.blocking.commit()
    store.looped = await psycopg.AsyncConnection.connect(url)
    yield
    store.blocking.close()
    await store.looped.close()


fastapi_app = FastAPI(lifespan=_lifespan)
_ANSWER = json.dumps({"ok": True}).encode()
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_ANSWER)).encode())]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http" or scope["path"] != "/asgi":
        await fastapi_app(scope, receive, send)
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    json.loads(body)
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": _ANSWER})


@fastapi_app.post("/starlette")
async def _starlette(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse({"ok": bool(body)})


@fastapi_app.post("/fastapi")
async def _fastapi(body: Body) -> dict[str, bool]:
    return {"ok": bool(body.name)}


def _insert(body: Body) -> None:
    assert store.blocking is not None
    store.blocking.execute(INSERT, (body.name, body.value))
    store.blocking.commit()


@fastapi_app.post("/fastapi-db-thread")
async def _fastapi_db_thread(body: Body) -> dict[str, bool]:
    await asyncio.to_thread(_insert, body)
    return {"ok": True}


@fastapi_app.post("/fastapi-db-loop")
async def _fastapi_db_loop(body: Body) -> dict[str, bool]:
    assert store.looped is not None
    await store.looped.execute(INSERT, (body.name, body.value))
    await store.looped.commit()
    return {"ok": True}


@fastapi_app.websocket("/ws")
async def _ws(socket: WebSocket) -> None:
    await socket.accept()
    try:
        while True:
            await socket.receive_text()
            await socket.send_text('{"type":"ack"}')
    except WebSocketDisconnect:
        return
