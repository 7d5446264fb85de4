"""A bisection as the API answers it (``api.bisections.Bisection``): its question, every step
with its jobs, and its outcome (the first bad commit with its ratio and interval, or why there
is none); and in short, as an alert shows it (``api.alerts.AlertBisection``)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.api.alerts import AlertBisection
from benchrunner.api.bisections import Bisection, BisectionResult, BisectionStep, Culprit, StepJob
from benchrunner.core.states import JobStatus
from benchrunner.server.bisection import rows
from benchrunner.server.store.tables import alert, project, spec
from benchrunner.server.views.resources import iso


def _step_view(step: Any, jobs: list[Any]) -> BisectionStep:
    return BisectionStep(
        kind=step.kind,
        commit=step.commit,
        baseline=step.baseline,
        position=step.position,
        status=step.status,
        verdict=step.verdict,
        rounds=step.rounds,
        ratio=step.ratio,
        lower_value=step.lower_value,
        upper_value=step.upper_value,
        reason=step.reason,
        jobs=[StepJob(uuid=str(j.uuid), status=JobStatus(j.status).wire) for j in jobs],
        created=iso(step.created),
    )


def _outcome(b: Any) -> BisectionResult | None:
    if b.state == rows.RUNNING:
        return None
    culprit = None
    if b.culprit is not None:
        culprit = Culprit(
            commit=b.culprit,
            parent=b.culprit_parent,
            ratio=b.culprit_ratio,
            lower_value=b.culprit_lower,
            upper_value=b.culprit_upper,
        )
    return BisectionResult(culprit=culprit, reason=b.reason)


def culprit_text(commit: str, ratio: float, lower: float, upper: float) -> str:
    """``caused by abc1234, +5.1% [4.6, 5.7]``: the first bad commit, shortened, with its change
    against its parent and that change's interval, in percent."""
    low, high = (lower - 1) * 100, (upper - 1) * 100
    return f"caused by {commit[:7]}, {(ratio - 1) * 100:+.1f}% [{low:.1f}, {high:.1f}]"


def summary_text(b: Any) -> str:
    """One line on the bisection: the culprit, why there is none, or how far it is."""
    if b.state == rows.RUNNING:
        return f"bisecting {b.good[:7]}..{b.bad[:7]} ({b.jobs_used} jobs so far)"
    if b.culprit is not None:
        return culprit_text(b.culprit, b.culprit_ratio, b.culprit_lower, b.culprit_upper)
    return str(b.reason)


def alert_bisection(
    conn: Connection, alert_id: int, alert_row: Any = None
) -> AlertBisection | None:
    """The latest bisection started from the alert, in short (an alert's ``bisection``): its
    uuid, state, outcome and ``text``, one line of it. Without one, what the alert's bisect
    threshold asked (docs/how-to/bisect.md): ``pending`` (the driver starts it shortly) or
    ``skipped`` with ``reason``; None when nothing asked for one. ``alert_row``: the alert as
    ``store.alerts`` reads it, when the caller has it."""
    b = rows.bisection_of_alert(conn, alert_id)
    if b is not None:
        return AlertBisection(
            uuid=str(b.uuid), state=b.state, result=_outcome(b), text=summary_text(b)
        )
    if alert_row is None:
        alert_row = conn.execute(
            sa.select(alert.c.bisect, alert.c.bisect_reason).where(alert.c.id == alert_id)
        ).first()
    if alert_row is None or alert_row.bisect is None:
        return None
    if alert_row.bisect == "skipped":
        reason = alert_row.bisect_reason
        return AlertBisection(
            uuid=None,
            state="skipped",
            result=None,
            reason=reason,
            text=f"not bisected: {reason}",
        )
    return AlertBisection(
        uuid=None, state="pending", result=None, text="a bisection starts shortly"
    )


def bisection_view(conn: Connection, b: Any) -> Bisection:
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
    return Bisection(
        uuid=str(b.uuid),
        project=str(names.uuid),
        state=b.state,
        alert=alert_uuid,
        spec=names.spec,
        benchmarks=json.loads(b.benchmarks),
        measure=b.measure,
        good=b.good,
        bad=b.bad,
        candidates=[c.commit for c in commits if c.position >= 0],
        skipped=[c.commit for c in commits if c.position >= 0 and _no_image(b, c)],
        image=b.image,
        template=b.template,
        args=None if b.args is None else json.loads(b.args),
        rounds=b.rounds,
        margin=b.margin,
        confidence=b.confidence,
        job_budget=b.job_budget,
        jobs_used=b.jobs_used,
        followed=b.followed,
        bad_ratio=b.bad_ratio,
        steps=[_step_view(s, jobs_of[s.id]) for s in steps],
        result=_outcome(b),
        created=iso(b.created),
        finished=iso(b.finished),
    )


def _no_image(b: Any, commit: Any) -> bool:
    return b.image is not None and commit.digest is None
