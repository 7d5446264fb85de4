"""A bisection's moves on a real database of each engine, its jobs' outcomes written here as
processing would leave them (the job processed, its duet's ratio stored): several probes at
once on several runners, a budget that runs out, a first bad commit its parent does not
confirm, a canceled bisection that moves no more."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.templates import Template, TemplateArg, TemplateRegistry
from benchrunner.core.tiers import Plan
from benchrunner.detection.duet import METHOD, DuetEstimate
from benchrunner.server.bisection import rows
from benchrunner.server.bisection.advance import advance
from benchrunner.server.bisection.views import alert_bisection
from benchrunner.server.store import accounts, duets, reports, runners
from benchrunner.server.store.engine import Database
from benchrunner.server.store.reports import named_get_or_create
from benchrunner.server.store.tables import alert, bisection_step, branch, job, testbed
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TEMPLATES = TemplateRegistry(
    {
        "work": Template(
            "work", ("true", "{commit}"), {"commit": TemplateArg("commit", "string")}, 60
        )
    }
)
COMMITS = [f"c{i:02d}" for i in range(17)]  # c00 good, c16 bad


def _bisection(
    conn: Connection, *, runners_of_spec: int = 1, budget: int = 40, raised: bool = False
) -> int:
    """A running bisection of c01 .. c16 (c00 good); with ``raised``, started from a duet
    alert of the project."""
    leader = accounts.user_get_or_create(conn, "b@x", "b", admin=False, now=T0).id
    org = accounts.organization_create(conn, "org", Plan.TEAM, T0, leader_id=leader)
    project_id = accounts.project_create(conn, org.id, "p", "public", T0).id
    params = runners.NewSpec("small", "x86_64", 1, 1 << 30, 1 << 30, False)
    spec_id = int(runners.spec_create(conn, params, T0).id)
    alert_id = None
    if raised:
        report = new_report_on(conn, project_id, "main", "box", "json", T0)
        report_id, _ = reports.report_create(conn, report)
        estimate = DuetEstimate("work", "latency", 10, 1.06, 1.05, 1.07, None)
        duets.duet_add(
            conn,
            report_id,
            project_id,
            duets.NewDuet(1, 10, "AB", METHOD, 2000, 0.95, 0.01, [estimate]),
            T0,
        )
        alert_id = int(conn.execute(sa.select(alert.c.id)).scalar_one())
    for index in range(runners_of_spec):
        runner = runners.runner_create(conn, f"r{index}", f"token-{index}", T0)
        runners.runner_spec_add(conn, runner.id, spec_id)
    bisection_id, _ = rows.bisection_add(
        conn,
        rows.NewBisection(
            project_id=project_id,
            spec_id=spec_id,
            user_id=leader,
            branch_id=named_get_or_create(conn, branch, project_id, "bisections", T0),
            testbed_id=named_get_or_create(conn, testbed, project_id, "box", T0),
            alert_id=alert_id,
            measure="latency",
            benchmarks=["work"],
            adapter="json",
            good=COMMITS[0],
            bad=COMMITS[-1],
            image=None,
            template="work",
            args={"commit": "{commit}"},
            timeout=60,
            rounds=10,
            margin=0.02,
            confidence=0.95,
            job_budget=budget,
            source_ip="127.0.0.1",
            actor="b@x",
            now=T0,
        ),
        [(c, None) for c in COMMITS],
    )
    return bisection_id


def _move(db: Database, bisection_id: int) -> None:
    with db.write_engine.begin() as conn:
        advance(
            conn,
            bisection_id,
            T0,
            templates=TEMPLATES,
            registry_url="http://127.0.0.1:8080",
            broadcast=lambda _spec: None,
        )


def _running(db: Database, bisection_id: int) -> list[Any]:
    """The steps under way with their latest job."""
    with db.read_engine.connect() as conn:
        latest = {j.step_id: j for j in rows.jobs_of(conn, bisection_id)}
        return [
            (s, latest[s.id]) for s in rows.steps_of(conn, bisection_id) if s.status == "running"
        ]


def _finish(db: Database, found: Any, ratio: float, lower: float, upper: float) -> None:
    """The job processed with the duet's ratio of ``work`` (a forged outcome)."""
    with db.write_engine.begin() as conn:
        conn.execute(
            sa.update(job).where(job.c.id == found.id).values(status=int(JobStatus.PROCESSED))
        )
        project_id = rows.bisection_by_id(conn, _bisection_of(conn, found.step_id)).project_id
        estimate = DuetEstimate("work", "latency", 10, ratio, lower, upper, None)
        verdict = duets.NewDuet(1, 10, "AB", METHOD, 2000, 0.95, 0.99, [estimate])
        duets.duet_add(conn, found.report_id, project_id, verdict, T0)


def _bisection_of(conn: Connection, step_id: int) -> int:
    return int(
        conn.execute(
            sa.select(bisection_step.c.bisection_id).where(bisection_step.c.id == step_id)
        ).scalar_one()
    )


def _state(db: Database, bisection_id: int) -> Any:
    with db.read_engine.connect() as conn:
        return rows.bisection_by_id(conn, bisection_id)


