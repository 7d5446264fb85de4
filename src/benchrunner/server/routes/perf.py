"""``GET /v0/projects/{project}/perf``: metric series for chosen branches, testbeds, benchmarks
and measures over a time range (Bencher's perf query), and the same as CSV and as a PNG plot.

Each of ``branches``, ``testbeds``, ``benchmarks`` and ``measures`` is a comma-separated list of
UUIDs, names or slugs of the project's; ``start_time`` and ``end_time`` are milliseconds since
the epoch, as Bencher's (default: the year up to now).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.engine import Connection

from benchrunner.api.perf import Perf
from benchrunner.core.samples import Samples
from benchrunner.server.access import project_access
from benchrunner.server.context import ServerContext
from benchrunner.server.http.answers import BuiltJson, sent_as_built
from benchrunner.server.http.errors import bad_request
from benchrunner.server.routes.deps import Ctx, MaybeUser
from benchrunner.server.store import accounts
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.perf import MAX_SERIES, PerfQuery, perf_points
from benchrunner.server.store.samples import samples_of
from benchrunner.server.store.tables import benchmark, branch, measure, testbed
from benchrunner.server.views.lookups import in_project
from benchrunner.server.views.perf.bounds import DEFAULT_SPAN, MAX_MS, MAX_REFS
from benchrunner.server.views.perf.csv_export import perf_csv
from benchrunner.server.views.perf.plot import perf_png
from benchrunner.server.views.perf.series import Point, Series
from benchrunner.server.views.report_json import boundary_json, model_json
from benchrunner.server.views.resources import iso, project_view
from benchrunner.server.views.samples import samples_view

router = APIRouter(tags=["perf"])


Refs = Annotated[
    str,
    Query(min_length=1, max_length=64 * 1100, description="comma-separated UUIDs, names or slugs"),
]
Millis = Annotated[
    int | None, Query(ge=0, le=MAX_MS, description="milliseconds since the epoch (UTC)")
]


@dataclass(frozen=True)
class _Resolved:
    project: Any
    org_uuid: Any
    branches: dict[int, Any]
    testbeds: dict[int, Any]
    benchmarks: dict[int, Any]
    measures: dict[int, Any]
    start_time: dt.datetime
    end_time: dt.datetime
    points: list[Any]
    samples: dict[int, Samples] | None = None
    """Each point's samples by metric id, when asked for."""


_SINGULAR = {
    "branches": "branch",
    "testbeds": "testbed",
    "benchmarks": "benchmark",
    "measures": "measure",
}


def _split(refs: str, what: str) -> list[str]:
    items = [item.strip() for item in refs.split(",") if item.strip()]
    if not items:
        raise bad_request(f"{what} must name at least one of the project's {what}")
    if len(items) > MAX_REFS:
        raise bad_request(f"{what} names {len(items)} items; at most {MAX_REFS} are allowed")
    return list(dict.fromkeys(items))


def _resolve(
    conn: Connection, table: sa.Table, project_id: int, refs: str, what: str
) -> dict[int, Any]:
    found: dict[int, Any] = {}
    for ref in _split(refs, what):
        row = in_project(conn, table, project_id, ref, _SINGULAR[what])
        found[row.id] = row
    return found


def _time_range(
    start_ms: int | None, end_ms: int | None, now: dt.datetime
) -> tuple[dt.datetime, dt.datetime]:
    end = now if end_ms is None else dt.datetime.fromtimestamp(end_ms / 1000, dt.UTC)
    start = (
        end - DEFAULT_SPAN
        if start_ms is None
        else dt.datetime.fromtimestamp(start_ms / 1000, dt.UTC)
    )
    if start > end:
        raise bad_request("start_time must not be after end_time")
    return start, end


@dataclass(frozen=True)
class PerfParams:
    """The query string every perf route reads."""

    refs: tuple[str, str, str, str]
    """Branches, testbeds, benchmarks and measures, each comma-separated."""
    start_ms: int | None
    end_ms: int | None


def perf_params(
    branches: Refs,
    testbeds: Refs,
    benchmarks: Refs,
    measures: Refs,
    start_time: Millis = None,
    end_time: Millis = None,
) -> PerfParams:
    return PerfParams((branches, testbeds, benchmarks, measures), start_time, end_time)


Params = Annotated[PerfParams, Depends(perf_params)]


async def _query(
    ctx: ServerContext,
    user: UserRow | None,
    project: str,
    params: PerfParams,
    *,
    with_samples: bool = False,
) -> _Resolved:
    def unit(conn: Connection) -> _Resolved:
        row = project_access(conn, user, project, write=False)
        branches, testbeds, benchmarks, measures = (
            _resolve(conn, table, row.id, text, what)
            for table, text, what in zip(
                (branch, testbed, benchmark, measure),
                params.refs,
                ("branches", "testbeds", "benchmarks", "measures"),
                strict=True,
            )
        )
        series = len(branches) * len(testbeds) * len(benchmarks) * len(measures)
        if series > MAX_SERIES:
            raise bad_request(
                f"the query asks for {series} series (branches x testbeds x benchmarks x "
                f"measures); at most {MAX_SERIES} are allowed"
            )
        start, end = _time_range(params.start_ms, params.end_ms, ctx.clock.now())
        query = PerfQuery(
            branch_ids=list(branches),
            testbed_ids=list(testbeds),
            benchmark_ids=list(benchmarks),
            measure_ids=list(measures),
            start_time=start,
            end_time=end,
        )
        org = accounts.organization_by_id(conn, row.organization_id)
        points = perf_points(conn, query)
        return _Resolved(
            project=row,
            org_uuid=org.uuid,
            branches=branches,
            testbeds=testbeds,
            benchmarks=benchmarks,
            measures=measures,
            start_time=start,
            end_time=end,
            points=points,
            samples=samples_of(conn, [(p.metric_id, p.value) for p in points])
            if with_samples
            else None,
        )

    return await ctx.db.read(unit)


