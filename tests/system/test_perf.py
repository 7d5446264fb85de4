"""The perf query over real HTTP on both engines: JSON in Bencher's shape, CSV and PNG, time
ranges, references by UUID, name or slug, and bad or hidden input."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from benchrunner.client import ApiError, BenchrunnerClient, PerfQuery
from tests.harness import Deployment

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Project:
    """A public project of its own, on the module's one server per engine."""

    deployment: Deployment
    slug: str


@pytest.fixture
def project(shared: Deployment, request: pytest.FixtureRequest) -> Project:
    slug = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    with shared.admin() as client:
        client.create_project("acme", slug, "public")
    return Project(shared, slug)


def _direct(
    client: BenchrunnerClient,
    project: str,
    branch: str,
    at: dt.datetime,
    values: dict[str, float],
    **extra: Any,
) -> dict[str, Any]:
    results = {name: {"latency": {"value": value}} for name, value in values.items()}
    return client.run(
        {
            "project": project,
            "branch": branch,
            "testbed": "box",
            "start_time": at.isoformat(),
            "end_time": (at + dt.timedelta(seconds=5)).isoformat(),
            "results": [json.dumps(results)],
            **extra,
        }
    ).model_dump(mode="json", exclude_unset=True)


def _history(client: BenchrunnerClient, project: str) -> list[dict[str, Any]]:
    reports = []
    for day in range(6):
        at = T0 + dt.timedelta(days=day)
        reports.append(_direct(client, project, "main", at, {"sort": 100.0 + day, "hash": 50.0}))
    _direct(client, project, "feature", T0 + dt.timedelta(days=2, hours=1), {"sort": 90.0})
    return reports


def test_perf_returns_each_series_in_time_order(project: Project) -> None:
    with project.deployment.admin() as client:
        reports = _history(client, project.slug)
        query = PerfQuery(
            branches=["main", "feature"],
            testbeds=["box"],
            benchmarks=["sort"],
            measures=["latency"],
            start_time=T0,
            end_time=T0 + dt.timedelta(days=30),
        )
        perf = client.perf(project.slug, query)
        sent = httpx.get(
            f"{project.deployment.server.url}/v0/projects/{project.slug}/perf",
            params=query.params(),
            headers={"Authorization": f"Bearer {project.deployment.server.token}"},
        ).json()
    # the model gives back the JSON sent, field for field and in its order
    assert json.dumps(perf.model_dump(mode="json", exclude_unset=True)) == json.dumps(sent)
    assert perf.project.slug == project.slug
    series = {r.branch.name: r for r in perf.results}
    assert set(series) == {"main", "feature"}
    main = series["main"]
    assert (main.testbed.name, main.benchmark.name) == ("box", "sort")
    assert main.measure.slug == "latency" and main.measure.units
    assert [m.metric.value for m in main.metrics] == [100.0 + d for d in range(6)]
    assert [m.report for m in main.metrics] == [r["uuid"] for r in reports]
    first = main.metrics[0]
    assert first.start_time == "2026-01-01T00:00:00Z"
    assert first.end_time == "2026-01-01T00:00:05Z"
    assert first.version.number is not None
    assert [m.metric.value for m in series["feature"].metrics] == [90.0]


def test_perf_keeps_to_the_time_range_and_accepts_uuids(project: Project) -> None:
    with project.deployment.admin() as client:
        reports = _history(client, project.slug)
        branch_uuid = reports[0]["branch"]["uuid"]
        query = PerfQuery(
            branches=[branch_uuid],
            testbeds=["box"],
            benchmarks=["sort", "hash"],
            measures=["latency"],
            start_time=T0 + dt.timedelta(days=1),
            end_time=T0 + dt.timedelta(days=3),
        )
        perf = client.perf(project.slug, query).model_dump(mode="json", exclude_unset=True)
    values = {
        r["benchmark"]["name"]: [m["metric"]["value"] for m in r["metrics"]]
        for r in perf["results"]
    }
    assert values == {"sort": [101.0, 102.0, 103.0], "hash": [50.0, 50.0, 50.0]}
    # no threshold: as Bencher's JsonPerfMetric, threshold, boundary and alert are null
    unjudged = [m for r in perf["results"] for m in r["metrics"]]
    assert {(m["threshold"], m["boundary"], m["alert"]) for m in unjudged} == {(None, None, None)}


