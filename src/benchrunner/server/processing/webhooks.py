"""Webhooks (docs/how-to/thresholds-alerts.md): alert events written to the outbox in the
transaction that made them (``emit_alert_event``), and the worker that POSTs them, signed,
retrying with backoff (``WebhookDelivery``).

Every replica runs the worker: a claim takes due rows with ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL and moves them past the attempt's timeout, so two replicas never send one delivery at
once and a replica that dies mid-attempt leaves it to be retried. Delivery is at least once: a
receiver deduplicates by the ``X-Benchrunner-Delivery`` header (also the body's ``delivery``).

Time (when a delivery is due, its backoff, its age) is the context's clock; the pause between
polls is its monotonic clock, so tests can move both.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import ipaddress
import json
import logging
import random
import socket
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy.engine import Connection

from benchrunner.server.bisection.views import alert_bisection
from benchrunner.server.context import ServerContext
from benchrunner.server.store import accounts, alerts, webhooks
from benchrunner.server.tasks import cancel_and_wait, repeat
from benchrunner.server.views.resources import alert_view, iso

log = logging.getLogger(__name__)

EVENTS = ("alert.raised", "alert.confirmed", "alert.dismissed", "alert.triaged", "alert.bisected")
"""The event names a webhook may ask for: ``alert.bisected`` when a bisection started from
the alert ends (docs/how-to/bisect.md), with the alert's ``bisection`` in its body."""
DELIVERED_TODAY = ("alert.raised", "alert.dismissed", "alert.triaged", "alert.bisected")
"""Those the server emits; ``alert.confirmed`` is accepted and reserved: an alert its
confirmation runs raise arrives as ``alert.raised``, its ``confirmation`` in the body."""

SIGNATURE_HEADER = "X-Benchrunner-Signature"
TIMESTAMP_HEADER = "X-Benchrunner-Timestamp"
EVENT_HEADER = "X-Benchrunner-Event"
DELIVERY_HEADER = "X-Benchrunner-Delivery"
CLAIM_BATCH = 50
LEASE_MARGIN = dt.timedelta(seconds=30)
"""Added to the request timeout: how long a claimed delivery is left to its claimer."""


# ------------------------------------------------------------------ URLs


class UnsafeUrl(ValueError):
    """A webhook URL the server refuses to send to."""


def check_url(url: str, allow_private: bool) -> None:
    """An http(s) URL with a host; a literal address must be public unless ``allow_private``.
    A host name is checked when each delivery resolves it (``address_refused``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("a webhook URL must be http or https")
    if not parts.hostname:
        raise UnsafeUrl("a webhook URL must name a host")
    try:
        address = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return
    if not allow_private and not address.is_global:
        raise UnsafeUrl(
            f"{address} is not a public address (the server's webhook_allow_private allows it)"
        )


async def address_refused(url: str, allow_private: bool) -> str | None:
    """Why the URL's host may not be sent to (it resolves to a non-public address), or None."""
    if allow_private:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"cannot resolve {host}: {exc}"
    for *_, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if not address.is_global:
            return f"{host} resolves to {address}, not a public address"
    return None


# ------------------------------------------------------------------ events and bodies


