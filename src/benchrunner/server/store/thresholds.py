"""Thresholds and their models.

A threshold judges one measure on one branch and testbed, for every benchmark of it or, as an
override, for one benchmark. Its current model is the one not yet ``replaced``; a new model
replaces it and the old one stays, so every boundary keeps naming the model that drew it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.detection.models import Model, TestKind
from benchrunner.server.store import capabilities
from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.direct import Direct
from benchrunner.server.store.listing import page_of, where_given
from benchrunner.server.store.lookups_cache import cached, changed
from benchrunner.server.store.tables import (
    benchmark,
    branch,
    measure,
    model,
    project,
    report,
    testbed,
    threshold,
)


def model_of(row: Any) -> Model:
    """The detection model a stored model row holds."""
    return Model(
        test=TestKind(row.test),
        min_sample_size=row.min_sample_size,
        max_sample_size=row.max_sample_size,
        window=row.window_seconds,
        lower_boundary=row.lower_boundary,
        upper_boundary=row.upper_boundary,
        max_pvalue=row.max_pvalue,
        min_magnitude=row.min_magnitude,
    )


def _model_values(params: Model) -> dict[str, Any]:
    return {
        "test": params.test.value,
        "min_sample_size": params.min_sample_size,
        "max_sample_size": params.max_sample_size,
        "window_seconds": params.window,
        "lower_boundary": params.lower_boundary,
        "upper_boundary": params.upper_boundary,
        "max_pvalue": params.max_pvalue,
        "min_magnitude": params.min_magnitude,
    }


@dataclass(frozen=True)
class SeriesKey:
    branch_id: int
    testbed_id: int
    measure_id: int
    benchmark_id: int | None = None
    """None: the measure's threshold for every benchmark."""


_FIND_SERIES = sa.select(threshold.c.id).where(
    threshold.c.branch_id == sa.bindparam("branch_id"),
    threshold.c.testbed_id == sa.bindparam("testbed_id"),
    threshold.c.measure_id == sa.bindparam("measure_id"),
)
_FIND_WIDE = _FIND_SERIES.where(threshold.c.benchmark_id.is_(None))
_FIND_OVERRIDE = _FIND_SERIES.where(threshold.c.benchmark_id == sa.bindparam("benchmark_id"))
_LOCK = sa.select(threshold.c.id).where(threshold.c.id == sa.bindparam("id")).with_for_update()
_CURRENT_MODEL = sa.select(model).where(
    model.c.threshold_id == sa.bindparam("threshold_id"), model.c.replaced.is_(None)
)
_REPLACE_CURRENT = (
    model.update()
    .where(model.c.threshold_id == sa.bindparam("of_threshold"), model.c.replaced.is_(None))
    .values(replaced=sa.bindparam("now"))
)
_INSERT_MODEL = model.insert()
_TOUCH = (
    threshold.update()
    .where(threshold.c.id == sa.bindparam("threshold_id"))
    .values(modified=sa.bindparam("now"))
)


THRESHOLDS = "thresholds"
"""The lookups cache's tag of every series' thresholds: any change of a threshold or of its
model drops them all (they change seldom, and a model belongs to no series by itself)."""


def threshold_find(conn: Connection, key: SeriesKey) -> int | None:
    params = {
        "branch_id": key.branch_id,
        "testbed_id": key.testbed_id,
        "measure_id": key.measure_id,
    }
    if key.benchmark_id is None:
        found = conn.execute(_FIND_WIDE, params).scalar()
    else:
        found = conn.execute(_FIND_OVERRIDE, {**params, "benchmark_id": key.benchmark_id}).scalar()
    return None if found is None else int(found)


