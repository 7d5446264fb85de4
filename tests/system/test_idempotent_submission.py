"""Idempotent ``POST /v0/run`` (docs/decisions/submission.md): one key, one submission.

A repeat within the window answers 200 with the first report and job; the same key with another
payload is a 409; twenty identical requests sent at once make one job, through two replicas on
PostgreSQL; after the window (the test's clock) the key makes a new job.

One server per engine serves the tests that need no server of their own; each works in a project
of its own (``tenant``) and counts only its own project's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from benchrunner.client import ApiError
from benchrunner.server.admin.bootstrap import bootstrap_admin
from benchrunner.server.store.engine import make_engine
from benchrunner.server.store.tables import job, project, report
from tests.harness import Deployment, ServerProcess, deploy
from tests.inprocess import serve_in_process
from tests.system.test_concurrent_creates import at_once, statuses

AT_ONCE = 20


def template_run(deployment: Deployment, **extra: Any) -> dict[str, Any]:
    return {
        "project": deployment.project,
        "spec": deployment.spec,
        "template": "bench.sleep",
        "args": {},
        **extra,
    }


def direct_run(deployment: Deployment) -> dict[str, Any]:
    return {
        "project": deployment.project,
        "settings": {"adapter": "json"},
        "results": ['{"bench": {"latency": {"value": 1.5}}}'],
        "start_time": "2026-01-01T00:00:00Z",
        "end_time": "2026-01-01T00:01:00Z",
    }


def post(
    server: ServerProcess, body: dict[str, Any], key: str | None, token: str | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or server.token}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    with httpx.Client(base_url=server.url, timeout=30) as client:
        return client.post("/v0/run", json=body, headers=headers)


def count(db: str, table: sa.Table, projects: Sequence[str] | None = None) -> int:
    """Rows of ``table`` (``job`` or ``report``); with ``projects``, only those of the
    projects with these slugs (a test's own, on a server other tests share)."""
    query = sa.select(sa.func.count()).select_from(table)
    if projects is not None:
        rows = table if table is report else table.join(report, table.c.report_id == report.c.id)
        query = (
            sa.select(sa.func.count())
            .select_from(rows.join(project, report.c.project_id == project.c.id))
            .where(project.c.slug.in_(projects))
        )
    engine = make_engine(db, writer=False)
    try:
        with engine.connect() as conn:
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture
def servers(tmp_path: Path, database_url: str) -> Iterator[tuple[Deployment, list[ServerProcess]]]:
    """The deployment and the servers to send to: one on SQLite, two replicas on PostgreSQL."""
    with deploy(tmp_path, database_url) as deployment:
        servers = [deployment.server]
        if not database_url.startswith("sqlite"):
            servers.append(deployment.add_replica("replica-b"))
        yield deployment, servers


def test_twenty_identical_submissions_at_once_make_one_job(
    servers: tuple[Deployment, list[ServerProcess]],
) -> None:
    deployment, to = servers
    auth = {"Authorization": f"Bearer {deployment.server.token}", "Idempotency-Key": "ci-42"}
    responses = at_once(to, [("/v0/run", template_run(deployment), auth)] * AT_ONCE)

    assert statuses(responses) == {201: 1, 200: AT_ONCE - 1}, [r.text for r in responses]
    bodies = [r.json() for r in responses]
    assert {(b["uuid"], b["job"]) for b in bodies} == {(bodies[0]["uuid"], bodies[0]["job"])}
    assert bodies[0]["job"] is not None
    assert sorted(b["deduplicated"] for b in bodies) == [False] + [True] * (AT_ONCE - 1)
    assert count(deployment.server.db, job) == 1
    assert count(deployment.server.db, report) == 1


def test_a_repeat_returns_the_first_report_and_another_payload_is_refused(
    tenant: Deployment,
) -> None:
    server = tenant.server
    first = post(server, template_run(tenant), "key-1")
    assert first.status_code == 201, first.text
    assert first.json()["deduplicated"] is False

    # Bencher's body field is the same key; field order and spelled-out defaults do not matter.
    again = post(
        server,
        {"args": {}, "idempotency_key": "key-1", **template_run(tenant), "hash": None},
        None,
    )
    assert again.status_code == 200, again.text
    assert again.json()["deduplicated"] is True
    assert (again.json()["uuid"], again.json()["job"]) == (
        first.json()["uuid"],
        first.json()["job"],
    )

    other = post(server, template_run(tenant, branch="feature"), "key-1")
    assert other.status_code == 409, other.text
    assert other.json()["error_code"] == "idempotency_key_reused_with_different_payload"
    assert "'key-1' was already used" in other.json()["message"]
    assert "different request body" in other.json()["message"]

    disagree = post(server, template_run(tenant, idempotency_key="key-2"), "key-3")
    assert disagree.status_code == 400
    assert "differ" in disagree.json()["message"]
    assert post(server, template_run(tenant), "").status_code == 400
    assert post(server, template_run(tenant), "k" * 256).status_code == 400

    # Keys are per user: another user's identical key is another submission.
    other_user = bootstrap_admin(server.db, "other@test.dev")
    theirs = post(server, template_run(tenant), "key-1", token=other_user)
    assert theirs.status_code == 201, theirs.text
    assert theirs.json()["job"] != first.json()["job"]
    assert count(server.db, job, [tenant.project]) == 2


def test_direct_results_and_anonymous_runs_are_deduplicated_too(tenant: Deployment) -> None:
    server = tenant.server
    direct = direct_run(tenant)
    first = post(server, direct, "direct-1")
    again = post(server, direct, "direct-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["uuid"] == first.json()["uuid"]
    assert "job" not in again.json()
    assert again.json()["results"] == first.json()["results"]

    # Anonymous runs are keyed on the source address: a repeat finds the project it created.
    anonymous = {**direct, "project": f"anon-{uuid.uuid4().hex[:8]}"}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        made = client.post("/v0/run", json=anonymous, headers={"Idempotency-Key": "anon-1"})
        repeat = client.post("/v0/run", json=anonymous, headers={"Idempotency-Key": "anon-1"})
    assert (made.status_code, repeat.status_code) == (201, 200), repeat.text
    assert repeat.json()["uuid"] == made.json()["uuid"]
    landed = made.json()["project"]["slug"]  # the anonymous project the run created
    assert count(server.db, report, [tenant.project, landed]) == 2


def test_a_key_is_reusable_after_its_window(tmp_path: Path, database_url: str) -> None:
    with serve_in_process(tmp_path, database_url) as server:
        body = {"project": "bench", "spec": "small", "template": "bench.hour"}
        with server.admin() as client:
            first = client.run(body, idempotency_key="nightly")
            server.clock.advance(299)
            assert client.run(body, idempotency_key="nightly").uuid == first.uuid
            server.clock.advance(2)  # 301 s after the key's first use
            later = client.run(body, idempotency_key="nightly")
            assert later.deduplicated is False
            assert later.job != first.job
            # The new use opened a new window, with its own payload.
            changed = {**body, "branch": "feature"}
            with pytest.raises(ApiError, match="different request body") as refused:
                client.run(changed, idempotency_key="nightly")
            assert refused.value.status == 409


def test_a_repeat_answers_exactly_what_the_submission_answered(tenant: Deployment) -> None:
    """The submission answers with the report read inside its own transaction, a repeat with
    the stored report read anew (its metrics, duet and job looked up): the same body."""
    server = tenant.server
    main = post(server, template_run(tenant, hash="a" * 40), None)
    assert main.status_code == 201, main.text
    runs = [
        template_run(tenant, branch="from-main", start_point={"branch": "main"}),
        template_run(tenant, branch="from-main", hash="b" * 40),
        direct_run(tenant),
    ]
    for index, body in enumerate(runs):
        first = post(server, body, f"same-{index}")
        again = post(server, body, f"same-{index}")
        assert (first.status_code, again.status_code) == (201, 200), again.text
        assert {**first.json(), "deduplicated": True} == again.json()
    assert first.json()["results"], "the direct run's answer carries its metrics"
    assert post(server, runs[0], "same-0").json()["branch"]["head"]["start_point"] is not None
