"""A bisection as the API answers it: its question, every step with its jobs, and its
outcome (the first bad commit with its ratio and interval, or why there is none)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.server.bisection import rows
from benchrunner.server.store.tables import alert, project, spec
from benchrunner.server.views.resources import iso


def _step_view(step: Any, jobs: list[Any]) -> dict[str, Any]:
    return {
        "kind": step.kind,
        "commit": step.commit,
        "baseline": step.baseline,
        "position": step.position,
        "status": step.status,
        "verdict": step.verdict,
        "rounds": step.rounds,
        "ratio": step.ratio,
        "lower_value": step.lower_value,
        "upper_value": step.upper_value,
        "reason": step.reason,
        "jobs": [{"uuid": str(j.uuid), "status": JobStatus(j.status).wire} for j in jobs],
        "created": iso(step.created),
    }


def _outcome(b: Any) -> dict[str, Any] | None:
    if b.state == rows.RUNNING:
        return None
    culprit = None
    if b.culprit is not None:
        culprit = {
            "commit": b.culprit,
            "parent": b.culprit_parent,
            "ratio": b.culprit_ratio,
            "lower_value": b.culprit_lower,
            "upper_value": b.culprit_upper,
        }
    return {"culprit": culprit, "reason": b.reason}


def bisection_summary(conn: Connection, alert_id: int) -> dict[str, Any] | None:
    """The latest bisection started from the alert, in short (an alert's ``bisection``): its
    uuid, state and outcome; None when none was."""
    b = rows.bisection_of_alert(conn, alert_id)
    if b is None:
        return None
    return {"uuid": str(b.uuid), "state": b.state, "result": _outcome(b)}


def bisection_view(conn: Connection, b: Any) -> dict[str, Any]:
    """The bisection row ``b`` with its versions, steps and jobs."""
    names = conn.execute(
        sa.select(project.c.uuid, spec.c.slug.label("spec"))
        .select_from(project)
        .join(spec, spec.c.id == b.spec_id)
        .where(project.c.id == b.project_id)
    ).one()
    commits = rows.commits_of(conn, b.id)
    jobs_of: dict[int, list[Any]] = defaultdict(list)
    for j in rows.jobs_of(conn, b.id):
        jobs_of[j.step_id].append(j)
    steps = rows.steps_of(conn, b.id)
    alert_uuid = None
    if b.alert_id is not None:
        alert_uuid = str(
            conn.execute(sa.select(alert.c.uuid).where(alert.c.id == b.alert_id)).scalar_one()
        )
    return {
        "uuid": str(b.uuid),
        "project": str(names.uuid),
        "state": b.state,
        "alert": alert_uuid,
        "spec": names.spec,
        "benchmarks": json.loads(b.benchmarks),
        "measure": b.measure,
        "good": b.good,
        "bad": b.bad,
        "candidates": [c.commit for c in commits if c.position >= 0],
        "skipped": [c.commit for c in commits if c.position >= 0 and _no_image(b, c)],
        "image": b.image,
        "template": b.template,
        "args": None if b.args is None else json.loads(b.args),
        "rounds": b.rounds,
        "margin": b.margin,
        "confidence": b.confidence,
        "job_budget": b.job_budget,
        "jobs_used": b.jobs_used,
        "followed": b.followed,
        "bad_ratio": b.bad_ratio,
        "steps": [_step_view(s, jobs_of[s.id]) for s in steps],
        "result": _outcome(b),
        "created": iso(b.created),
        "finished": iso(b.finished),
    }


def _no_image(b: Any, commit: Any) -> bool:
    return b.image is not None and commit.digest is None
