"""A report row to create in tests and benchmarks, on a branch and testbed found by name."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.engine import Connection

from benchrunner.server.store.reports import NewReport, named_get_or_create
from benchrunner.server.store.tables import branch, testbed


def new_report_on(
    conn: Connection,
    project_id: int,
    branch_name: str,
    testbed_name: str,
    adapter: str,
    now: dt.datetime,
) -> NewReport:
    """A report of no user on these branch and testbed (created if missing), with no
    settings or hash, starting and ending ``now``."""
    return NewReport(
        project_id=project_id,
        user_id=None,
        branch_id=named_get_or_create(conn, branch, project_id, branch_name, now),
        testbed_id=named_get_or_create(conn, testbed, project_id, testbed_name, now),
        adapter=adapter,
        average=None,
        fold=None,
        hash=None,
        start_time=now,
        end_time=now,
        now=now,
    )
