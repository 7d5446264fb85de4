"""A project's webhooks (docs/how-to/thresholds-alerts.md): register one (URL, events,
secret, format), list, read and delete them, and read each one's deliveries with their
attempts. All for project members who may write to it; the secret is shown once, in the answer
to the ``POST`` that set it or generated it, and never again."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy.engine import Connection

from benchrunner.api.webhooks import (
    CreatedWebhook,
    Webhook,
    WebhookAttempt,
    WebhookCreate,
    WebhookDelivery,
)
from benchrunner.server.access import members_project
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import bad_request, not_found
from benchrunner.server.processing.webhooks import UnsafeUrl, check_url
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page
from benchrunner.server.store import webhooks
from benchrunner.server.views.resources import iso

router = APIRouter(tags=["webhooks"])

WEBHOOKS = "/v0/projects/{project}/webhooks"

SIGN_IN_TO = "manage a project's webhooks"
"""What an anonymous caller is asked to sign in to do."""


def webhook_view(row: Any, project_uuid: Any) -> Webhook:
    """A webhook, without its secret."""
    return Webhook(
        uuid=str(row.uuid),
        project=str(project_uuid),
        url=row.url,
        events=webhooks.events_of(row),
        format=row.format,
        created=iso(row.created),
    )


def created_webhook_view(row: Any, project_uuid: Any, secret: str) -> CreatedWebhook:
    """A new webhook with its ``secret``, which no other answer shows."""
    return CreatedWebhook(**dict(webhook_view(row, project_uuid)), secret=secret)


def _webhook(conn: Connection, project_id: int, ref: str) -> Any:
    found = webhooks.webhook_get(conn, project_id, ref)
    if found is None:
        raise not_found("webhook", ref)
    return found


@router.post(WEBHOOKS, status_code=201, **ANSWERED)
async def create_webhook(
    project: str, body: WebhookCreate, user: MaybeUser, ctx: Ctx
) -> CreatedWebhook:
    """Register a webhook. The answer carries its ``secret`` (the one given, or a generated
    one): it is never shown again."""
    try:
        check_url(body.url, ctx.settings.webhook_allow_private)
    except UnsafeUrl as exc:
        raise bad_request(f"url: {exc}") from exc
    secret = body.secret or secrets.token_urlsafe(32)
    events = list(dict.fromkeys(body.events))

    def unit(conn: Connection) -> CreatedWebhook:
        row = members_project(conn, user, project, SIGN_IN_TO)
        created = webhooks.webhook_add(
            conn, row.id, body.url, events, body.format, secret, ctx.clock.now()
        )
        return created_webhook_view(created, row.uuid, secret)

    return await ctx.db.write(unit)


@router.get(WEBHOOKS, **ANSWERED)
async def list_webhooks(project: str, user: MaybeUser, ctx: Ctx) -> list[Webhook]:
    """The project's webhooks, oldest first, without their secrets."""

    def unit(conn: Connection) -> list[Webhook]:
        row = members_project(conn, user, project, SIGN_IN_TO)
        return [webhook_view(w, row.uuid) for w in webhooks.webhook_list(conn, row.id)]

    return await ctx.db.read(unit)


@router.get(WEBHOOKS + "/{webhook}", **ANSWERED)
async def get_webhook(project: str, webhook: str, user: MaybeUser, ctx: Ctx) -> Webhook:
    """One webhook, without its secret."""

    def unit(conn: Connection) -> Webhook:
        row = members_project(conn, user, project, SIGN_IN_TO)
        return webhook_view(_webhook(conn, row.id, webhook), row.uuid)

    return await ctx.db.read(unit)


@router.delete(WEBHOOKS + "/{webhook}", status_code=204)
async def delete_webhook(project: str, webhook: str, user: MaybeUser, ctx: Ctx) -> Response:
    """Delete the webhook with its deliveries: those still pending are never sent."""

    def unit(conn: Connection) -> None:
        row = members_project(conn, user, project, SIGN_IN_TO)
        webhooks.webhook_delete(conn, _webhook(conn, row.id, webhook).id)

    await ctx.db.write(unit)
    return Response(status_code=204)


def delivery_view(row: Any, attempts: list[Any]) -> WebhookDelivery:
    return WebhookDelivery(
        uuid=str(row.uuid),
        event=row.event,
        status=row.status,
        attempts=[
            WebhookAttempt(
                attempted=iso(a.attempted),
                status_code=a.status_code,
                error=a.error,
                duration_ms=a.duration_ms,
            )
            for a in attempts
        ],
        next_attempt=iso(row.next_attempt) if row.status == "pending" else None,
        created=iso(row.created),
        finished=iso(row.finished),
        body=row.body,
    )


@router.get(WEBHOOKS + "/{webhook}/deliveries", **ANSWERED)
async def list_deliveries(
    project: str, webhook: str, user: MaybeUser, ctx: Ctx, response: Response, pages: Page
) -> list[WebhookDelivery]:
    """The webhook's deliveries, newest first, each with its attempts (when, the answer's
    status code or the error, how long it took)."""

    def unit(conn: Connection) -> tuple[list[WebhookDelivery], int]:
        row = members_project(conn, user, project, SIGN_IN_TO)
        hook = _webhook(conn, row.id, webhook)
        found, total = webhooks.delivery_list(
            conn, hook.id, limit=pages.per_page, offset=pages.offset
        )
        attempts = webhooks.attempts_of(conn, [d.id for d in found])
        return [delivery_view(d, attempts[d.id]) for d in found], total

    deliveries, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return deliveries
