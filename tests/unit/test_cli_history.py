"""The pure parts of ``threshold``, ``alert``, ``benchmark``/``branch``/..., and ``perf``: models
from flags, rows from the API's JSON, the perf command's times and output flags."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from benchrunner.api.alerts import Alert, DuetMargin
from benchrunner.api.perf import PerfSeries, PerfVersion
from benchrunner.api.thresholds import Threshold, ThresholdModel
from benchrunner.cli.dimension_cmds import dimension_columns, dimension_row
from benchrunner.cli.duet_view import margin_text
from benchrunner.cli.history_format import (
    alert_row,
    crossed_limit,
    model_text,
    parse_time,
    perf_rows,
    series_title,
    threshold_row,
    version_text,
)
from benchrunner.cli.main import app
from benchrunner.cli.perf_cmds import perf_output
from benchrunner.cli.thresholds import ThresholdsError, model_body
from benchrunner.client import DIMENSION_ANSWERS, request_json

UTC = dt.UTC
NS = "nanoseconds (ns)"
WIDE = {"COLUMNS": "400"}
"""Usage errors in one line of the error box."""


@pytest.mark.parametrize(
    ("test", "parameters", "body"),
    [
        ("static", {"upper_boundary": 100.0}, {"test": "static", "upper_boundary": 100.0}),
        (
            "percentage",
            {"upper_boundary": 0.1, "min_sample_size": 2, "window": None},
            {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 2},
        ),
        ("z", {"upper_boundary": 0.99}, {"test": "z_score", "upper_boundary": 0.99}),
        ("change_point", {}, {"test": "change_point"}),
    ],
)
def test_model_body_keeps_the_parameters_given(
    test: str, parameters: dict[str, Any], body: dict[str, Any]
) -> None:
    assert request_json(model_body(test, parameters)) == body


@pytest.mark.parametrize(
    ("test", "parameters", "message"),
    [
        ("fast", {}, "--test: test 'fast' is not one of: static, percentage"),
        (
            "percentage",
            {"upper_boundary": -0.1},
            "the percentage threshold: --upper-boundary of percentage must be a fraction >= 0",
        ),
        ("iqr", {"upper_boundary": float("nan")}, "--upper-boundary nan must be finite"),
        ("iqr", {"upper_boundary": 2.0, "window": 0}, "--window must be an integer from 1"),
        ("change_point", {"upper_boundary": 0.1}, "takes no --upper-boundary"),
    ],
)
def test_model_body_names_the_flag_that_is_wrong(
    test: str, parameters: dict[str, Any], message: str
) -> None:
    with pytest.raises(ThresholdsError) as raised:
        model_body(test, parameters)
    assert message in str(raised.value)


def test_an_invalid_model_is_a_usage_error_before_any_request() -> None:
    # No server listens at this host: exit 2 proves nothing was sent.
    argv = ["threshold", "create", "--host", "http://127.0.0.1:9", "--project", "p"]
    argv += ["--branch", "main", "--testbed", "ci", "--measure", "latency"]
    result = CliRunner().invoke(app, [*argv, "--test", "t_test"], env=WIDE)
    assert result.exit_code == 2
    assert "the t_test test needs --lower-boundary, --upper-boundary or both" in result.output


@pytest.mark.parametrize(
    ("model", "text"),
    [
        (None, "—"),
        ({"test": "change_point"}, "change_point"),
        (
            {"test": "percentage", "upper_boundary": 0.1, "min_sample_size": 2, "window": 3600},
            "percentage: upper 0.1, min 2, window 3,600 s",
        ),
        (
            {"test": "change_point", "max_pvalue": 0.001, "min_magnitude": 0.05},
            "change_point: max p 0.001, min magnitude 0.05",
        ),
    ],
)
def test_model_text(model: dict[str, Any] | None, text: str) -> None:
    answer = None if model is None else ThresholdModel.model_validate({"uuid": "m", **model})
    assert model_text(answer) == text


def _named(name: str) -> dict[str, str]:
    return {"uuid": f"uuid-{name}", "name": name, "slug": name, "project": "p"}


def test_threshold_row_names_the_series_and_its_scope() -> None:
    threshold = {
        "uuid": "t1",
        "project": "p",
        "branch": _named("main"),
        "testbed": _named("ci"),
        "measure": {**_named("latency"), "units": NS},
        "benchmark": None,
        "model": {"uuid": "m", "test": "static", "upper_boundary": 5},
    }
    assert threshold_row(Threshold.model_validate(threshold)) == (
        "t1",
        "main",
        "ci",
        "latency",
        "all benchmarks",
        "static: upper 5",
    )
    overriding = Threshold.model_validate({**threshold, "benchmark": _named("sort")})
    assert threshold_row(overriding)[4] == "sort"


ALERT = {
    "uuid": "a1",
    "report": "r1",
    "status": "active",
    "benchmark": _named("sort"),
    "measure": {**_named("latency"), "units": NS},
    "branch": _named("main"),
    "testbed": _named("ci"),
    "metric": {"uuid": "metric-1", "value": 150.0},
    "boundary": {"baseline": 100.0, "lower_limit": None, "upper_limit": 110.0},
    "limit": "upper",
}


@pytest.mark.parametrize(
    ("alert", "crossed"),
    [
        (ALERT, "upper 110 ns"),
        ({**ALERT, "limit": "lower"}, "lower"),  # no lower limit stored: the side only
        ({**ALERT, "limit": None}, "—"),
    ],
)
def test_crossed_limit(alert: dict[str, Any], crossed: str) -> None:
    assert crossed_limit(Alert.model_validate(alert)) == crossed


def test_alert_row() -> None:
    assert alert_row(Alert.model_validate(ALERT)) == (
        "a1",
        "active",
        "sort",
        "latency",
        "main",
        "ci",
        "150 ns",
        "100 ns",
        "upper 110 ns",
    )


DUET_ALERT = {
    **ALERT,
    "kind": "duet",
    "value": 1.0312,
    "metric": None,
    "boundary": None,
    "duet": {
        "statistic": "contender / baseline",
        "ratio": 1.0312,
        "lower_value": 1.02,
        "upper_value": 1.04,
        "margin": {"lower": None, "upper": 0.02, "source": "threshold", "threshold": "t1"},
    },
}


def test_a_duet_alerts_row_shows_its_ratio_and_the_edge_it_crossed() -> None:
    assert alert_row(Alert.model_validate(DUET_ALERT))[6:] == (
        "ratio 1.0312 [1.0200, 1.0400]",
        "duet: 1",
        "upper 1.0200 (duet, threshold)",
    )
    lower = Alert.model_validate({**DUET_ALERT, "limit": "lower"})
    assert crossed_limit(lower) == "lower — (duet, threshold)"


@pytest.mark.parametrize(
    ("margin", "text"),
    [
        ({"lower": 0.05, "upper": 0.05, "source": "run", "threshold": None}, "±5% (run)"),
        ({"lower": 0.0, "upper": 0.0, "source": "none", "threshold": None}, "±0% (none)"),
        (
            {"lower": None, "upper": 0.1, "source": "threshold", "threshold": "0123456789"},
            "+10% (threshold 01234567)",
        ),
        ({"lower": 0.02, "upper": 0.1, "source": "run", "threshold": None}, "-2%/+10% (run)"),
        (None, ""),
    ],
)
def test_margin_text(margin: dict[str, Any] | None, text: str) -> None:
    assert margin_text(None if margin is None else DuetMargin.model_validate(margin)) == text


@pytest.mark.parametrize(
    ("version", "text"),
    [
        (None, "—"),
        ({"number": 3, "hash": None}, "3"),
        ({"number": 3, "hash": "0123456789abcdef" * 2 + "01234567"}, "3 (0123456)"),
    ],
)
def test_version_text(version: dict[str, Any] | None, text: str) -> None:
    assert version_text(None if version is None else PerfVersion.model_validate(version)) == text


def _point(minute: int, version: int, value: float, **judged: Any) -> dict[str, Any]:
    return {
        "report": f"report-{minute}",
        "iteration": 0,
        "metric": {"uuid": f"metric-{minute}", "value": value},
        "start_time": f"2026-01-01T00:0{minute}:00Z",
        "end_time": f"2026-01-01T00:0{minute}:05Z",
        "version": {"number": version, "hash": judged.pop("hash", None)},
        **judged,
    }


def _alert(status: str) -> dict[str, str]:
    return {"uuid": f"alert-{status}", "limit": "upper", "status": status}


SERIES = PerfSeries.model_validate(
    {
        "branch": _named("main"),
        "testbed": _named("ci"),
        "benchmark": _named("sort"),
        "measure": {**_named("latency"), "units": NS},
        "metrics": [
            _point(1, 1, 100.0),
            _point(
                2,
                2,
                150.5,
                hash="ab" * 20,
                boundary={"baseline": 100.0, "lower_limit": None, "upper_limit": 110.0},
                alert=_alert("active"),
            ),
            _point(
                3,
                3,
                151.0,
                boundary={"baseline": 125.25, "lower_limit": 1.5, "upper_limit": 137.75},
                alert=_alert("dismissed"),
            ),
        ],
    }
)


def test_perf_rows_show_each_point_with_its_boundary_and_alert() -> None:
    assert series_title(SERIES) == "sort · latency (ns) · branch main · testbed ci"
    assert perf_rows(SERIES) == [
        ("2026-01-01 00:01:00", "1", "100 ns", "—", "—", "—", ""),
        ("2026-01-01 00:02:00", "2 (abababa)", "150.5 ns", "100 ns", "—", "110 ns", "🚨 upper"),
        (
            "2026-01-01 00:03:00",
            "3",
            "151 ns",
            "125.25 ns",
            "1.5 ns",
            "137.75 ns",
            "upper (dismissed)",
        ),
    ]
    assert perf_rows(SERIES.model_copy(update={"metrics": []})) == []


@pytest.mark.parametrize(
    ("text", "end", "moment"),
    [
        ("2026-01-31", False, dt.datetime(2026, 1, 31, tzinfo=UTC)),
        ("2026-01-31", True, dt.datetime(2026, 1, 31, 23, 59, 59, 999000, tzinfo=UTC)),
        ("2026-01-31T12:30:00", False, dt.datetime(2026, 1, 31, 12, 30, tzinfo=UTC)),
        ("2026-01-31T12:30:00Z", True, dt.datetime(2026, 1, 31, 12, 30, tzinfo=UTC)),
        (
            " 2026-01-31T12:30:00+02:00",
            False,
            dt.datetime(2026, 1, 31, 10, 30, tzinfo=UTC),
        ),
    ],
)
def test_parse_time(text: str, end: bool, moment: dt.datetime) -> None:
    assert parse_time(text, end=end) == moment


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "", "1700000000"])
def test_parse_time_names_what_it_could_not_read(text: str) -> None:
    with pytest.raises(ValueError, match="is not a date"):
        parse_time(text)


@pytest.mark.parametrize(
    ("flags", "chosen"),
    [
        ({}, "table"),
        ({"as_json": True}, "json"),
        ({"as_csv": True}, "csv"),
        ({"as_csv": True, "to_file": Path("p.csv")}, "csv"),
        ({"image": Path("p.png"), "title": "Sort"}, "img"),
    ],
)
def test_perf_output(flags: dict[str, Any], chosen: str) -> None:
    given = {"as_json": False, "as_csv": False, "image": None, "to_file": None, "title": None}
    assert perf_output(**{**given, **flags}) == chosen


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"as_json": True, "as_csv": True}, "--json and --csv do not go together"),
        ({"as_csv": True, "image": Path("p.png")}, "--csv and --image do not go together"),
        ({"to_file": Path("p.csv")}, "--output writes the CSV: give --csv"),
        ({"as_json": True, "title": "Sort"}, "--title names the plot: give --image"),
    ],
)
def test_perf_output_rejects_flags_that_do_not_go_together(
    flags: dict[str, Any], message: str
) -> None:
    given = {"as_json": False, "as_csv": False, "image": None, "to_file": None, "title": None}
    with pytest.raises(typer.BadParameter, match=message):
        perf_output(**{**given, **flags})


def test_a_bad_perf_time_is_a_usage_error_before_any_request() -> None:
    argv = ["perf", "--host", "http://127.0.0.1:9", "--project", "p", "--branch", "main"]
    argv += ["--testbed", "ci", "--benchmark", "sort", "--measure", "latency"]
    result = CliRunner().invoke(app, [*argv, "--start", "last week"], env=WIDE)
    assert result.exit_code == 2
    assert "--start: 'last week' is not a date" in result.output


@pytest.mark.parametrize(
    ("dimension", "item", "columns", "row"),
    [
        (
            "testbeds",
            {"name": "ci", "slug": "ci", "uuid": "u", "created": "2026-01-01T00:00:00Z"},
            ("name", "slug", "uuid", "created"),
            ("ci", "ci", "u", "2026-01-01 00:00:00"),
        ),
        (
            "measures",
            {"name": "Latency", "slug": "latency", "units": NS, "uuid": "u", "created": None},
            ("name", "slug", "units", "uuid", "created"),
            ("Latency", "latency", NS, "u", "-"),
        ),
        (
            "benchmarks",
            {"name": "sort", "slug": "sort", "ignored": True, "uuid": "u", "created": None},
            ("name", "slug", "ignored", "uuid", "created"),
            ("sort", "sort", True, "u", "-"),
        ),
        (
            "branches",
            {"name": "main", "slug": "main", "head_reset": None, "uuid": "u", "created": None},
            ("name", "slug", "head reset", "uuid", "created"),
            ("main", "main", "-", "u", "-"),
        ),
    ],
)
def test_dimension_rows(
    dimension: Any, item: dict[str, Any], columns: tuple[str, ...], row: tuple[object, ...]
) -> None:
    assert dimension_columns(dimension) == columns
    answer = DIMENSION_ANSWERS[dimension].model_validate({"project": "p", **item})
    assert dimension_row(dimension, answer) == row
