"""A project's calibrations (docs/how-to/thresholds-alerts.md): start one (the job to run, its
spec, how many runs, the false-alarm rate wanted, the branch and testbed its proposal is for),
list and read them with their proposal per benchmark, and apply a proposal. Starting and
applying are for signed-in members who may change the project."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError
from sqlalchemy.engine import Connection

from benchrunner.api.calibrations import AppliedCalibration, Calibration
from benchrunner.api.calibrations import CalibrationCreate as CalibrationCreate  # the console's
from benchrunner.api.run import RunBody
from benchrunner.server.access import members_project, project_access
from benchrunner.server.http.errors import bad_request
from benchrunner.server.processing import calibrations as service
from benchrunner.server.routes.deps import Ctx, MaybeUser, Page, Svc, origin_of
from benchrunner.server.store import branches, calibrations, reports
from benchrunner.server.store.tables import job, testbed
from benchrunner.server.submission.service import submit_run

router = APIRouter(tags=["calibrations"])

CALIBRATIONS = "/v0/projects/{project}/calibrations"


def _run_body(project: str, body: CalibrationCreate, own_branch: str) -> RunBody:
    raw: dict[str, Any] = {
        "project": project,
        "branch": own_branch,
        "testbed": body.testbed,
        "spec": body.spec,
        "settings": {"adapter": body.adapter},
        "job": {"iter": body.iterations},
    }
    if body.template is not None:
        raw.update(template=body.template, args=body.args)
    if body.image is not None:
        raw["image"] = body.image
    try:
        return RunBody.model_validate(raw)
    except ValidationError as exc:
        raise bad_request(f"the job to calibrate: {exc.errors()[0]['msg']}") from exc


@router.post(CALIBRATIONS, status_code=201, responses={201: {"model": Calibration}})
async def create_calibration(
    project: str,
    body: CalibrationCreate,
    request: Request,
    user: MaybeUser,
    ctx: Ctx,
    services: Svc,
) -> dict[str, Any]:
    """Queue ``runs`` runs of the job, unchanged (an A/A run), on a branch of their own; when
    they are done the calibration proposes a threshold per benchmark and measure."""
    if (body.template is None) == (body.image is None):
        raise bad_request("give the job to calibrate as either template or image")
    await ctx.db.read(lambda conn: members_project(conn, user, project, service.SIGN_IN_TO))
    calibration_uuid = uuid.uuid4()
    own_branch = f"calibration-{calibration_uuid.hex[:12]}"
    run = _run_body(project, body, own_branch)
    origin = origin_of(request, user)
    first = await submit_run(ctx, services, run, user, origin, request)

    def create(conn: Connection) -> int:
        row = members_project(conn, user, project, service.SIGN_IN_TO)
        now = ctx.clock.now()
        report_id = int(reports.report_by_uuid(conn, uuid.UUID(first["uuid"])))
        spec_id = conn.execute(
            job.select().with_only_columns(job.c.spec_id).where(job.c.report_id == report_id)
        ).scalar_one()
        own = branches.branch_find(conn, row.id, own_branch)
        assert own is not None, "the first run created the calibration's branch"
        target = branches.branch_for_run(conn, row.id, body.branch, None, now)
        calibration_id = calibrations.calibration_add(
            conn,
            calibrations.NewCalibration(
                project_id=row.id,
                spec_id=int(spec_id),
                user_id=None if user is None else user.id,
                branch_id=own.id,
                target_branch_id=target.id,
                testbed_id=reports.named_get_or_create(conn, testbed, row.id, body.testbed, now),
                runs=body.runs,
                false_alarm_rate=body.false_alarm_rate,
            ),
            calibration_uuid,
            now,
        )
        calibrations.calibration_report_add(conn, calibration_id, report_id)
        return calibration_id

    calibration_id = await ctx.db.write(create)
    linked = 1
    try:
        for _ in range(body.runs - 1):
            submitted = await submit_run(ctx, services, run, user, origin, request)

            def link(conn: Connection, report: str = submitted["uuid"]) -> None:
                report_id = int(reports.report_by_uuid(conn, uuid.UUID(report)))
                calibrations.calibration_report_add(conn, calibration_id, report_id)

            await ctx.db.write(link)
            linked += 1
    except BaseException:
        # A run refused (a cap reached) or the request ended part-way: the calibration keeps the
        # runs it has, so that it still ends (done with at least three, else failed).
        def cut(conn: Connection) -> None:
            calibrations.calibration_runs_cut(conn, calibration_id, linked)

        await asyncio.shield(ctx.db.write(cut))
        raise

    def view(conn: Connection) -> dict[str, Any]:
        row = members_project(conn, user, project, service.SIGN_IN_TO)
        return service.public(
            service.calibration_view(
                conn, service.calibration_in_project(conn, row.id, str(calibration_uuid))
            )
        )

    return await ctx.db.read(view)


@router.get(CALIBRATIONS, responses={200: {"model": list[Calibration]}})
async def list_calibrations(
    project: str, user: MaybeUser, ctx: Ctx, pages: Page, response: Response
) -> list[dict[str, Any]]:
    """The project's calibrations, newest first, each with its state and proposal."""

    def unit(conn: Connection) -> tuple[list[dict[str, Any]], int]:
        row = project_access(conn, user, project, write=False)
        found, total = calibrations.calibration_list(conn, row.id, pages.per_page, pages.offset)
        return [service.public(service.calibration_view(conn, c)) for c in found], total

    views, total = await ctx.db.read(unit)
    response.headers["X-Total-Count"] = str(total)
    return views


@router.get(CALIBRATIONS + "/{calibration}", responses={200: {"model": Calibration}})
async def get_calibration(
    project: str, calibration: str, user: MaybeUser, ctx: Ctx
) -> dict[str, Any]:
    """The calibration: its runs' jobs, its ``state`` (running, done or failed), whether it is
    ``stale``, and per benchmark and measure the runs' mean, spread, the smallest change a
    threshold can catch and the proposed threshold."""

    def unit(conn: Connection) -> dict[str, Any]:
        row = project_access(conn, user, project, write=False)
        return service.public(
            service.calibration_view(
                conn, service.calibration_in_project(conn, row.id, calibration)
            )
        )

    return await ctx.db.read(unit)


@router.post(CALIBRATIONS + "/{calibration}/apply", responses={200: {"model": AppliedCalibration}})
async def apply_calibration(
    project: str, calibration: str, user: MaybeUser, ctx: Ctx
) -> dict[str, Any]:
    """Make the proposal the per-benchmark thresholds of the target branch and testbed (a
    threshold that exists gets the proposed model; its earlier models stay in its history).
    409 until the calibration is done."""
    return await service.apply_in_project(ctx, project, calibration, user)
