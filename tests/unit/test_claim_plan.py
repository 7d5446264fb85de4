"""The claims' plans on PostgreSQL after a burst of submissions, before any ANALYZE: a walk of
the pending index in claim order, never a sort of every pending job (claims.py), for every
form of the claim, on the connections every write uses."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

import psycopg
import pytest
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import claims
from benchrunner.server.store.engine import Database
from tests.databases import postgres_database, with_schema
from tests.unit.test_claim_policy import T0, World

PENDING = 300


class _RolledBack(Exception):
    """Leaves a unit's transaction without committing, carrying what the unit saw."""

    def __init__(self, plans: list[str]) -> None:
        super().__init__()
        self.plans = plans


@pytest.fixture(scope="module")
def burst() -> Iterator[tuple[World, int, int]]:
    """A fresh PostgreSQL database whose job table has never been analyzed, with a burst of
    pending jobs for one runner of no organization; the organization of those jobs."""
    with postgres_database() as url:
        with_schema(url)
        db = Database(url)
        world = World(db)
        spec = world.spec("s")
        runner = world.runner("r", [spec])
        team = world.org("team", Plan.TEAM)
        for _ in range(PENDING):
            world.job(team, spec)
        yield world, runner, team[0]
        db.close()


def plain_sorts(plan: str) -> list[str]:
    """The plan's full sorts; an incremental sort of index-ordered rows is fine."""
    return [line for line in plan.splitlines() if re.match(r"\s*(->\s+)?Sort\s+\(", line)]


_FLUSH = "SELECT 'plans logged'"


def plans_of(world: World, statements: Callable[[Connection], object]) -> list[str]:
    """The plans of every statement ``statements`` runs, as PostgreSQL logged them
    (``auto_explain`` at the client's notice level), in a write transaction rolled back
    after."""

    def unit(conn: Connection) -> None:
        plans: list[str] = []
        driver = conn.connection.driver_connection
        assert isinstance(driver, psycopg.Connection)

        def heard(notice: psycopg.errors.Diagnostic) -> None:
            plans.append(notice.message_primary or "")

        conn.exec_driver_sql("LOAD 'auto_explain'")
        conn.exec_driver_sql("SET LOCAL auto_explain.log_min_duration = 0")
        conn.exec_driver_sql("SET LOCAL auto_explain.log_level = 'notice'")
        driver.add_notice_handler(heard)
        try:
            statements(conn)
            # A statement's plan is logged when its portal closes, which the next command does.
            conn.exec_driver_sql(_FLUSH)
        finally:
            driver.remove_notice_handler(heard)
        raise _RolledBack([plan for plan in plans if _FLUSH not in plan])

    with pytest.raises(_RolledBack) as caught:
        world.write(unit)
    return caught.value.plans


@pytest.mark.parametrize(
    ("owned", "excluding", "images_only"), list(itertools.product([False, True], repeat=3))
)
def test_the_claim_query_walks_the_pending_index(
    burst: tuple[World, int, int], owned: bool, excluding: bool, images_only: bool
) -> None:
    world, runner, org = burst
    query = claims._eligible_jobs(owned, excluding, images_only)
    params: dict[str, object] = {"runner_id": runner, "runner_org": org}
    if excluding:
        params.update(busy_orgs=[org + 1], busy_ips=["192.0.2.1"])
    (plan,) = plans_of(world, lambda conn: conn.execute(query, params).first())
    assert "index_job_pending " in plan, plan
    assert not plain_sorts(plan), plan


@pytest.mark.parametrize(
    ("alone", "owned", "images_only", "holding_none"),
    [
        combination
        for combination in itertools.product([True, False], repeat=4)
        if combination[0] or not combination[1]  # a claim in a transaction reads the runner's
    ],
)
def test_every_claim_walks_the_pending_index(
    burst: tuple[World, int, int], alone: bool, owned: bool, images_only: bool, holding_none: bool
) -> None:
    world, runner, org = burst
    tail = ("n", T0, "r", not images_only, holding_none)

    def claim(conn: Connection) -> object:
        if alone:
            return claims.job_claim_alone(conn, runner, org if owned else None, *tail)
        return claims.job_claim(conn, runner, *tail)

    try:
        plans = plans_of(world, claim)
    except claims.ClaimInTransaction:
        assert owned  # the runner is of no organization: refused before anything is written
        return
    claiming = [plan for plan in plans if "job_pending" in plan]
    assert claiming, plans
    for plan in claiming:
        assert not plain_sorts(plan), plan