def threshold_put(
    conn: Connection,
    project_id: int,
    key: SeriesKey,
    params: Model,
    now: dt.datetime,
    *,
    alert_when_noisy: bool | None = None,
    confirm: int | None = None,
    bisect: bool | None = None,
) -> tuple[int, bool]:
    """Create the threshold of ``key`` with model ``params``, or give the existing one that
    model (unchanged when it already has it); ``alert_when_noisy``, ``confirm`` and ``bisect`` as
    ``threshold_configure``.
    Returns the threshold's id and whether it was created. Concurrent puts of one threshold
    take turns on its row."""
    row = {
        "uuid": uuid.uuid4(),
        "project_id": project_id,
        "branch_id": key.branch_id,
        "testbed_id": key.testbed_id,
        "measure_id": key.measure_id,
        "benchmark_id": key.benchmark_id,
        "created": now,
        "modified": now,
    }
    inserted = conn.execute(insert_or_skip(conn, threshold).returning(threshold.c.id), row)
    threshold_id = inserted.scalar()
    created = threshold_id is not None
    if created:
        changed(conn, THRESHOLDS)
    if threshold_id is None:
        threshold_id = threshold_find(conn, key)
        assert threshold_id is not None, "a threshold that conflicts on insert exists"
    threshold_configure(
        conn, int(threshold_id), params, alert_when_noisy, now, confirm=confirm, bisect=bisect
    )
    return int(threshold_id), created


def threshold_configure(
    conn: Connection,
    threshold_id: int,
    params: Model,
    alert_when_noisy: bool | None,
    now: dt.datetime,
    *,
    confirm: int | None = None,
    bisect: bool | None = None,
) -> None:
    """What the API and the console set on a threshold: ``params`` as its current model (the
    old one kept as history) and, unless None (keep it as it is), whether it raises alerts on a
    report its noise guard found noisy, how many confirmation runs a runner job's crossing
    waits for (0: none; docs/how-to/thresholds-alerts.md) and whether its alerts start a
    bisection (docs/how-to/bisect.md)."""
    model_replace(conn, threshold_id, params, now)
    if alert_when_noisy is not None:
        threshold_set_alert_when_noisy(conn, threshold_id, alert_when_noisy, now)
    if confirm is not None:
        threshold_set_confirm(conn, threshold_id, confirm, now)
    if bisect is not None:
        threshold_set_bisect(conn, threshold_id, bisect, now)


_SET_CONFIRM = (
    threshold.update()
    .where(threshold.c.id == sa.bindparam("threshold_id"))
    .values(confirm=sa.bindparam("confirm"), modified=sa.bindparam("now"))
)


def threshold_set_confirm(
    conn: Connection, threshold_id: int, confirm: int, now: dt.datetime
) -> None:
    """The confirmation runs the threshold waits for before it alerts on a runner job."""
    conn.execute(_SET_CONFIRM, {"threshold_id": threshold_id, "confirm": confirm, "now": now})
    changed(conn, THRESHOLDS)


def model_replace(conn: Connection, threshold_id: int, params: Model, now: dt.datetime) -> bool:
    """Make ``params`` the threshold's current model; False when it already is."""
    conn.execute(_LOCK, {"id": threshold_id})
    current = conn.execute(_CURRENT_MODEL, {"threshold_id": threshold_id}).first()
    if current is not None and model_of(current) == params:
        return False
    conn.execute(_REPLACE_CURRENT, {"of_threshold": threshold_id, "now": now})
    conn.execute(
        _INSERT_MODEL,
        {
            "uuid": uuid.uuid4(),
            "threshold_id": threshold_id,
            **_model_values(params),
            "created": now,
            "replaced": None,
        },
    )
    if current is not None:
        conn.execute(_TOUCH, {"threshold_id": threshold_id, "now": now})
    changed(conn, THRESHOLDS)
    return True


_SET_ALERT_WHEN_NOISY = (
    threshold.update()
    .where(
        threshold.c.id == sa.bindparam("threshold_id"),
        threshold.c.alert_when_noisy != sa.bindparam("alert_when_noisy"),
    )
    .values(alert_when_noisy=sa.bindparam("alert_when_noisy"), modified=sa.bindparam("now"))
)


