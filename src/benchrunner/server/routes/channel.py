"""The runner channel endpoint: authenticate at the handshake, then hand over to a session."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from benchrunner.protocol import EXTENSIONS_HEADER, parse_extensions_header
from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.channel.runner_channel import ChannelHub, ChannelSession, authenticate
from benchrunner.server.channel.runner_session import RunnerSocket, runner_socket_route

router = APIRouter(tags=["runner agent"])
log = logging.getLogger(__name__)


async def runner_channel(websocket: RunnerSocket) -> None:
    runner: str = websocket.path_params["runner"]
    life: Lifecycle = websocket.app.state.lifecycle
    hub: ChannelHub = websocket.app.state.hub
    row = await authenticate(websocket, life, runner)
    if row is None:
        await websocket.send_denial_response(
            JSONResponse(
                {"message": "invalid runner token, unknown runner, or archived runner"},
                status_code=401,
            )
        )
        return
    await websocket.accept()
    extensions = parse_extensions_header(websocket.headers.get(EXTENSIONS_HEADER))
    session = ChannelSession(websocket, row, life, extensions)
    hub.open(session)
    log.info("runner %s connected", row.slug)
    try:
        await session.run()
    finally:
        if hub.discard(session):
            life.runner_disconnected(row.id)
        log.info("runner %s disconnected", row.slug)


router.routes.append(runner_socket_route("/v0/runners/{runner}/channel", runner_channel))
