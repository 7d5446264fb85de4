"""A bisection step's duet job: ``baseline`` and ``contender`` run interleaved on one runner of
the bisection's spec, as a ``POST /v0/run`` duet does; its report goes on the bisection's
branch and testbed, its hash the contender's commit."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.api.run import COMMIT
from benchrunner.core.templates import ArgValue, Template, TemplateRegistry
from benchrunner.protocol import JsonDuet, JsonDuetSide, JsonJobConfig
from benchrunner.server.store import accounts, jobs, reports
from benchrunner.server.store.jobs import Origin
from benchrunner.server.store.tables import project

NO_ALERT_MARGIN = 0.99
"""The margin of a bisection's duets: the bisection judges their ratios itself, so that only a
ratio beyond 2 (or below 0.01) raises a duet alert of its own."""
RESAMPLES = 4000


def with_commit(args: dict[str, Any], commit: str) -> dict[str, Any]:
    """A template bisection's arguments for ``commit``: every ``{commit}`` in a string value
    replaced."""
    return {k: v.replace(COMMIT, commit) if isinstance(v, str) else v for k, v in args.items()}


def template_args(template: Template, args: dict[str, Any], commit: str) -> dict[str, ArgValue]:
    """The checked arguments for ``commit``; ``TemplateError`` when they do not fit."""
    return template.resolve_args(with_commit(args, commit))


def _config(
    b: Any,
    templates: TemplateRegistry,
    registry_url: str,
    project_uuid: UUID,
    baseline: Any,
    contender: Any,
    rounds: int,
) -> JsonJobConfig:
    """``baseline`` and ``contender``: bisection_commit rows."""
    if b.template is not None:
        template = templates.get(b.template)
        args = json.loads(b.args or "{}")
        sides = (
            JsonDuetSide(args=template_args(template, args, baseline.commit)),
            JsonDuetSide(args=template_args(template, args, contender.commit)),
        )
    else:
        sides = (JsonDuetSide(digest=baseline.digest), JsonDuetSide(digest=contender.digest))
    duet = JsonDuet(
        baseline=sides[0],
        contender=sides[1],
        seed=secrets.randbits(63),
        confidence=b.confidence,
        resamples=RESAMPLES,
        margin=NO_ALERT_MARGIN,
    )
    if b.template is not None:
        return JsonJobConfig(
            template=b.template, args=sides[0].args, timeout=b.timeout, iter=rounds, duet=duet
        )
    return JsonJobConfig(
        registry=registry_url,
        project=project_uuid,
        digest=baseline.digest,
        timeout=b.timeout,
        iter=rounds,
        duet=duet,
    )


def duet_job_create(
    conn: Connection,
    b: Any,
    baseline: Any,
    contender: Any,
    rounds: int,
    now: dt.datetime,
    *,
    templates: TemplateRegistry,
    registry_url: str,
    notify: tuple[str, str] | None,
) -> tuple[int, UUID]:
    """Create the duet job of ``contender`` against ``baseline`` (bisection_commit rows) for
    the bisection row ``b``, with its report: the job's id and uuid."""
    found = conn.execute(
        sa.select(project.c.uuid, project.c.organization_id).where(project.c.id == b.project_id)
    ).one()
    config = _config(b, templates, registry_url, found.uuid, baseline, contender, rounds)
    report_id, _ = reports.report_create(
        conn,
        reports.NewReport(
            project_id=b.project_id,
            user_id=b.user_id,
            branch_id=b.branch_id,
            testbed_id=b.testbed_id,
            adapter=b.adapter,
            average=None,
            fold=None,
            hash=contender.commit,
            start_time=now,
            end_time=now,
            now=now,
        ),
    )
    org, priority = accounts.organization_for_job(conn, found.organization_id)
    return jobs.job_create(
        conn,
        jobs.NewJob(
            report_id=report_id,
            organization_id=org.id,
            spec_id=b.spec_id,
            config=config,
            priority=priority,
            now=now,
            origin=Origin(actor=f"bisection {b.uuid} ({b.actor})", source_ip=b.source_ip),
            notify=notify,
        ),
    )
