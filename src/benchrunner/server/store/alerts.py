"""Boundaries (what a metric was judged against), alerts (a metric outside a limit, a change
point, or a duet's ratio beyond its margin), and baseline resets (an intended change: the
history before it no longer counts).

An alert is on a boundary or on a duet result (``store.duets`` raises those); the reads here
give both kinds in one shape: a duet alert has no metric and no boundary, its benchmark,
measure and report are its duet result's, and its threshold and model those that gave the
duet its margin, if one did."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store import capabilities
from benchrunner.server.store.arrays import unnested
from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.listing import page_of, where_given
from benchrunner.server.store.tables import (
    alert,
    baseline_reset,
    benchmark,
    boundary,
    branch,
    duet,
    duet_result,
    measure,
    metric,
    model,
    project,
    report,
    testbed,
    threshold,
    user,
)

AlertStatus = Literal["active", "dismissed", "silenced"]
"""What a user sets on an alert."""
Limit = Literal["lower", "upper"]
STATUSES: tuple[AlertStatus, ...] = ("active", "dismissed", "silenced")
UnraisedStatus = Literal["pending", "suspected"]
"""An alert the server holds back (docs/how-to/thresholds-alerts.md): ``pending`` while its
confirmation runs run, ``suspected`` when they did not confirm it. Neither is listed unless asked
for, nor sent to webhooks."""
ListedStatus = Literal["active", "dismissed", "silenced", "pending", "suspected"]
UNRAISED: tuple[UnraisedStatus, ...] = ("pending", "suspected")
Verdict = Literal["true_positive", "false_positive", "expected"]
VERDICTS: tuple[Verdict, ...] = ("true_positive", "false_positive", "expected")
VerdictFilter = Literal["true_positive", "false_positive", "expected", "untriaged"]
"""A triaged alert: a real regression, noise (the threshold cried wolf), or a real change that
was intended. Precision counts ``expected`` as right: the threshold saw a real change."""


@dataclass(frozen=True)
class Change:
    """A change point's step, kept on its alert."""

    before: float
    after: float
    magnitude: float
    pvalue: float
    from_report_id: int | None = None
    """The last report before the step (the step's first is the alert's metric's report)."""


_BOUNDARY_OF = sa.select(boundary.c.id).where(boundary.c.metric_id == sa.bindparam("metric_id"))


def boundary_put(
    conn: Connection,
    metric_id: int,
    threshold_id: int,
    model_id: int,
    baseline: float | None,
    lower_limit: float | None,
    upper_limit: float | None,
) -> int:
    """The metric's boundary: stored now, or the one it already has (a metric is judged once)."""
    row = {
        "metric_id": metric_id,
        "threshold_id": threshold_id,
        "model_id": model_id,
        "baseline": baseline,
        "lower_limit": lower_limit,
        "upper_limit": upper_limit,
    }
    inserted = conn.execute(
        insert_or_skip(conn, boundary, ("metric_id",)).returning(boundary.c.id), row
    ).scalar()
    if inserted is not None:
        return int(inserted)
    return int(conn.execute(_BOUNDARY_OF, {"metric_id": metric_id}).scalar_one())


@dataclass(frozen=True)
class NewBoundary:
    metric_id: int
    threshold_id: int
    model_id: int
    baseline: float | None
    lower_limit: float | None
    upper_limit: float | None
    verdict: str | None = None
    """The ``samples`` test's answer (same, different or unknown); None for the others."""


_BOUNDARIES_OF = sa.select(boundary.c.metric_id, boundary.c.id).where(
    boundary.c.metric_id.in_(sa.bindparam("metric_ids", expanding=True))
)


_BOUNDARY_COLUMNS = (
    ("metric_id", sa.Integer),
    ("threshold_id", sa.Integer),
    ("model_id", sa.Integer),
    ("baseline", sa.Float),
    ("lower_limit", sa.Float),
    ("upper_limit", sa.Float),
    ("verdict", sa.String),
)
_GIVEN = unnested(_BOUNDARY_COLUMNS)
_GIVEN_ROWS = sa.select(*(_GIVEN.c[name] for name, _ in _BOUNDARY_COLUMNS))
"""On PostgreSQL, the new boundaries as one array a column: one statement, where an
``executemany`` is one statement a row on the server."""


