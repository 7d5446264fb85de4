"""A report's new metric rows inserted in one statement (or a few), their ids returned in the
rows' order, matched back by the uuid each row carries.

Asking the database for the ids in the order of the rows (``sort_by_parameter_order``) would
make SQLite insert one row a statement, where ``RETURNING`` promises no order: 3,000 statements
for a report of 3,000 metrics. On PostgreSQL the rows go as one array a column
(``capabilities.bulk_arrays``), where a batch of ``VALUES`` is a statement of thousands of
parameters that the driver parses anew for every report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities
from benchrunner.server.store.arrays import unnested
from benchrunner.server.store.tables import metric

PER_METRIC = (
    "uuid",
    "iteration",
    "benchmark_id",
    "measure_id",
    "value",
    "lower_value",
    "upper_value",
)
"""The columns of a new metric row that differ from metric to metric of one report."""
COLUMNS = ("report_id", *PER_METRIC)
"""The columns of a new metric row."""

_INSERT_ROWS = metric.insert().returning(metric.c.uuid, metric.c.id)
_GIVEN = unnested([(name, metric.c[name].type) for name in COLUMNS])
_INSERT_ARRAYS = (
    metric.insert()
    .from_select(list(COLUMNS), sa.select(*(_GIVEN.c[name] for name in COLUMNS)))
    .returning(metric.c.uuid, metric.c.id)
)


def metric_ids_insert(conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
    """Insert metric ``rows`` (each with every column of ``COLUMNS``, a unique ``uuid`` among
    them); their ids, in the order of ``rows``."""
    if not rows:
        return []
    if capabilities.of(conn).bulk_arrays:
        given = {name: [row[name] for row in rows] for name in COLUMNS}
        returned = conn.execute(_INSERT_ARRAYS, given)
    else:
        returned = conn.execute(_INSERT_ROWS, list(rows))
    by_uuid = {metric_uuid: int(metric_id) for metric_uuid, metric_id in returned}
    return [by_uuid[row["uuid"]] for row in rows]
