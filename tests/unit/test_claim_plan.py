"""The claim's plan on PostgreSQL after a burst of submissions, before any ANALYZE: a walk of
the pending index in claim order, not a sort of every pending job (claims.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.core.tiers import Plan
from benchrunner.server.store import claims
from benchrunner.server.store.engine import Database
from tests.databases import postgres_database, with_schema
from tests.unit.test_claim_policy import T0, World

PENDING = 300


@pytest.fixture(scope="module")
def burst() -> Iterator[tuple[World, int]]:
    """A fresh PostgreSQL database whose job table has never been analyzed, with a burst of
    pending jobs for one runner."""
    with postgres_database() as url:
        with_schema(url)
        db = Database(url)
        world = World(db)
        spec = world.spec("s")
        runner = world.runner("r", [spec])
        team = world.org("team", Plan.TEAM)
        for _ in range(PENDING):
            world.job(team, spec)
        yield world, runner
        db.close()


def claim_plan(world: World, runner_id: int, *, as_claims_do: bool, alone: bool = False) -> str:
    """The claim query's plan: in a claim's transaction (``as_claims_do``: after its first
    read), or on the connections of the claims made in one statement (``alone``)."""
    query = claims._eligible_jobs(organization_owned=False)
    compiled = query.compile(dialect=world.db.write_engine.dialect)
    params = {**compiled.params, "runner_id": runner_id}

    def unit(conn: Connection) -> str:
        if as_claims_do:
            assert claims.runner_claim_state(conn, runner_id) is not None
        rows = conn.execute(sa.text(f"EXPLAIN {query}"), params)
        return "\n".join(row[0] for row in rows)

    return str(world.db.claim_sync(unit) if alone else world.write(unit))


def plain_sorts(plan: str) -> list[str]:
    """The plan's full sorts; an incremental sort of index-ordered rows is fine."""
    return [line for line in plan.splitlines() if re.match(r"\s*(->\s+)?Sort\s+\(", line)]


def test_without_the_setting_postgresql_walks_the_index_of_the_whole_claim_order(
    burst: tuple[World, int],
) -> None:
    # The premise of the setting was that with stale statistics the planner sorted every
    # pending job. Since ``index_job_pending`` ends with the id, the claims' last order key, it
    # walks the index even without the setting, which stays as a guard.
    plan = claim_plan(*burst, as_claims_do=False)
    assert not plain_sorts(plan), plan
    assert "index_job_pending" in plan, plan


def test_claims_walk_the_pending_index_in_order(burst: tuple[World, int]) -> None:
    plan = claim_plan(*burst, as_claims_do=True)
    assert not plain_sorts(plan), plan
    assert "index_job_pending" in plan, plan
    world, runner = burst
    assert world.claim(runner) is not None


def test_one_statement_claims_walk_the_pending_index_in_order(burst: tuple[World, int]) -> None:
    # Their connections never sort, for their whole session: no statement has to say so.
    world, runner = burst
    plan = claim_plan(world, runner, as_claims_do=False, alone=True)
    assert not plain_sorts(plan), plan
    assert "index_job_pending" in plan, plan
    claim = world.db.claim_sync(claims.job_claim_alone, runner, None, "n", T0, "r")
    assert claim is not None
