"""Idempotency keys of ``POST /v0/run`` as rows: who holds a key, for which payload and report.

A submission with a key first claims it, in its own transaction; the claim either makes this
transaction the key's holder (a new key, or one whose window has passed) or names the live
holder. Concurrent claims of one key meet on the unique (owner, key) pair: on PostgreSQL the
later ones wait for the first transaction and then see its committed row; on SQLite writes are
serialized anyway. A submission that fails rolls its claim back with everything else.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities
from benchrunner.server.store.capabilities import Capabilities
from benchrunner.server.store.conflicts import insert_or_replace_where
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.tables import idempotency_key


@dataclass(frozen=True)
class KeyRef:
    owner: str
    """``user:<id>``, or ``ip:<address>`` for an anonymous submission."""
    key: str


@dataclass(frozen=True)
class HeldKey:
    """A live key another submission holds."""

    payload_hash: str
    report_id: int | None
    created: dt.datetime


_EXPIRED = idempotency_key.c.created < sa.bindparam("cutoff", type_=idempotency_key.c.created.type)
_OF = sa.and_(
    idempotency_key.c.owner == sa.bindparam("of_owner"),
    idempotency_key.c.key == sa.bindparam("of_key"),
)


def _of(ref: KeyRef) -> dict[str, str]:
    return {"of_owner": ref.owner, "of_key": ref.key}


_NEW_KEY = {
    name: sa.bindparam(name, type_=idempotency_key.c[name].type)
    for name in ("owner", "key", "payload_hash", "report_id", "created")
}
_REPLACED_WHEN_EXPIRED = ("payload_hash", "report_id", "created")
_HELD = Direct(
    sa.select(
        idempotency_key.c.payload_hash, idempotency_key.c.report_id, idempotency_key.c.created
    ).where(_OF)
)


_CLAIMS: dict[Capabilities, Direct] = {}
"""The claim statement by engine: each spells ``ON CONFLICT`` with its own ``insert``."""


def _claim_statement(conn: Connection) -> Direct:
    engine = capabilities.of(conn)
    found = _CLAIMS.get(engine)
    if found is None:
        statement = insert_or_replace_where(
            conn, idempotency_key, ("owner", "key"), _REPLACED_WHEN_EXPIRED, _EXPIRED
        )
        found = _CLAIMS[engine] = Direct(statement.values(_NEW_KEY).returning(idempotency_key.c.id))
    return found


def key_claim(
    conn: Connection, ref: KeyRef, payload_hash: str, now: dt.datetime, cutoff: dt.datetime
) -> HeldKey | None:
    """Claim ``ref`` for this transaction: None when it is now this transaction's (new, or
    its previous use was before ``cutoff``), else the live holder's row."""
    values = {
        "owner": ref.owner,
        "key": ref.key,
        "payload_hash": payload_hash,
        "report_id": None,
        "created": now,
        "cutoff": cutoff,
    }
    if _claim_statement(conn).first(conn, values) is not None:
        return None
    row = _HELD.first(conn, _of(ref))
    assert row is not None
    return HeldKey(row.payload_hash, row.report_id, row.created)


_BIND = Direct(
    idempotency_key.update()
    .where(_OF)
    .values(report_id=sa.bindparam("report_id", type_=idempotency_key.c.report_id.type))
)


def key_bind(conn: Connection, ref: KeyRef, report_id: int) -> None:
    """Record the report the holder's submission created, in the same transaction."""
    _BIND.run(conn, {**_of(ref), "report_id": report_id})


_EXPIRE = idempotency_key.delete().where(_EXPIRED)


def keys_expire(conn: Connection, cutoff: dt.datetime) -> int:
    """Delete the keys used before ``cutoff``; how many."""
    return conn.execute(_EXPIRE, {"cutoff": cutoff}).rowcount
