"""Exact tier limits when several transactions claim at once (docs/decisions/claims.md).

SQLite runs one writer at a time (``BEGIN IMMEDIATE``), so the claim query's own "nothing of this
organization / source IP in flight" test is exact there. On PostgreSQL two replicas may both see a
free organization idle and claim two of its jobs. The claim therefore takes a transaction-scoped
advisory lock on the limit's key (the organization for the free tier, the source IP for the
unclaimed tier) and tests the limit again in a new statement, which under READ COMMITTED sees
every claim committed before the lock was granted. A transaction that cannot get the lock at once
treats the key as busy: its holder is claiming for that key right now, so it will be in flight.
Never waiting on an advisory lock means claims can never deadlock on them.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import PER_ORGANIZATION_MIN_PRIORITY, UNLIMITED_MIN_PRIORITY
from benchrunner.server.store import capabilities
from benchrunner.server.store.tables import in_flight, job

# First key of the two-key advisory lock: which limit the second key belongs to.
ORGANIZATION_LIMIT = 1
SOURCE_IP_LIMIT = 2

_TRY_LOCK_ORGANIZATION = sa.select(
    sa.func.pg_try_advisory_xact_lock(ORGANIZATION_LIMIT, sa.bindparam("organization_id"))
)
_TRY_LOCK_SOURCE_IP = sa.select(
    sa.func.pg_try_advisory_xact_lock(SOURCE_IP_LIMIT, sa.func.hashtext(sa.bindparam("source_ip")))
)
_ORGANIZATION_IN_FLIGHT = sa.select(
    sa.exists().where(
        job.c.organization_id == sa.bindparam("organization_id"), in_flight(job.c.status)
    )
)
_SOURCE_IP_IN_FLIGHT = sa.select(
    sa.exists().where(job.c.source_ip == sa.bindparam("source_ip"), in_flight(job.c.status))
)


def needs_tier_lock(conn: Connection, priority: int) -> bool:
    """Whether claiming a job of this priority must take its tier's lock on this engine."""
    return priority < UNLIMITED_MIN_PRIORITY and capabilities.of(conn).concurrent_writers


def claim_within_tier_limit(
    conn: Connection, priority: int, organization_id: int, source_ip: str
) -> bool:
    """Lock the tier limit that governs this job and say whether it may still be claimed.

    Call only where ``needs_tier_lock`` holds. False means the limit's key is busy: another
    job of it is in flight, or another transaction holds the lock.
    """
    if priority >= PER_ORGANIZATION_MIN_PRIORITY:
        params = {"organization_id": organization_id}
        locked = conn.execute(_TRY_LOCK_ORGANIZATION, params).scalar_one()
        return bool(locked) and not conn.execute(_ORGANIZATION_IN_FLIGHT, params).scalar_one()
    params_ip = {"source_ip": source_ip}
    locked = conn.execute(_TRY_LOCK_SOURCE_IP, params_ip).scalar_one()
    return bool(locked) and not conn.execute(_SOURCE_IP_IN_FLIGHT, params_ip).scalar_one()