def boundaries_put(conn: Connection, rows: Sequence[NewBoundary]) -> list[int]:
    """``boundary_put`` of many metrics in one batch; their boundary ids, in order."""
    if not rows:
        return []
    found: dict[int, int] = {}
    insert = insert_or_skip(conn, boundary, ("metric_id",))
    if capabilities.of(conn).bulk_arrays:
        names = [name for name, _ in _BOUNDARY_COLUMNS]
        statement = insert.from_select(names, _GIVEN_ROWS).returning(
            boundary.c.metric_id, boundary.c.id
        )
        given = {name: [getattr(r, name) for r in rows] for name in names}
        found.update((m, b) for m, b in conn.execute(statement, given).all())
    else:
        conn.execute(insert, [vars(r) for r in rows])
    wanted = [r.metric_id for r in rows if r.metric_id not in found]
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        found.update((m, b) for m, b in conn.execute(_BOUNDARIES_OF, {"metric_ids": chunk}).all())
    return [found[r.metric_id] for r in rows]


def boundary_ids(conn: Connection, metric_ids: Sequence[int]) -> dict[int, int]:
    """The boundary id of each of the metrics that has one."""
    found: dict[int, int] = {}
    for start in range(0, len(metric_ids), 500):
        chunk = list(metric_ids[start : start + 500])
        found.update((m, b) for m, b in conn.execute(_BOUNDARIES_OF, {"metric_ids": chunk}).all())
    return found


def _alert_row(
    boundary_id: int,
    report_id: int,
    limit: Limit,
    now: dt.datetime,
    change: Change | None,
    pending: bool,
) -> dict[str, Any]:
    return {
        "uuid": uuid.uuid4(),
        "boundary_id": boundary_id,
        "report_id": report_id,
        "limit": limit,
        "status": "pending" if pending else "active",
        "confirmation": "pending" if pending else None,
        "change_before": change.before if change else None,
        "change_after": change.after if change else None,
        "change_magnitude": change.magnitude if change else None,
        "change_pvalue": change.pvalue if change else None,
        "change_from_report_id": change.from_report_id if change else None,
        "created": now,
        "modified": now,
    }


def alert_raise(
    conn: Connection,
    boundary_id: int,
    report_id: int,
    limit: Limit,
    now: dt.datetime,
    change: Change | None = None,
    *,
    pending: bool = False,
) -> int | None:
    """An active alert on the boundary, raised by ``report_id`` (``pending``: held back until
    its confirmation runs decide); its id, or None when the boundary has one already."""
    row = _alert_row(boundary_id, report_id, limit, now, change, pending)
    statement = insert_or_skip(conn, alert, ("boundary_id",)).returning(alert.c.id)
    inserted = conn.execute(statement, row).scalar()
    return None if inserted is None else int(inserted)


@dataclass(frozen=True)
class NewAlert:
    """An alert to raise on a boundary (``alert_raise``'s arguments)."""

    boundary_id: int
    limit: Limit
    change: Change | None = None
    pending: bool = False


def alerts_raise(
    conn: Connection, report_id: int, raised: Sequence[NewAlert], now: dt.datetime
) -> dict[int, int]:
    """``alert_raise`` of alerts on distinct boundaries, in one statement: the id of each alert
    raised, by its boundary id (a boundary that has an alert already is left out)."""
    if not raised:
        return {}
    rows = [_alert_row(a.boundary_id, report_id, a.limit, now, a.change, a.pending) for a in raised]
    statement = insert_or_skip(conn, alert, ("boundary_id",)).returning(
        alert.c.boundary_id, alert.c.id
    )
    return {int(b): int(i) for b, i in conn.execute(statement, rows)}


