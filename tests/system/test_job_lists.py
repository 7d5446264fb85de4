"""``GET /v0/projects/{project}/jobs``: filters, order and pages, all in the database.

One server per engine serves the whole module; each test lists the jobs of a project of its own
(``tenant``), on specs and runners named after it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Connection

from benchrunner.api.jobs import Job
from benchrunner.client import BenchrunnerClient
from benchrunner.server.store import accounts, job_reads
from benchrunner.server.store.engine import Database
from tests.harness import Deployment


def _all(client: BenchrunnerClient, project: str, **query: Any) -> list[Job]:
    """Every job of ``project`` the query matches, read page by page (3 a page), checking the
    total."""
    found: list[Job] = []
    page = 1
    while True:
        batch = client.list_jobs(project, page=page, per_page=3, **query)
        found.extend(batch)
        if len(batch) < 3:
            assert batch.total == len(found), (batch.total, len(found))
            return found
        page += 1


def large(own: Deployment) -> str:
    """The test's second spec."""
    return f"{own.spec}-large"


def runner(own: Deployment, name: str) -> str:
    """The slug of the test's runner ``name`` (the tenant names its runners after the test)."""
    return f"{own.names}{name}"


def _submit_large(tenant: Deployment) -> str:
    body = {"project": tenant.project, "spec": large(tenant), "template": "bench.noop", "args": {}}
    with tenant.admin() as client:
        return str(client.run({**body, "settings": {"adapter": "json"}}).job)


@pytest.fixture
def jobs(tenant: Deployment) -> dict[str, list[str]]:
    """Jobs in several states, on two specs and two runners."""
    with tenant.admin() as client:
        client.create_spec(
            name=large(tenant),
            architecture="x86_64",
            cpu=2,
            memory=1 << 30,
            disk=1 << 30,
            network=False,
        )
    small_runner = tenant.channel("r-small")
    large_runner = tenant.channel("r-large", specs=[large(tenant)])
    pending = [tenant.submit("bench.noop") for _ in range(4)]
    claimed_small = [tenant.submit("bench.noop")]
    on_large = [_submit_large(tenant) for _ in range(2)]
    assert small_runner.claim()["uuid"] == pending[0]
    claimed_small.insert(0, pending.pop(0))
    assert large_runner.claim()["uuid"] == on_large[0]
    with tenant.admin() as client:
        client.cancel_job(tenant.project, pending[1])
    return {
        "pending": [pending[0], pending[2], claimed_small[1], on_large[1]],
        "canceled": [pending[1]],
        "claimed": [claimed_small[0], on_large[0]],
        "small_runner": [claimed_small[0]],
        "large_spec": on_large,
    }


def _uuids(found: list[Job]) -> list[str]:
    return [job.uuid for job in found]


def test_filters_narrow_the_list_in_the_database(
    tenant: Deployment, jobs: dict[str, list[str]]
) -> None:
    with tenant.admin() as client:
        everything = _all(client, tenant.project)
        assert len(everything) == 7
        assert set(_uuids(_all(client, tenant.project, status="pending"))) == set(jobs["pending"])
        assert set(_uuids(_all(client, tenant.project, status="claimed,canceled"))) == set(
            jobs["claimed"] + jobs["canceled"]
        )
        assert set(_uuids(_all(client, tenant.project, spec=large(tenant)))) == set(
            jobs["large_spec"]
        )
        assert (
            _uuids(_all(client, tenant.project, runner=runner(tenant, "r-small")))
            == jobs["small_runner"]
        )
        both = _all(client, tenant.project, spec=large(tenant), status="pending")
        assert _uuids(both) == [jobs["large_spec"][1]]
        # created_after is inclusive, created_before exclusive: the two halves make the whole.
        middle = sorted(everything, key=lambda job: job.created)[3].created
        after = _all(client, tenant.project, created_after=middle)
        before = _all(client, tenant.project, created_before=middle)
        assert {j.created >= middle for j in after} == {True}
        assert {j.created < middle for j in before} == {True}
        assert sorted(_uuids(after) + _uuids(before)) == sorted(_uuids(everything))


