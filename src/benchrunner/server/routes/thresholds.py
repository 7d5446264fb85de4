"""A project's thresholds: list, create, read (with every model it has had), replace the model
(the old one is kept as history), delete.

A threshold's body is Bencher's: ``branch``, ``testbed`` and ``measure`` (UUID, slug or name)
and the model's fields beside them (``test``, ``min_sample_size``, ``max_sample_size``,
``window``, ``lower_boundary``, ``upper_boundary``; ``max_pvalue`` and ``min_magnitude`` for
``change_point``). ``benchmark`` makes it an override for that one benchmark.
``alert_when_noisy`` (ours, default false) makes it raise alerts on a report its noise guard
found noisy too; a PUT without it keeps the threshold's setting. ``confirm`` (ours) is how many
confirmation runs a runner job's crossing waits for before it alerts (0: none; a PUT without it
keeps it; docs/how-to/thresholds-alerts.md). ``bisect`` (ours, default false) makes its alerts
start a bisection by themselves (docs/how-to/bisect.md), kept the same way.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from sqlalchemy.engine import Connection

from benchrunner.api.thresholds import Threshold, ThresholdCreate, ThresholdUpdate
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED
from benchrunner.server.http.errors import conflict
from benchrunner.server.http.model_bodies import checked_model
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page
from benchrunner.server.store import thresholds
from benchrunner.server.store.tables import benchmark, branch, measure, testbed
from benchrunner.server.views.lookups import in_project, optional_id, threshold_in_project
from benchrunner.server.views.resources import threshold_view

router = APIRouter(tags=["thresholds"])


def _answer(conn: Connection, threshold_id: int, *, history: bool) -> Threshold:
    row = thresholds.threshold_by_id(conn, threshold_id)
    models = thresholds.models_of(conn, threshold_id) if history else None
    return threshold_view(row, thresholds.current_model(conn, threshold_id), models)


@router.get("/v0/projects/{project}/thresholds", **ANSWERED)
async def list_thresholds(
    project: str,
    user: MaybeUser,
    ctx: Ctx,
    response: Response,
    pages: Page,
    branch_ref: Annotated[str | None, Query(alias="branch")] = None,
    testbed_ref: Annotated[str | None, Query(alias="testbed")] = None,
    measure_ref: Annotated[str | None, Query(alias="measure")] = None,
    benchmark_ref: Annotated[str | None, Query(alias="benchmark")] = None,
    direction: Literal["asc", "desc"] = "asc",
) -> list[Threshold]:
    """Filters name a branch, testbed, measure or benchmark by UUID, slug or name."""

    def unit(conn: Connection) -> tuple[list[Threshold], int]:
        row = project_access(conn, user, project, write=False)
        where = thresholds.ThresholdFilter(
            branch_id=optional_id(conn, branch, row.id, branch_ref, "branch"),
            testbed_id=optional_id(conn, testbed, row.id, testbed_ref, "testbed"),
            measure_id=optional_id(conn, measure, row.id, measure_ref, "measure"),
            benchmark_id=optional_id(conn, benchmark, row.id, benchmark_ref, "benchmark"),
        )
        found, total = thresholds.threshold_list(
            conn,
            row.id,
            where,
            ascending=direction == "asc",
            limit=pages.per_page,
            offset=pages.offset,
        )
        current = thresholds.current_models(conn, [t.id for t in found])
        return [threshold_view(t, current.get(t.id)) for t in found], total

    answers, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return answers


@router.post("/v0/projects/{project}/thresholds", status_code=201, **ANSWERED)
async def create_threshold(
    project: str, body: ThresholdCreate, user: MaybeUser, ctx: Ctx
) -> Threshold:
    """409 when the branch/testbed/measure (/benchmark) has a threshold already: update
    that one's model instead."""
    model = checked_model(body, "threshold")

    def unit(conn: Connection) -> Threshold:
        row = project_access(conn, user, project, write=True)
        key = thresholds.SeriesKey(
            branch_id=in_project(conn, branch, row.id, body.branch, "branch").id,
            testbed_id=in_project(conn, testbed, row.id, body.testbed, "testbed").id,
            measure_id=in_project(conn, measure, row.id, body.measure, "measure").id,
            benchmark_id=optional_id(conn, benchmark, row.id, body.benchmark, "benchmark"),
        )
        if thresholds.threshold_find(conn, key) is not None:
            raise conflict(
                "this branch, testbed and measure"
                + (" and benchmark" if key.benchmark_id is not None else "")
                + " have a threshold already: update its model with PUT"
            )
        now = ctx.clock.now()
        threshold_id, created = thresholds.threshold_put(
            conn,
            row.id,
            key,
            model,
            now,
            alert_when_noisy=body.alert_when_noisy,
            confirm=body.confirm,
            bisect=body.bisect,
        )
        if not created:
            raise conflict("a threshold for this series was created meanwhile")
        return _answer(conn, threshold_id, history=True)

    return await ctx.db.write(unit)


@router.get("/v0/projects/{project}/thresholds/{threshold}", **ANSWERED)
async def get_threshold(project: str, threshold: str, user: MaybeUser, ctx: Ctx) -> Threshold:
    """The threshold with its current ``model`` and ``models``: every model it has had,
    newest first (``replaced`` says when each stopped being current)."""

    def unit(conn: Connection) -> Threshold:
        row = project_access(conn, user, project, write=False)
        return _answer(conn, threshold_in_project(conn, row.id, threshold).id, history=True)

    return await ctx.db.read(unit)


@router.put("/v0/projects/{project}/thresholds/{threshold}", **ANSWERED)
async def update_threshold(
    project: str, threshold: str, body: ThresholdUpdate, user: MaybeUser, ctx: Ctx
) -> Threshold:
    """Replace the threshold's model (the same model again changes nothing), and set
    ``alert_when_noisy``, ``confirm`` and ``bisect`` when given."""
    model = checked_model(body, "threshold")

    def unit(conn: Connection) -> Threshold:
        row = project_access(conn, user, project, write=True)
        threshold_id = threshold_in_project(conn, row.id, threshold).id
        now = ctx.clock.now()
        thresholds.threshold_configure(
            conn,
            threshold_id,
            model,
            body.alert_when_noisy,
            now,
            confirm=body.confirm,
            bisect=body.bisect,
        )
        return _answer(conn, threshold_id, history=True)

    return await ctx.db.write(unit)


@router.delete("/v0/projects/{project}/thresholds/{threshold}", status_code=204)
async def delete_threshold(project: str, threshold: str, user: MaybeUser, ctx: Ctx) -> Response:
    """Delete the threshold with its models, boundaries and alerts."""

    def unit(conn: Connection) -> None:
        row = project_access(conn, user, project, write=True)
        thresholds.threshold_delete(conn, threshold_in_project(conn, row.id, threshold).id)

    await ctx.db.write(unit)
    return Response(status_code=204)
