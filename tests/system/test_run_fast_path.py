"""``POST /v0/run`` answered by its fast path (``routes/run_fast_path.py``) gives what the
FastAPI route gives: the same status, headers (but the date) and bytes of the body (but the
identifiers and times of each submission), for submissions, repeats and every kind of error,
and the same route label in the request metrics. Each request is sent twice, once through the
fast path and once with it bypassed, to one in-process server. A case marked ``fast`` is one
the fast path answers itself; it hands the others (malformed bodies) to the route."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchrunner.server.routes import run_fast_path
from benchrunner.server.routes.run_fast_path import RunFastPath
from tests.harness import wait_until
from tests.inprocess import InProcessServer, serve_in_process
from tests.metrics_scrape import scrape

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
VARYING_HEADERS = {"date", "content-length"}
"""Headers that differ between two answers by design: the clock, and the length of a body
whose times differ in their digits."""
GOOD = {
    "project": "bench",
    "spec": "small",
    "template": "bench.noop",
    "settings": {"adapter": "json"},
}


@contextlib.contextmanager
def _bypassed(server: InProcessServer) -> Iterator[None]:
    """The fast path taken out of the middleware chain: requests go to the FastAPI route."""
    outer: Any = server.app.middleware_stack
    while not isinstance(outer.app, RunFastPath):
        outer = outer.app
    fast = outer.app
    outer.app = fast.app
    try:
        yield
    finally:
        outer.app = fast


def _comparable(body: bytes, branch: str) -> str:
    """An answer's bytes with what differs between two submissions by design (identifiers,
    times, the branch each went to) replaced by placeholders."""
    text = UUID.sub("<uuid>", body.decode())
    return TIME.sub("<time>", text).replace(branch, "<branch>")


Answer = tuple[int, dict[str, str], str]


def _answer(server: InProcessServer, branch: str, **request: Any) -> Answer:
    """Status, headers and body of one ``POST /v0/run``, comparable across submissions."""
    headers = {"Authorization": f"Bearer {server.token}", **request.pop("headers", {})}
    response = httpx.post(f"{server.url}/v0/run", headers=headers, timeout=30, **request)
    kept = {k: v for k, v in response.headers.items() if k not in VARYING_HEADERS}
    return response.status_code, kept, _comparable(response.content, branch)


DIRECT = {
    "project": "bench",
    "branch": "{branch}",
    "testbed": "laptop",
    "settings": {"adapter": "json"},
    "results": ['{"sort": {"latency": {"value": 12.5, "lower_value": 11, "upper_value": 14}}}'],
    "start_time": "2026-01-02T03:04:05Z",
    "end_time": "2026-01-02T04:04:06.5+01:00",
}
CASES: dict[str, dict[str, Any]] = {
    "results given directly": {"status": 201, "json": DIRECT, "fast": True},
    "a new report and job": {"status": 201, "json": {**GOOD, "branch": "{branch}"}, "fast": True},
    "a repeat of a key": {
        "status": 200,
        "json": {**GOOD, "branch": "{branch}"},
        "headers": {"Idempotency-Key": "key-{branch}"},
        "twice": True,
        "fast": True,
    },
    "an unknown spec": {"status": 400, "json": {**GOOD, "spec": "nope"}, "fast": True},
    "an unknown project": {"status": 404, "json": {**GOOD, "project": "nope"}, "fast": True},
    "an unsupported adapter": {
        "status": 400,
        "json": {**GOOD, "settings": {"adapter": "nope"}},
        "fast": True,
    },
    "an empty Authorization header": {
        "status": 401,
        "json": GOOD,
        "headers": {"Authorization": ""},
        "fast": True,
    },
    "a bad token": {
        "status": 401,
        "json": GOOD,
        "headers": {"Authorization": "Bearer br_bad"},
        "fast": True,
    },
    "a field of the wrong type": {"status": 400, "json": {**GOOD, "spec": 3}},
    "a body that is not an object": {"status": 400, "json": [1, 2]},
    "a body that is not JSON": {
        "status": 400,
        "content": b"{not json",
        "headers": {"content-type": "application/json"},
    },
    "a body nested too deep to parse": {
        "status": 400,
        "content": b'{"args": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "headers": {"content-type": "application/json"},
    },
    "a body declared as text": {
        "status": 400,
        "content": b"{}",
        "headers": {"content-type": "text/plain"},
    },
    "no body": {"status": 400, "content": b"", "headers": {"content-type": "application/json"}},
    "an invalid token with an invalid body": {
        "status": 401,
        "json": {"spec": 3},
        "headers": {"Authorization": "Bearer br_bad"},
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    """One server for every case: each case submits to branches of its own."""
    tmp = tmp_path_factory.mktemp("fast-path")
    with serve_in_process(tmp, f"sqlite:///{tmp / 'bench.db'}") as running:
        yield running


def _run_requests(server: InProcessServer) -> float:
    """How many requests the metrics have counted under the route label ``/v0/run``."""
    return scrape(server.url).value(
        "benchrunner_http_request_duration_seconds_count", route="/v0/run"
    )


@pytest.mark.parametrize("case", list(CASES))
def test_the_fast_path_answers_as_the_route_does(
    server: InProcessServer, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = dict(CASES[case])
    status, twice, fast = spec.pop("status"), spec.pop("twice", False), spec.pop("fast", False)
    submitted: list[Any] = []
    submit = RunFastPath._submit

    async def counted(self: RunFastPath, request: Any, body: Any) -> Any:
        submitted.append(body)
        return await submit(self, request, body)

    monkeypatch.setattr(RunFastPath, "_submit", counted)
    index = list(CASES).index(case)

    def answer(branch: str) -> Answer:
        if twice:
            _answer(server, branch, **_filled(spec, branch))
        return _answer(server, branch, **_filled(spec, branch))

    counted_before = _run_requests(server)
    through_fast_path = answer(f"fast-branch-{index}")
    assert len(submitted) == (1 + twice if fast else 0)
    # The metrics middleware observes a request once its answer has gone out.
    wait_until(
        lambda: _run_requests(server) == counted_before + 1 + twice,
        message="the fast path's requests counted under /v0/run",
    )
    with _bypassed(server):
        through_route = answer(f"route-branch-{index}")
    assert len(submitted) == (1 + twice if fast else 0)
    assert through_fast_path == through_route
    assert through_fast_path[0] == status, through_fast_path
    # Every request of this case counted before the next case reads the count.
    wait_until(
        lambda: _run_requests(server) == counted_before + 2 * (1 + twice),
        message="the route's requests counted under /v0/run",
    )
    assert "unmatched" not in scrape(server.url).labels_of(
        "benchrunner_http_request_duration_seconds_count", "route"
    )


def _filled(spec: Any, branch: str) -> Any:
    """``spec`` with ``{branch}`` in its strings replaced."""
    if isinstance(spec, dict):
        return {k: _filled(v, branch) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_filled(v, branch) for v in spec]
    if isinstance(spec, str):
        return spec.replace("{branch}", branch)
    return spec


def test_the_server_refuses_to_start_when_the_route_takes_what_the_fast_path_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_fast_path, "ROUTE_PARAMETERS", (*run_fast_path.ROUTE_PARAMETERS, "new"))
    with pytest.raises(RuntimeError, match="update run_fast_path"):
        RunFastPath(lambda *_: None)  # type: ignore[arg-type]
