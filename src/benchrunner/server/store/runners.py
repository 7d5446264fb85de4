"""Runners, specs and their association (docs/decisions/runner-tokens.md), with the one combined
token lookup."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.core.tokens import hash_token
from benchrunner.protocol import JsonSpec, RunnerMetadata
from benchrunner.server.store.accounts import ref_param, select_by_ref
from benchrunner.server.store.conflicts import (
    insert_or_skip,
    insert_with_slug,
    update_unless_taken,
)
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.lookups_cache import cached, changed
from benchrunner.server.store.tables import job, runner, runner_spec, spec


@dataclass(frozen=True)
class RunnerRow:
    id: int
    uuid: UUID
    name: str
    slug: str
    organization_id: int | None
    paused: bool
    os: str | None
    arch: str | None
    version: str | None
    last_heartbeat: dt.datetime | None
    created: dt.datetime
    modified: dt.datetime
    archived: dt.datetime | None
    public_key: str | None = None
    """base64url Ed25519 key: when set, every terminal message must be signed with it."""


def _runner(row: Any) -> RunnerRow:
    return RunnerRow(
        id=row.id,
        uuid=row.uuid,
        name=row.name,
        slug=row.slug,
        organization_id=row.organization_id,
        paused=bool(row.paused),
        os=row.os,
        arch=row.arch,
        version=row.version,
        last_heartbeat=row.last_heartbeat,
        created=row.created,
        modified=row.modified,
        archived=row.archived,
        public_key=row.public_key,
    )


def runner_create(
    conn: Connection,
    name: str,
    token: str,
    now: dt.datetime,
    *,
    slug: str | None = None,
    organization_id: int | None = None,
    public_key: str | None = None,
) -> RunnerRow:
    values = {
        "uuid": uuid4(),
        "public_key": public_key,
        "name": name,
        "token_hash": hash_token(token),
        "organization_id": organization_id,
        "paused": False,
        "created": now,
        "modified": now,
    }
    runner_id = insert_with_slug(conn, runner, values, slug or name)
    assert runner_id is not None  # the slug is the only unique column a create can meet
    return runner_by_id(conn, runner_id)


def runner_by_id(conn: Connection, runner_id: int) -> RunnerRow:
    return _runner(conn.execute(sa.select(runner).where(runner.c.id == runner_id)).one())


def runner_get(conn: Connection, ref: str) -> RunnerRow | None:
    row = select_by_ref(conn, runner, ref)
    return _runner(row) if row else None


@functools.cache
def _authenticate(column: str) -> Direct:
    return Direct(
        sa.select(runner).where(
            runner.c.token_hash == sa.bindparam("token_hash"),
            runner.c[column] == sa.bindparam("ref"),
            runner.c.archived.is_(None),
        )
    )


def runner_authenticate(conn: Connection, ref: str, token: str) -> RunnerRow | None:
    """One query by token hash AND path parameter (docs/decisions/runner-tokens.md), archived
    runners excluded."""
    column, value = ref_param(ref)
    if column == "slug" and not slugs.is_slug(ref):
        return None
    row = _authenticate(column).first(conn, {"token_hash": hash_token(token), "ref": value})
    return _runner(row) if row else None


def runner_list(
    conn: Connection, *, archived: bool, name: str | None, organization_id: int | None = None
) -> list[RunnerRow]:
    """Runners by name: every one, or with ``organization_id`` that organization's own."""
    query = sa.select(runner).order_by(runner.c.name, runner.c.id)
    if organization_id is not None:
        query = query.where(runner.c.organization_id == organization_id)
    if not archived:
        query = query.where(runner.c.archived.is_(None))
    if name:
        query = query.where(runner.c.name == name)
    return [_runner(r) for r in conn.execute(query)]


def runner_update(conn: Connection, runner_id: int, values: dict[str, Any]) -> RunnerRow | None:
    """The runner after the update, or None (nothing changed) when a new slug in ``values``
    was taken meanwhile by a concurrent create or rename."""
    if not update_unless_taken(
        conn, runner.update().where(runner.c.id == runner_id).values(**values)
    ):
        return None
    return runner_by_id(conn, runner_id)


def runner_rotate_token(conn: Connection, runner_id: int, token: str, now: dt.datetime) -> bool:
    """Replace the token hash; the old token stops working at once. Archived: refused."""
    result = conn.execute(
        runner.update()
        .where(runner.c.id == runner_id, runner.c.archived.is_(None))
        .values(token_hash=hash_token(token), modified=now)
    )
    return result.rowcount == 1


