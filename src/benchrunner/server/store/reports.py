"""Reports and their metrics, with the branch/testbed/benchmark/measure names they refer to."""

from __future__ import annotations

import collections
import datetime as dt
import functools
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core import slugs
from benchrunner.core.measures import measure_spec
from benchrunner.core.time_ordered_ids import uuid7
from benchrunner.server.store import capabilities
from benchrunner.server.store.arrays import unnested
from benchrunner.server.store.conflicts import insert_or_skip
from benchrunner.server.store.direct import Direct, insert_values
from benchrunner.server.store.lookups_cache import cached_each, tag
from benchrunner.server.store.metric_inserts import COLUMNS, PER_METRIC, metric_ids_insert
from benchrunner.server.store.samples import samples_add
from benchrunner.server.store.tables import (
    benchmark,
    branch,
    job,
    measure,
    metric,
    organization,
    project,
    report,
    spec,
    testbed,
)
from benchrunner.server.store.transitions import Guarded

IN_LIST_CHUNK = 500  # names per IN (...): far below SQLite's limit on bound parameters


@functools.cache
def _named_ids(table: sa.Table) -> sa.Select[Any]:
    return sa.select(table.c.id, table.c.name).where(
        table.c.project_id == sa.bindparam("project_id"),
        table.c.name.in_(sa.bindparam("names", expanding=True)),
    )


@functools.cache
def _named_id(table: sa.Table) -> Direct:
    return Direct(
        sa.select(table.c.id, table.c.name).where(
            table.c.project_id == sa.bindparam("project_id"),
            table.c.name == sa.bindparam("name"),
        )
    )


def _find_named(
    conn: Connection, table: sa.Table, project_id: int, names: list[str]
) -> dict[str, int]:
    """The ids of the project's rows of ``table`` with these names (those that exist).
    Cached: a name keeps its row (nothing renames or deletes one but the project's end)."""
    return cached_each(
        conn,
        ("named", table.name, project_id),
        names,
        lambda missing: _load_named(conn, table, project_id, missing),
        lambda _name, _id: [tag("project", project_id)],
    )


def _load_named(
    conn: Connection, table: sa.Table, project_id: int, names: list[str]
) -> dict[str, int]:
    if len(names) == 1:  # the common case (a run's testbed; a report of one benchmark)
        row = _named_id(table).first(conn, {"project_id": project_id, "name": names[0]})
        return {} if row is None else {row.name: int(row.id)}
    found: dict[str, int] = {}
    for start in range(0, len(names), IN_LIST_CHUNK):
        chunk = names[start : start + IN_LIST_CHUNK]
        rows = conn.execute(_named_ids(table), {"project_id": project_id, "names": chunk})
        found.update((row.name, int(row.id)) for row in rows)
    return found


def named_ids(
    conn: Connection, table: sa.Table, project_id: int, names: Iterable[str], now: dt.datetime
) -> dict[str, int]:
    """The ids of the project's branches (testbeds, benchmarks, measures) with these names,
    those missing created (Bencher's behaviour).

    A name a concurrent transaction creates at the same moment is inserted once: the insert
    skips on conflict and the row is read back. Missing names are inserted in sorted order,
    and callers go branch, testbed, benchmark, measure, so two transactions creating
    overlapping names wait for each other instead of deadlocking.
    """
    wanted = sorted(set(names))
    found = _find_named(conn, table, project_id, wanted)
    missing = [name for name in wanted if name not in found]
    if missing:
        rows = [
            {
                "uuid": uuid.uuid4(),
                "project_id": project_id,
                "name": name,
                "slug": slugs.slugify(name),
                "created": now,
            }
            for name in missing
        ]
        conn.execute(insert_or_skip(conn, table, ("project_id", "name")), rows)
        found.update(_find_named(conn, table, project_id, missing))
    return found


