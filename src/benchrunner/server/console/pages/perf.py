"""The perf page: choose branches, testbeds, benchmarks and measures and a time range (a GET
form, so the URL holds the whole state and can be shared), see one plot per measure with the
thresholds' bands, the alerts and the points of noisy reports marked, and the newest points and
every alerted or noisy one as a table (the page without JavaScript); duet ratios of the same
series in a panel of their own, apart from the absolute values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.engine import Connection

from benchrunner.server.console.duet_chart import DuetPanel, build_duet_panels
from benchrunner.server.console.perf_chart import (
    Chart,
    Dimension,
    Named,
    Names,
    build_charts,
    named_alerts,
    named_reports,
)
from benchrunner.server.console.perf_state import DIMENSIONS, PerfState, parse_state
from benchrunner.server.console.perf_table import table_body
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer, visible_project
from benchrunner.server.http.deps import Ctx
from benchrunner.server.store import dimensions
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.duets import duet_points
from benchrunner.server.store.perf import (
    PerfQuery,
    perf_plot_points,
    plot_alerts,
    report_uuids,
)
from benchrunner.server.store.tables import benchmark, branch, measure, testbed

router = APIRouter()

TABLES: dict[str, sa.Table] = {
    "branches": branch,
    "testbeds": testbed,
    "benchmarks": benchmark,
    "measures": measure,
}
SINGULAR = {
    "branches": "branch",
    "testbeds": "testbed",
    "benchmarks": "benchmark",
    "measures": "measure",
}
CHOICES = 500
"""Items of each dimension offered as checkboxes (by name); more are reached by URL."""


@dataclass
class PerfPage:
    project: ProjectRow
    choices: dict[str, list[Any]]
    more: dict[str, int]
    """How many items of each dimension the checkboxes leave out."""
    chosen: dict[str, set[int]]
    errors: dict[str, str]
    charts: list[Chart] = field(default_factory=list)
    duets: list[DuetPanel] = field(default_factory=list)
    ran: bool = False


def _dimension(row: Any) -> Dimension:
    return Dimension(row.name, row.slug, getattr(row, "units", "") or "")


def _read(conn: Connection, viewer: Viewer, ref: str, state: PerfState) -> PerfPage:
    project = visible_project(conn, viewer, ref)
    errors = dict(state.errors)
    choices: dict[str, list[Any]] = {}
    more: dict[str, int] = {}
    resolved: dict[str, dict[int, Any]] = {}
    for name in DIMENSIONS:
        table = TABLES[name]
        rows, total = dimensions.dimension_list(
            conn, table, project.id, name=None, ascending=True, limit=CHOICES, offset=0
        )
        choices[name], more[name] = rows, total - len(rows)
        resolved[name] = {}
        for item in state.refs[name]:
            found = dimensions.dimension_get(conn, table, project.id, item)
            if found is None:
                errors.setdefault(name, f"no {SINGULAR[name]} {item!r} in this project")
            else:
                resolved[name][found.id] = found
    page = PerfPage(
        project=project,
        choices=choices,
        more=more,
        chosen={name: set(resolved[name]) for name in DIMENSIONS},
        errors=errors,
    )
    if errors or not state.complete:
        return page
    query = PerfQuery(
        branch_ids=list(resolved["branches"]),
        testbed_ids=list(resolved["testbeds"]),
        benchmark_ids=list(resolved["benchmarks"]),
        measure_ids=list(resolved["measures"]),
        start_time=state.start,
        end_time=state.end,
    )
    names = Names(
        *(
            {row_id: _dimension(row) for row_id, row in resolved[name].items()}
            for name in DIMENSIONS
        )
    )
    points = perf_plot_points(conn, query)
    named = Named(
        reports=report_uuids(conn, named_reports(points)),
        alerts=plot_alerts(conn, named_alerts(points)),
    )
    page.charts = build_charts(points, names, named)
    page.duets = build_duet_panels(duet_points(conn, query), names)
    page.ran = True
    return page


@router.get("/console/projects/{project}/perf", response_class=HTMLResponse)
async def perf(project: str, request: Request, viewer: CurrentViewer, ctx: Ctx) -> HTMLResponse:
    state = parse_state(request.query_params, ctx.clock.now())
    page = await ctx.db.read(_read, viewer, project, state)
    return render(
        request,
        viewer,
        "perf.html",
        {
            "project": page.project,
            "state": state,
            "page": page,
            "table_body": table_body,
            "labels": {
                "branches": "Branches",
                "testbeds": "Testbeds",
                "benchmarks": "Benchmarks",
                "measures": "Measures",
            },
        },
    )
