"""A project's calibrations (docs/how-to/thresholds-alerts.md): start one (the job to run, its
spec, how many runs, the false-alarm rate wanted, the branch and testbed its proposal is for),
list and read them with their proposal per benchmark, and apply a proposal. Starting and
applying are for signed-in members who may change the project."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.engine import Connection

from benchrunner.api.calibrations import AppliedCalibration, Calibration, CalibrationCreate
from benchrunner.server.access import project_access
from benchrunner.server.http.answers import ANSWERED, answered
from benchrunner.server.processing import calibration_start
from benchrunner.server.processing import calibrations as service
from benchrunner.server.processing.statistics_heap import statistics_ready
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page, Svc, origin_of
from benchrunner.server.store import calibrations

router = APIRouter(tags=["calibrations"])

CALIBRATIONS = "/v0/projects/{project}/calibrations"


@router.post(CALIBRATIONS, status_code=201, **ANSWERED)
async def create_calibration(
    project: str,
    body: CalibrationCreate,
    request: Request,
    user: MaybeUser,
    ctx: Ctx,
    services: Svc,
) -> Calibration:
    """Queue ``runs`` runs of the job, unchanged (an A/A run), on a branch of their own; when
    they are done the calibration proposes a threshold per benchmark and measure."""
    origin = origin_of(request, user)
    return answered(
        Calibration, await calibration_start.start(ctx, services, project, body, user, origin)
    )


def _answer(conn: Connection, found: Any) -> Calibration:
    return answered(Calibration, service.public(service.calibration_view(conn, found)))


@router.get(CALIBRATIONS, **ANSWERED)
async def list_calibrations(
    project: str, user: MaybeUser, ctx: Ctx, pages: Page, response: Response
) -> list[Calibration]:
    """The project's calibrations, newest first, each with its state and proposal."""

    def unit(conn: Connection) -> tuple[list[Calibration], int]:
        row = project_access(conn, user, project, write=False)
        found, total = calibrations.calibration_list(conn, row.id, pages.per_page, pages.offset)
        return [_answer(conn, c) for c in found], total

    await statistics_ready()
    answers, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return answers


@router.get(CALIBRATIONS + "/{calibration}", **ANSWERED)
async def get_calibration(project: str, calibration: str, user: MaybeUser, ctx: Ctx) -> Calibration:
    """The calibration: its runs' jobs, its ``state`` (running, done or failed), whether it is
    ``stale``, and per benchmark and measure the runs' mean, spread, the smallest change a
    threshold can catch and the proposed threshold."""

    def unit(conn: Connection) -> Calibration:
        row = project_access(conn, user, project, write=False)
        return _answer(conn, service.calibration_in_project(conn, row.id, calibration))

    await statistics_ready()
    return await ctx.db.read(unit)


@router.post(CALIBRATIONS + "/{calibration}/apply", **ANSWERED)
async def apply_calibration(
    project: str, calibration: str, user: MaybeUser, ctx: Ctx
) -> AppliedCalibration:
    """Make the proposal the per-benchmark thresholds of the target branch and testbed (a
    threshold that exists gets the proposed model; its earlier models stay in its history).
    409 until the calibration is done."""
    return answered(
        AppliedCalibration, await service.apply_in_project(ctx, project, calibration, user)
    )