def alert_promote_suspected(
    conn: Connection,
    boundary_id: int,
    report_id: int,
    limit: Limit,
    now: dt.datetime,
    change: Change,
) -> int | None:
    """The boundary's suspected alert (its confirmation runs did not agree) made the active
    alert of a step found later, raised by ``report_id`` with ``change``: its id, or None when
    the boundary holds no suspected alert."""
    statement = (
        alert.update()
        .where(alert.c.boundary_id == boundary_id, alert.c.status == "suspected")
        .values(
            status="active",
            report_id=report_id,
            limit=limit,
            change_before=change.before,
            change_after=change.after,
            change_magnitude=change.magnitude,
            change_pvalue=change.pvalue,
            change_from_report_id=change.from_report_id,
            modified=now,
        )
        .returning(alert.c.id)
    )
    promoted = conn.execute(statement).scalar()
    return None if promoted is None else int(promoted)


_CHANGE_ALERTED = (
    sa.select(boundary.c.metric_id)
    .join(alert, alert.c.boundary_id == boundary.c.id)
    .where(
        boundary.c.metric_id.in_(sa.bindparam("metric_ids", expanding=True)),
        alert.c.change_pvalue.is_not(None),
        alert.c.status != "suspected",
    )
)


def change_alerted(conn: Connection, metric_ids: Sequence[int]) -> set[int]:
    """Those of the metrics that carry a change-point alert already."""
    found: set[int] = set()
    for start in range(0, len(metric_ids), 500):
        chunk = list(metric_ids[start : start + 500])
        found.update(int(m) for m in conn.execute(_CHANGE_ALERTED, {"metric_ids": chunk}).scalars())
    return found


JUDGED_BY: tuple[sa.ColumnElement[Any], ...] = (
    boundary.c.baseline,
    boundary.c.lower_limit,
    boundary.c.upper_limit,
    # labelled: an alert's own ``verdict`` is its triage
    boundary.c.verdict.label("boundary_verdict"),
    threshold.c.uuid.label("threshold_uuid"),
    threshold.c.alert_when_noisy,
    model.c.uuid.label("model_uuid"),
    model.c.test,
    model.c.min_sample_size,
    model.c.max_sample_size,
    model.c.window_seconds,
    model.c.lower_boundary,
    model.c.upper_boundary,
    model.c.max_pvalue,
    model.c.min_magnitude,
    model.c.created.label("model_created"),
    model.c.replaced.label("model_replaced"),
)
"""A boundary with the threshold and model that drew it, as ``views.boundary_view`` and
``views.model_view(prefix="model_")`` read them; a select of them joins ``boundary``,
``threshold`` and ``model``."""

