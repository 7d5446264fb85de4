"""A bisection's rows (``store.tables``: bisection, bisection_commit, bisection_step,
bisection_job) and what it reads of its jobs and their duets."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import (
    benchmark,
    bisection,
    bisection_commit,
    bisection_job,
    bisection_step,
    duet,
    duet_result,
    job,
    measure,
    report,
    runner,
    runner_spec,
)

RUNNING, DONE, CANCELED = "running", "done", "canceled"
"""A bisection's states; a step is ``running``, ``done`` or ``skipped``."""
SKIPPED = "skipped"


@dataclass(frozen=True)
class NewBisection:
    project_id: int
    spec_id: int
    user_id: int | None
    branch_id: int
    testbed_id: int
    alert_id: int | None
    measure: str
    benchmarks: Sequence[str]
    adapter: str
    good: str
    bad: str
    image: str | None
    template: str | None
    args: dict[str, Any] | None
    timeout: int
    rounds: int
    margin: float
    confidence: float
    job_budget: int
    source_ip: str
    actor: str
    now: dt.datetime


def bisection_add(
    conn: Connection, new: NewBisection, commits: Sequence[tuple[str, str | None]]
) -> tuple[int, uuid.UUID]:
    """Store a running bisection and its versions: ``commits`` the good one first, then the
    candidates, each with its image digest (None: none, or a template bisection)."""
    made = uuid.uuid4()
    bisection_id = conn.execute(
        sa.insert(bisection)
        .values(
            uuid=made,
            project_id=new.project_id,
            spec_id=new.spec_id,
            user_id=new.user_id,
            branch_id=new.branch_id,
            testbed_id=new.testbed_id,
            alert_id=new.alert_id,
            state=RUNNING,
            measure=new.measure,
            benchmarks=json.dumps(list(new.benchmarks)),
            adapter=new.adapter,
            good=new.good,
            bad=new.bad,
            image=new.image,
            template=new.template,
            args=None if new.args is None else json.dumps(new.args),
            timeout=new.timeout,
            rounds=new.rounds,
            margin=new.margin,
            confidence=new.confidence,
            job_budget=new.job_budget,
            jobs_used=0,
            source_ip=new.source_ip,
            actor=new.actor,
            created=new.now,
            modified=new.now,
        )
        .returning(bisection.c.id)
    ).scalar_one()
    conn.execute(
        sa.insert(bisection_commit),
        [
            {"bisection_id": bisection_id, "position": index - 1, "commit": c, "digest": d}
            for index, (c, d) in enumerate(commits)
        ],
    )
    return bisection_id, made


def bisection_get(conn: Connection, project_id: int, ref: str) -> Any:
    """The project's bisection with this uuid, or None."""
    try:
        wanted = uuid.UUID(ref)
    except ValueError:
        return None
    return conn.execute(
        sa.select(bisection).where(bisection.c.project_id == project_id, bisection.c.uuid == wanted)
    ).first()


def bisection_by_id(conn: Connection, bisection_id: int) -> Any:
    return conn.execute(sa.select(bisection).where(bisection.c.id == bisection_id)).first()


def bisection_list(conn: Connection, project_id: int, limit: int, offset: int) -> list[Any]:
    """The project's bisections, newest first."""
    return list(
        conn.execute(
            sa.select(bisection)
            .where(bisection.c.project_id == project_id)
            .order_by(bisection.c.created.desc(), bisection.c.id.desc())
            .limit(limit)
            .offset(offset)
        ).all()
    )


def bisection_count(conn: Connection, project_id: int) -> int:
    """How many bisections the project has."""
    return int(
        conn.execute(
            sa.select(sa.func.count())
            .select_from(bisection)
            .where(bisection.c.project_id == project_id)
        ).scalar_one()
    )


def bisection_of_alert(conn: Connection, alert_id: int) -> Any:
    """The latest bisection started from the alert, or None."""
    return conn.execute(
        sa.select(bisection)
        .where(bisection.c.alert_id == alert_id)
        .order_by(bisection.c.created.desc(), bisection.c.id.desc())
        .limit(1)
    ).first()


def bisections_running(conn: Connection) -> list[int]:
    return list(
        conn.execute(
            sa.select(bisection.c.id).where(bisection.c.state == RUNNING).order_by(bisection.c.id)
        ).scalars()
    )


