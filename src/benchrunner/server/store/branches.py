"""Branches of a report's history: found by UUID, slug or name, created on first use, and
started from another branch's history (Bencher's start point).

A branch's history is its own reports since its head was last reset plus, with a start point,
the start point branch's reports of its newest ``max_versions`` versions up to the start point's
version. A new start point (another branch, or another hash of it) or ``reset`` starts a new
head: the branch's own earlier reports no longer count.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.versions import DEFAULT_MAX_VERSIONS
from benchrunner.server.store import dimensions, reports
from benchrunner.server.store.lookups_cache import cached, changed, tag
from benchrunner.server.store.tables import branch, report


def branch_find(conn: Connection, project_id: int, ref: str) -> Any | None:
    """The project's branch with this UUID, else slug, else name
    (docs/decisions/bencher-wire.md). Cached (a new head of the branch drops it)."""
    return cached(
        conn,
        ("branch", project_id, ref),
        lambda: dimensions.dimension_get(conn, branch, project_id, ref),
        lambda row: [tag("branch", row.id), tag("project", project_id)],
    )


_BY_ID = sa.select(branch).where(branch.c.id == sa.bindparam("branch_id"))


def branch_by_id(conn: Connection, branch_id: int) -> Any:
    return conn.execute(_BY_ID, {"branch_id": branch_id}).one()


@dataclass(frozen=True)
class StartPoint:
    """``start_point`` of ``POST /v0/run``."""

    branch: str | None = None
    hash: str | None = None
    max_versions: int = DEFAULT_MAX_VERSIONS
    clone_thresholds: bool = False
    reset: bool = False


@dataclass(frozen=True)
class BranchForRun:
    id: int
    new_head: bool
    """Created, or its history started over: thresholds may be cloned onto it."""
    start_point_branch_id: int | None


_VERSION_OF_HASH = sa.select(sa.func.max(report.c.version)).where(
    report.c.branch_id == sa.bindparam("branch_id"), report.c.hash == sa.bindparam("hash")
)
_LATEST = sa.select(sa.func.max(report.c.version)).where(
    report.c.branch_id == sa.bindparam("branch_id")
)


def start_point_version(conn: Connection, branch_id: int, git_hash: str | None) -> int:
    """The start point branch's version with this hash, else (no hash, or a hash it never
    reported) its latest version; 0 when it has none."""
    if git_hash is not None:
        found = conn.execute(_VERSION_OF_HASH, {"branch_id": branch_id, "hash": git_hash}).scalar()
        if found is not None:
            return int(found)
    return int(conn.execute(_LATEST, {"branch_id": branch_id}).scalar() or 0)


_HASH_OF_VERSION = sa.select(sa.func.max(report.c.hash)).where(
    report.c.branch_id == sa.bindparam("branch_id"), report.c.version == sa.bindparam("version")
)


def version_hash(conn: Connection, branch_id: int, version: int) -> str | None:
    """The git hash of the branch's version, None when its reports gave none."""
    found: str | None = conn.execute(
        _HASH_OF_VERSION, {"branch_id": branch_id, "version": version}
    ).scalar()
    return found


_SET_HEAD = (
    branch.update()
    .where(branch.c.id == sa.bindparam("branch_id"))
    .values(
        start_point_branch_id=sa.bindparam("sp_branch"),
        start_point_version=sa.bindparam("sp_version"),
        start_point_max_versions=sa.bindparam("sp_max"),
        head_reset=sa.bindparam("now"),
    )
)


def branch_for_run(
    conn: Connection, project_id: int, ref: str, start: StartPoint | None, now: dt.datetime
) -> BranchForRun:
    """The branch a run reports to, created (named ``ref``) when missing, with its start point
    applied as Bencher applies it. A start point branch that does not exist is ignored."""
    existing = branch_find(conn, project_id, ref)
    source = None
    if start is not None and start.branch is not None:
        source = branch_find(conn, project_id, start.branch)
        if source is not None and existing is not None and source.id == existing.id:
            source = None  # a branch cannot start from itself
    version = None
    if source is not None and start is not None:
        version = start_point_version(conn, source.id, start.hash)
    head = {
        "sp_branch": source.id if source is not None else None,
        "sp_version": version,
        "sp_max": start.max_versions if source is not None and start is not None else None,
    }
    if existing is None:
        branch_id = reports.named_get_or_create(conn, branch, project_id, ref, now)
        if source is None:
            return BranchForRun(branch_id, True, None)
        conn.execute(_SET_HEAD, {"branch_id": branch_id, **head, "now": None})
        changed(conn, tag("branch", branch_id))
        return BranchForRun(branch_id, True, source.id)
    moved = source is not None and (
        existing.start_point_branch_id != source.id
        or (
            start is not None and start.hash is not None and existing.start_point_version != version
        )
    )
    if (start is not None and start.reset) or moved:
        conn.execute(_SET_HEAD, {"branch_id": existing.id, **head, "now": now})
        changed(conn, tag("branch", existing.id))
        return BranchForRun(existing.id, True, head["sp_branch"])
    return BranchForRun(existing.id, False, existing.start_point_branch_id)