def runner_record_metadata(
    conn: Connection, runner_id: int, meta: RunnerMetadata, now: dt.datetime
) -> None:
    conn.execute(
        runner.update()
        .where(runner.c.id == runner_id)
        .values(os=meta.os, arch=meta.arch, version=meta.version, last_heartbeat=now)
    )


def runner_touch(conn: Connection, runner_id: int, now: dt.datetime) -> None:
    """The runner was heard from at ``now``: its "last seen" (``last_heartbeat``)."""
    conn.execute(runner.update().where(runner.c.id == runner_id).values(last_heartbeat=now))


RUNNER_SPEC_IDS = sa.select(runner_spec.c.spec_id).where(
    runner_spec.c.runner_id == sa.bindparam("runner_id")
)


def runner_spec_ids(conn: Connection, runner_id: int) -> frozenset[int]:
    rows = conn.execute(RUNNER_SPEC_IDS, {"runner_id": runner_id})
    return frozenset(r.spec_id for r in rows)


# ---------------------------------------------------------------- specs


@dataclass(frozen=True)
class NewSpec:
    name: str
    architecture: str
    cpu: int
    memory: int
    disk: int
    network: bool
    slug: str | None = None
    noise_guard: bool = True
    noise_cv_limit: float | None = None
    noise_drift_limit: float | None = None
    os: str = "linux"
    sandbox: str | None = None


def spec_json(row: Any) -> JsonSpec:
    return JsonSpec(
        uuid=row.uuid,
        name=row.name,
        slug=row.slug,
        os=row.os,
        architecture=row.architecture,
        sandbox=row.sandbox,
        cpu=row.cpu,
        memory=row.memory,
        disk=row.disk,
        network=bool(row.network),
        fallback=row.fallback,
        created=row.created,
        modified=row.modified,
        archived=row.archived,
        noise_guard=bool(row.noise_guard),
        noise_cv_limit=row.noise_cv_limit,
        noise_drift_limit=row.noise_drift_limit,
    )


def spec_create(conn: Connection, params: NewSpec, now: dt.datetime) -> Any:
    values = {
        "uuid": uuid4(),
        "name": params.name,
        "architecture": params.architecture,
        "cpu": params.cpu,
        "memory": params.memory,
        "disk": params.disk,
        "network": params.network,
        "noise_guard": params.noise_guard,
        "noise_cv_limit": params.noise_cv_limit,
        "noise_drift_limit": params.noise_drift_limit,
        "os": params.os,
        "sandbox": params.sandbox,
        "created": now,
        "modified": now,
    }
    spec_id = insert_with_slug(conn, spec, values, params.slug or params.name)
    assert spec_id is not None  # the slug is the only unique column a create can meet
    return conn.execute(sa.select(spec).where(spec.c.id == spec_id)).one()


SPECS = "specs"
"""The lookups cache's tag of every spec row (specs are few and seldom change)."""


def spec_get(conn: Connection, ref: str) -> Any:
    """The spec by UUID or slug, or None. Cached (any change of a spec drops it)."""
    return cached(conn, ("spec", ref), lambda: select_by_ref(conn, spec, ref), lambda _: [SPECS])


SPEC_BY_ID = Direct(sa.select(spec).where(spec.c.id == sa.bindparam("spec_id")))
"""A spec by its id (bind ``spec_id``)."""


def spec_by_id(conn: Connection, spec_id: int) -> Any:
    row = SPEC_BY_ID.first(conn, {"spec_id": spec_id})
    if row is None:
        raise LookupError(f"spec {spec_id} does not exist")
    return row


def spec_list(conn: Connection, *, archived: bool) -> list[Any]:
    query = sa.select(spec).order_by(spec.c.name, spec.c.id)
    if not archived:
        query = query.where(spec.c.archived.is_(None))
    return list(conn.execute(query))


def spec_update(conn: Connection, spec_id: int, values: dict[str, Any]) -> Any:
    """The spec row after the update, or None as for ``runner_update``."""
    if not update_unless_taken(conn, spec.update().where(spec.c.id == spec_id).values(**values)):
        return None
    changed(conn, SPECS)
    return spec_by_id(conn, spec_id)