_MEASURES_BY_SLUG = (
    sa.select(measure.c.id, measure.c.slug)
    .where(
        measure.c.project_id == sa.bindparam("project_id"),
        measure.c.slug.in_(sa.bindparam("slugs", expanding=True)),
    )
    .order_by(measure.c.id.desc())  # the oldest of a slug read last, so it wins
)


_OLDEST_MEASURE_OF_SLUG = Direct(
    sa.select(measure.c.id, measure.c.slug)
    .where(
        measure.c.project_id == sa.bindparam("project_id"), measure.c.slug == sa.bindparam("slug")
    )
    .order_by(measure.c.id)
    .limit(1)
)


def _measures_by_slug(conn: Connection, project_id: int, wanted: list[str]) -> dict[str, int]:
    """The ids of the oldest of the project's measures with each slug (those that exist).
    Cached as ``_find_named``: a newer measure of a slug never takes its place."""
    return cached_each(
        conn,
        ("measure_slug", project_id),
        wanted,
        lambda missing: _load_measures_by_slug(conn, project_id, missing),
        lambda _slug, _id: [tag("project", project_id)],
    )


def _load_measures_by_slug(conn: Connection, project_id: int, wanted: list[str]) -> dict[str, int]:
    if len(wanted) == 1:  # the common case: a report of one measure
        row = _OLDEST_MEASURE_OF_SLUG.first(conn, {"project_id": project_id, "slug": wanted[0]})
        return {} if row is None else {row.slug: int(row.id)}
    found: dict[str, int] = {}
    for start in range(0, len(wanted), IN_LIST_CHUNK):
        chunk = wanted[start : start + IN_LIST_CHUNK]
        rows = conn.execute(_MEASURES_BY_SLUG, {"project_id": project_id, "slugs": chunk})
        found.update((row.slug, int(row.id)) for row in rows)
    return found


def measure_ids(
    conn: Connection, project_id: int, keys: Iterable[str], now: dt.datetime
) -> dict[str, int]:
    """The ids of the project's measures that results' measure keys name, those missing
    created as Bencher creates them (built-in ones with its name and units; see
    ``core.measures``). A key finds its measure by slug, so ``latency`` and ``Latency`` are one
    measure."""
    specs = {key: measure_spec(key) for key in set(keys)}
    wanted = sorted({spec.slug for spec in specs.values()})
    found = _measures_by_slug(conn, project_id, wanted)
    missing = sorted(
        {spec for spec in specs.values() if spec.slug not in found}, key=lambda s: s.slug
    )
    if missing:
        rows = [
            {
                "uuid": uuid.uuid4(),
                "project_id": project_id,
                "name": spec.name,
                "slug": spec.slug,
                "units": spec.units,
                "created": now,
            }
            for spec in missing
        ]
        conn.execute(insert_or_skip(conn, measure, ("project_id", "name")), rows)
        found.update(_measures_by_slug(conn, project_id, [spec.slug for spec in missing]))
        # A name taken by a measure of another slug (renamed): that measure is the one meant.
        unfound = [spec for spec in missing if spec.slug not in found]
        by_name = _find_named(conn, measure, project_id, [spec.name for spec in unfound])
        found.update((spec.slug, by_name[spec.name]) for spec in unfound if spec.name in by_name)
    return {key: found[spec.slug] for key, spec in specs.items() if spec.slug in found}


def named_get_or_create(
    conn: Connection, table: sa.Table, project_id: int, name: str, now: dt.datetime
) -> int:
    """The id of the project's row with this name, created if missing."""
    return named_ids(conn, table, project_id, [name], now)[name]


@dataclass(frozen=True)
class NewReport:
    project_id: int
    user_id: int | None
    branch_id: int
    testbed_id: int
    adapter: str
    average: str | None
    fold: str | None
    hash: str | None
    start_time: dt.datetime
    end_time: dt.datetime
    now: dt.datetime