def threshold_set_alert_when_noisy(
    conn: Connection, threshold_id: int, alert_when_noisy: bool, now: dt.datetime
) -> bool:
    """Whether the threshold raises alerts on a noisy report; False when it already did."""
    result = conn.execute(
        _SET_ALERT_WHEN_NOISY,
        {"threshold_id": threshold_id, "alert_when_noisy": alert_when_noisy, "now": now},
    )
    if not result.rowcount:
        return False
    changed(conn, THRESHOLDS)
    return True


_SET_BISECT = (
    threshold.update()
    .where(
        threshold.c.id == sa.bindparam("threshold_id"),
        threshold.c.bisect != sa.bindparam("bisect"),
    )
    .values(bisect=sa.bindparam("bisect"), modified=sa.bindparam("now"))
)


def threshold_set_bisect(
    conn: Connection, threshold_id: int, bisect: bool, now: dt.datetime
) -> bool:
    """Whether the threshold's alerts start a bisection; False when it already was so."""
    result = conn.execute(_SET_BISECT, {"threshold_id": threshold_id, "bisect": bisect, "now": now})
    if not result.rowcount:
        return False
    changed(conn, THRESHOLDS)
    return True


_DELETE = threshold.delete().where(threshold.c.id == sa.bindparam("threshold_id"))


def threshold_delete(conn: Connection, threshold_id: int) -> None:
    conn.execute(_DELETE, {"threshold_id": threshold_id})
    changed(conn, THRESHOLDS)


_RESET = threshold.delete().where(
    threshold.c.branch_id == sa.bindparam("branch_id"),
    threshold.c.testbed_id == sa.bindparam("testbed_id"),
    threshold.c.measure_id.not_in(sa.bindparam("keep", expanding=True)),
)


def thresholds_reset(
    conn: Connection, branch_id: int, testbed_id: int, keep_measure_ids: Iterable[int]
) -> None:
    """Remove the branch/testbed's thresholds (overrides too) of every measure not kept."""
    keep = list(keep_measure_ids) or [-1]
    result = conn.execute(_RESET, {"branch_id": branch_id, "testbed_id": testbed_id, "keep": keep})
    if result.rowcount:
        changed(conn, THRESHOLDS)


_CLONE_SOURCE = (
    sa.select(
        threshold.c.testbed_id,
        threshold.c.measure_id,
        threshold.c.benchmark_id,
        threshold.c.alert_when_noisy,
        threshold.c.confirm,
        threshold.c.bisect,
        *(c for c in model.c if c.name not in ("id", "uuid", "threshold_id", "created")),
    )
    .join(model, sa.and_(model.c.threshold_id == threshold.c.id, model.c.replaced.is_(None)))
    .where(threshold.c.branch_id == sa.bindparam("branch_id"))
    .order_by(threshold.c.id)
)


def thresholds_clone(
    conn: Connection, project_id: int, from_branch: int, to_branch: int, now: dt.datetime
) -> None:
    """Copy the start point branch's thresholds (every testbed, with their current models)
    onto a branch; thresholds it already has keep their own model."""
    for row in conn.execute(_CLONE_SOURCE, {"branch_id": from_branch}).all():
        key = SeriesKey(to_branch, row.testbed_id, row.measure_id, row.benchmark_id)
        if threshold_find(conn, key) is None:
            threshold_put(
                conn,
                project_id,
                key,
                model_of(row),
                now,
                alert_when_noisy=row.alert_when_noisy,
                confirm=row.confirm,
                bisect=row.bisect,
            )


