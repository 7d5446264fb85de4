"""The metrics of a history's newest reports as NumPy rows (``ROW``), read straight from the
driver (``read``), or through a server process's cache of them (``ReportRows``;
docs/reference/thresholds.md, "Scale").

A report judged whole reads its history through its newest reports (``store.history``): about
64 reports of every metric of its measures, 192,000 rows for a report of 3,000 metrics, most
of its judgment's time on SQLite, whose driver makes a Python tuple per row
(benchmarks/RESULTS.md, "Reports at scale"). The next report of the same branch and testbed
reads 63 of those reports again, so a ``ReportRows`` keeps each report's rows and reads again
only those of reports it does not hold or whose metrics changed since.

A held report's rows are served only if a statement run before the history's read finds the
report unchanged: its ``uuid`` (an id SQLite may give again after a delete, a uuid never) and
its metrics' count, sum of ids and largest id. Metrics are never updated (only inserted and
deleted, cascades included), and a metric's id is never one a report had before (PostgreSQL's
sequence hands each out once; SQLite's rowid exceeds every metric there is): a metric added,
deleted, or both, changes the count, the sum or the largest id, whichever process or replica
wrote it. The one change it misses is SQLite's: the newest metric of the whole
database deleted without its report (its benchmark or measure deleted), then as many new
metrics added to that same report, taking the same ids.

Rows are kept only from reads that see committed rows alone (a read connection: the caller
says so by passing a cache); a report's rows are read after its check, so rows newer than
their check are read again next time, never served stale.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import sqlalchemy as sa
from numpy.typing import NDArray
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities
from benchrunner.server.store.tables import metric, report

ROW = np.dtype(
    [("measure", np.int64), ("b", np.int64), ("m", np.int64), ("v", np.float64), ("r", np.int64)]
)
"""A history row's columns as NumPy holds them: measure, benchmark, metric, value, report."""

_COLUMNS = (metric.c.measure_id, metric.c.benchmark_id, metric.c.id, metric.c.value)
_OF_REPORTS = metric.c.report_id.in_(sa.bindparam("report_ids", expanding=True))
_OF_MEASURES = metric.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True))
_ROWS = sa.select(*_COLUMNS, metric.c.report_id).where(_OF_REPORTS, _OF_MEASURES)
"""The metrics of some measures in some reports, through ``metric (report_id)``: a report's
metrics lie side by side, where a benchmark's lie one report apart."""
_ALL_ROWS = sa.select(*_COLUMNS, metric.c.report_id).where(_OF_REPORTS)


def _sent(column: sa.ColumnElement[Any], send: str, kind: Any) -> sa.ColumnElement[bytes]:
    """The column's value in PostgreSQL's binary form (8 bytes, big-endian): its send
    function's bytes."""
    sent: sa.ColumnElement[bytes] = getattr(sa.func, send)(
        sa.cast(column, kind), type_=sa.LargeBinary
    )
    return sent


_RECORD_PARTS = [
    _sent(metric.c.measure_id, "int8send", sa.BigInteger),
    _sent(metric.c.benchmark_id, "int8send", sa.BigInteger),
    _sent(metric.c.id, "int8send", sa.BigInteger),
    _sent(metric.c.value, "float8send", postgresql.DOUBLE_PRECISION),
    _sent(metric.c.report_id, "int8send", sa.BigInteger),
]
_RECORD = _RECORD_PARTS[0]
for _part in _RECORD_PARTS[1:]:
    _RECORD = _RECORD.op("||", return_type=sa.LargeBinary)(_part)

_PACKED_OF_REPORTS = metric.c.report_id == sa.any_(
    sa.bindparam("report_ids", type_=postgresql.ARRAY(sa.Integer))
)
_PACKED_ALL = sa.select(
    sa.func.string_agg(_RECORD, sa.literal(b"", sa.LargeBinary), type_=sa.LargeBinary)
).where(_PACKED_OF_REPORTS)
"""``_ALL_ROWS`` on PostgreSQL as one value: every row's columns in their binary form, 40
bytes a row (``_PACKED_ROW``)."""
_PACKED = _PACKED_ALL.where(
    metric.c.measure_id == sa.any_(sa.bindparam("measure_ids", type_=postgresql.ARRAY(sa.Integer)))
)
"""``_ROWS`` on PostgreSQL, packed as ``_PACKED_ALL``."""

