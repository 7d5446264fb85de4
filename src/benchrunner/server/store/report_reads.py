"""Pages of a project's reports as the console lists them: each report with its branch, testbed,
job, its noise verdict, and how many metrics, duet ratios and alerts it holds, newest first, in
two queries per page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import (
    alert,
    branch,
    duet,
    duet_result,
    job,
    metric,
    report,
    testbed,
)

_JOB = sa.select(job.c.uuid).where(job.c.report_id == report.c.id).correlate(report).limit(1)
_LISTED = (
    sa.select(
        report.c.id,
        report.c.uuid,
        report.c.adapter,
        report.c.version,
        report.c.hash,
        report.c.start_time,
        report.c.end_time,
        report.c.error,
        report.c.noise,
        report.c.created,
        branch.c.name.label("branch_name"),
        branch.c.slug.label("branch_slug"),
        testbed.c.name.label("testbed_name"),
        testbed.c.slug.label("testbed_slug"),
        _JOB.scalar_subquery().label("job_uuid"),
    )
    .join(branch, branch.c.id == report.c.branch_id)
    .join(testbed, testbed.c.id == report.c.testbed_id)
)


@dataclass(frozen=True)
class ReportFilter:
    """Which of a project's reports a page lists; None does not narrow it."""

    branch_id: int | None = None
    testbed_id: int | None = None


def _where(project_id: int, wanted: ReportFilter) -> list[sa.ColumnElement[bool]]:
    clauses: list[sa.ColumnElement[bool]] = [report.c.project_id == project_id]
    if wanted.branch_id is not None:
        clauses.append(report.c.branch_id == wanted.branch_id)
    if wanted.testbed_id is not None:
        clauses.append(report.c.testbed_id == wanted.testbed_id)
    return clauses


def report_page(
    conn: Connection, project_id: int, wanted: ReportFilter, *, limit: int, offset: int
) -> tuple[list[Any], int]:
    """One page of the project's reports that match, newest first (by creation, then id), each
    with ``metrics``, ``alerts`` (the alerts its evaluation raised) and ``duet_results`` (the
    ratios of a duet report; None for a report that is no duet's) counted, and how many reports
    match in all.

    The counts are read for the page's reports only, after the page is cut: a correlated count
    per row of the whole project would cost the project's size on every page."""
    where = _where(project_id, wanted)
    total = conn.execute(sa.select(sa.func.count()).select_from(report).where(*where)).scalar_one()
    page = (
        _LISTED.where(*where)
        .order_by(report.c.created.desc(), report.c.id.desc())
        .limit(limit)
        .offset(offset)
        .subquery()
    )
    counted = sa.select(
        page,
        sa.select(sa.func.count())
        .where(metric.c.report_id == page.c.id)
        .scalar_subquery()
        .label("metrics"),
        sa.select(sa.func.count())
        .where(alert.c.report_id == page.c.id)
        .scalar_subquery()
        .label("alerts"),
        sa.select(sa.func.count(duet_result.c.id))
        .select_from(duet)
        .outerjoin(duet_result, duet_result.c.duet_id == duet.c.id)
        .where(duet.c.report_id == page.c.id)
        .group_by(duet.c.id)
        .scalar_subquery()
        .label("duet_results"),
    ).order_by(page.c.created.desc(), page.c.id.desc())
    return list(conn.execute(counted)), int(total)
