"""What the console's perf, report, alert and threshold tests share: a project of their own on the
module's server, a history with a regression submitted through ``POST /v0/run`` (local results,
as the system tests of alerts submit them)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Literal

from tests.harness import Deployment

DAY = dt.timedelta(days=1)
HISTORY = (100.0, 101.0, 99.0, 100.5, 99.5)
REGRESSION = 150.0
THRESHOLDS = {"models": {"latency": {"test": "percentage", "upper_boundary": 0.1}}}


@dataclass(frozen=True)
class Regressed:
    """A project whose ``sort`` benchmark regressed in its last report."""

    project: str
    start: dt.datetime
    reports: list[dict[str, Any]]

    @property
    def last(self) -> dict[str, Any]:
        return self.reports[-1]

    @property
    def alert(self) -> str:
        [alert] = self.last["alerts"]
        return str(alert["uuid"])

    def perf_url(self, **extra: str) -> str:
        start = self.start.date().isoformat()
        end = (self.start + len(self.reports) * DAY).date().isoformat()
        query = "&".join(f"{k}={v}" for k, v in extra.items())
        return (
            f"/console/projects/{self.project}/perf?branches=main&testbeds=box&benchmarks=sort"
            f"&measures=latency&start_time={start}&end_time={end}" + (f"&{query}" if query else "")
        )


def submit_regression(
    console: Deployment,
    project: str,
    visibility: Literal["public", "private"] = "public",
    hashes: list[str] | None = None,
) -> Regressed:
    """A project (public unless told) with a history of ``sort`` (and a steady ``hash``) under
    a 10 % percentage threshold on latency (memory has none), then a report where ``sort`` is
    50 % slower: one upper alert. ``hashes``: each report's version, oldest first."""
    with console.admin() as client:
        client.create_project("acme", project, visibility)
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - 30 * DAY
    sent = []
    with console.admin() as client:
        for day, value in enumerate((*HISTORY, REGRESSION)):
            at = (start + day * DAY).isoformat()
            results = {
                "sort": {"latency": {"value": value}, "memory": {"value": 4096.0}},
                "hash": {"latency": {"value": 50.0}},
            }
            sent.append(
                client.run(
                    {
                        "project": project,
                        "branch": "main",
                        "testbed": "box",
                        "start_time": at,
                        "end_time": at,
                        "settings": {"adapter": "json"},
                        "results": [json.dumps(results)],
                        "thresholds": THRESHOLDS,
                        **({"hash": hashes[day]} if hashes else {}),
                    }
                ).model_dump(mode="json", exclude_unset=True)
            )
    assert [a["limit"] for a in sent[-1]["alerts"]] == ["upper"], sent[-1]["alerts"]
    return Regressed(project, start, sent)