def _named(row: Any) -> BuiltJson:
    return {"uuid": str(row.uuid), "name": row.name, "slug": row.slug}


def _keys(found: _Resolved) -> list[tuple[int, int, int, int]]:
    return [
        (b, t, bm, m)
        for b in found.branches
        for t in found.testbeds
        for bm in found.benchmarks
        for m in found.measures
    ]


def _by_series(found: _Resolved) -> dict[tuple[int, int, int, int], list[Any]]:
    grouped: dict[tuple[int, int, int, int], list[Any]] = {key: [] for key in _keys(found)}
    for p in found.points:
        grouped[(p.branch_id, p.testbed_id, p.benchmark_id, p.measure_id)].append(p)
    return grouped


def _point_view(p: Any, samples: dict[int, Samples] | None) -> BuiltJson:
    view: BuiltJson = {
        "report": str(p.report_uuid),
        "iteration": p.iteration,
        "metric": {
            "uuid": str(p.metric_uuid),
            "value": p.value,
            "lower_value": p.lower_value,
            "upper_value": p.upper_value,
        },
        "start_time": iso(p.start_time),
        "end_time": iso(p.end_time),
        "version": {"number": p.version, "hash": p.hash},
        # Bencher's JsonPerfMetric has all three, null when the point has none
        "threshold": None,
        "boundary": None,
        "alert": None,
    }
    if p.threshold_uuid is not None:
        view["threshold"] = {
            "uuid": str(p.threshold_uuid),
            "model": model_json(p, prefix="model_"),
        }
        view["boundary"] = boundary_json(p)
    if p.alert_uuid is not None:
        view["alert"] = {
            "uuid": str(p.alert_uuid),
            "limit": p.alert_limit,
            "status": p.alert_status,
            "modified": iso(p.alert_modified),
        }
    if p.noisy:
        view["noisy"] = True
    if samples is not None:
        view["samples"] = samples_view(samples[p.metric_id]).model_dump()
    return view


def _measure_view(row: Any) -> BuiltJson:
    return {**_named(row), "units": row.units}


def perf_view(found: _Resolved) -> BuiltJson:
    """``Perf``'s JSON, built as plain data: a model per point would more than double the
    answer's CPU (benchmarks/RESULTS.md); tests check the JSON against ``Perf``."""
    results = []
    for (b, t, bm, m), points in _by_series(found).items():
        results.append(
            {
                "branch": _named(found.branches[b]),
                "testbed": _named(found.testbeds[t]),
                "benchmark": _named(found.benchmarks[bm]),
                "measure": _measure_view(found.measures[m]),
                "metrics": [_point_view(p, found.samples) for p in points],
            }
        )
    return {
        "project": project_view(found.project, found.org_uuid).model_dump(),
        "start_time": iso(found.start_time),
        "end_time": iso(found.end_time),
        "results": results,
    }


def perf_series(found: _Resolved) -> list[Series]:
    series: list[Series] = []
    for (b, t, bm, m), points in _by_series(found).items():
        series.append(
            Series(
                branch=found.branches[b].name,
                testbed=found.testbeds[t].name,
                benchmark=found.benchmarks[bm].name,
                measure=found.measures[m].name,
                units=found.measures[m].units,
                points=[
                    Point(
                        report=str(p.report_uuid),
                        start_time=p.start_time,
                        end_time=p.end_time,
                        value=p.value,
                        lower_value=p.lower_value,
                        upper_value=p.upper_value,
                        version=p.version,
                        hash=p.hash,
                        baseline=p.baseline,
                        lower_limit=p.lower_limit,
                        upper_limit=p.upper_limit,
                        alert_limit=p.alert_limit,
                        alert_status=p.alert_status,
                        noisy=bool(p.noisy),
                    )
                    for p in points
                ],
            )
        )
    return series


def _title(found: _Resolved, series: Sequence[Series], title: str | None) -> str:
    if title:
        return title
    measures = ", ".join(sorted({s.measure for s in series}))
    return f"{found.project.name}: {measures}"


@router.get("/v0/projects/{project}/perf", response_model=Perf)
async def get_perf(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    params: Params,
    samples: Annotated[
        bool, Query(description="include each metric's raw samples (count, min, max, values)")
    ] = False,
) -> Response:
    """Each series asked for, one per branch x testbed x benchmark x measure, with its points
    in the time range, oldest first (Bencher's perf answer)."""
    # Sent as built: validating a 1,000-point answer as Perf would more than double its CPU
    # (benchmarks/RESULTS.md).
    return sent_as_built(perf_view(await _query(ctx, user, project, params, with_samples=samples)))


@router.get(
    "/v0/projects/{project}/perf/csv",
    response_class=Response,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
)
async def get_perf_csv(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    params: Params,
) -> Response:
    found = await _query(ctx, user, project, params)
    return Response(
        perf_csv(perf_series(found)),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{found.project.slug}-perf.csv"'},
    )


@router.get(
    "/v0/projects/{project}/perf/img",
    response_class=Response,
    responses={200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}},
)
async def get_perf_image(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    params: Params,
    title: Annotated[str | None, Query(max_length=256)] = None,
) -> Response:
    found = await _query(ctx, user, project, params)
    series = perf_series(found)
    png = await asyncio.to_thread(perf_png, series, title=_title(found, series, title))
    return Response(png, media_type="image/png", headers={"Cache-Control": "max-age=60"})