def sign(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of the raw body."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def _summary(event: str, project_name: str, view: dict[str, Any]) -> str:
    verb = event.removeprefix("alert.")
    if view["kind"] == "duet":
        value = f"contender/baseline {view['value']:.4g}"
    else:
        value = f"{view['value']:g} {view['measure'].get('units') or ''}".rstrip()
    text = (
        f"Alert {verb} in {project_name}: {view['benchmark']['name']} "
        f"{view['measure']['name']} = {value} ({view['limit']} limit; "
        f"branch {view['branch']['name']}, testbed {view['testbed']['name']})"
    )
    bisection = view.get("bisection")
    if event == "alert.bisected" and bisection and bisection.get("text"):
        text += f": {bisection['text']}"
    return text


def render_body(
    webhook_format: str,
    event: str,
    delivery: uuid.UUID,
    now: dt.datetime,
    project_row: Any,
    view: dict[str, Any],
) -> str:
    """The body of one delivery: the generic JSON event, or Slack's incoming-webhook message
    (``text`` and ``blocks``)."""
    if webhook_format == "slack":
        text = _summary(event, project_row.name, view)
        return json.dumps(
            {
                "text": text,
                "blocks": [
                    {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                    {
                        "type": "context",
                        "elements": [
                            {
                                "type": "mrkdwn",
                                "text": f"{event} · alert {view['uuid']} · delivery {delivery}",
                            }
                        ],
                    },
                ],
            }
        )
    return json.dumps(
        {
            "event": event,
            "delivery": str(delivery),
            "created": iso(now),
            "project": {
                "uuid": str(project_row.uuid),
                "slug": project_row.slug,
                "name": project_row.name,
            },
            "alert": view,
        }
    )


def emit_alert_event(
    conn: Connection, event: str, alert_ids: Sequence[int], now: dt.datetime
) -> int:
    """Queue ``event`` about each alert for the webhooks of its project that asked for it, in
    the caller's transaction (the event and its deliveries commit or roll back together); how
    many deliveries were queued. Raising, confirming, dismissing and triaging an alert all
    call this."""
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    if not alert_ids or not webhooks.any_webhook(conn):
        return 0  # a report's processing pays one look, and no more, on a server without any
    queued = 0
    projects: dict[Any, accounts.ProjectRow] = {}
    for row in alerts.alerts_by_ids(conn, alert_ids):
        owner = projects.get(row.project_uuid)
        if owner is None:
            found = accounts.project_get(conn, str(row.project_uuid))
            assert found is not None  # the alert's own project, in this transaction
            owner = projects[row.project_uuid] = found
        alert = alert_view(row)
        if event == "alert.bisected":
            alert.bisection = alert_bisection(conn, int(row.id), row)
        view = alert.model_dump(mode="json", exclude_unset=True, by_alias=True)

        def render(
            hook: Any, delivery: uuid.UUID, view: dict[str, Any] = view, owner: Any = owner
        ) -> str:
            return render_body(hook.format, event, delivery, now, owner, view)

        queued += webhooks.outbox_add(conn, owner.id, event, render, now)
    return queued


HELD_BACK = (
    "the alert is held back while its confirmation runs re-measure; it can be changed once "
    "they have decided it (docs/how-to/thresholds-alerts.md)"
)
"""Why a held-back alert (status ``pending``) refuses a change of status or verdict: its
confirmation decides it, and webhooks have not been told of it yet."""


def set_alert_status(
    conn: Connection, alert_id: int, status: alerts.AlertStatus, now: dt.datetime
) -> None:
    """Change an alert's status, and emit ``alert.dismissed`` when it is dismissed."""
    alerts.alert_set_status(conn, alert_id, status, now)
    if status == "dismissed":
        emit_alert_event(conn, "alert.dismissed", [alert_id], now)


def set_alert_verdict(
    conn: Connection,
    alert_id: int,
    verdict: alerts.Verdict | None,
    user_id: int,
    now: dt.datetime,
) -> None:
    """Triage an alert (``None`` takes the verdict back), and emit ``alert.triaged``."""
    alerts.alert_set_verdict(conn, alert_id, verdict, user_id, now)
    emit_alert_event(conn, "alert.triaged", [alert_id], now)


# ------------------------------------------------------------------ delivery


async def expire_deliveries(ctx: ServerContext) -> None:
    """Forget the deliveries finished more than ``retention_days`` ago (housekeeping)."""
    before = ctx.clock.now() - dt.timedelta(days=ctx.settings.retention_days)
    await ctx.db.write(webhooks.deliveries_expire, before)


def backoff(settings_backoff: float, backoff_max: float, attempts: int) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones: doubling from
    ``settings_backoff``, capped at ``backoff_max``, with jitter (half to all of it)."""
    delay = min(backoff_max, settings_backoff * 2.0 ** max(0, attempts - 1))
    return float(delay * (0.5 + random.random() / 2))


class WebhookDelivery:
    """The outbox's worker on this replica."""

    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        self._task: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None

    def start(self) -> None:
        self._http = httpx.AsyncClient(
            timeout=self._ctx.settings.webhook_timeout, follow_redirects=False
        )
        self._task = asyncio.create_task(self._run(), name="webhook-delivery")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        if self._http is not None:
            await self._http.aclose()

    async def _run(self) -> None:
        interval = self._ctx.settings.webhook_poll_interval
        failed = "webhook delivery round failed"
        await repeat(self._ctx.monotonic, interval, self.step, failed, at_once=True)

    async def step(self) -> int:
        """Send the due deliveries; how many were attempted."""
        settings = self._ctx.settings
        lease = dt.timedelta(seconds=settings.webhook_timeout) + LEASE_MARGIN
        if not await self._ctx.db.read(webhooks.deliveries_due, self._ctx.clock.now()):
            return 0
        claimed = await self._ctx.db.write(
            webhooks.deliveries_claim, self._ctx.clock.now(), lease, CLAIM_BATCH
        )
        if claimed:
            await asyncio.gather(*(self._attempt(c) for c in claimed))
        return len(claimed)

    async def _send(
        self, claimed: webhooks.Claimed, attempted: dt.datetime
    ) -> tuple[int | None, str | None]:
        """POST the delivery: the answer's status code, and the error if it is not a success."""
        # One deadline for all of it: a name that resolves slowly, or a receiver that answers a
        # byte at a time, must not outlive the delivery's lease.
        async with asyncio.timeout(self._ctx.settings.webhook_timeout):
            return await self._post(claimed, attempted)

    async def _post(
        self, claimed: webhooks.Claimed, attempted: dt.datetime
    ) -> tuple[int | None, str | None]:
        assert self._http is not None
        refused = await address_refused(claimed.url, self._ctx.settings.webhook_allow_private)
        if refused is not None:
            return None, refused
        body = claimed.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "benchrunner-webhooks",
            EVENT_HEADER: claimed.event,
            DELIVERY_HEADER: str(claimed.uuid),
            TIMESTAMP_HEADER: str(int(attempted.timestamp())),
            SIGNATURE_HEADER: sign(claimed.secret, body),
        }
        # The answer's body is never read: only its status counts.
        async with self._http.stream("POST", claimed.url, content=body, headers=headers) as answer:
            status_code = answer.status_code
        if 200 <= status_code < 300:
            return status_code, None
        return status_code, f"answered {status_code}"

    async def _attempt(self, claimed: webhooks.Claimed) -> None:
        assert self._http is not None
        settings = self._ctx.settings
        attempted = self._ctx.clock.now()
        started = time.perf_counter()
        status_code: int | None = None
        try:
            status_code, error = await self._send(claimed, attempted)
        except Exception as exc:  # whatever it was, the attempt is recorded and retried
            error = f"{type(exc).__name__}: {exc}".replace(claimed.url, "<url>")
        duration_ms = (time.perf_counter() - started) * 1000
        now = self._ctx.clock.now()
        if error is None:
            status: webhooks.DeliveryStatus = "delivered"
            next_attempt = now
        else:
            delay = backoff(
                settings.webhook_backoff, settings.webhook_backoff_max, claimed.attempts
            )
            next_attempt = now + dt.timedelta(seconds=delay)
            too_old = next_attempt - claimed.created > dt.timedelta(
                seconds=settings.webhook_max_age
            )
            give_up = claimed.attempts >= settings.webhook_max_attempts or too_old
            status = "failed" if give_up else "pending"
        # The URL may hold a credential (Slack's do) and the secret is one: neither is logged.
        log.info(
            "webhook delivery %s (%s) attempt %d: %s",
            claimed.uuid,
            claimed.event,
            claimed.attempts,
            "delivered" if error is None else f"{error}; {status}",
        )
        await self._ctx.db.write(
            webhooks.attempt_record,
            claimed.id,
            claimed.attempts,
            attempted,
            status_code,
            error,
            duration_ms,
            status,
            next_attempt,
            now,
        )