def test_perf_points_carry_their_boundary_and_alert(project: Project) -> None:
    thresholds = {"models": {"latency": {"test": "percentage", "upper_boundary": 0.1}}}
    with project.deployment.admin() as client:
        for day, value in enumerate([100.0, 100.0, 100.0, 150.0]):
            at = T0 + dt.timedelta(days=day)
            last = _direct(client, project.slug, "main", at, {"sort": value}, thresholds=thresholds)
        assert [a["limit"] for a in last["alerts"]] == ["upper"]
        query = PerfQuery(
            branches=["main"],
            testbeds=["box"],
            benchmarks=["sort"],
            measures=["latency"],
            start_time=T0,
            end_time=T0 + dt.timedelta(days=30),
        )
        perf = client.perf(project.slug, query).model_dump(mode="json", exclude_unset=True)
        exported = client.perf_export(project.slug, query, "csv")
        rows = list(csv.DictReader(io.StringIO(exported.text)))
    [series] = perf["results"]
    points = series["metrics"]
    # no history yet: as Bencher v0.6.12, the boundary is stored with nothing drawn
    assert points[0]["boundary"] == {"baseline": None, "lower_limit": None, "upper_limit": None}
    assert points[0]["threshold"]["model"]["test"] == "percentage"
    regressed = points[-1]
    assert regressed["threshold"]["model"]["test"] == "percentage"
    assert regressed["boundary"]["baseline"] == 100.0
    assert regressed["boundary"]["upper_limit"] == pytest.approx(110.0)
    assert regressed["alert"]["limit"] == "upper"
    assert regressed["alert"]["status"] == "active"
    assert [p.get("alert") is None for p in points] == [True, True, True, False]
    assert [r["alert"] for r in rows] == ["", "", "", "upper"]
    assert float(rows[-1]["upper_limit"]) == pytest.approx(110.0)


def test_perf_as_csv_and_png(project: Project) -> None:
    with project.deployment.admin() as client:
        _history(client, project.slug)
        query = PerfQuery(
            branches=["main"],
            testbeds=["box"],
            benchmarks=["sort"],
            measures=["latency"],
            start_time=T0,
            end_time=T0 + dt.timedelta(days=30),
            title="sort on main",
        )
        text = client.perf_export(project.slug, query, "csv")
        image = client.perf_export(project.slug, query, "img")
    assert text.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(text.text)))
    assert [float(r["value"]) for r in rows] == [100.0 + d for d in range(6)]
    assert {r["benchmark"] for r in rows} == {"sort"}
    assert image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG\r\n\x1a\n")


BAD_QUERIES: list[tuple[dict[str, Any], int, str]] = [
    (
        {"branches": "main", "testbeds": "box", "benchmarks": "nope", "measures": "latency"},
        404,
        "benchmark 'nope'",
    ),
    (
        {"branches": ",", "testbeds": "box", "benchmarks": "sort", "measures": "latency"},
        400,
        "branches must name",
    ),
    ({"branches": "main", "testbeds": "box", "benchmarks": "sort"}, 400, "measures"),
    (
        {
            "branches": "main",
            "testbeds": "box",
            "benchmarks": "sort",
            "measures": "latency",
            "start_time": 2,
            "end_time": 1,
        },
        400,
        "start_time must not be after end_time",
    ),
    (
        {
            "branches": "main",
            "testbeds": "box",
            "benchmarks": ",".join(f"b{i}" for i in range(65)),
            "measures": "latency",
        },
        400,
        "at most 64",
    ),
]


def test_bad_perf_queries_are_refused_with_a_reason(project: Project) -> None:
    with project.deployment.admin() as client:
        _history(client, project.slug)
    for params, status, words in BAD_QUERIES:
        response = httpx.get(
            f"{project.deployment.server.url}/v0/projects/{project.slug}/perf",
            params=params,
            headers={"Authorization": f"Bearer {project.deployment.server.token}"},
        )
        assert response.status_code == status, (params, response.text)
        assert words in response.json()["message"], params


def test_a_private_projects_perf_is_hidden_from_outsiders(project: Project) -> None:
    with project.deployment.admin() as client:
        client.create_project("acme", "secret", "private")
        _direct(client, "secret", "main", T0, {"sort": 1.0})
    params = {"branches": "main", "testbeds": "box", "benchmarks": "sort", "measures": "latency"}
    for suffix in ("", "/csv", "/img"):
        hidden = httpx.get(
            f"{project.deployment.server.url}/v0/projects/secret/perf{suffix}", params=params
        )
        assert hidden.status_code == 404, suffix
    with project.deployment.admin() as client, pytest.raises(ApiError) as missing:
        client.perf("nothing-here", PerfQuery(["main"], ["box"], ["sort"], ["latency"]))
    assert missing.value.status == 404