# Reads: an alert with everything its JSON shows, of either kind.
_RAISED = report.alias("raised")
_FROM = report.alias("change_from")
_REPORT_ID = sa.func.coalesce(metric.c.report_id, duet.c.report_id)
_BENCHMARK_ID = sa.func.coalesce(metric.c.benchmark_id, duet_result.c.benchmark_id)
_MEASURE_ID = sa.func.coalesce(metric.c.measure_id, duet_result.c.measure_id)
_MODEL_ID = sa.func.coalesce(boundary.c.model_id, duet_result.c.margin_model_id)
_VERDICT_BY = user.alias("verdict_by")
_VIEW = (
    sa.select(
        alert,
        *JUDGED_BY,
        duet_result.c.rounds.label("duet_rounds"),
        duet_result.c.ratio.label("duet_ratio"),
        duet_result.c.lower_value.label("duet_lower_value"),
        duet_result.c.upper_value.label("duet_upper_value"),
        duet_result.c.lower_margin.label("duet_lower_margin"),
        duet_result.c.upper_margin.label("duet_upper_margin"),
        duet_result.c.margin_source.label("duet_margin_source"),
        metric.c.uuid.label("metric_uuid"),
        metric.c.iteration,
        metric.c.value,
        metric.c.lower_value,
        metric.c.upper_value,
        report.c.uuid.label("metric_report_uuid"),
        report.c.start_time.label("metric_report_start"),
        report.c.version.label("metric_report_version"),
        report.c.hash.label("metric_report_hash"),
        _FROM.c.uuid.label("change_from_uuid"),
        _FROM.c.version.label("change_from_version"),
        _FROM.c.hash.label("change_from_hash"),
        report.c.project_id,
        _RAISED.c.uuid.label("raised_uuid"),
        benchmark.c.uuid.label("benchmark_uuid"),
        benchmark.c.name.label("benchmark_name"),
        benchmark.c.slug.label("benchmark_slug"),
        measure.c.uuid.label("measure_uuid"),
        measure.c.name.label("measure_name"),
        measure.c.slug.label("measure_slug"),
        measure.c.units.label("measure_units"),
        branch.c.uuid.label("branch_uuid"),
        branch.c.name.label("branch_name"),
        branch.c.slug.label("branch_slug"),
        testbed.c.uuid.label("testbed_uuid"),
        testbed.c.name.label("testbed_name"),
        testbed.c.slug.label("testbed_slug"),
        # what Bencher's JsonAlert nests in full
        project.c.uuid.label("project_uuid"),
        benchmark.c.created.label("benchmark_created"),
        measure.c.created.label("measure_created"),
        branch.c.created.label("branch_created"),
        branch.c.head_reset.label("branch_head_reset"),
        testbed.c.created.label("testbed_created"),
        threshold.c.created.label("threshold_created"),
        threshold.c.modified.label("threshold_modified"),
        _VERDICT_BY.c.uuid.label("verdict_user_uuid"),
        _VERDICT_BY.c.name.label("verdict_user_name"),
        _VERDICT_BY.c.slug.label("verdict_user_slug"),
        _VERDICT_BY.c.email.label("verdict_user_email"),
    )
    .select_from(alert)
    .outerjoin(boundary, boundary.c.id == alert.c.boundary_id)
    .outerjoin(metric, metric.c.id == boundary.c.metric_id)
    .outerjoin(duet_result, duet_result.c.id == alert.c.duet_result_id)
    .outerjoin(duet, duet.c.id == duet_result.c.duet_id)
    .join(report, report.c.id == _REPORT_ID)
    .join(project, project.c.id == report.c.project_id)
    .join(_RAISED, _RAISED.c.id == alert.c.report_id)
    .outerjoin(_FROM, _FROM.c.id == alert.c.change_from_report_id)
    .join(benchmark, benchmark.c.id == _BENCHMARK_ID)
    .join(measure, measure.c.id == _MEASURE_ID)
    .join(branch, branch.c.id == report.c.branch_id)
    .join(testbed, testbed.c.id == report.c.testbed_id)
    # A boundary's model is its threshold's; a duet's margin model too, when it has one.
    .outerjoin(model, model.c.id == _MODEL_ID)
    .outerjoin(threshold, threshold.c.id == model.c.threshold_id)
    .outerjoin(_VERDICT_BY, _VERDICT_BY.c.id == alert.c.verdict_user_id)
)


def alerts_raised_by(conn: Connection, report_id: int) -> list[Any]:
    statement = _VIEW.where(alert.c.report_id == report_id).order_by(alert.c.id)
    return list(conn.execute(statement))


@dataclass(frozen=True)
class AlertFilter:
    status: ListedStatus | None = None
    """None: every raised alert (``pending`` and ``suspected`` ones are listed only by name)."""
    branch_id: int | None = None
    testbed_id: int | None = None
    benchmark_id: int | None = None
    measure_id: int | None = None
    report_id: int | None = None
    """The report whose evaluation raised the alerts."""
    verdict: VerdictFilter | None = None
    """``untriaged``: the alerts without a verdict."""


