"""Which finished jobs' stored outputs retention may delete, and marking them deleted.

A job qualifies when it is failed, canceled or processed (never in flight, never completed and
waiting to be processed), its last status change is older than the cutoff, its outputs are
still kept, and it is not among the newest ``keep`` such jobs by creation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import job_outputs
from benchrunner.server.store.tables import job, job_log, project, report

# Failed, canceled or processed, written as the partial index ``index_job_outputs_kept`` has it.
_FINISHED = job.c.status >= sa.literal_column("4")


@dataclass(frozen=True)
class StoredOutputs:
    """A job whose outputs are kept in the blob store, by the keys they are stored under."""

    id: int
    uuid: UUID
    project_uuid: UUID


def _oldest_kept_id(conn: Connection, keep: int) -> int | None:
    """The id of the oldest among the newest ``keep`` finished jobs: None when there are
    fewer than ``keep`` of them (all are kept), 0 when ``keep`` is 0 (none is)."""
    if keep == 0:
        return 0
    return conn.execute(
        sa.select(job.c.id).where(_FINISHED).order_by(job.c.id.desc()).offset(keep - 1).limit(1)
    ).scalar()


def jobs_with_expired_outputs(
    conn: Connection, cutoff: dt.datetime, keep: int, limit: int
) -> list[StoredOutputs]:
    """Up to ``limit`` jobs whose outputs are due for deletion, oldest change first."""
    oldest_kept = _oldest_kept_id(conn, keep)
    if oldest_kept is None:
        return []
    query = (
        sa.select(job.c.id, job.c.uuid, project.c.uuid.label("project_uuid"))
        .join(report, report.c.id == job.c.report_id)
        .join(project, project.c.id == report.c.project_id)
        .where(_FINISHED, job.c.outputs_purged.is_(None), job.c.modified <= cutoff)
        .order_by(job.c.modified)
        .limit(limit)
    )
    if keep:
        query = query.where(job.c.id < oldest_kept)
    return [StoredOutputs(r.id, r.uuid, r.project_uuid) for r in conn.execute(query)]


@dataclass(frozen=True)
class Marked:
    """Jobs marked purged, whose outputs outside the database may now be deleted, and the
    bytes of their outputs deleted from the database with the mark."""

    ids: list[int]
    freed: int


def jobs_mark_outputs_purged(
    conn: Connection, job_ids: Sequence[int], cutoff: dt.datetime, now: dt.datetime
) -> Marked:
    """Mark the jobs' outputs deleted, unless a job changed since it was chosen (a late result
    moved it on), and delete what they store in the database (their live logs and small
    outputs, in this transaction)."""
    if not job_ids:
        return Marked([], 0)
    marked = conn.execute(
        job.update()
        .where(
            job.c.id.in_(list(job_ids)),
            _FINISHED,
            job.c.outputs_purged.is_(None),
            job.c.modified <= cutoff,
        )
        .values(outputs_purged=now)
        .returning(job.c.id)
    )
    ids = [row.id for row in marked]
    freed = 0
    if ids:
        conn.execute(job_log.delete().where(job_log.c.job_id.in_(ids)))
        freed = job_outputs.outputs_delete(conn, ids)
    return Marked(ids, freed)
