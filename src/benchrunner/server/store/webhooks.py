"""A project's webhooks, the outbox of their deliveries, and each delivery's attempts
(docs/how-to/thresholds-alerts.md).

A delivery is written by ``outbox_add`` in the transaction of the event it reports; the
delivery worker (``server.processing.webhooks``) claims the due ones (``deliveries_claim``: on
PostgreSQL with ``FOR UPDATE SKIP LOCKED``, so replicas never claim the same row) and records
each attempt (``attempt_record``)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.listing import page_of
from benchrunner.server.store.tables import webhook, webhook_attempt, webhook_delivery

WebhookFormat = Literal["json", "slack"]
DeliveryStatus = Literal["pending", "delivered", "failed"]


def webhook_add(
    conn: Connection,
    project_id: int,
    url: str,
    events: Sequence[str],
    webhook_format: WebhookFormat,
    secret: str,
    now: dt.datetime,
) -> Any:
    webhook_uuid = uuid.uuid4()
    conn.execute(
        webhook.insert(),
        {
            "uuid": webhook_uuid,
            "project_id": project_id,
            "url": url,
            "events": ",".join(events),
            "format": webhook_format,
            "secret": secret,
            "created": now,
        },
    )
    found = webhook_get(conn, project_id, str(webhook_uuid))
    assert found is not None
    return found


def webhook_list(conn: Connection, project_id: int) -> list[Any]:
    statement = sa.select(webhook).where(webhook.c.project_id == project_id).order_by(webhook.c.id)
    return list(conn.execute(statement))


def webhook_get(conn: Connection, project_id: int, ref: str) -> Any | None:
    try:
        webhook_uuid = uuid.UUID(ref)
    except ValueError:
        return None
    statement = sa.select(webhook).where(
        webhook.c.project_id == project_id, webhook.c.uuid == webhook_uuid
    )
    return conn.execute(statement).first()


def webhook_delete(conn: Connection, webhook_id: int) -> None:
    """The webhook, its deliveries (pending ones are never sent) and their attempts."""
    conn.execute(webhook.delete().where(webhook.c.id == webhook_id))


def events_of(row: Any) -> list[str]:
    return [e for e in str(row.events).split(",") if e]


_SUBSCRIBED = sa.select(webhook).where(webhook.c.project_id == sa.bindparam("project_id"))


def any_webhook(conn: Connection) -> bool:
    """Whether any project has a webhook."""
    return conn.execute(sa.select(webhook.c.id).limit(1)).first() is not None


def outbox_add(
    conn: Connection,
    project_id: int,
    event: str,
    render: Callable[[Any, uuid.UUID], str],
    now: dt.datetime,
) -> int:
    """A pending delivery of ``event`` to each of the project's webhooks that asked for it, its
    body ``render(webhook_row, delivery_uuid)``; how many were queued. Call it in the
    transaction of the event."""
    rows = []
    for hook in conn.execute(_SUBSCRIBED, {"project_id": project_id}):
        if event not in events_of(hook):
            continue
        delivery_uuid = uuid.uuid4()
        rows.append(
            {
                "uuid": delivery_uuid,
                "webhook_id": hook.id,
                "event": event,
                "body": render(hook, delivery_uuid),
                "status": "pending",
                "attempts": 0,
                "next_attempt": now,
                "created": now,
                "finished": None,
            }
        )
    if rows:
        conn.execute(webhook_delivery.insert(), rows)
    return len(rows)


@dataclass(frozen=True)
class Claimed:
    """A delivery claimed for one attempt, with what sending it needs."""

    id: int
    uuid: uuid.UUID
    event: str
    body: str
    attempts: int
    created: dt.datetime
    url: str
    secret: str


_DUE = (
    sa.select(webhook_delivery.c.id)
    .where(
        webhook_delivery.c.status == "pending",
        webhook_delivery.c.next_attempt <= sa.bindparam("now"),
    )
    .order_by(webhook_delivery.c.next_attempt, webhook_delivery.c.id)
    .limit(sa.bindparam("limit"))
    .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has one writer anyway
)
_CLAIMED = (
    sa.select(
        webhook_delivery.c.id,
        webhook_delivery.c.uuid,
        webhook_delivery.c.event,
        webhook_delivery.c.body,
        webhook_delivery.c.attempts,
        webhook_delivery.c.created,
        webhook.c.url,
        webhook.c.secret,
    )
    .join(webhook, webhook.c.id == webhook_delivery.c.webhook_id)
    .where(webhook_delivery.c.id.in_(sa.bindparam("ids", expanding=True)))
    .order_by(webhook_delivery.c.id)
)


_ANY_DUE = (
    sa.select(webhook_delivery.c.id)
    .where(
        webhook_delivery.c.status == "pending",
        webhook_delivery.c.next_attempt <= sa.bindparam("now"),
    )
    .limit(1)
)


def deliveries_due(conn: Connection, now: dt.datetime) -> bool:
    """Whether a delivery is due: a read, so that an idle poll never takes the write lock."""
    return conn.execute(_ANY_DUE, {"now": now}).first() is not None


def deliveries_expire(conn: Connection, before: dt.datetime) -> int:
    """Delete the deliveries (with their attempts) that finished before ``before``."""
    done = conn.execute(
        webhook_delivery.delete().where(
            webhook_delivery.c.status != "pending", webhook_delivery.c.finished < before
        )
    )
    return int(done.rowcount or 0)


def deliveries_claim(
    conn: Connection, now: dt.datetime, lease: dt.timedelta, limit: int
) -> list[Claimed]:
    """Up to ``limit`` due deliveries, each made due again only after ``lease`` (so a replica
    that dies mid-attempt leaves it to be retried, and none other sends it meanwhile)."""
    ids = list(conn.execute(_DUE, {"now": now, "limit": limit}).scalars())
    if not ids:
        return []
    conn.execute(
        webhook_delivery.update()
        .where(webhook_delivery.c.id.in_(ids))
        .values(next_attempt=now + lease, attempts=webhook_delivery.c.attempts + 1)
    )
    return [Claimed(**row._mapping) for row in conn.execute(_CLAIMED, {"ids": ids})]


def attempt_record(
    conn: Connection,
    delivery_id: int,
    claimed_attempts: int,
    attempted: dt.datetime,
    status_code: int | None,
    error: str | None,
    duration_ms: float,
    status: DeliveryStatus,
    next_attempt: dt.datetime,
    now: dt.datetime,
) -> None:
    """One attempt's outcome, and the delivery's new status (``pending`` until
    ``next_attempt``, or finished now) unless the delivery was claimed again since this
    attempt's claim (``claimed_attempts``: its count of attempts then) or has finished: an
    attempt that outlived its lease changes nothing but its own record."""
    conn.execute(
        webhook_attempt.insert(),
        {
            "delivery_id": delivery_id,
            "attempted": attempted,
            "status_code": status_code,
            "error": None if error is None else error[:500],
            "duration_ms": duration_ms,
        },
    )
    conn.execute(
        webhook_delivery.update()
        .where(
            webhook_delivery.c.id == delivery_id,
            webhook_delivery.c.attempts == claimed_attempts,
            webhook_delivery.c.status == "pending",
        )
        .values(
            status=status,
            next_attempt=next_attempt,
            finished=None if status == "pending" else now,
        )
    )


def delivery_list(
    conn: Connection, webhook_id: int, *, limit: int, offset: int
) -> tuple[list[Any], int]:
    """The webhook's deliveries, newest first."""
    statement = sa.select(webhook_delivery).where(webhook_delivery.c.webhook_id == webhook_id)
    return page_of(
        conn,
        statement,
        webhook_delivery.c.created,
        webhook_delivery.c.id,
        ascending=False,
        limit=limit,
        offset=offset,
    )


def attempts_of(conn: Connection, delivery_ids: Sequence[int]) -> dict[int, list[Any]]:
    if not delivery_ids:
        return {}
    statement = (
        sa.select(webhook_attempt)
        .where(webhook_attempt.c.delivery_id.in_(list(delivery_ids)))
        .order_by(webhook_attempt.c.id)
    )
    found: dict[int, list[Any]] = {i: [] for i in delivery_ids}
    for row in conn.execute(statement):
        found[row.delivery_id].append(row)
    return found
