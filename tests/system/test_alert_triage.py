"""Triage of alerts over real HTTP and the real CLI, on both engines: a verdict on an alert
(who and when kept, the status untouched), the precision of each threshold's alerts, and who
may triage (docs/how-to/thresholds-alerts.md).

One server per engine serves the module; each test works in a project of its own.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Deployment, cli

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LATENCY_10PCT = {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 3}


class Alerts:
    """A public project whose history raised four alerts: three on testbed ``ci``'s latency
    threshold (benchmarks a, b, c) and one on testbed ``arm``'s (benchmark a)."""

    def __init__(self, deployment: Deployment, slug: str) -> None:
        headers = {"Authorization": f"Bearer {deployment.server.token}"}
        self.http = httpx.Client(base_url=deployment.server.url, headers=headers, timeout=30)
        self.deployment = deployment
        self.slug = slug
        self.path = f"/v0/projects/{slug}/alerts"
        self.minute = 0
        models = {"models": {"latency": LATENCY_10PCT}}
        for testbed, benchmarks in (("ci", "abc"), ("arm", "a")):
            for value in (100, 100, 100):
                self.run(testbed, {b: value for b in benchmarks}, thresholds=models)
            self.run(testbed, {b: 150 for b in benchmarks})
        listed = self.http.get(self.path, params={"per_page": 10})
        assert listed.status_code == 200, listed.text
        self.raised: dict[tuple[str, str], dict[str, Any]] = {
            (a["testbed"]["name"], a["benchmark"]["name"]): a for a in listed.json()
        }
        assert sorted(self.raised) == [("arm", "a"), ("ci", "a"), ("ci", "b"), ("ci", "c")]

    def run(self, testbed: str, values: dict[str, float], **body: Any) -> None:
        self.minute += 1
        at = (T0 + dt.timedelta(minutes=self.minute)).isoformat()
        result = {name: {"latency": {"value": value}} for name, value in values.items()}
        payload = {
            "project": self.slug,
            "branch": "main",
            "testbed": testbed,
            "start_time": at,
            "end_time": at,
            "settings": {"adapter": "json"},
            "results": [json.dumps(result)],
            **body,
        }
        answer = self.http.post("/v0/run", json=payload)
        assert answer.status_code == 201, answer.text

    def uuid(self, testbed: str, benchmark: str) -> str:
        return str(self.raised[testbed, benchmark]["uuid"])

    def triage(self, testbed: str, benchmark: str, verdict: str | None) -> httpx.Response:
        return self.http.patch(
            f"{self.path}/{self.uuid(testbed, benchmark)}", json={"verdict": verdict}
        )

    def precision(self) -> dict[str, Any]:
        answer = self.http.get(f"{self.path}/precision")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found


@pytest.fixture
def alerts(shared: Deployment, request: pytest.FixtureRequest) -> Iterator[Alerts]:
    slug = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    with shared.admin() as client:
        client.create_project("acme", slug, "public")
    found = Alerts(shared, slug)
    yield found
    found.http.close()


