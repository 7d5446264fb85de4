"""The HTTP client against a fake transport: paths, bodies, pagination, errors and waiting."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from benchrunner.api.jobs import Job
from benchrunner.client import ApiError, BenchrunnerClient, JobWaitTimeout
from tests.unit.report_samples import with_thresholds

TOKEN = "benchrunner_api_" + "0" * 64
Handler = Callable[[httpx.Request], httpx.Response]


JOB = {
    "uuid": "j",
    "status": "pending",
    "report": "r",
    "project": "p",
    "config": {"timeout": 60, "template": "bench.sleep"},
    "created": "2026-01-01T00:00:00Z",
    "modified": "2026-01-01T00:00:00Z",
}
"""A job as the server lists it, with only the fields every job has."""

HEALTH = {
    "status": "ok",
    "version": "0.0.0",
    "replica": "a",
    "engine": "sqlite",
    "database_reachable": True,
    "listen_connected": None,
    "queue": {"pending": 0},
    "connected_runners": 0,
    "waiting_runners": 0,
    "sweeper_leader": True,
}


def client_for(handler: Handler, token: str | None = TOKEN) -> BenchrunnerClient:
    return BenchrunnerClient("http://bench.test/", token, transport=httpx.MockTransport(handler))


def test_requests_carry_the_token_and_quote_references() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        named = {"uuid": "u", "name": "n", "slug": "s"}
        if request.url.path.startswith("/v0/projects/"):
            return httpx.Response(200, json=named | {"organization": "o", "visibility": "public"})
        return httpx.Response(200, json=named)

    with client_for(handler) as client:
        client.get_project("a/b")
        client.update_runner("r1", paused=True)
    assert seen[0].url.raw_path == b"/v0/projects/a%2Fb"
    assert seen[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert seen[1].method == "PATCH"
    assert json.loads(seen[1].content) == {"paused": True}


def test_no_token_sends_no_authorization_header() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert "authorization" not in request.headers
        return httpx.Response(200, json=HEALTH)

    with client_for(handler, token=None) as client:
        assert client.health().status == "ok"


def test_lists_are_pages_with_the_total_count() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["page"] == "2"
        assert request.url.params["per_page"] == "3"
        assert request.url.params["status"] == "pending"
        return httpx.Response(200, json=[JOB], headers={"X-Total-Count": "4"})

    with client_for(handler) as client:
        page = client.list_jobs("demo", status="pending", page=2, per_page=3)
    assert [job.model_dump(exclude_unset=True) for job in page] == [JOB]
    assert page.total == 4


def test_error_bodies_become_api_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"message": "spec 'x' not found", "request_id": "r-1", "error_code": "not_found"}
        return httpx.Response(404, json=body)

    with client_for(handler) as client, pytest.raises(ApiError) as caught:
        client.get_spec("x")
    assert (caught.value.status, caught.value.message) == (404, "spec 'x' not found")
    assert (caught.value.error_code, caught.value.request_id) == ("not_found", "r-1")
    assert str(caught.value) == "spec 'x' not found"


def test_non_json_errors_keep_the_status() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>\n Bad   gateway</html>")

    with client_for(handler) as client, pytest.raises(ApiError) as caught:
        client.health()
    assert caught.value.status == 502
    assert caught.value.message == "HTTP 502: <html> Bad gateway</html>"


def test_connection_failures_are_status_zero() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    with client_for(handler) as client, pytest.raises(ApiError) as caught:
        client.health()
    assert caught.value.status == 0
    assert caught.value.message == "cannot reach server at http://bench.test: Connection refused"


def test_deletes_return_nothing() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "DELETE"
        assert request.url.path == "/v0/runners/r/specs/s"
        return httpx.Response(204)

    with client_for(handler) as client:
        client.remove_runner_spec("r", "s")


def test_run_sends_the_body_and_idempotency_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["idempotency-key"] == "k-1"
        assert json.loads(request.content) == {"project": "demo", "template": "bench.noop"}
        return httpx.Response(201, json={**with_thresholds(), "job": "job"})

    with client_for(handler) as client:
        report = client.run({"project": "demo", "template": "bench.noop"}, idempotency_key="k-1")
    assert report.job == "job"


def _job_sequence(statuses: list[str]) -> Handler:
    reads = iter(statuses)
    last: dict[str, str] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        last["status"] = next(reads, last.get("status", statuses[-1]))
        return httpx.Response(200, json={**JOB, "status": last["status"]})

    return handler


def test_wait_for_job_reports_each_change_and_stops_at_a_final_status() -> None:
    changes: list[str] = []

    def on_status(job: Job) -> None:
        changes.append(job.status)

    handler = _job_sequence(["pending", "pending", "claimed", "running", "running", "processed"])
    with client_for(handler) as client:
        final = client.wait_for_job("demo", "j", 5, on_status, poll_interval=0)
    assert final.status == "processed"
    assert changes == ["pending", "claimed", "running", "processed"]


@pytest.mark.parametrize("status", ["failed", "canceled"])
def test_wait_for_job_stops_at_failed_and_canceled(status: str) -> None:
    with client_for(_job_sequence(["running", status])) as client:
        assert client.wait_for_job("demo", "j", 5, poll_interval=0).status == status


def test_wait_for_job_times_out_with_the_last_read() -> None:
    with client_for(_job_sequence(["running"])) as client, pytest.raises(JobWaitTimeout) as caught:
        client.wait_for_job("demo", "j", 0.05, poll_interval=0.01)
    assert caught.value.job.status == "running"
    assert isinstance(caught.value, OSError)  # the CLI reports it as one error line
