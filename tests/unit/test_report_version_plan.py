"""A new report's version is read from one end of the branch's version index, however many
reports the branch holds: never a sort of the branch's reports (``reports._next_version``).
PostgreSQL needs the index's ``id`` for it; SQLite's entries end with the rowid (the id) in any
case, so there only the index's use can fail."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import reports
from benchrunner.server.store.engine import Database


def _version_plan(conn: Connection) -> str:
    query = sa.select(reports._next_version())
    compiled = query.compile()  # named parameters, as ``text`` reads them on either engine
    params = {**compiled.params, "branch_id": 1, "hash": "abc"}
    explain = "EXPLAIN QUERY PLAN" if conn.dialect.name == "sqlite" else "EXPLAIN"
    rows = conn.execute(sa.text(f"{explain} {compiled}"), params)
    return "\n".join(str(row[-1]) for row in rows)


def test_a_new_reports_version_is_read_without_sorting_the_branch(migrated_db: Database) -> None:
    plan = migrated_db.read_sync(_version_plan)
    assert "index_report_branch_version" in plan, plan
    assert not re.search(r"\bSort\b|TEMP B-TREE", plan), plan