def counts(row: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("alerts", "true_positive", "false_positive", "expected", "untriaged", "precision")
    return tuple(row[k] for k in keys)


def test_a_verdict_is_kept_with_who_and_when(alerts: Alerts) -> None:
    fresh = alerts.raised["ci", "a"]
    assert (fresh["verdict"], fresh["verdict_by"], fresh["verdict_at"]) == (None, None, None)
    assert fresh["status"] == "active"

    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    answer = alerts.triage("ci", "a", "false_positive")
    assert answer.status_code == 200, answer.text
    triaged = answer.json()
    me = alerts.http.get("/v0/users/admin").json()
    assert triaged["verdict"] == "false_positive"
    assert triaged["verdict_by"] == {"uuid": me["uuid"], "name": me["name"], "slug": me["slug"]}
    assert dt.datetime.fromisoformat(triaged["verdict_at"]) >= before
    # A verdict is an addition to Bencher's alert: the status and its time stay.
    assert triaged["status"] == "active" and triaged["modified"] == fresh["modified"]
    shown = alerts.http.get(f"{alerts.path}/{alerts.uuid('ci', 'a')}").json()
    assert shown["verdict"] == "false_positive" and shown["verdict_at"] == triaged["verdict_at"]

    # A later verdict replaces it; status and verdict in one PATCH; null takes it back.
    both = alerts.http.patch(
        f"{alerts.path}/{alerts.uuid('ci', 'a')}",
        json={"status": "dismissed", "verdict": "expected"},
    ).json()
    assert (both["status"], both["verdict"]) == ("dismissed", "expected")
    only_status = alerts.http.patch(
        f"{alerts.path}/{alerts.uuid('ci', 'a')}", json={"status": "active"}
    ).json()
    assert only_status["verdict"] == "expected"
    cleared = alerts.triage("ci", "a", None).json()
    assert cleared["verdict"] is None and cleared["status"] == "active"

    bad = alerts.triage("ci", "a", "maybe")
    assert bad.status_code == 400 and "verdict" in bad.json()["message"]


def test_precision_per_threshold_and_overall(alerts: Alerts) -> None:
    untouched = alerts.precision()
    assert counts(untouched["overall"]) == (4, 0, 0, 0, 4, None)
    assert [t["testbed"] for t in untouched["thresholds"]] == ["arm", "ci"]

    for benchmark, verdict in (("a", "true_positive"), ("b", "false_positive"), ("c", "expected")):
        assert alerts.triage("ci", benchmark, verdict).status_code == 200
    found = alerts.precision()
    arm, ci = found["thresholds"]
    assert (ci["branch"], ci["testbed"], ci["measure"]) == ("main", "ci", "Latency")
    assert ci["threshold"] == alerts.raised["ci", "a"]["threshold"]["uuid"]
    assert counts(ci) == (3, 1, 1, 1, 0, pytest.approx(2 / 3))
    assert counts(arm) == (1, 0, 0, 0, 1, None)
    assert counts(found["overall"]) == (4, 1, 1, 1, 1, pytest.approx(2 / 3))

    untriaged = alerts.http.get(alerts.path, params={"verdict": "untriaged"}).json()
    assert [a["uuid"] for a in untriaged] == [alerts.uuid("arm", "a")]
    expected = alerts.http.get(alerts.path, params={"verdict": "expected"}).json()
    assert [a["uuid"] for a in expected] == [alerts.uuid("ci", "c")]

    assert alerts.triage("arm", "a", "false_positive").status_code == 200
    assert counts(alerts.precision()["thresholds"][0]) == (1, 0, 1, 0, 0, 0.0)


def test_only_writers_triage(alerts: Alerts, shared: Deployment) -> None:
    anonymous = httpx.patch(
        f"{shared.server.url}{alerts.path}/{alerts.uuid('ci', 'a')}",
        json={"verdict": "false_positive"},
        timeout=30,
    )
    assert anonymous.status_code in (401, 403), anonymous.text
    email = f"reader-{alerts.slug}@example.com"
    with shared.admin() as client:
        reader_user = client.create_user(f"reader-{alerts.slug}", email)
        token = client.create_token(str(reader_user.uuid), "triage").token
    reader = httpx.Client(
        base_url=shared.server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    with reader:
        # A public project: anyone reads its precision, only its writers triage.
        assert reader.get(f"{alerts.path}/precision").status_code == 200
        refused = reader.patch(
            f"{alerts.path}/{alerts.uuid('ci', 'a')}", json={"verdict": "false_positive"}
        )
        assert refused.status_code == 403, refused.text
    assert alerts.precision()["overall"]["untriaged"] == 4


def test_the_cli_triages_and_shows_precision(
    alerts: Alerts, shared: Deployment, tmp_path: Path
) -> None:
    env = {**shared.cli_env(tmp_path), "BENCHRUNNER_PROJECT": alerts.slug}
    alert = alerts.uuid("ci", "b")
    triaged = json.loads(
        cli("alert", "triage", alert, "--verdict", "false_positive", "--json", env=env).stdout
    )
    assert triaged["verdict"] == "false_positive" and triaged["verdict_by"] is not None
    listed = json.loads(
        cli("alert", "list", "--verdict", "false_positive", "--json", env=env).stdout
    )
    assert [a["uuid"] for a in listed] == [alert]
    shown = cli("alert", "show", alert, env=env).stdout
    assert "false_positive" in shown and "triaged" in shown

    table = cli("alert", "precision", env=env).stdout
    ci_threshold = alerts.raised["ci", "b"]["threshold"]["uuid"]
    assert ci_threshold in table and "0%" in table and "Alert precision" in table
    found = json.loads(cli("alert", "precision", "--json", env=env).stdout)
    assert counts(found["overall"]) == (4, 0, 1, 0, 3, 0.0)

    cleared = json.loads(cli("alert", "triage", alert, "--clear", "--json", env=env).stdout)
    assert cleared["verdict"] is None
    neither = cli("alert", "triage", alert, env=env, check=False)
    assert neither.returncode == 2 and "--verdict or --clear" in neither.stderr
    unknown = cli("alert", "triage", alert, "--verdict", "maybe", env=env, check=False)
    assert unknown.returncode == 2
