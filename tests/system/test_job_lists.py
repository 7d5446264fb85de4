"""``GET /v0/projects/{project}/jobs``: filters, order and pages, all in the database."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Connection

from benchrunner.client import BenchrunnerClient
from benchrunner.server.store import accounts, job_reads
from benchrunner.server.store.engine import Database
from tests.harness import Deployment


def _all(client: BenchrunnerClient, **query: Any) -> list[dict[str, Any]]:
    """Every job the query matches, read page by page (3 a page), checking the total."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        batch = client.list_jobs("bench", page=page, per_page=3, **query)
        found.extend(batch)
        if len(batch) < 3:
            assert batch.total == len(found), (batch.total, len(found))
            return found
        page += 1


def _submit_large(deployment: Deployment) -> str:
    body = {"project": "bench", "spec": "large", "template": "bench.noop", "args": {}}
    with deployment.admin() as client:
        return str(client.run({**body, "settings": {"adapter": "json"}})["job"])


@pytest.fixture
def jobs(deployment: Deployment) -> dict[str, list[str]]:
    """Jobs in several states, on two specs and two runners."""
    with deployment.admin() as client:
        client.create_spec(
            name="large", architecture="x86_64", cpu=2, memory=1 << 30, disk=1 << 30, network=False
        )
    small_runner = deployment.channel("r-small")
    large_runner = deployment.channel("r-large", specs=["large"])
    pending = [deployment.submit("bench.noop") for _ in range(4)]
    claimed_small = [deployment.submit("bench.noop")]
    large = [_submit_large(deployment) for _ in range(2)]
    assert small_runner.claim()["uuid"] == pending[0]
    claimed_small.insert(0, pending.pop(0))
    assert large_runner.claim()["uuid"] == large[0]
    with deployment.admin() as client:
        client.cancel_job("bench", pending[1])
    return {
        "pending": [pending[0], pending[2], claimed_small[1], large[1]],
        "canceled": [pending[1]],
        "claimed": [claimed_small[0], large[0]],
        "small_runner": [claimed_small[0]],
        "large_spec": large,
    }


def _uuids(found: list[dict[str, Any]]) -> list[str]:
    return [job["uuid"] for job in found]


def test_filters_narrow_the_list_in_the_database(
    deployment: Deployment, jobs: dict[str, list[str]]
) -> None:
    with deployment.admin() as client:
        everything = _all(client)
        assert len(everything) == 7
        assert set(_uuids(_all(client, status="pending"))) == set(jobs["pending"])
        assert set(_uuids(_all(client, status="claimed,canceled"))) == set(
            jobs["claimed"] + jobs["canceled"]
        )
        assert set(_uuids(_all(client, spec="large"))) == set(jobs["large_spec"])
        assert _uuids(_all(client, runner="r-small")) == jobs["small_runner"]
        both = _all(client, spec="large", status="pending")
        assert _uuids(both) == [jobs["large_spec"][1]]
        # created_after is inclusive, created_before exclusive: the two halves make the whole.
        middle = sorted(everything, key=lambda job: job["created"])[3]["created"]
        after = _all(client, created_after=middle)
        before = _all(client, created_before=middle)
        assert {j["created"] >= middle for j in after} == {True}
        assert {j["created"] < middle for j in before} == {True}
        assert sorted(_uuids(after) + _uuids(before)) == sorted(_uuids(everything))


def test_branch_filter_names_the_report_branch(deployment: Deployment) -> None:
    on_main = deployment.submit("bench.noop")
    body = {"project": "bench", "spec": "small", "template": "bench.noop", "args": {}}
    with deployment.admin() as client:
        on_feature = client.run({**body, "branch": "feature-x", "settings": {"adapter": "json"}})
        assert _uuids(_all(client, branch="feature-x")) == [on_feature["job"]]
        assert _uuids(_all(client, branch="main")) == [on_main]
        assert _all(client, branch="feature-x", status="canceled") == []


def test_order_by_creation_or_last_change_either_way(
    deployment: Deployment, jobs: dict[str, list[str]]
) -> None:
    with deployment.admin() as client:
        newest_first = _uuids(_all(client))
        oldest_first = _uuids(_all(client, direction="asc"))
        assert oldest_first == newest_first[::-1]
        by_change = _all(client, sort="modified")
        assert by_change[0]["uuid"] == jobs["canceled"][0]  # the last job to change
        changed = [job["modified"] for job in by_change]
        assert changed == sorted(changed, reverse=True)


def test_pages_do_not_overlap_and_carry_the_total(
    deployment: Deployment, jobs: dict[str, list[str]]
) -> None:
    with deployment.admin() as client:
        first = client.list_jobs("bench", page=1, per_page=4)
        second = client.list_jobs("bench", page=2, per_page=4)
        beyond = client.list_jobs("bench", page=3, per_page=4)
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


def test_bad_filters_are_400_with_a_message(deployment: Deployment) -> None:
    """One server for all the cases: each is a single request."""
    for query, message in BAD_FILTERS:
        response = httpx.get(f"{deployment.server.url}/v0/projects/bench/jobs", params=query)
        assert response.status_code == 400, (query, response.text)
        assert message in response.json()["message"], (query, response.text)


def test_the_consoles_filter_choices_and_job_places_on_each_engine(
    deployment: Deployment, jobs: dict[str, list[str]]
) -> None:
    """The console's reads beside the list: the specs and runners the project's jobs used
    (not every one of the server), and each job's branch, testbed and runner by name."""
    with deployment.admin() as client:
        client.create_spec(
            name="unused", architecture="x86_64", cpu=4, memory=1 << 30, disk=1 << 30, network=False
        )
    deployment.new_runner("r-idle")
    db = Database(deployment.server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> tuple[Any, ...]:
            project = accounts.project_get(conn, "bench")
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
    assert (specs, runners) == (["large", "small"], ["r-large", "r-small"])
    assert places[jobs["small_runner"][0]] == job_reads.JobPlace("main", "localhost", "r-small")
    assert places[jobs["canceled"][0]] == job_reads.JobPlace("main", "localhost", None)
    assert len(places) == 7