_PACKED_ROW = np.dtype([("measure", ">i8"), ("b", ">i8"), ("m", ">i8"), ("v", ">f8"), ("r", ">i8")])

PACKED_ROWS = 1_000_000
"""Rows one packed value is sized for: 40 MB, where PostgreSQL holds a value whole in memory and
refuses one past 1 GB (a samples threshold's history can span thousands of reports, a report
thousands of metrics)."""


def read(
    conn: Connection,
    report_ids: Sequence[int],
    measure_ids: Sequence[int] | None,
    per_report: float,
    cache: ReportRows | None = None,
) -> NDArray[Any]:
    """The metrics of ``measure_ids`` (None: every measure) in the reports ``report_ids``
    (``ROW``), about ``per_report`` a report: on PostgreSQL packed into values of fixed-size
    records that NumPy reads as they are; on SQLite the driver's rows, straight from its
    cursor. With ``cache``, the reports it holds unchanged are taken from it (see the
    module), the others read and kept there."""
    if cache is not None:
        return cache.rows(conn, report_ids, measure_ids, per_report)
    if not report_ids:
        return np.empty(0, dtype=ROW)
    if capabilities.of(conn).bulk_arrays:
        return _packed_rows(conn, report_ids, measure_ids, per_report)
    params: dict[str, Any] = {"report_ids": list(report_ids)}
    statement = _ALL_ROWS
    if measure_ids is not None:
        params["measure_ids"] = list(measure_ids)
        statement = _ROWS
    result = conn.execute(statement, params)
    try:
        rows = cast(Iterable[Any], result.cursor)  # the driver's cursor yields its rows
        columns: NDArray[Any] = np.fromiter(rows, dtype=ROW)
        return columns
    finally:
        result.close()


