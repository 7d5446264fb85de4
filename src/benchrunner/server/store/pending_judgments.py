"""A direct run's report awaiting its judgment (``report.direct_results``): the run's results,
kept from the report's creation until its judgment's last write, so that a server stopped (or a
request cancelled) between the two leaves what recovery needs to store the metrics not stored
yet and to judge them (docs/decisions/processing.md).

A runner job's report needs no such column: its job stays ``completed`` until judged, and its
output is kept with it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.direct import Direct
from benchrunner.server.store.reports import MetricValue
from benchrunner.server.store.tables import report

_AWAITS = report.c.direct_results.is_not(None)


def encode(values: Sequence[MetricValue]) -> bytes:
    """``values`` as ``report.direct_results`` keeps them (JSON arrays, in their order)."""
    return json.dumps(
        [
            [v.iteration, v.benchmark, v.measure, v.value, v.lower_value, v.upper_value, v.samples]
            for v in values
        ],
        separators=(",", ":"),
    ).encode()


def decode(data: bytes) -> list[MetricValue]:
    return [
        MetricValue(iteration, benchmark, measure, value, lower, upper, tuple(samples))
        for iteration, benchmark, measure, value, lower, upper, samples in json.loads(data)
    ]


_KEEP = Direct(
    report.update()
    .where(report.c.id == sa.bindparam("report_id"))
    .values(direct_results=sa.bindparam("data", type_=sa.LargeBinary))
)


def keep(conn: Connection, report_id: int, data: bytes) -> None:
    """The report awaits its judgment, its run's results (``encode``) kept until then."""
    _KEEP.run(conn, {"report_id": report_id, "data": data})


_LOCK = Direct(
    sa.select(report.c.project_id)
    .where(report.c.id == sa.bindparam("report_id"), _AWAITS)
    .with_for_update()
)


def lock_awaiting(conn: Connection, report_id: int) -> bool:
    """Whether the report still awaits its judgment, its row locked until the transaction ends
    where writers run concurrently (PostgreSQL), so that two judgments of it store its metrics
    one after the other (SQLite's writers always do)."""
    return _LOCK.first(conn, {"report_id": report_id}) is not None


_JUDGED = Direct(
    report.update()
    .where(report.c.id == sa.bindparam("report_id"), _AWAITS)
    .values(direct_results=None)
)


def judged(conn: Connection, report_id: int) -> None:
    """The judgment's last write: the report no longer awaits it, its results let go."""
    _JUDGED.run(conn, {"report_id": report_id})


_AWAITING = Direct(
    sa.select(report.c.id)
    .where(_AWAITS, report.c.created < sa.bindparam("cutoff"))
    .order_by(report.c.created)
    .limit(sa.bindparam("limit"))
)


def reports_awaiting(conn: Connection, cutoff: dt.datetime, limit: int) -> list[int]:
    """Ids of direct runs' reports created before ``cutoff`` that still await their judgment
    (at most ``limit``, oldest first): the server that took them stopped before judging them."""
    return [int(row.id) for row in _AWAITING.all(conn, {"cutoff": cutoff, "limit": limit})]


_AWAITING_ONE = Direct(
    sa.select(report.c.project_id, report.c.direct_results).where(
        report.c.id == sa.bindparam("report_id"), _AWAITS
    )
)


def awaiting(conn: Connection, report_id: int) -> Any | None:
    """The report's ``project_id`` and ``direct_results`` while it awaits its judgment."""
    return _AWAITING_ONE.first(conn, {"report_id": report_id})