_NEW_REPORT_COLUMNS = (
    "uuid",
    "user_id",
    "project_id",
    "branch_id",
    "testbed_id",
    "adapter",
    "average",
    "fold",
    "hash",
    "start_time",
    "end_time",
    "error",
    "created",
)


def _next_version() -> sa.ColumnElement[int]:
    """The branch version a new report gets, computed by its own insert: the latest version's
    number when it has the same hash, else the next number (a report without a hash always
    starts a new version). A branch's first version follows its start point's version."""
    latest = report.alias("latest")
    hash_ = sa.bindparam("hash", type_=report.c.hash.type)
    branch_id = sa.bindparam("branch_id", type_=report.c.branch_id.type)
    same_or_next = (
        sa.select(sa.case((latest.c.hash == hash_, latest.c.version), else_=latest.c.version + 1))
        .where(latest.c.branch_id == branch_id, latest.c.version.is_not(None))
        .order_by(latest.c.version.desc(), latest.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    first = (
        sa.select(sa.func.coalesce(branch.c.start_point_version, 0) + 1)
        .where(branch.c.id == branch_id)
        .scalar_subquery()
    )
    return sa.func.coalesce(same_or_next, first, 1)


NEW_REPORT = insert_values(report, _NEW_REPORT_COLUMNS).values(version=_next_version())
"""``INSERT INTO report``, its version computed by the insert; its parameters are
``report_params``'."""
_INSERT_REPORT = Direct(NEW_REPORT.returning(report.c.id))


def new_report_where(condition: sa.ColumnElement[bool]) -> sa.Insert:
    """``NEW_REPORT`` inserting its row only where ``condition`` holds (nothing otherwise),
    with the same parameters and any ``condition`` needs."""
    values = [sa.bindparam(name, type_=report.c[name].type) for name in _NEW_REPORT_COLUMNS]
    return report.insert().from_select(
        [*_NEW_REPORT_COLUMNS, "version"], sa.select(*values, _next_version()).where(condition)
    )


def report_set_bisect(
    conn: Connection, report_id: int, bisect_range: list[str] | None, bisect_image: str | None
) -> None:
    """What a bisection of the report's alerts needs (docs/how-to/bisect.md): the commits
    since the previous report, oldest first, and the image tag holding ``{commit}``; None
    keeps what the report has."""
    values: dict[str, Any] = {}
    if bisect_range is not None:
        values["bisect_range"] = json.dumps(bisect_range)
    if bisect_image is not None:
        values["bisect_image"] = bisect_image
    if values:
        conn.execute(sa.update(report).where(report.c.id == report_id).values(**values))


def report_params(params: NewReport, report_uuid: uuid.UUID) -> dict[str, Any]:
    """The parameters of ``NEW_REPORT`` for a report ``report_uuid``."""
    return {
        "uuid": report_uuid,
        "user_id": params.user_id,
        "project_id": params.project_id,
        "branch_id": params.branch_id,
        "testbed_id": params.testbed_id,
        "adapter": params.adapter,
        "average": params.average,
        "fold": params.fold,
        "hash": params.hash,
        "start_time": params.start_time,
        "end_time": params.end_time,
        "error": None,
        "created": params.now,
    }


def report_create(conn: Connection, params: NewReport) -> tuple[int, uuid.UUID]:
    report_uuid = uuid.uuid4()
    report_id = _INSERT_REPORT.scalar(conn, report_params(params, report_uuid))
    assert report_id is not None
    return report_id, report_uuid


@dataclass(frozen=True)
class MetricValue:
    iteration: int
    benchmark: str
    measure: str
    value: float
    lower_value: float | None
    upper_value: float | None
    samples: tuple[float, ...] = ()
    """Every value behind ``value`` (``core.samples``); empty: the value alone."""


IGNORE_SUFFIXES = ("_bencher_ignore", "BencherIgnore", "-bencher-ignore")
"""Bencher's benchmark-name suffixes that store a result under the name without them, judged
but never alerting (docs/reference/thresholds.md); the first that matches is the one stripped."""


def without_ignore_suffix(name: str) -> tuple[str, bool]:
    """The benchmark name a result is stored under, and whether its metric must never alert.
    A name that is nothing but a suffix is kept whole (a benchmark needs a name)."""
    for suffix in IGNORE_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            return name.removesuffix(suffix), True
    return name, False


MetricId = tuple[int, int, int]
"""A metric of a report by ids: its benchmark's, its measure's and its iteration (the names
of two results may differ and find one: ``_metric_rows``)."""


@dataclass(frozen=True)
class StoredMetric:
    """A metric as evaluation needs it; ``never_alerts``: judged (its boundary stored) but
    raising no alert, its result named with an ignore suffix."""

    id: int
    benchmark_id: int
    measure_id: int
    iteration: int
    value: float
    never_alerts: bool = False

    @property
    def key(self) -> MetricId:
        return self.benchmark_id, self.measure_id, self.iteration


_STORED_METRIC = (metric.c.id, metric.c.benchmark_id, metric.c.measure_id, metric.c.value)
_INSERT_ONE_METRIC = Direct(insert_values(metric, COLUMNS).returning(*_STORED_METRIC))


def _metric_rows(
    conn: Connection, report_id: int, project_id: int, values: list[MetricValue], now: dt.datetime
) -> tuple[list[dict[str, Any]], list[bool]]:
    """The metric rows of ``values`` (their benchmarks and measures created if missing; uuids
    of the time ``now``, ``core.time_ordered_ids``), and for each whether it never alerts."""
    named = {m.benchmark: without_ignore_suffix(m.benchmark) for m in values}
    benchmarks = named_ids(conn, benchmark, project_id, (n for n, _ in named.values()), now)
    measures = measure_ids(conn, project_id, (m.measure for m in values), now)
    rows = [
        {
            "uuid": uuid7(now),
            "report_id": report_id,
            "iteration": m.iteration,
            "benchmark_id": benchmarks[named[m.benchmark][0]],
            "measure_id": measures[m.measure],
            "value": m.value,
            "lower_value": m.lower_value,
            "upper_value": m.upper_value,
        }
        for m in values
    ]
    return rows, [named[m.benchmark][1] for m in values]


def _stored(
    conn: Connection,
    values: list[MetricValue],
    ids: list[int],
    rows: list[dict[str, Any]],
    never_alerts: list[bool],
) -> list[StoredMetric]:
    """The metrics of ``values`` as inserted (``rows``, given ``ids``), their samples kept."""
    samples_add(conn, ((metric_id, m.samples) for m, metric_id in zip(values, ids, strict=True)))
    return [
        StoredMetric(metric_id, *_metric_id(row), row["value"], never)
        for metric_id, row, never in zip(ids, rows, never_alerts, strict=True)
    ]


def metrics_add(
    conn: Connection, report_id: int, project_id: int, values: list[MetricValue], now: dt.datetime
) -> list[StoredMetric]:
    rows, never_alerts = _metric_rows(conn, report_id, project_id, values, now)
    return _insert_metrics(conn, values, rows, never_alerts) if rows else []


def _insert_metrics(
    conn: Connection,
    values: list[MetricValue],
    rows: list[dict[str, Any]],
    never_alerts: list[bool],
) -> list[StoredMetric]:
    """Insert the metric ``rows`` of ``values`` (``_metric_rows``), their ids returned."""
    if len(rows) == 1:
        ids = [int(_INSERT_ONE_METRIC.all(conn, rows[0])[0].id)]
    else:
        ids = metric_ids_insert(conn, rows)
    return _stored(conn, values, ids, rows, never_alerts)


@dataclass(frozen=True)
class NewMetrics:
    """Metrics to insert with a job's move to ``processed`` (``metrics_with_finish``)."""

    values: list[MetricValue]
    rows: list[dict[str, Any]]
    never_alerts: list[bool]

    def params(self) -> dict[str, Any]:
        """``FINISH_WITH_METRICS_AFTER_MOVE``'s parameters beside ``finish_params``': one
        array per column."""
        return {f"metric_{name}": [row[name] for row in self.rows] for name in PER_METRIC}

    def stored(self, conn: Connection, returned: Any) -> list[StoredMetric]:
        """The metrics as stored, from the ``metric_ids`` the statement returned (pairs of
        uuid and id); their samples are kept here."""
        ids = {uuid.UUID(str(pair[0])): int(pair[1]) for pair in returned or []}
        return _stored(
            conn, self.values, [ids[row["uuid"]] for row in self.rows], self.rows, self.never_alerts
        )


def metrics_with_finish(
    conn: Connection, report_id: int, project_id: int, values: list[MetricValue], now: dt.datetime
) -> NewMetrics | None:
    """The metrics of ``values`` to insert by the statement of their job's move to
    ``processed`` (``FINISH_WITH_METRICS_AFTER_MOVE``), their benchmarks and measures found
    (or created) first; None where statements cannot write in CTEs (SQLite: ``metrics_add``
    after the move) or there are no metrics."""
    if not values or not capabilities.of(conn).writes_in_ctes:
        return None
    rows, never_alerts = _metric_rows(conn, report_id, project_id, values, now)
    return NewMetrics(values, rows, never_alerts)


def _report_finish(*guards: sa.ColumnElement[bool]) -> sa.Update:
    return (
        report.update()
        .where(report.c.id == sa.bindparam("report_id"), *guards)
        .values(
            start_time=sa.bindparam("start_time"),
            end_time=sa.bindparam("end_time"),
            error=sa.bindparam("error"),
            noise=sa.bindparam("noise"),
        )
        .returning(report.c.branch_id, report.c.testbed_id, report.c.confirms_report_id)
    )


_FINISH_REPORT = Direct(_report_finish())


def _finished_after(moved: sa.CTE) -> sa.Select[Any]:
    finished = _report_finish(sa.exists(sa.select(moved.c.id))).cte("finished")
    return sa.select(finished.c.branch_id, finished.c.testbed_id, finished.c.confirms_report_id)


FINISH_AFTER_MOVE = Guarded(_finished_after, _FINISH_REPORT)
"""The report finished by a job's move to ``processed`` (``moves.move.apply_reading``), in
the move's own statement on PostgreSQL, and only if the job moved (``alone``: the report
finished by a statement of its own); bind ``finish_params``. Its row: ``Finished.of``."""


def _finished_with_metrics_after(moved: sa.CTE) -> sa.Select[Any]:
    """``_finished_after``, and the report's metrics inserted from one array per column
    (``NewMetrics.params``), returning their ``metric_ids`` as JSON pairs of uuid and id."""
    finished = _report_finish(sa.exists(sa.select(moved.c.id))).cte("finished")
    given = unnested(
        [(name, metric.c[name].type) for name in PER_METRIC],
        parameter_prefix="metric_",
        name=None,
    )
    inserted = (
        metric.insert()
        .from_select(
            [*PER_METRIC, "report_id"],
            sa.select(
                *(given.c[name] for name in PER_METRIC),
                sa.bindparam("report_id", type_=metric.c.report_id.type),
            ).where(sa.exists(sa.select(moved.c.id))),
        )
        .returning(metric.c.uuid, metric.c.id)
        .cte("new_metrics")
    )
    pairs = sa.select(
        sa.func.json_agg(sa.func.json_build_array(inserted.c.uuid, inserted.c.id))
    ).scalar_subquery()
    return sa.select(
        finished.c.branch_id,
        finished.c.testbed_id,
        finished.c.confirms_report_id,
        pairs.label("metric_ids"),
    )


FINISH_WITH_METRICS_AFTER_MOVE = Guarded(_finished_with_metrics_after, _FINISH_REPORT)
"""``FINISH_AFTER_MOVE`` that also inserts the report's metrics (PostgreSQL, where
``metrics_with_finish`` gives them; its ``alone`` form finishes the report only); bind
``finish_params`` and ``NewMetrics.params``."""


def report_finish(conn: Connection, params: dict[str, Any]) -> None:
    """Finish a report by a statement of its own (bind ``finish_params``): a job left
    ``completed`` while its report is judged (``processing.processor.record_processed``)."""
    _FINISH_REPORT.first(conn, params)


_HOLDS_METRICS = (
    sa.select(metric.c.id).where(metric.c.report_id == sa.bindparam("report_id")).limit(1)
)
"""A first store holds none: its metrics are not looked up (a long list on PostgreSQL)."""
_STORED_AMONG = (
    sa.select(*_STORED_METRIC, metric.c.iteration)
    .where(
        # one probe of index_metric_benchmark_measure_report a (benchmark, measure)
        sa.tuple_(metric.c.benchmark_id, metric.c.measure_id).in_(
            sa.bindparam("series", expanding=True)
        ),
        metric.c.report_id == sa.bindparam("report_id"),
    )
    .order_by(metric.c.id)
)
"""Bound with ``IN_LIST_CHUNK`` series at most: two parameters each, where PostgreSQL takes
65,535 a statement and SQLite 32,766."""


def _metric_id(row: Any) -> MetricId:
    return int(row["benchmark_id"]), int(row["measure_id"]), int(row["iteration"])


def _held(conn: Connection, report_id: int, rows: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    """The report's metrics of the series of ``rows``, by (benchmark, measure, iteration),
    each key's in the order they were stored."""
    held: dict[Any, list[Any]] = {}
    if conn.execute(_HOLDS_METRICS, {"report_id": report_id}).first() is None:
        return held
    series = sorted({(r["benchmark_id"], r["measure_id"]) for r in rows})
    for start in range(0, len(series), IN_LIST_CHUNK):
        chunk = series[start : start + IN_LIST_CHUNK]
        for found in conn.execute(_STORED_AMONG, {"report_id": report_id, "series": chunk}):
            held.setdefault(_metric_id(found._mapping), []).append(found)
    return held


def metrics_add_missing(
    conn: Connection,
    report_id: int,
    project_id: int,
    values: list[MetricValue],
    now: dt.datetime,
    earlier: Mapping[MetricId, int] | None = None,
) -> list[StoredMetric]:
    """``metrics_add`` of those of ``values`` the report does not hold yet: a report stored
    in parts, or again after a stop half-way (``processing.metric_parts``), never holds one
    twice. The metrics of ``values`` as stored, in their order.

    A metric is its ``MetricId`` and its place among the results of the same one: two
    results of one (names equal without an ignore suffix, or measures' slugs that find one
    measure) are two metrics, as ``metrics_add`` stores them, whichever parts they fall in.
    The n-th result of an id, counted from the report's first result (``earlier`` counts
    the ``StoredMetric.key`` of the parts before ``values``), is the report's n-th metric
    of it in the order stored. Sound where the report's writers run one after another:
    SQLite's, or those holding its job's row (``jobs.job_hold_completed``)."""
    rows, never_alerts = _metric_rows(conn, report_id, project_id, values, now)
    if not rows:
        return []
    held = _held(conn, report_id, rows)
    seen = collections.Counter(earlier or {})
    found: list[Any] = []
    for row in rows:
        key = _metric_id(row)
        same = held.get(key, [])
        found.append(same[seen[key]] if seen[key] < len(same) else None)
        seen[key] += 1
    new = [k for k, row in enumerate(found) if row is None]
    inserted = (
        _insert_metrics(
            conn,
            [values[k] for k in new],
            [rows[k] for k in new],
            [never_alerts[k] for k in new],
        )
        if new
        else []
    )
    ids = dict(zip(new, (m.id for m in inserted), strict=True))
    return [
        StoredMetric(
            ids[k] if k in ids else int(found[k].id),
            *_metric_id(row),
            row["value"] if k in ids else float(found[k].value),
            never_alerts[k],
        )
        for k, row in enumerate(rows)
    ]


class Finished(NamedTuple):
    branch_id: int
    testbed_id: int
    confirmation_run: bool
    """The report is a confirmation run's (docs/how-to/thresholds-alerts.md): never judged."""

    @classmethod
    def of(cls, row: Any) -> Finished:
        """From a row of ``FINISH_AFTER_MOVE``'s statement."""
        return cls(int(row.branch_id), int(row.testbed_id), row.confirms_report_id is not None)


def finish_params(
    report_id: int,
    *,
    start_time: dt.datetime,
    end_time: dt.datetime,
    error: str | None,
    noise: str | None = None,
) -> dict[str, Any]:
    """The parameters of ``FINISH_AFTER_MOVE``'s statement: ``noise`` is the noise verdict's
    JSON (``server.processing.noise``), None when the job had none."""
    return {
        "report_id": report_id,
        "start_time": start_time,
        "end_time": end_time,
        "error": error,
        "noise": noise,
    }


def report_with_names(rows: sa.FromClause) -> sa.Select[Any]:
    """The columns of ``rows`` (the ``report`` table, or a CTE returning all of its columns)
    with the names of its branch, testbed, project and organization, as views show them."""
    return sa.select(
        *rows.c,
        branch.c.name.label("branch_name"),
        branch.c.uuid.label("branch_uuid"),
        branch.c.slug.label("branch_slug"),
        branch.c.created.label("branch_created"),
        branch.c.start_point_branch_id,
        branch.c.start_point_version,
        branch.c.start_point_max_versions,
        branch.c.head_reset,
        testbed.c.name.label("testbed_name"),
        testbed.c.uuid.label("testbed_uuid"),
        testbed.c.slug.label("testbed_slug"),
        testbed.c.created.label("testbed_created"),
        project.c.uuid.label("project_uuid"),
        project.c.name.label("project_name"),
        project.c.slug.label("project_slug"),
        project.c.visibility.label("project_visibility"),
        project.c.created.label("project_created"),
        project.c.modified.label("project_modified"),
        organization.c.uuid.label("organization_uuid"),
    ).select_from(
        rows.join(project, project.c.id == rows.c.project_id)
        .join(organization, organization.c.id == project.c.organization_id)
        .join(branch, branch.c.id == rows.c.branch_id)
        .join(testbed, testbed.c.id == rows.c.testbed_id)
    )


_REPORT = Direct(report_with_names(report).where(report.c.id == sa.bindparam("report_id")))
_REPORT_ID = sa.select(report.c.id).where(report.c.uuid == sa.bindparam("report_uuid"))
_METRICS = Direct(
    sa.select(
        metric.c.id,
        metric.c.uuid,
        metric.c.iteration,
        metric.c.value,
        metric.c.lower_value,
        metric.c.upper_value,
        benchmark.c.name.label("benchmark"),
        benchmark.c.uuid.label("benchmark_uuid"),
        benchmark.c.slug.label("benchmark_slug"),
        benchmark.c.created.label("benchmark_created"),
        measure.c.created.label("measure_created"),
        measure.c.name.label("measure"),
        measure.c.uuid.label("measure_uuid"),
        measure.c.slug.label("measure_slug"),
        measure.c.units.label("measure_units"),
    )
    .join(benchmark, benchmark.c.id == metric.c.benchmark_id)
    .join(measure, measure.c.id == metric.c.measure_id)
    .where(metric.c.report_id == sa.bindparam("report_id"))
    .order_by(metric.c.iteration, benchmark.c.name, measure.c.name)
)


def report_row(conn: Connection, report_id: int) -> Any:
    row = _REPORT.first(conn, {"report_id": report_id})
    if row is None:
        raise LookupError(f"report {report_id} does not exist")
    return row


def report_like(
    conn: Connection, source: Any, user_id: int | None, now: dt.datetime
) -> tuple[int, uuid.UUID]:
    """A new report on ``source``'s (a ``report_row``) project, branch, testbed, adapter,
    settings and hash, for a job that measures it again."""
    return report_create(
        conn,
        NewReport(
            project_id=source.project_id,
            user_id=user_id,
            branch_id=source.branch_id,
            testbed_id=source.testbed_id,
            adapter=source.adapter,
            average=source.average,
            fold=source.fold,
            hash=source.hash,
            start_time=now,
            end_time=now,
            now=now,
        ),
    )


_PARSING = (
    sa.select(
        report.c.id,
        report.c.adapter,
        report.c.average,
        report.c.fold,
        spec.c.noise_cv_limit,
        spec.c.noise_drift_limit,
        report.c.branch_id,
        report.c.testbed_id,
        report.c.confirms_report_id,
        sa.exists(sa.select(metric.c.id).where(metric.c.report_id == report.c.id)).label(
            "metrics_stored"
        ),
    )
    .outerjoin(job, job.c.report_id == report.c.id)
    .outerjoin(spec, spec.c.id == job.c.spec_id)
)
_PARSINGS = _PARSING.where(report.c.id.in_(sa.bindparam("ids", expanding=True)))


REPORT_PARSING = Direct(_PARSING.where(report.c.id == sa.bindparam("report_id")))
"""``reports_parsing`` of one report (bind ``report_id``), prepared once; a transition reads it
in its own statement (``moves.move.apply_reading``)."""


def reports_parsing(conn: Connection, report_ids: Iterable[int]) -> dict[int, Any]:
    """Each report's ``adapter``, ``average`` and ``fold`` by id: what parsing its job's output
    needs, with its job's spec's noise limits (None: the server's defaults), its branch, testbed
    and ``confirms_report_id``, and whether its metrics are stored (``metrics_stored``: a job
    left ``completed`` with them awaits its judgment), ``IN_LIST_CHUNK`` ids per statement."""
    ids = sorted(set(report_ids))
    found: dict[int, Any] = {}
    for start in range(0, len(ids), IN_LIST_CHUNK):
        chunk = ids[start : start + IN_LIST_CHUNK]
        found.update((row.id, row) for row in conn.execute(_PARSINGS, {"ids": chunk}))
    return found


def report_by_uuid(conn: Connection, report_uuid: uuid.UUID) -> Any:
    return conn.execute(_REPORT_ID, {"report_uuid": report_uuid}).scalar()


def report_metrics(conn: Connection, report_id: int) -> list[Any]:
    return _METRICS.all(conn, {"report_id": report_id})


def versions_before(conn: Connection, report_uuid: uuid.UUID) -> tuple[str | None, str | None]:
    """(the git hash of the last report before ``report_uuid`` on its branch and testbed that
    has one, the report's own hash): the good and bad versions a bisection of it starts from.
    Either is None when no report gives it."""
    own = conn.execute(
        sa.select(
            report.c.branch_id, report.c.testbed_id, report.c.start_time, report.c.hash
        ).where(report.c.uuid == report_uuid)
    ).first()
    if own is None:
        return None, None
    before = conn.execute(
        sa.select(report.c.hash)
        .where(
            report.c.branch_id == own.branch_id,
            report.c.testbed_id == own.testbed_id,
            report.c.start_time < own.start_time,
            report.c.hash.is_not(None),
            report.c.hash != own.hash if own.hash is not None else sa.true(),
        )
        .order_by(report.c.start_time.desc())
        .limit(1)
    ).scalar()
    return before, own.hash
