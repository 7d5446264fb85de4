"""What a judgment read, versioned (docs/decisions/processing.md): each threshold's
``history_version`` counts the changes of its series' history that its judgments read. A
transaction that stores metrics on a branch and testbed, or resets their baseline, counts one
on each of their thresholds; a judgment notes the versions (and models) of its thresholds
before it reads, and each of its writes compares them under the thresholds' locks. The
counter is bumped and read in the writers' own transactions, so unlike an id it is ordered by
commit on PostgreSQL as on SQLite; and a threshold created or dropped since shows in the
comparison too."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import model, report, threshold

_OF_SERIES = threshold.c.testbed_id == sa.bindparam("of_testbed")
# Locked in id order, as ``thresholds.lock_thresholds`` locks them: two writers never wait on
# each other in a cycle.
_BUMP = threshold.update().where(
    threshold.c.id.in_(
        sa.select(threshold.c.id)
        .where(threshold.c.branch_id == sa.bindparam("of_branch"), _OF_SERIES)
        .order_by(threshold.c.id)
        .with_for_update()
    )
)
_BUMP_OF_REPORT = threshold.update().where(
    threshold.c.id.in_(
        sa.select(threshold.c.id)
        .where(
            threshold.c.branch_id
            == sa.select(report.c.branch_id)
            .where(report.c.id == sa.bindparam("report_id"))
            .scalar_subquery(),
            threshold.c.testbed_id
            == sa.select(report.c.testbed_id)
            .where(report.c.id == sa.bindparam("report_id"))
            .scalar_subquery(),
        )
        .order_by(threshold.c.id)
        .with_for_update()
    )
)
_BUMPED = {"history_version": threshold.c.history_version + 1}


def history_changed(conn: Connection, branch_id: int, testbed_id: int) -> None:
    """The history of the branch and testbed changed (a baseline reset): their thresholds'
    judgments under way read it again."""
    conn.execute(_BUMP.values(_BUMPED), {"of_branch": branch_id, "of_testbed": testbed_id})


def report_history_changed(conn: Connection, report_id: int) -> None:
    """``history_changed`` of the report's branch and testbed (its metrics were stored)."""
    conn.execute(_BUMP_OF_REPORT.values(_BUMPED), {"report_id": report_id})


_VERSIONS = (
    sa.select(threshold.c.id, threshold.c.history_version, model.c.id.label("model_id"))
    .join(model, sa.and_(model.c.threshold_id == threshold.c.id, model.c.replaced.is_(None)))
    .where(
        threshold.c.branch_id.in_(sa.bindparam("branch_ids", expanding=True)),
        _OF_SERIES,
        threshold.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
    )
)

Versions = dict[int, tuple[int, int]]
"""Each threshold's history version and current model, by threshold id."""


def versions(
    conn: Connection, branch_ids: Sequence[int], testbed_id: int, measure_ids: Sequence[int]
) -> Versions:
    """The thresholds of these measures on these branches and testbed, as ``Versions``: a
    few rows, read through the thresholds' unique index."""
    if not measure_ids:
        return {}
    params = {
        "branch_ids": sorted(set(branch_ids)),
        "of_testbed": testbed_id,
        "measure_ids": sorted(set(measure_ids)),
    }
    return {
        int(row.id): (int(row.history_version), int(row.model_id))
        for row in conn.execute(_VERSIONS, params)
    }
