"""A bisect threshold's alerts over real HTTP (docs/how-to/bisect.md), where their bisection
cannot start: each alert says why, and a later PATCH of the report asks again. The bisection
that does start, with a real runner, is in ``test_bisection``.

The server runs in this process on a ``ManualClock``: the test moves its bisection driver's
looks instead of sleeping through them."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import wait_until
from tests.inprocess import InProcessServer, serve_in_process

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
HASHES = [f"{digit}" * 40 for digit in "abcdef"]


class Bench:
    """Project ``bench`` of an in-process server, as its admin: direct runs of benchmark
    ``b`` judged by a static threshold (over 1000 alerts) on main/ci."""

    def __init__(self, server: InProcessServer) -> None:
        self.server = server
        self.http = httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30
        )
        self.minute = 0

    def run(self, latency: float, commit: str, **extra: Any) -> dict[str, Any]:
        self.minute += 1
        at = (T0 + dt.timedelta(minutes=self.minute)).isoformat()
        body = {
            "project": "bench",
            "branch": "main",
            "testbed": "ci",
            "hash": commit,
            "start_time": at,
            "end_time": at,
            "settings": {"adapter": "json"},
            "results": [json.dumps({"b": {"latency": {"value": latency}}})],
            "thresholds": {"models": {"latency": {"test": "static", "upper_boundary": 1000}}},
            **extra,
        }
        answer = self.http.post("/v0/run", json=body)
        assert answer.status_code == 201, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def send(self, method: str, path: str, **body: Any) -> Any:
        answer = self.http.request(method, f"/v0/projects/bench{path}", json=body or None)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def bisection_of(self, alert: str, state: str) -> dict[str, Any]:
        """The alert's ``bisection`` once it is in ``state``, the driver's looks moved on."""

        def look() -> dict[str, Any] | None:
            found: dict[str, Any] | None = self.send("GET", f"/alerts/{alert}")["bisection"]
            if found is not None and found["state"] == state:
                return found
            self.server.clock.advance(1.0)
            return None

        found: dict[str, Any] = wait_until(look, timeout=30, message=f"bisection {state}")
        return found


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    url = f"sqlite:///{tmp_path / 'benchrunner.db'}"
    with serve_in_process(tmp_path, url, sweep_interval=1.0) as server:
        project = Bench(server)
        try:
            yield project
        finally:
            project.http.close()


def test_an_alert_says_why_its_bisection_cannot_start_and_a_patch_asks_again(
    bench: Bench,
) -> None:
    bench.run(10, HASHES[0])
    (threshold,) = bench.send("GET", "/thresholds")
    assert threshold["bisect"] is False
    model = {"test": "static", "upper_boundary": 1000}
    made = bench.send("PUT", f"/thresholds/{threshold['uuid']}", **model, bisect=True)
    assert made["bisect"] is True
    bench.run(10, HASHES[1])
    # A run's own threshold models keep the threshold's bisect as it is.
    assert bench.send("GET", f"/thresholds/{threshold['uuid']}")["bisect"] is True

    alerted = bench.run(5000, HASHES[2], bisect_range=["0123abc", HASHES[2]])
    (raised,) = alerted["alerts"]
    assert raised["bisect"] == {"state": "pending", "reason": None}
    skipped = bench.bisection_of(raised["uuid"], "skipped")
    assert "no recipe" in skipped["reason"] and "bisect_image" in skipped["reason"], skipped
    assert skipped["text"].startswith("not bisected: no recipe"), skipped

    bench.send("PATCH", f"/reports/{alerted['uuid']}", bisect_image="sortlib:{commit}")
    again = bench.bisection_of(raised["uuid"], "skipped")
    assert "no fallback spec" in again["reason"], again
    report = bench.send("GET", f"/reports/{alerted['uuid']}")
    assert report["alerts"][0]["bisect"]["state"] == "skipped"

    # A range of the bad commit alone leaves nothing to search.
    alone = bench.run(5000, HASHES[3], bisect_range=[HASHES[3]])
    (alert,) = alone["alerts"]
    said = bench.bisection_of(alert["uuid"], "skipped")
    assert f"{HASHES[3]} is the only commit since the previous report" in said["reason"], said

    refused = bench.http.patch(
        f"/v0/projects/bench/reports/{alone['uuid']}", json={"bisect_image": "sortlib:latest"}
    )
    assert refused.status_code == 400 and "{commit}" in refused.text, refused.text
    refused = bench.http.patch(
        f"/v0/projects/bench/reports/{alone['uuid']}", json={"bisect_range": ["-rf"]}
    )
    assert refused.status_code == 400, refused.text

    # Without bisect, an alert asks for nothing.
    bench.send("PUT", f"/thresholds/{threshold['uuid']}", **model, bisect=False)
    (plain,) = bench.run(5000, HASHES[4], bisect_range=["0123abc", HASHES[4]])["alerts"]
    assert plain["bisect"] is None
    assert bench.send("GET", f"/alerts/{plain['uuid']}")["bisection"] is None