def test_three_runners_probe_three_commits_at_once(migrated_db: Database) -> None:
    with migrated_db.write_engine.begin() as conn:
        bisection_id = _bisection(conn, runners_of_spec=3)
    _move(migrated_db, bisection_id)
    ((check, check_job),) = _running(migrated_db, bisection_id)
    assert (check.kind, check.commit, check.baseline) == ("check", "c16", "c00")
    _finish(migrated_db, check_job, 1.06, 1.04, 1.08)
    _move(migrated_db, bisection_id)
    probes = _running(migrated_db, bisection_id)
    assert sorted(s.commit for s, _ in probes) == ["c04", "c08", "c12"]  # positions 3, 7, 11
    assert _state(migrated_db, bisection_id).followed == "work"
    # c04 and c08 as good, c12 as bad: the next three split c09 .. c11.
    for step, found in probes:
        level = (1.05, 1.04, 1.07) if step.commit == "c12" else (1.0, 0.99, 1.01)
        _finish(migrated_db, found, *level)
    _move(migrated_db, bisection_id)
    assert sorted(s.commit for s, _ in _running(migrated_db, bisection_id)) == ["c09", "c10", "c11"]


def test_a_spent_budget_ends_undecided(migrated_db: Database) -> None:
    with migrated_db.write_engine.begin() as conn:
        bisection_id = _bisection(conn, budget=2)
    _move(migrated_db, bisection_id)
    ((_, first),) = _running(migrated_db, bisection_id)
    _finish(migrated_db, first, 1.01, 0.97, 1.05)  # unknown: twice the rounds
    _move(migrated_db, bisection_id)
    ((step, second),) = _running(migrated_db, bisection_id)
    assert step.rounds == 20 and second.id != first.id
    _finish(migrated_db, second, 1.01, 0.985, 1.03)  # still unknown, and no job left
    _move(migrated_db, bisection_id)
    ended = _state(migrated_db, bisection_id)
    assert (ended.state, ended.jobs_used, ended.culprit) == ("done", 2, None)
    assert ended.reason.startswith("undecided: bad against good stayed unknown")


def _search(db: Database, bisection_id: int, bad_from: int, *, confirmed: bool) -> None:
    """Answer the bisection's duets until it ends: c``bad_from`` on measures as bad does; its
    duet against its parent measures as bad against good (``confirmed``) or the same."""
    for _ in range(12):
        under_way = _running(db, bisection_id)
        if not under_way:
            return
        for step, found in under_way:
            bad = step.kind == "check" or COMMITS.index(step.commit) >= bad_from
            if step.kind == "confirm":
                bad = confirmed
            _finish(db, found, *((1.06, 1.05, 1.07) if bad else (1.0, 0.99, 1.01)))
        _move(db, bisection_id)
    raise AssertionError("the bisection did not end")


def test_the_first_bad_commit_is_named_on_its_alert(migrated_db: Database) -> None:
    with migrated_db.write_engine.begin() as conn:
        bisection_id = _bisection(conn, raised=True)
        alert_id = int(conn.execute(sa.select(alert.c.id)).scalar_one())
        summary = alert_bisection(conn, alert_id)
        assert summary is not None
        assert summary.model_dump(exclude_unset=True) == {
            "uuid": str(rows.bisection_by_id(conn, bisection_id).uuid),
            "state": "running",
            "result": None,
            "text": "bisecting c00..c16 (0 jobs so far)",
        }
    _move(migrated_db, bisection_id)
    _search(migrated_db, bisection_id, 13, confirmed=True)
    ended = _state(migrated_db, bisection_id)
    assert (ended.state, ended.culprit, ended.culprit_parent) == ("done", "c13", "c12")
    assert (ended.culprit_ratio, ended.culprit_lower, ended.culprit_upper) == (1.06, 1.05, 1.07)
    assert ended.jobs_used == 6  # the check, four probes, the confirmation
    with migrated_db.read_engine.connect() as conn:
        summary = alert_bisection(conn, alert_id)
    assert summary is not None and summary.result is not None
    assert summary.result.culprit is not None and summary.result.culprit.commit == "c13"
    assert summary.text.startswith("caused by c13, +"), summary


def test_a_first_bad_commit_its_parent_does_not_confirm_is_not_named(
    migrated_db: Database,
) -> None:
    with migrated_db.write_engine.begin() as conn:
        bisection_id = _bisection(conn)
    _move(migrated_db, bisection_id)
    _search(migrated_db, bisection_id, 5, confirmed=False)
    ended = _state(migrated_db, bisection_id)
    assert ended.state == "done" and ended.culprit is None
    assert ended.reason.startswith("undecided: c05 looks like the first bad commit")
    assert "measured as its parent c04" in ended.reason


def test_a_canceled_bisection_moves_no_more(migrated_db: Database) -> None:
    with migrated_db.write_engine.begin() as conn:
        bisection_id = _bisection(conn)
        assert rows.bisection_update(conn, bisection_id, state=rows.CANCELED, finished=T0)
    _move(migrated_db, bisection_id)
    with migrated_db.read_engine.connect() as conn:
        assert rows.steps_of(conn, bisection_id) == []
        assert not rows.bisection_update(conn, bisection_id, state=rows.DONE)
