"""Change points that look back, over real HTTP on both engines: a step on main too small for
its threshold becomes clear a few reports later and raises one alert on the report where it
began, between that report's version and the one before; a step its threshold caught raises
no second alert; a dismissed step that persists re-opens (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from benchrunner.detection.look_back import PERSIST
from tests.system.project_api import Api, latency

WIDE = {"test": "percentage", "upper_boundary": 0.2, "min_sample_size": 3}
"""A limit 20 % above the mean: an 8 % step stays inside it, a 40 % one crosses it."""


def levels(seed: int, *segments: tuple[float, int]) -> list[float]:
    """Segments of (level, length) with 1 % Gaussian noise."""
    rng = np.random.default_rng(seed)
    return [float(x) for level, size in segments for x in rng.normal(level, level / 100, size)]


def commit_of(version: int) -> str:
    return hashlib.sha256(f"commit {version}".encode()).hexdigest()[:40]


class Series:
    """Reports of one benchmark on main, each on a commit of its own."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.reports: list[dict[str, Any]] = []

    def push(self, value: float | list[float], **body: Any) -> dict[str, Any]:
        """A report of ``value``, or of one iteration per value of a list."""
        commit = commit_of(len(self.reports) + 1)
        each = value if isinstance(value, list) else [value]
        report = self.api.run([latency(parse=v) for v in each], hash=commit, **body)
        self.reports.append(report)
        return report


def test_a_step_found_after_the_fact_alerts_once_where_it_began_and_reopens(api: Api) -> None:
    series = Series(api)
    values = levels(3, (100.0, 30), (108.0, 6))
    series.push(values[0], thresholds={"models": {"latency": WIDE}})
    for value in values[1:30]:
        assert series.push(value)["alerts"] == []
    raised: list[dict[str, Any]] = []
    for value in values[30:]:
        raised += series.push(value)["alerts"]
    [alert] = raised  # one alert, raised by one of the reports after the step
    before, began = series.reports[29], series.reports[30]
    assert alert["raised_by"] in [r["uuid"] for r in series.reports[31:36]]
    assert alert["report"] == began["uuid"] and alert["limit"] == "upper"
    assert alert["change"]["magnitude"] == pytest.approx(0.08, abs=0.02)
    between = alert["change"]["between"]
    assert between["from"] == {"report": before["uuid"], "version": 30, "hash": commit_of(30)}
    assert between["to"] == {"report": began["uuid"], "version": 31, "hash": commit_of(31)}
    assert between["text"] == (
        f"between versions 30 ({commit_of(30)[:12]}) and 31 ({commit_of(31)[:12]})"
    )
    assert [a["uuid"] for a in api.get("/alerts")] == [alert["uuid"]]
    page = api.http.get(f"/console/projects/{api.slug}/alerts/{alert['uuid']}")
    assert page.status_code == 200, page.text
    shown = f"between version 30 ({commit_of(30)[:12]}) and version 31 ({commit_of(31)[:12]})"
    assert shown in page.text

    dismissed = api.http.patch(
        f"{api.project}/alerts/{alert['uuid']}", json={"status": "dismissed"}
    )
    assert dismissed.status_code == 200, dismissed.text
    for value in levels(4, (108.0, PERSIST - 1)):
        assert series.push(value)["alerts"] == []
        assert api.get(f"/alerts/{alert['uuid']}")["status"] == "dismissed"
    # re-opened, not raised again: still raised by the report that first made the step clear
    assert series.push(levels(5, (108.0, 1))[0])["alerts"] == []
    assert api.get(f"/alerts/{alert['uuid']}")["status"] == "active"
    assert len(api.get("/alerts")) == 1


def test_a_step_its_threshold_caught_raises_no_second_alert(api: Api) -> None:
    series = Series(api)
    values = levels(6, (100.0, 30), (140.0, 6))
    series.push(values[0], thresholds={"models": {"latency": {**WIDE, "max_sample_size": 30}}})
    for value in values[1:]:
        series.push(value)
    found = api.get("/alerts")
    began = series.reports[30]["uuid"]
    assert began in [a["report"] for a in found]  # the threshold's, on the step's first report
    assert [a for a in found if a["change"] is not None] == []


def test_a_step_its_threshold_caught_a_report_late_raises_no_second_alert(api: Api) -> None:
    """Reports of three iterations, so three points each: the step's first report stays inside
    the 20 % limit, and the next report's first iteration crosses it. That alert is three
    points after the step began, but on the report next to it: the step's alert."""
    series = Series(api)
    values = levels(7, (100.0, 60), (116.0, 24))
    values[63] = 123.0  # the step's second report, first iteration: beyond its limit
    reports = [values[i : i + 3] for i in range(0, len(values), 3)]
    model = {**WIDE, "max_sample_size": 30}
    series.push(reports[0], thresholds={"models": {"latency": model}})
    raised: list[dict[str, Any]] = []
    for report in reports[1:]:
        raised += series.push(report)["alerts"]
    assert len(raised) == 1, [(a["report"], a["change"]) for a in raised]
    [alert] = raised
    assert alert["report"] == series.reports[21]["uuid"]  # the threshold's, one report late
    assert alert["change"] is None and alert["iteration"] == 0
    assert [a["uuid"] for a in api.get("/alerts")] == [alert["uuid"]]


def test_a_step_off_main_is_left_to_its_threshold(api: Api) -> None:
    series = Series(api)
    values = levels(3, (100.0, 30), (108.0, 6))
    series.push(values[0], branch="feature", thresholds={"models": {"latency": WIDE}})
    for value in values[1:]:
        assert series.push(value, branch="feature")["alerts"] == []
