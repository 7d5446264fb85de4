"""The request dependencies the API's routes and the console's pages share: the server
context, the running services and the lifecycle, the largest page number, and who submits a
job from where. The API's own (its caller, pagination) are in ``routes.deps``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from benchrunner.server.channel.lifecycle import Lifecycle
from benchrunner.server.context import ServerContext
from benchrunner.server.services import Services
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.jobs import Origin

# (MAX_PAGE - 1) * MAX_PER_PAGE stays far inside a signed 64-bit OFFSET on both engines.
MAX_PAGE = 2**31 - 1


async def context(request: Request) -> ServerContext:
    ctx: ServerContext = request.app.state.ctx
    return ctx


async def lifecycle(request: Request) -> Lifecycle:
    life: Lifecycle = request.app.state.lifecycle
    return life


async def services(request: Request) -> Services:
    running: Services = request.app.state.services
    return running


Ctx = Annotated[ServerContext, Depends(context)]
Life = Annotated[Lifecycle, Depends(lifecycle)]
Svc = Annotated[Services, Depends(services)]


def origin_of(request: Request, user: UserRow | None) -> Origin:
    """Who is submitting a job and from where, as its ``job_created`` event records it."""
    source_ip = request.client.host if request.client else "0.0.0.0"
    return Origin(
        actor=user.email if user else f"anonymous@{source_ip}",
        source_ip=source_ip,
        user_agent=request.headers.get("user-agent"),
        token_name=user.token_name if user else None,
        reached=f"{request.url.scheme}://{request.url.netloc}",
    )