def alert_list(
    conn: Connection,
    project_id: int,
    where: AlertFilter,
    *,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    statement = where_given(
        _VIEW.where(_RAISED.c.project_id == project_id),
        (
            (alert.c.status, where.status),
            (report.c.branch_id, where.branch_id),
            (report.c.testbed_id, where.testbed_id),
            (benchmark.c.id, where.benchmark_id),
            (measure.c.id, where.measure_id),
            (alert.c.report_id, where.report_id),
        ),
    )
    if where.status is None:
        statement = statement.where(alert.c.status.not_in(UNRAISED))
    if where.verdict == "untriaged":
        statement = statement.where(alert.c.verdict.is_(None))
    elif where.verdict is not None:
        statement = statement.where(alert.c.verdict == where.verdict)
    return page_of(
        conn,
        statement,
        alert.c.created,
        alert.c.id,
        ascending=ascending,
        limit=limit,
        offset=offset,
    )


def alerts_by_ids(conn: Connection, alert_ids: Sequence[int]) -> list[Any]:
    """The alerts, in the shape of the other reads, by id."""
    if not alert_ids:
        return []
    statement = _VIEW.where(alert.c.id.in_(list(alert_ids))).order_by(alert.c.id)
    return list(conn.execute(statement))


_DUET_ALERTS_OF = (
    sa.select(alert.c.id)
    .where(alert.c.report_id == sa.bindparam("report_id"), alert.c.duet_result_id.is_not(None))
    .order_by(alert.c.id)
)


def duet_alert_ids(conn: Connection, report_id: int) -> list[int]:
    """The duet alerts the report raised (a report has one duet, judged once)."""
    return list(conn.execute(_DUET_ALERTS_OF, {"report_id": report_id}).scalars())


def alert_get(conn: Connection, project_id: int, ref: str) -> Any | None:
    try:
        alert_uuid = uuid.UUID(ref)
    except ValueError:
        return None
    statement = _VIEW.where(_RAISED.c.project_id == project_id, alert.c.uuid == alert_uuid)
    return conn.execute(statement).first()


_SET_STATUS = (
    alert.update()
    .where(alert.c.id == sa.bindparam("alert_id"))
    # A held-back alert is decided by its confirmation runs alone (confirmations.alert_decide).
    .where(alert.c.status != "pending")
    .values(status=sa.bindparam("status"), modified=sa.bindparam("now"))
)


def alert_set_status(
    conn: Connection, alert_id: int, status: AlertStatus, now: dt.datetime
) -> None:
    conn.execute(_SET_STATUS, {"alert_id": alert_id, "status": status, "now": now})


_REOPEN = (
    alert.update()
    .where(
        alert.c.id == sa.bindparam("alert_id"),
        alert.c.status == "dismissed",
        sa.or_(alert.c.verdict.is_(None), alert.c.verdict != "expected"),
    )
    .values(status="active", modified=sa.bindparam("now"))
)


def alert_reopen(conn: Connection, alert_id: int, now: dt.datetime) -> bool:
    """Make a dismissed alert active again (a dismissed step that persisted); False when it is
    no longer dismissed, or has been triaged ``expected`` (which never re-opens)."""
    return conn.execute(_REOPEN, {"alert_id": alert_id, "now": now}).rowcount == 1


_SET_VERDICT = (
    alert.update()
    .where(alert.c.id == sa.bindparam("alert_id"))
    .values(
        verdict=sa.bindparam("verdict"),
        verdict_user_id=sa.bindparam("user_id"),
        verdict_at=sa.bindparam("now"),
    )
)


def alert_set_verdict(
    conn: Connection, alert_id: int, verdict: Verdict | None, user_id: int, now: dt.datetime
) -> None:
    """Triage the alert (``None`` takes the verdict back): the latest verdict, its user and
    time are kept. The status (Bencher's field) is left as it is."""
    conn.execute(
        _SET_VERDICT, {"alert_id": alert_id, "verdict": verdict, "user_id": user_id, "now": now}
    )


@dataclass(frozen=True)
class Precision:
    """How a threshold's alerts (or a project's) were triaged."""

    true_positive: int = 0
    false_positive: int = 0
    expected: int = 0
    untriaged: int = 0

    @property
    def alerts(self) -> int:
        return self.true_positive + self.false_positive + self.expected + self.untriaged

    @property
    def precision(self) -> float | None:
        """(true positives + expected) / triaged; None while no alert is triaged."""
        right = self.true_positive + self.expected
        judged = right + self.false_positive
        return right / judged if judged else None

    def plus(self, verdict: str | None, count: int) -> Precision:
        field = verdict if verdict in VERDICTS else "untriaged"
        return Precision(**{**vars(self), field: getattr(self, field) + count})


@dataclass(frozen=True)
class ThresholdPrecision:
    """One threshold's alerts' triage; ``threshold_uuid`` None for duet alerts whose margin
    came from no threshold."""

    threshold_uuid: uuid.UUID | None
    branch_name: str | None
    testbed_name: str | None
    measure_name: str | None
    counts: Precision


_T_BRANCH = branch.alias("t_branch")
_T_TESTBED = testbed.alias("t_testbed")
_T_MEASURE = measure.alias("t_measure")
_PRECISION = (
    sa.select(
        threshold.c.id.label("threshold_id"),
        threshold.c.uuid.label("threshold_uuid"),
        _T_BRANCH.c.name.label("branch_name"),
        _T_TESTBED.c.name.label("testbed_name"),
        _T_MEASURE.c.name.label("measure_name"),
        alert.c.verdict,
        sa.func.count().label("n"),
    )
    .select_from(alert)
    .join(_RAISED, _RAISED.c.id == alert.c.report_id)
    .outerjoin(boundary, boundary.c.id == alert.c.boundary_id)
    .outerjoin(duet_result, duet_result.c.id == alert.c.duet_result_id)
    .outerjoin(model, model.c.id == _MODEL_ID)
    .outerjoin(threshold, threshold.c.id == model.c.threshold_id)
    .outerjoin(_T_BRANCH, _T_BRANCH.c.id == threshold.c.branch_id)
    .outerjoin(_T_TESTBED, _T_TESTBED.c.id == threshold.c.testbed_id)
    .outerjoin(_T_MEASURE, _T_MEASURE.c.id == threshold.c.measure_id)
    .where(_RAISED.c.project_id == sa.bindparam("project_id"), alert.c.status.not_in(UNRAISED))
    .group_by(
        threshold.c.id,
        threshold.c.uuid,
        _T_BRANCH.c.name,
        _T_TESTBED.c.name,
        _T_MEASURE.c.name,
        alert.c.verdict,
    )
)


def alert_precision(
    conn: Connection, project_id: int, threshold_id: int | None = None
) -> list[ThresholdPrecision]:
    """Per threshold (only ``threshold_id``'s if given), how its alerts were triaged: one
    aggregate query. Thresholds without alerts are left out; the order is by branch, testbed
    and measure name, the duet alerts of no threshold last."""
    statement = _PRECISION
    if threshold_id is not None:
        statement = statement.where(threshold.c.id == threshold_id)
    found: dict[int | None, ThresholdPrecision] = {}
    for row in conn.execute(statement, {"project_id": project_id}):
        key = None if row.threshold_id is None else int(row.threshold_id)
        known = found.get(key) or ThresholdPrecision(
            row.threshold_uuid, row.branch_name, row.testbed_name, row.measure_name, Precision()
        )
        found[key] = ThresholdPrecision(
            known.threshold_uuid,
            known.branch_name,
            known.testbed_name,
            known.measure_name,
            known.counts.plus(row.verdict, int(row.n)),
        )
    return sorted(
        found.values(),
        key=lambda t: (
            t.threshold_uuid is None,
            t.branch_name or "",
            t.testbed_name or "",
            t.measure_name or "",
        ),
    )


def precision_total(rows: Sequence[ThresholdPrecision]) -> Precision:
    total = Precision()
    for row in rows:
        for field, count in vars(row.counts).items():
            total = total.plus(None if field == "untriaged" else field, count)
    return total


def baseline_reset_add(
    conn: Connection,
    project_id: int,
    branch_id: int,
    testbed_id: int,
    measure_id: int | None,
    report_id: int,
    start_time: dt.datetime,
    now: dt.datetime,
) -> tuple[uuid.UUID, list[int]]:
    """Record the reset and dismiss the series' active alerts from the report onward (by the
    metric's report start time). Returns the reset's UUID and the ids of the alerts it
    dismissed."""
    reset_uuid = uuid.uuid4()
    conn.execute(
        baseline_reset.insert(),
        {
            "uuid": reset_uuid,
            "project_id": project_id,
            "branch_id": branch_id,
            "testbed_id": testbed_id,
            "measure_id": measure_id,
            "report_id": report_id,
            "created": now,
        },
    )
    affected = (
        sa.select(boundary.c.id)
        .join(metric, metric.c.id == boundary.c.metric_id)
        .join(report, report.c.id == metric.c.report_id)
        .where(
            report.c.branch_id == branch_id,
            report.c.testbed_id == testbed_id,
            report.c.start_time >= start_time,
        )
    )
    if measure_id is not None:
        affected = affected.where(metric.c.measure_id == measure_id)
    dismissed = list(
        conn.execute(
            sa.select(alert.c.id)
            .where(
                alert.c.status == "active",
                alert.c.boundary_id.in_(affected.scalar_subquery()),
            )
            .order_by(alert.c.id)
        ).scalars()
    )
    for start in range(0, len(dismissed), 500):
        conn.execute(
            alert.update()
            .where(alert.c.id.in_(dismissed[start : start + 500]))
            .values(status="dismissed", modified=now)
        )
    return reset_uuid, dismissed


_REPORT_BOUNDARIES = (
    sa.select(
        boundary.c.metric_id,
        *JUDGED_BY,
        threshold.c.created.label("threshold_created"),
        alert.c.confirmation.label("alert_confirmation"),
    )
    .join(metric, metric.c.id == boundary.c.metric_id)
    .join(threshold, threshold.c.id == boundary.c.threshold_id)
    .join(model, model.c.id == boundary.c.model_id)
    .outerjoin(alert, alert.c.boundary_id == boundary.c.id)
    .where(metric.c.report_id == sa.bindparam("report_id"))
)


def report_boundaries(conn: Connection, report_id: int) -> dict[int, Any]:
    """The boundaries of a report's metrics, by metric id."""
    return {
        row.metric_id: row for row in conn.execute(_REPORT_BOUNDARIES, {"report_id": report_id})
    }


# A bisect threshold's alerts (docs/how-to/bisect.md): pending until the bisection driver
# starts their bisection or says why it cannot.
BisectState = Literal["pending", "started", "skipped"]

_BISECT_PENDING = (
    alert.update()
    .where(alert.c.id.in_(sa.bindparam("alert_ids", expanding=True)))
    .values(bisect="pending", bisect_reason=None)
)


def alerts_bisect_pending(conn: Connection, alert_ids: Sequence[int]) -> None:
    """Ask for the alerts' bisections: the driver starts them (``bisection.auto``)."""
    if alert_ids:
        conn.execute(_BISECT_PENDING, {"alert_ids": list(alert_ids)})


def alerts_bisect_skipped_of(conn: Connection, report_id: int) -> list[int]:
    """The alerts whose bisection was skipped and whose metric is in the report."""
    statement = (
        sa.select(alert.c.id)
        .join(boundary, boundary.c.id == alert.c.boundary_id)
        .join(metric, metric.c.id == boundary.c.metric_id)
        .where(metric.c.report_id == report_id, alert.c.bisect == "skipped")
        .order_by(alert.c.id)
    )
    return list(conn.execute(statement).scalars())


def alerts_bisect_due(conn: Connection, limit: int) -> list[int]:
    """The alerts whose bisection is pending, oldest first."""
    statement = (
        sa.select(alert.c.id).where(alert.c.bisect == "pending").order_by(alert.c.id).limit(limit)
    )
    return list(conn.execute(statement).scalars())


def alert_claim_bisect(conn: Connection, alert_id: int) -> bool:
    """Mark the alert's pending bisection started; False when another replica's driver (or an
    earlier look) took it first."""
    claimed = conn.execute(
        alert.update()
        .where(alert.c.id == alert_id, alert.c.bisect == "pending")
        .values(bisect="started", bisect_reason=None)
    )
    return claimed.rowcount == 1


def alert_set_bisect(
    conn: Connection, alert_id: int, state: BisectState, reason: str | None
) -> None:
    conn.execute(
        alert.update()
        .where(alert.c.id == alert_id)
        .values(bisect=state, bisect_reason=None if reason is None else reason[:2000])
    )