def test_branch_filter_names_the_report_branch(tenant: Deployment) -> None:
    on_main = tenant.submit("bench.noop")
    body = {"project": tenant.project, "spec": tenant.spec, "template": "bench.noop", "args": {}}
    with tenant.admin() as client:
        on_feature = client.run({**body, "branch": "feature-x", "settings": {"adapter": "json"}})
        assert _uuids(_all(client, tenant.project, branch="feature-x")) == [on_feature.job]
        assert _uuids(_all(client, tenant.project, branch="main")) == [on_main]
        assert _all(client, tenant.project, branch="feature-x", status="canceled") == []


def test_order_by_creation_or_last_change_either_way(
    tenant: Deployment, jobs: dict[str, list[str]]
) -> None:
    with tenant.admin() as client:
        newest_first = _uuids(_all(client, tenant.project))
        oldest_first = _uuids(_all(client, tenant.project, direction="asc"))
        assert oldest_first == newest_first[::-1]
        by_change = _all(client, tenant.project, sort="modified")
        assert by_change[0].uuid == jobs["canceled"][0]  # the last job to change
        changed = [job.modified for job in by_change]
        assert changed == sorted(changed, reverse=True)


def test_pages_do_not_overlap_and_carry_the_total(
    tenant: Deployment, jobs: dict[str, list[str]]
) -> None:
    with tenant.admin() as client:
        first = client.list_jobs(tenant.project, page=1, per_page=4)
        second = client.list_jobs(tenant.project, page=2, per_page=4)
        beyond = client.list_jobs(tenant.project, page=3, per_page=4)
    assert (first.total, second.total, beyond.total) == (7, 7, 7)
    assert (len(first), len(second), len(beyond)) == (4, 3, 0)
    assert not set(_uuids(first)) & set(_uuids(second))


BAD_FILTERS: list[tuple[dict[str, str], str]] = [
    ({"status": "pending,bogus"}, "unknown job status 'bogus'"),
    ({"spec": "no-such-spec"}, "no spec 'no-such-spec'"),
    ({"runner": "no-such-runner"}, "no runner 'no-such-runner'"),
    ({"branch": "no-such-branch"}, "no branch 'no-such-branch'"),
    ({"created_after": "yesterday"}, "created_after"),
    (
        {"created_after": "2026-01-02T00:00:00Z", "created_before": "2026-01-01T00:00:00Z"},
        "created_after must be earlier than created_before",
    ),
    ({"sort": "name"}, "sort"),
    ({"direction": "up"}, "direction"),
    ({"per_page": "0"}, "per_page"),
]


def test_bad_filters_are_400_with_a_message(tenant: Deployment) -> None:
    """One server for all the cases: each is a single request."""
    for query, message in BAD_FILTERS:
        response = httpx.get(f"{tenant.server.url}/v0/projects/{tenant.project}/jobs", params=query)
        assert response.status_code == 400, (query, response.text)
        assert message in response.json()["message"], (query, response.text)


def test_the_consoles_filter_choices_and_job_places_on_each_engine(
    tenant: Deployment, jobs: dict[str, list[str]]
) -> None:
    """The console's reads beside the list: the specs and runners the project's jobs used
    (not every one of the server), and each job's branch, testbed and runner by name."""
    with tenant.admin() as client:
        client.create_spec(
            name=f"{tenant.spec}-unused",
            architecture="x86_64",
            cpu=4,
            memory=1 << 30,
            disk=1 << 30,
            network=False,
        )
    tenant.new_runner("r-idle")
    db = Database(tenant.server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> tuple[Any, ...]:
            project = accounts.project_get(conn, tenant.project)
            assert project is not None
            found, _ = job_reads.job_page(
                conn,
                project.id,
                job_reads.JobFilter(),
                sort="created",
                ascending=True,
                limit=100,
                offset=0,
            )
            places = job_reads.job_places(conn, [d.job.id for d in found])
            by_uuid = {str(d.job.uuid): places[d.job.id] for d in found}
            return job_reads.project_job_specs_and_runners(conn, project.id), by_uuid

        (specs, runners), places = db.read_sync(unit)
    finally:
        db.close()
    used_runners = [runner(tenant, "r-large"), runner(tenant, "r-small")]
    assert (specs, runners) == (sorted([large(tenant), tenant.spec]), used_runners)
    small = job_reads.JobPlace("main", "localhost", runner(tenant, "r-small"))
    assert places[jobs["small_runner"][0]] == small
    assert places[jobs["canceled"][0]] == job_reads.JobPlace("main", "localhost", None)
    assert len(places) == 7
