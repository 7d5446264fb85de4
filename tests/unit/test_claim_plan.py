"""The claims' plans on PostgreSQL after a burst of submissions, before any ANALYZE: a walk of
the pending index in claim order, never a sort of every pending job (claims.py), for every
form of the claim, on the connections every write uses."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import claims
from benchrunner.server.store.engine import Database
from tests.databases import postgres_database, with_schema
from tests.unit.test_claim_policy import IMAGE_JOB, T0, TEMPLATE_JOB, World

PENDING = 300


class _RolledBack(Exception):
    """Leaves a unit's transaction without committing, carrying what the unit saw."""

    def __init__(self, plans: list[str]) -> None:
        super().__init__()
        self.plans = plans


@dataclass(frozen=True)
class Burst:
    world: World
    shared_runner: int
    """A runner of no organization."""
    owned_runner: int
    """A runner of the jobs' organization."""
    org: int


_NO_AUTOVACUUM = "ALTER TABLE job SET (autovacuum_enabled = off)"
_PLAN_CACHE_MODES = ["auto", "force_generic_plan"]
"""How the statements are planned: as psycopg runs them (a prepared statement's first
executions get custom plans), and with the generic plan a prepared statement may keep."""


_ANALYZED = sa.text(
    "SELECT coalesce(last_analyze, last_autoanalyze) IS NOT NULL FROM pg_stat_user_tables"
    " WHERE relname = 'job'"
)


@pytest.fixture(scope="module")
def burst() -> Iterator[Burst]:
    """A fresh PostgreSQL database whose job table is never analyzed (autovacuum off for it),
    with a burst of pending jobs of one organization, templates' and images' in turn, for a
    runner of no organization and one of that organization."""
    with postgres_database() as url:
        with_schema(url)
        db = Database(url)
        db.write_sync(lambda conn: conn.exec_driver_sql(_NO_AUTOVACUUM))
        world = World(db)
        spec = world.spec("s")
        team = world.org("team", Plan.TEAM)
        shared = world.runner("r", [spec])
        owned = world.runner("o", [spec], org=team[0])
        for index in range(PENDING):
            world.job(team, spec, config=IMAGE_JOB if index % 2 else TEMPLATE_JOB)
        yield Burst(world, shared, owned, team[0])
        assert not db.read_sync(lambda conn: conn.execute(_ANALYZED).scalar_one())
        db.close()


def sorts(plan: str) -> list[str]:
    """The plan's sorts, incremental ones included: the index holds the claims' whole order."""
    return [
        line for line in plan.splitlines() if re.match(r"\s*(->\s+)?(Incremental )?Sort\s+\(", line)
    ]


_FLUSH = "SELECT 'plans logged'"


def plans_of(
    world: World, statements: Callable[[Connection], object], plan_cache_mode: str
) -> list[str]:
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
        conn.exec_driver_sql(f"SET LOCAL plan_cache_mode = {plan_cache_mode}")
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


@pytest.mark.parametrize("plan_cache_mode", _PLAN_CACHE_MODES)
@pytest.mark.parametrize(
    ("owned", "excluding", "images_only"), list(itertools.product([False, True], repeat=3))
)
def test_the_claim_query_walks_the_pending_index(
    burst: Burst, owned: bool, excluding: bool, images_only: bool, plan_cache_mode: str
) -> None:
    query = claims._eligible_jobs(owned, excluding, images_only)
    runner = burst.owned_runner if owned else burst.shared_runner
    params: dict[str, object] = {"runner_id": runner, "runner_org": burst.org}
    if excluding:
        params.update(busy_orgs=[burst.org + 1], busy_ips=["192.0.2.1"])
    (plan,) = plans_of(
        burst.world, lambda conn: conn.execute(query, params).first(), plan_cache_mode
    )
    assert "index_job_pending " in plan, plan
    assert not sorts(plan), plan


@pytest.mark.parametrize("plan_cache_mode", _PLAN_CACHE_MODES)
@pytest.mark.parametrize(
    ("alone", "owned", "images_only", "holding_none"),
    list(itertools.product([True, False], repeat=4)),
)
def test_every_claim_walks_the_pending_index(
    burst: Burst,
    alone: bool,
    owned: bool,
    images_only: bool,
    holding_none: bool,
    plan_cache_mode: str,
) -> None:
    runner = burst.owned_runner if owned else burst.shared_runner
    tail = ("n", T0, "r", not images_only, holding_none)

    def claim(conn: Connection) -> object:
        if alone:
            claimed = claims.job_claim_alone(conn, runner, burst.org if owned else None, *tail)
        else:
            claimed = claims.job_claim(conn, runner, *tail)
        assert claimed is not None  # the plans are those of a claim that found its job
        return claimed

    plans = plans_of(burst.world, claim, plan_cache_mode)
    assert any("index_job_pending " in plan for plan in plans), plans
    for plan in plans:
        assert not sorts(plan), plan
