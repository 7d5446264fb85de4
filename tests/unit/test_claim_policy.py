"""The claim query against a real database of each engine, built by the migrations
(docs/decisions/claims.md)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

import pytest
from sqlalchemy.engine import Connection

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan, priority_for
from benchrunner.protocol import JsonJobConfig
from benchrunner.server.moves.move import Move, apply, apply_running
from benchrunner.server.store import (
    accounts,
    claims,
    job_reads,
    jobs,
    reports,
    runners,
)
from benchrunner.server.store.engine import Database, Unit
from tests.databases import with_schema
from tests.new_reports import new_report_on

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TEMPLATE_JOB = JsonJobConfig(timeout=60, template="t", args={})
IMAGE_JOB = JsonJobConfig(
    timeout=60, registry="http://bench", project=uuid.UUID(int=1), digest="sha256:" + "0" * 64
)
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class World:
    db: Database
    tick: int = 0
    one_statement: bool = False
    """Claims as the dispatcher makes them: one statement standing on its own, else (a limited
    tier's job) a transaction (``claims.job_claim_alone``)."""
    orgs: dict[int, int | None] = field(default_factory=dict)

    def now(self) -> dt.datetime:
        self.tick += 1
        return T0 + dt.timedelta(milliseconds=self.tick)

    def write(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.db.write_sync(unit, *args, **kwargs)

    def write_each(self, unit: Unit[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``unit`` as ``Database.write_each`` runs it: on PostgreSQL in autocommit, each
        statement committed by itself; SQLite, ``write``."""
        if self.db.sqlite:
            return self.write(unit, *args, **kwargs)
        with self.db.read_engine.connect() as conn:
            return unit(conn, *args, **kwargs)

    def start(self, job_id: int, runner_id: int, runner_slug: str = "r") -> None:
        """The runner's ``running`` of its claimed job, as the server makes it."""

        def unit(conn: Connection) -> None:
            row = jobs.job_get(conn, job_id)
            assert row is not None
            assert apply_running(conn, Move.running(row, runner_id, runner_slug, self.now()))

        self.write(unit)

    def running(self, names: tuple[str, ...]) -> list[jobs.JobRow]:
        """A running job of organization ``acme`` for each runner of ``names``, on spec ``s``."""
        spec = self.spec("s")
        org = self.org("acme", Plan.TEAM)
        found: list[jobs.JobRow] = []
        for name in names:
            runner = self.runner(name, [spec])
            job_id = self.job(org, spec)
            assert self.claim(runner) == job_id
            self.start(job_id, runner, name)
            job = self.db.read_sync(jobs.job_get, job_id)
            assert job is not None
            found.append(job)
        return found

    def spec(self, name: str) -> int:
        params = runners.NewSpec(name, "x86_64", 1, 1 << 30, 1 << 30, False)
        return int(self.write(runners.spec_create, params, self.now()).id)

    def runner(self, name: str, spec_ids: list[int], org: int | None = None) -> int:
        def unit(conn: Connection) -> int:
            row = runners.runner_create(
                conn, name, "bencher_runner_" + "0" * 64, self.now(), organization_id=org
            )
            for spec_id in spec_ids:
                runners.runner_spec_add(conn, row.id, spec_id)
            return row.id

        runner_id = int(self.write(unit))
        self.orgs[runner_id] = org
        return runner_id

    def org(self, name: str, plan: Plan, *, claimed: bool = True) -> tuple[int, int]:
        def unit(conn: Connection) -> tuple[int, int]:
            leader = (
                accounts.user_get_or_create(conn, f"{name}@x", name, admin=False, now=self.now()).id
                if claimed
                else None
            )
            org = accounts.organization_create(conn, name, plan, self.now(), leader_id=leader)
            project = accounts.project_create(conn, org.id, name, "public", self.now())
            return org.id, project.id

        return self.write(unit)

    def job(
        self,
        org: tuple[int, int],
        spec_id: int,
        ip: str = "10.0.0.1",
        config: JsonJobConfig = TEMPLATE_JOB,
    ) -> int:
        org_id, project_id = org

        def unit(conn: Connection) -> int:
            now = self.now()
            report_id, _ = reports.report_create(
                conn, new_report_on(conn, project_id, "main", "tb", "json", now)
            )
            organization = accounts.organization_by_id(conn, org_id)
            claimed = accounts.organization_is_claimed(conn, org_id)
            job_id, _ = jobs.job_create(
                conn,
                jobs.NewJob(
                    report_id=report_id,
                    organization_id=org_id,
                    spec_id=spec_id,
                    config=config,
                    priority=priority_for(organization.plan, claimed=claimed),
                    now=now,
                    origin=jobs.Origin(actor="test", source_ip=ip),
                ),
            )
            return job_id

        return int(self.write(unit))

    def claim(
        self, runner_id: int, *, templates: bool = True, holding_none: bool = False
    ) -> int | None:
        args = ("nonce", self.now(), "r", templates, holding_none)
        try:
            if not self.one_statement:
                raise claims.ClaimInTransaction
            org = self.orgs[runner_id]
            row = self.write_each(claims.job_claim_alone, runner_id, org, *args)
        except claims.ClaimInTransaction:
            row = self.write(claims.job_claim, runner_id, *args)
        return None if row is None else int(row.job.id)

    def finish(self, job_id: int) -> None:
        def unit(conn: Connection) -> None:
            row = jobs.job_get(conn, job_id)
            assert row is not None and row.runner_id is not None
            assert apply_running(conn, Move.running(row, row.runner_id, "r", self.now()))
            assert apply(conn, Move(row, JobStatus.COMPLETED, self.now(), "completed", "r"))

        self.write(unit)


@pytest.fixture(params=["transaction", "one statement"])
def world(database_url: str, request: pytest.FixtureRequest) -> Iterator[World]:
    with_schema(database_url)
    db = Database(database_url)
    yield World(db, one_statement=request.param == "one statement")
    db.close()


def test_priority_then_fifo_then_id(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    free = world.org("free", Plan.FREE)
    team = world.org("team", Plan.TEAM)
    enterprise = world.org("ent", Plan.ENTERPRISE)
    order = [
        world.job(team, spec),
        world.job(free, spec),
        world.job(enterprise, spec),
        world.job(team, spec),
        world.job(enterprise, spec),
    ]
    claimed = [world.claim(runner) for _ in range(5)]
    assert claimed == [order[2], order[4], order[0], order[3], order[1]]
    assert world.claim(runner) is None


def test_a_channels_claim_is_refused_while_the_runner_holds_a_job(world: World) -> None:
    """A channel claims only for a runner that holds no job (``holding_none``): while one is in
    flight the claim writes nothing and says so, so that the channel fails the lost job first;
    once it left flight the next claim takes the waiting job."""
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    other = world.runner("other", [spec])
    team = world.org("team", Plan.TEAM)
    held, waiting, elsewhere = world.job(team, spec), world.job(team, spec), world.job(team, spec)
    assert world.claim(runner, holding_none=True) == held
    assert world.claim(other, holding_none=True) == waiting  # another runner's job is no bar
    with pytest.raises(claims.RunnerHoldsJobs):
        world.claim(runner, holding_none=True)
    assert world.claim(runner) == elsewhere  # a claim not made for a channel is not refused
    world.finish(held)
    with pytest.raises(claims.RunnerHoldsJobs):
        world.claim(runner, holding_none=True)  # ``elsewhere`` is still in flight
    world.finish(elsewhere)
    assert world.claim(runner, holding_none=True) is None


def test_spec_mismatch_is_never_claimed(world: World) -> None:
    small, big = world.spec("small"), world.spec("big")
    runner = world.runner("r", [small])
    team = world.org("team", Plan.TEAM)
    world.job(team, big)
    assert world.claim(runner) is None
    mine = world.job(team, small)
    assert world.claim(runner) == mine


def test_a_runner_that_runs_no_templates_is_offered_image_jobs_only(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    team = world.org("team", Plan.TEAM)
    template = world.job(team, spec)  # first in line
    image = world.job(team, spec, config=IMAGE_JOB)
    assert world.claim(runner, templates=False) == image
    assert world.claim(runner, templates=False) is None  # the template job stays pending
    assert world.claim(runner) == template


def test_paused_and_archived_runners_claim_nothing(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    world.job(world.org("team", Plan.TEAM), spec)
    world.write(runners.runner_update, runner, {"paused": True})
    with pytest.raises(claims.RunnerUnavailable):
        world.claim(runner)
    world.write(runners.runner_update, runner, {"paused": False, "archived": T0})
    with pytest.raises(claims.RunnerUnavailable):
        world.claim(runner)


def test_free_tier_one_in_flight_per_organization(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    free, other = world.org("free", Plan.FREE), world.org("other", Plan.FREE)
    first, second = world.job(free, spec), world.job(free, spec)
    third = world.job(other, spec)
    assert world.claim(runner) == first
    assert world.claim(runner) == third  # free's second waits; other free org is independent
    assert world.claim(runner) is None
    world.finish(first)
    assert world.claim(runner) == second


def test_unclaimed_tier_one_in_flight_per_source_ip(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    anon_a = world.org("anon-a", Plan.FREE, claimed=False)
    anon_b = world.org("anon-b", Plan.FREE, claimed=False)
    a1 = world.job(anon_a, spec, ip="10.0.0.1")
    a2 = world.job(anon_b, spec, ip="10.0.0.1")  # another org, same IP: still limited
    b1 = world.job(anon_b, spec, ip="10.0.0.2")
    assert world.claim(runner) == a1
    assert world.claim(runner) == b1
    assert world.claim(runner) is None
    world.finish(a1)
    assert world.claim(runner) == a2


def test_unclaimed_tier_is_limited_per_source_ip_not_per_organization(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    anonymous = world.org("anon", Plan.FREE, claimed=False)
    first = world.job(anonymous, spec, ip="10.0.0.1")
    second = world.job(anonymous, spec, ip="10.0.0.2")
    assert world.claim(runner) == first
    assert world.claim(runner) == second  # its organization is busy, its source IP is not


def test_organization_owned_runner_takes_only_its_organizations_jobs(world: World) -> None:
    spec = world.spec("s")
    team, other = world.org("team", Plan.TEAM), world.org("other", Plan.ENTERPRISE)
    owned = world.runner("owned", [spec], org=team[0])
    world.job(other, spec)
    mine = world.job(team, spec)
    assert world.claim(owned) == mine
    assert world.claim(owned) is None


def test_a_server_runner_takes_any_organizations_jobs_an_owned_one_only_its_own(
    world: World,
) -> None:
    spec = world.spec("s")
    team, rival = world.org("team", Plan.TEAM), world.org("rival", Plan.ENTERPRISE)
    owned = world.runner("owned", [spec], org=team[0])
    server = world.runner("server", [spec])
    theirs = [world.job(rival, spec) for _ in range(2)]
    mine = world.job(team, spec)
    assert world.claim(owned) == mine  # the rival's jobs rank higher, yet are not its
    assert world.claim(owned) is None
    assert [world.claim(server), world.claim(server)] == theirs
    assert world.claim(server) is None


def test_tier_limits_hold_across_owned_and_server_runners(world: World) -> None:
    spec = world.spec("s")
    free = world.org("free", Plan.FREE)
    anonymous = world.org("anon", Plan.FREE, claimed=False)
    owned = world.runner("owned", [spec], org=free[0])
    owned_by_anon = world.runner("owned-by-anon", [spec], org=anonymous[0])
    server = world.runner("server", [spec])
    first, second = world.job(free, spec), world.job(free, spec)
    a1, a2 = world.job(anonymous, spec, ip="10.0.0.9"), world.job(anonymous, spec, ip="10.0.0.9")
    # A free organization: one job in flight, whoever claimed it.
    assert world.claim(owned) == first
    assert world.claim(server) == a1  # not the free org's second job: that org is busy
    assert world.claim(owned) is None
    # Unclaimed tier: one in flight per source IP, here held by the server runner.
    assert world.claim(owned_by_anon) is None
    world.finish(first)
    assert world.claim(server) == second
    assert world.claim(owned) is None
    world.finish(a1)
    assert world.claim(owned_by_anon) == a2
    assert world.claim(server) is None


def test_claim_records_runner_time_nonce_and_event(world: World) -> None:
    spec = world.spec("s")
    runner = world.runner("r", [spec])
    job_id = world.job(world.org("team", Plan.TEAM), spec)
    world.claim(runner)
    row = world.db.read_sync(jobs.job_get, job_id)
    assert row is not None
    assert row.status is JobStatus.CLAIMED
    assert row.runner_id == runner and row.nonce == "nonce"
    assert row.claimed is not None and row.claimed == row.last_heartbeat
    events = world.db.read_sync(job_reads.job_events, job_id)
    assert [e.event_type for e in events] == ["job_created", "job_claimed"]