def spec_lock_all(conn: Connection) -> None:
    """Lock every spec row, in id order, until the transaction ends: taken first by a unit
    that changes the fallback, so two admins marking different specs at once end with exactly
    one fallback on PostgreSQL too (SQLite serializes writers anyway), without deadlocking."""
    conn.execute(sa.select(spec.c.id).order_by(spec.c.id).with_for_update()).all()


def spec_set_fallback(conn: Connection, spec_id: int, fallback: bool, now: dt.datetime) -> Any:
    """Make the spec the fallback (and no other), or stop it being one; the spec row after.
    The caller holds ``spec_lock_all``."""
    if fallback:
        conn.execute(
            spec.update()
            .where(spec.c.fallback.is_not(None), spec.c.id != spec_id)
            .values(fallback=None, modified=now)
        )
        conn.execute(
            spec.update()
            .where(spec.c.id == spec_id, spec.c.fallback.is_(None))
            .values(fallback=now, modified=now)
        )
    else:
        conn.execute(
            spec.update()
            .where(spec.c.id == spec_id, spec.c.fallback.is_not(None))
            .values(fallback=None, modified=now)
        )
    changed(conn, SPECS)
    return spec_by_id(conn, spec_id)


def spec_fallback(conn: Connection) -> Any:
    """The spec jobs submitted without one run on (not archived), or None."""
    query = sa.select(spec).where(spec.c.fallback.is_not(None), spec.c.archived.is_(None))
    return cached(
        conn, ("spec", None), lambda: conn.execute(query.limit(1)).first(), lambda _: [SPECS]
    )


def spec_is_referenced(conn: Connection, spec_id: int) -> bool:
    used_by_job = conn.execute(sa.select(job.c.id).where(job.c.spec_id == spec_id).limit(1))
    if used_by_job.first() is not None:
        return True
    used_by_runner = conn.execute(
        sa.select(runner_spec.c.id).where(runner_spec.c.spec_id == spec_id).limit(1)
    )
    return used_by_runner.first() is not None


def spec_delete(conn: Connection, spec_id: int) -> None:
    conn.execute(spec.delete().where(spec.c.id == spec_id))
    changed(conn, SPECS)


def runner_specs(conn: Connection, runner_id: int) -> list[Any]:
    return list(
        conn.execute(
            sa.select(spec)
            .join(runner_spec, runner_spec.c.spec_id == spec.c.id)
            .where(runner_spec.c.runner_id == runner_id)
            .order_by(spec.c.name)
        )
    )


def spec_runners(conn: Connection, spec_id: int) -> list[RunnerRow]:
    """The runners (not archived) that run jobs of the spec, by name."""
    query = (
        sa.select(runner)
        .join(runner_spec, runner_spec.c.runner_id == runner.c.id)
        .where(runner_spec.c.spec_id == spec_id, runner.c.archived.is_(None))
        .order_by(runner.c.name, runner.c.id)
    )
    return [_runner(r) for r in conn.execute(query)]


def runners_spec_names(conn: Connection, runner_ids: Collection[int]) -> dict[int, list[str]]:
    """The names of each runner's specs, by name, by runner id (one query for a whole list;
    a runner without specs is absent)."""
    if not runner_ids:
        return {}
    rows = conn.execute(
        sa.select(runner_spec.c.runner_id, spec.c.name)
        .join(runner_spec, runner_spec.c.spec_id == spec.c.id)
        .where(runner_spec.c.runner_id.in_(sorted(runner_ids)))
        .order_by(spec.c.name)
    )
    names: dict[int, list[str]] = {}
    for row in rows:
        names.setdefault(row.runner_id, []).append(row.name)
    return names


def runner_spec_add(conn: Connection, runner_id: int, spec_id: int) -> bool:
    """Attach the spec to the runner; False if it already was (or a concurrent add won)."""
    statement = insert_or_skip(conn, runner_spec, ("runner_id", "spec_id"))
    added = conn.execute(
        statement.returning(runner_spec.c.id), {"runner_id": runner_id, "spec_id": spec_id}
    )
    return added.scalar() is not None


def runner_spec_remove(conn: Connection, runner_id: int, spec_id: int) -> bool:
    result = conn.execute(
        runner_spec.delete().where(
            runner_spec.c.runner_id == runner_id, runner_spec.c.spec_id == spec_id
        )
    )
    return result.rowcount == 1