def _packed_rows(
    conn: Connection,
    report_ids: Sequence[int],
    measure_ids: Sequence[int] | None,
    per_report: float,
) -> NDArray[Any]:
    """``read`` on PostgreSQL: no Python object per row or value (the driver makes one per row
    of a result, and one per element of an array); one statement per as many reports as
    ``PACKED_ROWS`` allows at ``per_report`` rows each (the newest reports' average: a budget
    27 times under the limit leaves room for larger older ones)."""
    reports_a_value = max(1, int(PACKED_ROWS // max(per_report, 1.0)))
    statement = _PACKED_ALL if measure_ids is None else _PACKED
    parts = []
    for start in range(0, len(report_ids), reports_a_value):
        params: dict[str, Any] = {"report_ids": list(report_ids[start : start + reports_a_value])}
        if measure_ids is not None:
            params["measure_ids"] = list(measure_ids)
        packed = conn.execute(statement, params).scalar()
        if packed is not None:
            parts.append(np.frombuffer(packed, dtype=_PACKED_ROW))
    if not parts:
        return np.empty(0, dtype=ROW)
    return np.concatenate(parts).astype(ROW)


@dataclass(frozen=True)
class _Check:
    """What a report's rows are served against (see the module)."""

    report_uuid: uuid.UUID
    count: int
    id_sum: int
    id_max: int


@dataclass(frozen=True)
class _Held:
    check: _Check
    rows: NDArray[Any]
    """Every metric of the report, of every measure."""


_CHECKS = (
    sa.select(
        report.c.id,
        report.c.uuid,
        sa.func.count(metric.c.id),
        sa.func.coalesce(sa.func.sum(metric.c.id), 0),
        sa.func.coalesce(sa.func.max(metric.c.id), 0),
    )
    .select_from(report.outerjoin(metric, metric.c.report_id == report.c.id))
    .where(report.c.id.in_(sa.bindparam("report_ids", expanding=True)))
    .group_by(report.c.id, report.c.uuid)
)
"""Each report's ``_Check``, through ``metric (report_id)``: on SQLite from the index alone
(its entries end with the rowid, the id), on PostgreSQL with each metric's row read for its id
(about 19 ms for a history of 192,000 metrics)."""

MAX_ROWS = 500_000
"""Rows a server process keeps (40 bytes each: 20 MB): a history of 64 reports of 3,000
metrics twice over, the least recently used dropped first."""


class ReportRows:
    """A process's reports' rows, thread-safe (judgments read on reader threads)."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._held: OrderedDict[int, _Held] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._rows = 0

    def rows(
        self,
        conn: Connection,
        report_ids: Sequence[int],
        measure_ids: Sequence[int] | None,
        per_report: float,
    ) -> NDArray[Any]:
        """``read``'s rows, the reports held unchanged taken from here."""
        if not report_ids:
            return np.empty(0, dtype=ROW)
        with self._lock:
            held = {r: self._held[r] for r in report_ids if r in self._held}
        params = {"report_ids": list(report_ids)}
        checks = {
            int(r): _Check(u, int(count), int(id_sum), int(id_max))
            for r, u, count, id_sum, id_max in conn.execute(_CHECKS, params)
        }
        kept: dict[int, NDArray[Any]] = {}
        for report_id, h in held.items():
            if checks.get(report_id) == h.check:
                kept[report_id] = h.rows
        # a report absent from ``checks`` was deleted: it has no rows
        missing = [r for r in report_ids if r not in kept and r in checks]
        if missing:
            # every measure of a report is read, not only the ``per_report`` of those asked
            largest = max(checks[r].count for r in missing)
            kept.update(self._read_and_keep(conn, missing, checks, max(per_report, largest)))
        with self._lock:
            for report_id in kept:
                if report_id in self._held:
                    self._held.move_to_end(report_id)
        parts = [kept[r] for r in report_ids if r in kept]
        columns = np.concatenate(parts) if parts else np.empty(0, dtype=ROW)
        if measure_ids is None:
            return columns
        of_measure = columns["measure"]
        kept_rows = np.zeros(len(columns), dtype=bool)
        for measure_id in set(measure_ids):  # a report's few: cheaper than ``np.isin``
            kept_rows |= of_measure == measure_id
        wanted: NDArray[Any] = columns[kept_rows]
        return wanted

    def _read_and_keep(
        self,
        conn: Connection,
        missing: list[int],
        checks: dict[int, _Check],
        per_report: float,
    ) -> dict[int, NDArray[Any]]:
        """Every metric of the reports ``missing``, by report, each kept under the uuid its
        check read (before these rows: rows newer than it fail their next check)."""
        columns = read(conn, missing, None, per_report)
        order = np.argsort(columns["r"], kind="stable")
        columns = columns[order]
        report_of = columns["r"]
        found: dict[int, NDArray[Any]] = {}
        for report_id in missing:
            first, stop = np.searchsorted(report_of, [report_id, report_id + 1]).tolist()
            rows = columns[first:stop].copy()
            found[report_id] = rows
            read_uuid = checks[report_id].report_uuid
            ids = rows["m"]
            id_sum = int(ids.sum()) if len(ids) else 0
            id_max = int(ids.max()) if len(ids) else 0
            self._keep(report_id, _Held(_Check(read_uuid, len(rows), id_sum, id_max), rows))
        return found

    def _keep(self, report_id: int, held: _Held) -> None:
        if len(held.rows) > self.max_rows:
            return
        with self._lock:
            old = self._held.pop(report_id, None)
            if old is not None:
                self._rows -= len(old.rows)
            self._held[report_id] = held
            self._rows += len(held.rows)
            while self._rows > self.max_rows:
                _, dropped = self._held.popitem(last=False)
                self._rows -= len(dropped.rows)


SHARED = ReportRows()
"""This server process's (``processing.judgment`` reads through it)."""