# Reads for the API: a threshold with its branch, testbed, measure, benchmark and current model.
_B, _T, _M, _K = (
    branch.alias("b"),
    testbed.alias("t"),
    measure.alias("m"),
    benchmark.alias("k"),
)
_VIEW = (
    sa.select(
        threshold,
        project.c.uuid.label("project_uuid"),
        _B.c.uuid.label("branch_uuid"),
        _B.c.name.label("branch_name"),
        _B.c.slug.label("branch_slug"),
        _T.c.uuid.label("testbed_uuid"),
        _T.c.name.label("testbed_name"),
        _T.c.slug.label("testbed_slug"),
        _M.c.uuid.label("measure_uuid"),
        _M.c.name.label("measure_name"),
        _M.c.slug.label("measure_slug"),
        _M.c.units.label("measure_units"),
        _K.c.uuid.label("benchmark_uuid"),
        _K.c.name.label("benchmark_name"),
        _K.c.slug.label("benchmark_slug"),
    )
    .join(project, project.c.id == threshold.c.project_id)
    .join(_B, _B.c.id == threshold.c.branch_id)
    .join(_T, _T.c.id == threshold.c.testbed_id)
    .join(_M, _M.c.id == threshold.c.measure_id)
    .outerjoin(_K, _K.c.id == threshold.c.benchmark_id)
)


@dataclass(frozen=True)
class ThresholdFilter:
    branch_id: int | None = None
    testbed_id: int | None = None
    measure_id: int | None = None
    benchmark_id: int | None = None


