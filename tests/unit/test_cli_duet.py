"""``benchrunner run --baseline/--contender`` -> the duet body, and a duet report printed."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import pytest
import typer
from rich.console import Console

from benchrunner.api.reports import ReportDuet
from benchrunner.cli.duet_view import duet_alerts, print_duet
from benchrunner.cli.follow import report_failure
from benchrunner.cli.run_body import DuetFlags, RunFlags, build_body
from benchrunner.client import request_json
from tests.unit import report_samples as samples

NOW = dt.datetime(2026, 11, 25, 1, 2, 3, tzinfo=dt.UTC)
DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def body(**given: Any) -> dict[str, Any]:
    return request_json(build_body(RunFlags(**given), NOW))


def test_template_duet_sends_each_sides_arguments_and_the_options() -> None:
    sent = body(
        spec="s",
        template="bench.timed",
        args={"loops": "3"},
        iterations=12,
        duet=DuetFlags(baseline="ms=20", contender="ms=22, size=4", margin=0.01, seed=5),
    )
    assert sent["template"] == "bench.timed" and sent["args"] == {"loops": "3"}
    assert sent["baseline"] == {"args": {"ms": "20"}}
    assert sent["contender"] == {"args": {"ms": "22", "size": "4"}}
    assert sent["duet"] == {"margin": 0.01, "seed": 5}
    assert sent["job"] == {"iter": 12}
    assert "image" not in sent


def test_image_duet_sends_two_images_and_no_duet_options_unless_given() -> None:
    sent = body(spec="s", duet=DuetFlags(baseline=DIGEST_A, contender=DIGEST_B))
    assert sent["baseline"] == {"image": DIGEST_A} and sent["contender"] == {"image": DIGEST_B}
    assert "duet" not in sent and "image" not in sent and "template" not in sent


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"spec": "s", "duet": DuetFlags(baseline=DIGEST_A)}, "both --baseline and --contender"),
        (
            {"spec": "s", "image": DIGEST_A, "duet": DuetFlags(baseline="x", contender="y")},
            "drop --image",
        ),
        (
            {"spec": "s", "template": "t", "duet": DuetFlags(baseline="ms", contender="ms=1")},
            "'ms' is not name=value",
        ),
        (
            {"spec": "s", "template": "t", "duet": DuetFlags(baseline="a=1,a=2", contender="")},
            "twice",
        ),
        (
            {"results": ["{}"], "duet": DuetFlags(baseline="a", contender="b")},
            "--baseline, --contender",
        ),
    ],
)
def test_ill_formed_duet_flags_are_usage_errors(given: dict[str, Any], message: str) -> None:
    with pytest.raises(typer.BadParameter, match=message):
        body(**given)


DUET = {
    "seed": 42,
    "rounds": 3,
    "order": "AB BA AB",
    "statistic": "contender / baseline",
    "method": "percentile bootstrap of the mean log ratio over paired rounds",
    "resamples": 2000,
    "confidence": 0.95,
    "margin": 0.01,
    "results": [
        {
            "benchmark": {"name": "sort", "slug": "sort", "uuid": "u1"},
            "measure": {"name": "latency", "slug": "latency", "uuid": "u2", "units": "ns"},
            "rounds": 3,
            "ratio": 1.0312,
            "lower_value": 1.02,
            "upper_value": 1.04,
            "margin": {"lower": 0.01, "upper": 0.01, "source": "run", "threshold": None},
            "verdict": "contender higher",
            "alert": {"limit": "upper"},
        },
        {
            "benchmark": {"name": "scan", "slug": "scan", "uuid": "u3"},
            "measure": {"name": "latency", "slug": "latency", "uuid": "u2", "units": "ns"},
            "rounds": 3,
            "ratio": 1.001,
            "lower_value": 0.99,
            "upper_value": 1.01,
            "margin": {"lower": 0.01, "upper": 0.01, "source": "run", "threshold": None},
            "verdict": "no difference shown",
            "alert": None,
        },
    ],
}


def test_a_duet_prints_its_order_ratios_intervals_and_alerts() -> None:
    buffer = io.StringIO()
    print_duet(Console(file=buffer, width=200), ReportDuet.model_validate(DUET))
    text = buffer.getvalue()
    assert "order (A baseline, B contender): AB BA AB" in text
    assert "seed 42" in text and "95% interval" in text and "margin 0.01" in text
    sort_line = next(line for line in text.splitlines() if "sort" in line)
    assert "1.0312" in sort_line and "[1.0200, 1.0400]" in sort_line
    assert "+3.12%" in sort_line and "ALERT (upper)" in sort_line
    scan_line = next(line for line in text.splitlines() if "scan" in line)
    assert "ALERT" not in scan_line


def test_err_fails_on_a_duet_alert() -> None:
    report = samples.report({**samples.without_thresholds(), "results": [], "duet": DUET})
    assert duet_alerts(report) == 1
    assert report_failure(report, err=False) is None
    failure = report_failure(report, err=True)
    assert failure is not None and "1 alert" in failure and "report r-2" in failure
