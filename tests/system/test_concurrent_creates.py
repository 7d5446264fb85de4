"""First submissions racing through two replicas on one PostgreSQL database
(docs/decisions/replicas.md).

Forty runs sent at once, half to each replica, all naming the same new branch, testbed,
benchmarks and measures (or the same new anonymous project), must all succeed and leave one
row of each. Before ``INSERT … ON CONFLICT`` some of them answered 500.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import (
    benchmark,
    branch,
    job,
    measure,
    organization,
    project,
    report,
    spec,
    testbed,
)
from tests.databases import postgres_database
from tests.harness import Deployment, ServerProcess, deploy

pytestmark = pytest.mark.postgresql

AT_ONCE = 40
ROUNDS = 3


@pytest.fixture
def two_replicas(tmp_path: Path) -> Iterator[tuple[Deployment, ServerProcess]]:
    with postgres_database() as url, deploy(tmp_path, url) as first:
        yield first, first.add_replica("replica-b")


Post = tuple[str, dict[str, Any], dict[str, str]]
"""A request to send: path, JSON body, headers."""


def at_once(servers: list[ServerProcess], posts: list[Post]) -> list[httpx.Response]:
    """The posts released together behind a barrier, alternating between servers, each on
    its own connection."""
    count = len(posts)
    clients = [
        httpx.Client(base_url=servers[i % len(servers)].url, timeout=60) for i in range(count)
    ]
    barrier = threading.Barrier(count)
    responses: list[httpx.Response | BaseException] = [RuntimeError("not sent")] * count

    def send(index: int) -> None:
        path, body, headers = posts[index]
        try:
            barrier.wait(timeout=30)
            responses[index] = clients[index].post(path, json=body, headers=headers)
        except BaseException as exc:  # reported below
            responses[index] = exc

    threads = [threading.Thread(target=send, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for client in clients:
        client.close()
    failures = [r for r in responses if not isinstance(r, httpx.Response)]
    assert not failures, failures
    return [r for r in responses if isinstance(r, httpx.Response)]


def statuses(responses: list[httpx.Response]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for response in responses:
        counts[response.status_code] = counts.get(response.status_code, 0) + 1
    return counts


def test_forty_first_submissions_through_two_replicas_make_one_row_each(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    servers = [deployment.server, replica_b]
    auth = {"Authorization": f"Bearer {deployment.server.token}"}
    engine = make_engine(deployment.server.db, writer=False)
    try:
        for round_ in range(ROUNDS):
            names = [f"bench-{round_}-{i}" for i in range(5)]
            results = (
                "{"
                + ", ".join(
                    f'"{name}": {{"latency": {{"value": 1}}, "size-{round_}": {{"value": 2}}}}'
                    for name in reversed(names)
                )
                + "}"
            )

            direct: dict[str, Any] = {
                "project": deployment.project,
                "branch": f"feature-{round_}",
                "testbed": f"box-{round_}",
                "settings": {"adapter": "json"},
                "results": [results],
                "start_time": "2026-01-01T00:00:00Z",
                "end_time": "2026-01-01T00:01:00Z",
            }
            # Half of them as runner jobs: these create only the branch and testbed.
            template: dict[str, Any] = {
                "project": deployment.project,
                "branch": f"feature-{round_}",
                "testbed": f"box-{round_}",
                "spec": deployment.spec,
                "template": "bench.noop",
            }
            posts = [("/v0/run", template if i % 2 else direct, auth) for i in range(AT_ONCE)]
            responses = at_once(servers, posts)
            assert statuses(responses) == {201: AT_ONCE}, [r.text for r in responses]
            with engine.connect() as conn:

                def count(table: sa.Table, name: str) -> int:
                    return int(
                        conn.execute(
                            sa.select(sa.func.count())
                            .select_from(table)
                            .where(table.c.name == name)
                        ).scalar_one()
                    )

                assert count(branch, f"feature-{round_}") == 1
                assert count(testbed, f"box-{round_}") == 1
                assert [count(benchmark, name) for name in names] == [1] * 5
                assert count(measure, f"size-{round_}") == 1
                assert count(measure, "Latency") == 1  # Bencher's name of the built-in measure
                reports = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(report.join(branch, branch.c.id == report.c.branch_id))
                    .where(branch.c.name == f"feature-{round_}")
                ).scalar_one()
                assert reports == AT_ONCE
    finally:
        engine.dispose()


def test_forty_anonymous_first_runs_to_one_new_project_land_in_one_project(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    servers = [deployment.server, replica_b]
    engine = make_engine(deployment.server.db, writer=False)
    try:
        for round_ in range(ROUNDS):
            slug = f"drive-by-{round_}"

            body = {"project": slug, "spec": deployment.spec, "template": "bench.noop"}
            responses = at_once(servers, [("/v0/run", body, {})] * AT_ONCE)
            assert statuses(responses) == {201: AT_ONCE}, [r.text for r in responses]
            assert len({r.json()["project"]["uuid"] for r in responses}) == 1
            landed = responses[0].json()["project"]["slug"]
            assert landed.startswith(f"{slug}-")  # an anonymous project's slug has a suffix
            with engine.connect() as conn:
                projects = conn.execute(
                    sa.select(project.c.slug).where(project.c.name == slug)
                ).scalars()
                assert list(projects) == [landed]
                # No organization was left behind by the runs that found the project taken.
                orgs = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(organization)
                    .where(organization.c.name == slug)
                ).scalar_one()
                assert orgs == 1
                jobs = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(
                        job.join(report, report.c.id == job.c.report_id).join(
                            project, project.c.id == report.c.project_id
                        )
                    )
                    .where(project.c.slug == landed)
                ).scalar_one()
                assert jobs == AT_ONCE
    finally:
        engine.dispose()


def test_organizations_and_specs_created_at_once_with_one_name_get_distinct_slugs(
    two_replicas: tuple[Deployment, ServerProcess],
) -> None:
    deployment, replica_b = two_replicas
    servers = [deployment.server, replica_b]
    auth = {"Authorization": f"Bearer {deployment.server.token}"}

    organization_body: dict[str, Any] = {"name": "Twins"}
    spec_body: dict[str, Any] = {
        "name": "Twins",
        "architecture": "x86_64",
        "cpu": 1,
        "memory": 1,
        "disk": 1,
    }
    posts = [
        ("/v0/organizations", organization_body, auth) if i % 2 else ("/v0/specs", spec_body, auth)
        for i in range(AT_ONCE)
    ]
    responses = at_once(servers, posts)
    assert statuses(responses) == {201: AT_ONCE}, [r.text for r in responses]
    slugs = [r.json()["slug"] for r in responses]
    for kind in (0, 1):
        mine = slugs[kind::2]
        assert len(set(mine)) == len(mine) == AT_ONCE // 2
        assert "twins" in mine and all(s == "twins" or s.startswith("twins-") for s in mine)
    engine = make_engine(deployment.server.db, writer=False)
    try:
        with engine.connect() as conn:
            for table in (organization, spec):
                count = conn.execute(
                    sa.select(sa.func.count()).select_from(table).where(table.c.name == "Twins")
                ).scalar_one()
                assert count == AT_ONCE // 2
    finally:
        engine.dispose()
