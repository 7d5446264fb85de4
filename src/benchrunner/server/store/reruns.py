"""Rerun: a finished job submitted again as a new report and job with the same config (an
explicit re-submission, never a retry: docs/decisions/job-lifecycle.md). The two jobs' events name
each other."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.engine import Connection

from benchrunner.core.events import JobEvent
from benchrunner.server.store import jobs, reports
from benchrunner.server.store.jobs import JobRow, Origin
from benchrunner.server.store.transitions import event_add


@dataclass(frozen=True)
class Rerun:
    report_id: int
    job_uuid: UUID


def job_rerun(
    conn: Connection,
    old: JobRow,
    priority: int,
    origin: Origin,
    user_id: int | None,
    now: dt.datetime,
) -> Rerun:
    """A new report on the old one's branch, testbed, adapter and settings, and a pending job
    with the old job's spec and config (``priority``: its organization's today, from
    ``accounts.organization_for_job``). The new job's ``job_created`` names the old job
    (``rerun_of``); the old job gets a ``job_rerun`` event naming the new job and report. The
    caller checks the old job is finished (and the organization's backlog)."""
    source = reports.report_row(conn, old.report_id)
    report_id, report_uuid = reports.report_like(conn, source, user_id, now)
    _, job_uuid = jobs.job_create(
        conn,
        jobs.NewJob(
            report_id=report_id,
            organization_id=old.organization_id,
            spec_id=old.spec_id,
            config=old.config,
            priority=priority,
            now=now,
            origin=origin,
            rerun_of=old.uuid,
        ),
    )
    meta = {"job": str(job_uuid), "report": str(report_uuid)}
    event_add(conn, old.id, JobEvent.RERUN, f"rerun as job {job_uuid}", origin.actor, meta, now)
    return Rerun(report_id, job_uuid)
