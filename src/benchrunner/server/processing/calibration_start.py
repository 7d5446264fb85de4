"""A calibration started by a signed-in member (docs/how-to/thresholds-alerts.md), for the
API's route and the console's form alike: ``runs`` runs of the job, unchanged (an A/A run),
submitted on a branch of their own and linked to the calibration as each is queued."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Connection

from benchrunner.api.calibrations import CalibrationCreate
from benchrunner.api.run import RunBody
from benchrunner.server.access import members_project
from benchrunner.server.context import ServerContext
from benchrunner.server.http.errors import bad_request
from benchrunner.server.processing.calibrations import (
    SIGN_IN_TO,
    calibration_in_project,
    calibration_view,
    public,
)
from benchrunner.server.services import Services
from benchrunner.server.store import branches, calibrations, reports
from benchrunner.server.store.accounts import UserRow
from benchrunner.server.store.jobs import Origin
from benchrunner.server.store.tables import job, testbed
from benchrunner.server.submission.service import submit_run


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


async def start(
    ctx: ServerContext,
    services: Services,
    project: str,
    body: CalibrationCreate,
    user: UserRow | None,
    origin: Origin,
) -> dict[str, Any]:
    """Queue the calibration's runs; when they are done it proposes a threshold per benchmark
    and measure. Its view as the API shows it; raises ``ApiError`` as a submission does (400
    naming the field, 404, 429), and 401 or 403 for who may not. A run refused part-way
    leaves the calibration with the runs queued before it."""
    if (body.template is None) == (body.image is None):
        raise bad_request("give the job to calibrate as either template or image")
    await ctx.db.read(lambda conn: members_project(conn, user, project, SIGN_IN_TO))
    calibration_uuid = uuid.uuid4()
    own_branch = f"calibration-{calibration_uuid.hex[:12]}"
    run = _run_body(project, body, own_branch)
    first = await submit_run(ctx, services, run, user, origin)

    def create(conn: Connection) -> int:
        row = members_project(conn, user, project, SIGN_IN_TO)
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
            submitted = await submit_run(ctx, services, run, user, origin)

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
        row = members_project(conn, user, project, SIGN_IN_TO)
        return public(
            calibration_view(conn, calibration_in_project(conn, row.id, str(calibration_uuid)))
        )

    return await ctx.db.read(view)