def threshold_list(
    conn: Connection,
    project_id: int,
    where: ThresholdFilter,
    *,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    statement = where_given(
        _VIEW.where(threshold.c.project_id == project_id),
        (
            (threshold.c.branch_id, where.branch_id),
            (threshold.c.testbed_id, where.testbed_id),
            (threshold.c.measure_id, where.measure_id),
            (threshold.c.benchmark_id, where.benchmark_id),
        ),
    )
    return page_of(
        conn,
        statement,
        threshold.c.created,
        threshold.c.id,
        ascending=ascending,
        limit=limit,
        offset=offset,
    )


_BY_UUID = _VIEW.where(
    threshold.c.project_id == sa.bindparam("project_id"),
    threshold.c.uuid == sa.bindparam("threshold_uuid"),
)
_BY_ID = _VIEW.where(threshold.c.id == sa.bindparam("threshold_id"))


def threshold_get(conn: Connection, project_id: int, ref: str) -> Any | None:
    try:
        threshold_uuid = uuid.UUID(ref)
    except ValueError:
        return None
    return conn.execute(
        _BY_UUID, {"project_id": project_id, "threshold_uuid": threshold_uuid}
    ).first()


def threshold_by_id(conn: Connection, threshold_id: int) -> Any:
    return conn.execute(_BY_ID, {"threshold_id": threshold_id}).one()


_MODELS = (
    sa.select(model)
    .where(model.c.threshold_id == sa.bindparam("threshold_id"))
    .order_by(model.c.created.desc(), model.c.id.desc())
)


def current_model(conn: Connection, threshold_id: int) -> Any | None:
    return conn.execute(_CURRENT_MODEL, {"threshold_id": threshold_id}).first()


_CURRENT_MODELS = sa.select(model).where(
    model.c.threshold_id.in_(sa.bindparam("threshold_ids", expanding=True)),
    model.c.replaced.is_(None),
)


_LOCK_MANY = (
    sa.select(threshold.c.id)
    .where(threshold.c.id.in_(sa.bindparam("threshold_ids", expanding=True)))
    .order_by(threshold.c.id)
    .with_for_update()
)


def lock_thresholds(conn: Connection, threshold_ids: list[int]) -> None:
    """Hold these thresholds' rows until the transaction ends, in id order (so two holders
    never wait on each other), where several transactions write at once: a check of what
    another's write under them may change (an alert raised on the same step) then sees that
    write, committed. SQLite's one writer needs none."""
    if threshold_ids and capabilities.of(conn).concurrent_writers:
        conn.execute(_LOCK_MANY, {"threshold_ids": sorted(threshold_ids)}).all()


def current_models(conn: Connection, threshold_ids: list[int]) -> dict[int, Any]:
    """The current model of each of these thresholds (a page of a list: at most 255), in one
    statement."""
    if not threshold_ids:
        return {}
    rows = conn.execute(_CURRENT_MODELS, {"threshold_ids": threshold_ids})
    return {row.threshold_id: row for row in rows}


def models_of(conn: Connection, threshold_id: int) -> list[Any]:
    """Every model the threshold has had, newest first."""
    return list(conn.execute(_MODELS, {"threshold_id": threshold_id}))


# Evaluation: the thresholds (with current models) of a branch/testbed's measures.
_WITH_MODELS = sa.select(
    threshold.c.id.label("threshold_id"),
    threshold.c.uuid.label("threshold_uuid"),
    threshold.c.measure_id,
    threshold.c.benchmark_id,
    threshold.c.alert_when_noisy,
    threshold.c.confirm,
    threshold.c.bisect,
    *(column for column in model.c if column.name != "threshold_id"),
).join(model, sa.and_(model.c.threshold_id == threshold.c.id, model.c.replaced.is_(None)))
_FOR_SERIES = _WITH_MODELS.where(
    threshold.c.branch_id == sa.bindparam("branch_id"),
    threshold.c.testbed_id == sa.bindparam("testbed_id"),
    threshold.c.measure_id.in_(sa.bindparam("measure_ids", expanding=True)),
)
_FOR_REPORT = Direct(
    _WITH_MODELS.join(
        report,
        sa.and_(
            report.c.branch_id == threshold.c.branch_id,
            report.c.testbed_id == threshold.c.testbed_id,
        ),
    ).where(report.c.id == sa.bindparam("report_id"))
)


def thresholds_for(
    conn: Connection, branch_id: int, testbed_id: int, measure_ids: Iterable[int]
) -> list[Any]:
    wanted = sorted(set(measure_ids))
    if not wanted:
        return []
    return list(
        conn.execute(
            _FOR_SERIES,
            {"branch_id": branch_id, "testbed_id": testbed_id, "measure_ids": wanted},
        )
    )


_OF_SERIES = Direct(
    _WITH_MODELS.where(
        threshold.c.branch_id == sa.bindparam("branch_id"),
        threshold.c.testbed_id == sa.bindparam("testbed_id"),
    )
)


def thresholds_of_series(
    conn: Connection, branch_id: int, testbed_id: int, measure_ids: Iterable[int]
) -> list[Any]:
    """``thresholds_for``, from the branch and testbed's thresholds of every measure, cached
    (a change of any threshold drops them)."""
    wanted = set(measure_ids)
    if not wanted:
        return []
    return [row for row in _series_rows(conn, branch_id, testbed_id) if row.measure_id in wanted]


def series_has_thresholds(conn: Connection, branch_id: int, testbed_id: int) -> bool:
    """Whether the branch and testbed have a threshold of any measure (cached, as
    ``thresholds_of_series``)."""
    return bool(_series_rows(conn, branch_id, testbed_id))


def _series_rows(conn: Connection, branch_id: int, testbed_id: int) -> tuple[Any, ...]:
    rows = cached(
        conn,
        ("thresholds", branch_id, testbed_id),
        lambda: tuple(_OF_SERIES.all(conn, {"branch_id": branch_id, "testbed_id": testbed_id})),
        lambda _: [THRESHOLDS],
    )
    return tuple(rows or ())


def thresholds_of_report(conn: Connection, report_id: int, measure_ids: Iterable[int]) -> list[Any]:
    """``thresholds_for`` the report's branch and testbed, in one statement prepared once
    (a series has a threshold per measure and override: they are filtered here)."""
    wanted = set(measure_ids)
    if not wanted:
        return []
    rows = _FOR_REPORT.all(conn, {"report_id": report_id})
    return [row for row in rows if row.measure_id in wanted]
