"""A project's API over real HTTP for the system tests of thresholds, alerts and reports:
direct runs one minute apart on main/ci from ``T0``, and the reads the tests make of a report."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx

from tests.harness import Deployment

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Api:
    """The project's API as the admin (or anonymously), answers unchecked."""

    def __init__(self, deployment: Deployment, project: str, *, anonymous: bool = False) -> None:
        headers = {} if anonymous else {"Authorization": f"Bearer {deployment.server.token}"}
        self.http = httpx.Client(base_url=deployment.server.url, headers=headers, timeout=30)
        self.slug = project
        self.project = f"/v0/projects/{project}"
        self.minute = 0

    def run(self, results: dict[str, Any] | list[dict[str, Any]], **body: Any) -> dict[str, Any]:
        """A direct run one minute after the previous one; 201 expected."""
        answer = self.run_raw(results, **body)
        assert answer.status_code == 201, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def run_raw(
        self, results: dict[str, Any] | list[dict[str, Any]], **body: Any
    ) -> httpx.Response:
        self.minute += 1
        at = (T0 + dt.timedelta(minutes=self.minute)).isoformat()
        iterations = results if isinstance(results, list) else [results]
        payload = {
            "project": self.slug,
            "branch": "main",
            "testbed": "ci",
            "start_time": at,
            "end_time": at,
            "settings": {"adapter": "json"},
            "results": [json.dumps(r) for r in iterations],
            **body,
        }
        return self.http.post("/v0/run", json=payload)

    def get(self, path: str, **params: Any) -> Any:
        answer = self.http.get(f"{self.project}{path}", params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()


def latency(**values: float) -> dict[str, Any]:
    return {name: {"latency": {"value": value}} for name, value in values.items()}


def measures_of(report: dict[str, Any], benchmark: str) -> dict[str, Any]:
    """The benchmark's measures in the report's first iteration, by measure slug."""
    for result in report["results"][0]:
        if result["benchmark"]["name"] == benchmark:
            return {m["measure"]["slug"]: m for m in result["measures"]}
    raise AssertionError(f"no {benchmark} in {report['results']}")
