"""A project's reports: the list (newest first, by branch and testbed) and one report with its
metrics per iteration, the boundaries they were judged against and the alerts they raised, its
noise guard's verdict (and why a noisy report's alerts were withheld), and a duet report's
paired ratios apart from absolute metrics, and each benchmark's samples as a distribution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.engine import Connection

from benchrunner.server.console.pager import Pager
from benchrunner.server.console.sample_plot import Distribution, distributions
from benchrunner.server.console.templating import render
from benchrunner.server.console.viewer import CurrentViewer, Viewer, visible_project
from benchrunner.server.http.deps import MAX_PAGE, Ctx
from benchrunner.server.processing.noise import NoiseVerdict, noise_view, stored_verdict
from benchrunner.server.store import dimensions
from benchrunner.server.store.accounts import ProjectRow
from benchrunner.server.store.report_reads import ReportFilter, report_page
from benchrunner.server.store.tables import branch, testbed
from benchrunner.server.views.lookups import optional_id, report_in_project
from benchrunner.server.views.report_json import full_report_view
from benchrunner.server.views.samples import report_samples

router = APIRouter()

PER_PAGE = 25
CHOICES = 200
"""Branches and testbeds offered as filters (by name); more are reached by URL."""
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]
Ref = Annotated[str | None, Query(max_length=1024)]


@dataclass(frozen=True)
class ReportList:
    project: ProjectRow
    rows: list[Any]
    pages: Pager
    branches: list[Any]
    testbeds: list[Any]
    noise: dict[int, NoiseVerdict | None]
    """Each listed report's noise verdict, by id."""


def _names(conn: Connection, table: Any, project_id: int) -> list[Any]:
    rows, _ = dimensions.dimension_list(
        conn, table, project_id, name=None, ascending=True, limit=CHOICES, offset=0
    )
    return rows


def _list(
    conn: Connection, viewer: Viewer, ref: str, branch_ref: str | None, testbed_ref: str | None,
    page: int,
) -> ReportList:  # fmt: skip
    project = visible_project(conn, viewer, ref)
    wanted = ReportFilter(
        branch_id=optional_id(conn, branch, project.id, branch_ref, "branch"),
        testbed_id=optional_id(conn, testbed, project.id, testbed_ref, "testbed"),
    )
    offset = (page - 1) * PER_PAGE
    rows, total = report_page(conn, project.id, wanted, limit=PER_PAGE, offset=offset)
    return ReportList(
        project=project,
        rows=rows,
        pages=Pager(page, PER_PAGE, total),
        branches=_names(conn, branch, project.id),
        testbeds=_names(conn, testbed, project.id),
        noise={row.id: stored_verdict(noise_view(row.noise)) for row in rows},
    )


@router.get("/console/projects/{project}/reports", response_class=HTMLResponse)
async def report_list(
    project: str,
    request: Request,
    viewer: CurrentViewer,
    ctx: Ctx,
    page: PageNumber = 1,
    branch_ref: Annotated[str | None, Query(alias="branch", max_length=1024)] = None,
    testbed_ref: Annotated[str | None, Query(alias="testbed", max_length=1024)] = None,
) -> HTMLResponse:
    chosen_branch = branch_ref or None
    chosen_testbed = testbed_ref or None
    found = await ctx.db.read(_list, viewer, project, chosen_branch, chosen_testbed, page)
    return render(
        request,
        viewer,
        "reports.html",
        {
            "project": found.project,
            "rows": found.rows,
            "pages": found.pages,
            "branches": found.branches,
            "testbeds": found.testbeds,
            "noise": found.noise,
            "chosen": {"branch": chosen_branch or "", "testbed": chosen_testbed or ""},
        },
    )


def _report(
    conn: Connection, viewer: Viewer, ref: str, report_ref: str
) -> tuple[Any, Any, list[Distribution]]:
    project = visible_project(conn, viewer, ref)
    report_id = report_in_project(conn, project.id, report_ref)
    view = full_report_view(conn, report_id, with_job=True)
    return project, view, distributions(view, report_samples(conn, report_id))


@router.get("/console/projects/{project}/reports/{report}", response_class=HTMLResponse)
async def report_detail(
    project: str, report: str, request: Request, viewer: CurrentViewer, ctx: Ctx
) -> HTMLResponse:
    found_project, view, shown = await ctx.db.read(_report, viewer, project, report)
    alerted = {a["metric"]["uuid"]: a["limit"] for a in view["alerts"]}
    noise = stored_verdict(view["noise"])
    return render(
        request,
        viewer,
        "report.html",
        {
            "project": found_project,
            "report": view,
            "alerted": alerted,
            "noise_reasons": [] if noise is None else noise.reasons,
            "distributions": shown,
        },
    )
