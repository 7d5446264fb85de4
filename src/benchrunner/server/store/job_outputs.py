"""Small job outputs kept in the database (``job_output``), one row per job.

A row is written in the same transaction as the status change it belongs to (``completed``, or
``failed`` with whatever results the runner had), so the output is exactly as durable as that
change. A later terminal message for the same job (a late result after a failure) replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities
from benchrunner.server.store.capabilities import Capabilities
from benchrunner.server.store.conflicts import insert_or_replace_where
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.history import IN_LIST_CHUNK
from benchrunner.server.store.tables import job_output

INLINE_OUTPUT_BYTES = 64 * 1024
"""Outputs up to this size are kept in the database; larger ones go to the blob store."""

_ALWAYS = sa.true()


_PUT: dict[Capabilities, Direct] = {}
"""The output's insert-or-replace, prepared once per engine."""


def output_put(conn: Connection, job_id: int, data: bytes) -> None:
    engine = capabilities.of(conn)
    put = _PUT.get(engine)
    if put is None:
        statement = insert_or_replace_where(conn, job_output, ("job_id",), ("data",), _ALWAYS)
        put = _PUT[engine] = Direct(statement)
    put.run(conn, {"job_id": job_id, "data": data})


OUTPUT_PARAM = "output_data"
"""The bound parameter of the output written by a transition's statement (``output_after``)."""


def output_after(moved: sa.CTE, engine: Capabilities) -> sa.Insert:
    """The output row of the job that ``moved`` (a data-modifying CTE returning its id) wrote,
    inserted or replaced in the same statement (``store.transitions``), bound as
    ``OUTPUT_PARAM``: only a job that moved gets it."""
    data = sa.bindparam(OUTPUT_PARAM, type_=job_output.c.data.type)
    statement = engine.insert(job_output).from_select(
        ["job_id", "data"], sa.select(moved.c.id, data)
    )
    return statement.on_conflict_do_update(
        index_elements=["job_id"], set_={"data": statement.excluded.data}, where=_ALWAYS
    )


def output_get(conn: Connection, job_id: int) -> bytes | None:
    return conn.execute(
        sa.select(job_output.c.data).where(job_output.c.job_id == job_id)
    ).scalar_one_or_none()


def output_exists(conn: Connection, job_id: int) -> bool:
    query = sa.select(sa.literal(1)).where(job_output.c.job_id == job_id)
    return conn.execute(query).first() is not None


def outputs_get(conn: Connection, job_ids: Iterable[int]) -> dict[int, bytes]:
    """The stored outputs of those of ``job_ids`` that have one here."""
    ids = sorted(set(job_ids))
    found: dict[int, bytes] = {}
    for start in range(0, len(ids), IN_LIST_CHUNK):
        chunk = ids[start : start + IN_LIST_CHUNK]
        rows = conn.execute(
            sa.select(job_output.c.job_id, job_output.c.data).where(job_output.c.job_id.in_(chunk))
        )
        found.update((row.job_id, row.data) for row in rows)
    return found


def outputs_delete(conn: Connection, job_ids: Iterable[int]) -> int:
    """Delete the stored outputs of ``job_ids``; how many bytes went."""
    ids = sorted(set(job_ids))
    freed = 0
    for start in range(0, len(ids), IN_LIST_CHUNK):
        chunk = ids[start : start + IN_LIST_CHUNK]
        deleted = job_output.delete().where(job_output.c.job_id.in_(chunk))
        freed += sum(conn.execute(deleted.returning(sa.func.length(job_output.c.data))).scalars())
    return int(freed)
