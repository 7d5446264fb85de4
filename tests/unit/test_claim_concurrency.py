"""Claims racing from several replicas at the same instant stay exact (docs/decisions/claims.md).

Each "replica" is its own Database (own engine and connections) on one shared database; all of
them claim at once behind a barrier, round after round. After every round: no job was claimed
twice, and no free organization or unclaimed source IP has more than one job in flight.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator

import pytest

from benchrunner.core.states import JobStatus
from benchrunner.core.tiers import Plan
from benchrunner.server.store import claims, jobs
from benchrunner.server.store.engine import Database
from tests.databases import with_schema
from tests.unit.test_claim_policy import World

REPLICAS = 6


@pytest.fixture
def replicas(database_url: str) -> Iterator[list[Database]]:
    with_schema(database_url)
    databases = [Database(database_url) for _ in range(REPLICAS)]
    yield databases
    for db in databases:
        db.close()


def _claim_round(replicas: list[Database], runner_ids: list[int], world: World) -> dict[int, int]:
    """One claim per runner, each from its own replica, all at once: the job each claimed."""
    barrier = threading.Barrier(len(replicas))
    claimed: dict[int, int] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def claim(db: Database, runner_id: int) -> None:
        try:
            barrier.wait(timeout=30)
            found = db.write_sync(claims.job_claim, runner_id, "nonce", world.now(), "race")
            if found is not None:
                with lock:
                    claimed[runner_id] = found.job.id
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=claim, args=(db, runner_id))
        for db, runner_id in zip(replicas, runner_ids, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return claimed


@pytest.mark.parametrize("owned", [False, True], ids=["server-runners", "mixed-runners"])
def test_replicas_claiming_at_once_never_exceed_tier_limits(
    replicas: list[Database], owned: bool
) -> None:
    """With ``owned``, half the runners belong to organizations (one each to the two free
    ones and the team one): they take only their own organization's jobs, and the limits hold
    whichever kind of runner claims."""
    world = World(replicas[0])
    spec = world.spec("s")
    free_orgs = [world.org(f"free{i}", Plan.FREE) for i in range(2)]
    anonymous = world.org("anon", Plan.FREE, claimed=False)
    team = world.org("team", Plan.TEAM)
    owners = [free_orgs[0][0], free_orgs[1][0], team[0]] if owned else []
    owner_name = {free_orgs[0][0]: "free0", free_orgs[1][0]: "free1", team[0]: "team"}
    runner_ids = [world.runner(f"o{i}", [spec], org=org) for i, org in enumerate(owners)]
    runner_ids += [world.runner(f"r{i}", [spec]) for i in range(REPLICAS - len(runner_ids))]
    owner_of = dict(zip(runner_ids, (owner_name[o] for o in owners), strict=False))
    organization_of: dict[int, str] = {}
    ip_of: dict[int, str] = {}
    for _ in range(4):
        for index, org in enumerate(free_orgs):
            organization_of[world.job(org, spec)] = f"free{index}"
        for ip in ("10.0.0.1", "10.0.0.2"):
            ip_of[world.job(anonymous, spec, ip=ip)] = ip
    team_jobs = {world.job(team, spec) for _ in range(6)}
    everything = set(organization_of) | set(ip_of) | team_jobs
    owner_of_job = {**organization_of, **dict.fromkeys(team_jobs, "team")}

    seen: collections.Counter[int] = collections.Counter()
    rounds = 0
    while sum(seen.values()) < len(everything):
        rounds += 1
        assert rounds <= 40, f"claims stalled: {len(everything) - len(seen)} jobs never claimed"
        claimed_by = _claim_round(replicas, runner_ids, world)
        for runner_id, job_id in claimed_by.items():
            if runner_id in owner_of:
                assert owner_of_job.get(job_id) == owner_of[runner_id], "another org's job"
        claimed = list(claimed_by.values())
        seen.update(claimed)
        in_flight_orgs = [organization_of[j] for j in claimed if j in organization_of]
        in_flight_ips = [ip_of[j] for j in claimed if j in ip_of]
        assert len(in_flight_orgs) == len(set(in_flight_orgs)), f"round {rounds}: {claimed}"
        assert len(in_flight_ips) == len(set(in_flight_ips)), f"round {rounds}: {claimed}"
        for job_id in claimed:
            world.finish(job_id)
    assert set(seen) == everything
    assert max(seen.values()) == 1, "a job was claimed twice"
    remaining = world.db.read_sync(
        jobs.job_list_by_status, [JobStatus.PENDING, JobStatus.CLAIMED, JobStatus.RUNNING]
    )
    assert remaining == []
