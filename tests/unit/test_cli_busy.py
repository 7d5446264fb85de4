"""``--retry-on-busy`` against a fake transport: each wait follows ``Retry-After`` within its
bounds, and every attempt resends the same body under the same idempotency key."""

from __future__ import annotations

import json

import httpx
import pytest

from benchrunner.api.run import RunBody
from benchrunner.cli.busy import MAX_WAIT, MIN_WAIT, submit_run
from benchrunner.client import ApiError, request_json
from tests.unit.report_samples import with_thresholds
from tests.unit.test_cli_client import Handler, client_for

BODY = RunBody(project="demo", spec="small", template="bench.noop")


def busy_then_accepted(retry_after: list[str | None]) -> tuple[list[httpx.Request], Handler]:
    seen: list[httpx.Request] = []
    answers = iter(retry_after)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        wait = next(answers, "done")
        if wait == "done":
            return httpx.Response(201, json={**with_thresholds(), "job": "job"})
        headers = {} if wait is None else {"Retry-After": wait}
        body = {"message": "the server's job queue is full", "error_code": "queue_full"}
        return httpx.Response(429, json=body, headers=headers)

    return seen, handler


def test_retry_on_busy_waits_as_asked_within_bounds_and_keeps_its_key() -> None:
    seen, handler = busy_then_accepted(["5", "600", None, "0"])
    waits: list[float] = []
    with client_for(handler) as client:
        report = submit_run(client, BODY, retry_on_busy=True, sleep=waits.append)
    assert report.job == "job"
    assert waits == [5, MAX_WAIT, MIN_WAIT, MIN_WAIT]
    assert len({request.headers["idempotency-key"] for request in seen}) == 1
    assert all(json.loads(request.content) == request_json(BODY) for request in seen)


def test_without_retry_on_busy_a_full_queue_is_the_answer() -> None:
    seen, handler = busy_then_accepted(["7"])
    with client_for(handler) as client, pytest.raises(ApiError) as refused:
        submit_run(client, BODY, retry_on_busy=False, sleep=lambda _: None)
    assert (refused.value.status, refused.value.retry_after) == (429, 7.0)
    assert refused.value.error_code == "queue_full"
    assert len(seen) == 1