def bisection_update(conn: Connection, bisection_id: int, **values: Any) -> bool:
    """Change a running bisection; False when it is no longer running (canceled meanwhile)."""
    done = conn.execute(
        sa.update(bisection)
        .where(bisection.c.id == bisection_id, bisection.c.state == RUNNING)
        .values(**values)
    )
    return done.rowcount == 1


def commits_of(conn: Connection, bisection_id: int) -> list[Any]:
    """The versions, good (position -1) first."""
    return list(
        conn.execute(
            sa.select(bisection_commit)
            .where(bisection_commit.c.bisection_id == bisection_id)
            .order_by(bisection_commit.c.position)
        ).all()
    )


def steps_of(conn: Connection, bisection_id: int) -> list[Any]:
    """The steps, oldest first."""
    return list(
        conn.execute(
            sa.select(bisection_step)
            .where(bisection_step.c.bisection_id == bisection_id)
            .order_by(bisection_step.c.id)
        ).all()
    )


def step_add(
    conn: Connection,
    bisection_id: int,
    kind: str,
    position: int,
    commit: str,
    baseline: str,
    rounds: int,
    now: dt.datetime,
    *,
    status: str = RUNNING,
    reason: str | None = None,
) -> int:
    return int(
        conn.execute(
            sa.insert(bisection_step)
            .values(
                bisection_id=bisection_id,
                kind=kind,
                position=position,
                commit=commit,
                baseline=baseline,
                status=status,
                rounds=rounds,
                reason=reason,
                created=now,
                modified=now,
            )
            .returning(bisection_step.c.id)
        ).scalar_one()
    )


def step_update(conn: Connection, step_id: int, **values: Any) -> None:
    conn.execute(sa.update(bisection_step).where(bisection_step.c.id == step_id).values(**values))


def job_link(conn: Connection, step_id: int, job_id: int) -> None:
    conn.execute(sa.insert(bisection_job).values(step_id=step_id, job_id=job_id))


_JOBS = (
    sa.select(
        bisection_job.c.step_id,
        job.c.id,
        job.c.uuid,
        job.c.status,
        job.c.report_id,
    )
    .join(job, job.c.id == bisection_job.c.job_id)
    .join(bisection_step, bisection_step.c.id == bisection_job.c.step_id)
    .where(bisection_step.c.bisection_id == sa.bindparam("bisection_id"))
    .order_by(bisection_job.c.id)
)


def jobs_of(conn: Connection, bisection_id: int) -> list[Any]:
    """The jobs of every step, oldest first: step_id, id, uuid, status, report_id."""
    return list(conn.execute(_JOBS, {"bisection_id": bisection_id}).all())


_FIGURES = (
    sa.select(
        benchmark.c.name.label("benchmark"),
        duet_result.c.ratio,
        duet_result.c.lower_value,
        duet_result.c.upper_value,
    )
    .select_from(duet)
    .join(duet_result, duet_result.c.duet_id == duet.c.id)
    .join(benchmark, benchmark.c.id == duet_result.c.benchmark_id)
    .join(measure, measure.c.id == duet_result.c.measure_id)
    .where(
        duet.c.report_id == sa.bindparam("report_id"),
        sa.or_(
            measure.c.name == sa.bindparam("measure"), measure.c.slug == sa.bindparam("measure")
        ),
    )
)


def duet_figures(
    conn: Connection, report_id: int, measure_name: str
) -> dict[str, tuple[float, float, float]]:
    """The report's duet ratios of the measure (by name or slug) per benchmark name: ratio,
    lower and upper end of its interval."""
    rows = conn.execute(_FIGURES, {"report_id": report_id, "measure": measure_name}).all()
    return {r.benchmark: (r.ratio, r.lower_value, r.upper_value) for r in rows}


def report_error(conn: Connection, report_id: int) -> str | None:
    return conn.execute(sa.select(report.c.error).where(report.c.id == report_id)).scalar()


_SLOTS = (
    sa.select(sa.func.count())
    .select_from(runner_spec)
    .join(runner, runner.c.id == runner_spec.c.runner_id)
    .where(
        runner_spec.c.spec_id == sa.bindparam("spec_id"),
        runner.c.archived.is_(None),
        runner.c.paused.is_(False),
    )
)


def runner_slots(conn: Connection, spec_id: int) -> int:
    """The spec's runners that may take jobs (not archived, not paused): how many duets of a
    bisection run at once (one at least)."""
    return max(1, int(conn.execute(_SLOTS, {"spec_id": spec_id}).scalar_one()))
