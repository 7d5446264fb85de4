"""A report as rows, a terminal table and a pull-request comment, from report JSON samples."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchrunner.cli.report_format import (
    AlertMark,
    MetricRow,
    active_alerts,
    alert_cell,
    alert_lines,
    change_percent,
    comment_markdown,
    format_change,
    format_number,
    md_code,
    md_text,
    report_rows,
    unit_symbol,
    with_units,
)
from benchrunner.cli.views import print_report
from tests.unit.report_samples import (
    alert_of,
    dimension,
    project,
    report,
    with_thresholds,
    without_thresholds,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (20, "20"),
        (20.0, "20"),
        (1234567, "1,234,567"),
        (-1234567.0, "-1,234,567"),
        (1234.5678, "1,234.57"),
        (1250.5, "1,250.5"),
        (1.005, "1"),
        (12.3, "12.3"),
        (0.5, "0.5"),
        (0.000123456, "0.000123"),
        (1.5e-7, "1.5e-07"),
        (1e20, "1e+20"),
        (123456789012345678.0, "1.23457e+17"),
        (float("inf"), "inf"),
        (None, "—"),
        ("12", "—"),
        (True, "—"),
    ],
)
def test_format_number(value: object, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize(
    ("units", "symbol"),
    [
        ("nanoseconds (ns)", "ns"),
        ("operations / second (ops/s)", "ops/s"),
        ("bytes", "bytes"),
        ("", ""),
        (None, ""),
    ],
)
def test_unit_symbol(units: object, symbol: str) -> None:
    assert unit_symbol(units) == symbol


@pytest.mark.parametrize(
    ("value", "units", "text"),
    [
        (1250.5, "nanoseconds (ns)", "1,250.5 ns"),
        (3, "", "3"),
        (None, "nanoseconds (ns)", "—"),
    ],
)
def test_with_units(value: float | None, units: str, text: str) -> None:
    assert with_units(value, units) == text


@pytest.mark.parametrize(
    ("value", "baseline", "text"),
    [
        (110, 100, "+10.00%"),
        (90, 100, "-10.00%"),
        (100, 100, "+0.00%"),
        (99.9999, 100, "+0.00%"),
        (1250.5, 1000, "+25.05%"),
        (-90, -100, "+10.00%"),
        (5000, 1, "+499,900.00%"),
        (1, None, "—"),
        (None, 100, "—"),
        (1, 0, "—"),
    ],
)
def test_change_against_the_baseline(
    value: float | None, baseline: float | None, text: str
) -> None:
    assert format_change(change_percent(value, baseline)) == text


@pytest.mark.parametrize(
    ("alert", "text"),
    [
        (None, ""),
        (AlertMark("upper", "active"), "🚨 upper"),
        (AlertMark("lower", "dismissed"), "lower (dismissed)"),
    ],
)
def test_alert_cell(alert: AlertMark | None, text: str) -> None:
    assert alert_cell(alert) == text


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("sort", "`sort`"),
        ("a|b", "`a\\|b`"),
        ("x`y", "``x`y``"),
        ("`edge", "`` `edge ``"),
        ("two\nlines", "`two lines`"),
        ("@team <b>", "`@team <b>`"),
        ("", "—"),
    ],
)
def test_md_code(text: str, code: str) -> None:
    assert md_code(text) == code


@pytest.mark.parametrize(
    ("text", "escaped"),
    [("1,250.5 ns", "1,250.5 ns"), ("a|b*c_d", "a\\|b\\*c\\_d"), ("<x>\n[y]", "\\<x\\> \\[y\\]")],
)
def test_md_text(text: str, escaped: str) -> None:
    assert md_text(text) == escaped


def test_rows_carry_boundaries_and_alerts() -> None:
    assert report_rows(report(with_thresholds())) == [
        MetricRow(
            0,
            "sort|fast",
            "Latency",
            "nanoseconds (ns)",
            1250.5,
            1000.0,
            None,
            1100.0,
            AlertMark("upper", "active"),
            "met-1",
        ),
        MetricRow(
            0, "parse", "Latency", "nanoseconds (ns)", 980, 1000.0, None, 1100.0, None, "met-2"
        ),
        MetricRow(0, "parse", "Throughput", "operations / second (ops/s)", 2500000, metric="met-3"),
    ]


def test_rows_of_a_server_without_thresholds() -> None:
    rows = report_rows(report(without_thresholds()))
    assert [(r.iteration, r.benchmark, r.value, r.baseline, r.alert) for r in rows] == [
        (0, "a", 5, None, None),
        (1, "a", 7, None, None),
    ]
    assert rows[0].change is None


def test_rows_of_a_report_with_nothing() -> None:
    bare = {
        "uuid": "r",
        "project": project("p"),
        "branch": dimension("main"),
        "testbed": dimension("localhost"),
    }
    assert report_rows(report(bare)) == []
    # A result without its benchmark or metric is refused where the client parses it.
    with pytest.raises(ValidationError, match="benchmark"):
        report({**bare, "results": [[{"benchmark": None, "measures": [{}]}]]})


def test_alert_lines_say_which_limit_and_how_far() -> None:
    assert alert_lines(report(with_thresholds())) == [
        "sort|fast Latency: 1,250.5 ns is above the upper limit 1,100 ns "
        "(baseline 1,000 ns, +25.05%)"
    ]
    dismissed = with_thresholds()
    dismissed["alerts"][0]["status"] = "dismissed"
    assert alert_lines(report(dismissed))[0].endswith("[dismissed]")
    assert active_alerts(report(dismissed)) == []


COMMENT = """\
### Benchmarks: project `Demo`, branch `feature/x`, testbed `ci-runner`

Report `r-1`

| Benchmark | Measure | Value | Baseline | Change | Lower limit | Upper limit | Alert |
| --- | --- | ---: | ---: | ---: | ---: | ---: | :---: |
| `sort\\|fast` | `Latency` | 1,250.5 ns | 1,000 ns | +25.05% | — | 1,100 ns | 🚨 upper |
| `parse` | `Latency` | 980 ns | 1,000 ns | -2.00% | — | 1,100 ns |  |
| `parse` | `Throughput` | 2,500,000 ops/s | — | — | — | — |  |

🚨 **1 alert**
"""


def test_comment_markdown() -> None:
    assert comment_markdown(report(with_thresholds())) == COMMENT


def test_comment_of_an_older_server_has_iterations_and_no_alerts() -> None:
    text = comment_markdown(report(without_thresholds()))
    assert text.startswith("### Benchmarks: project `p-2`, branch `main`, testbed `localhost`\n")
    assert "| Iteration | Benchmark | Measure | Value |" in text
    assert "| 1 | `a` | `latency` | 7 | — | — | — | — |  |" in text
    assert text.endswith("\n**0 alerts**\n")


def test_comment_names_the_report_error() -> None:
    errored = {**without_thresholds(), "results": [], "error": "adapter json: not | JSON"}
    text = comment_markdown(report(errored))
    assert "⚠️ The report has an error: `adapter json: not \\| JSON`" in text
    assert "No metrics in this report." in text


def test_terminal_table(capsys: pytest.CaptureFixture[str]) -> None:
    print_report(report(with_thresholds()))
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0] == "report r-1: branch feature/x, testbed ci-runner"
    header = next(line for line in lines if "benchmark" in line)
    for column in ("measure", "value", "baseline", "change", "lower limit", "upper limit"):
        assert column in header
    sort_row = next(line for line in lines if "sort|fast" in line)
    for cell in ("1,250.5 ns", "1,000 ns", "+25.05%", "1,100 ns", "🚨 upper"):
        assert cell in sort_row
    assert "2,500,000 ops/s" in printed
    assert lines[-2:] == [
        "1 alert:",
        "🚨 sort|fast Latency: 1,250.5 ns is above the upper limit 1,100 ns "
        "(baseline 1,000 ns, +25.05%)",
    ]


def test_names_print_as_they_are_not_as_markup(capsys: pytest.CaptureFixture[str]) -> None:
    marked = with_thresholds()
    marked["results"][0][1]["benchmark"]["name"] = "[bold]parse[/]"
    print_report(report(marked))
    assert "[bold]parse[/]" in capsys.readouterr().out


def test_alert_lines_of_an_alert_outside_the_report() -> None:
    """A change point found in the history is an alert on an earlier report's metric."""
    found = without_thresholds()
    found["alerts"] = [
        alert_of(
            "a",
            "Latency",
            "nanoseconds (ns)",
            uuid="a-9",
            report="r-0",
            raised_by="r-2",
            metric={"uuid": "elsewhere", "value": 7.0},
            boundary={"baseline": 5.0, "lower_limit": None, "upper_limit": None},
            limit="upper",
            change={"before": 5.0, "after": 7.5, "magnitude": 0.5, "pvalue": 0.0001},
        )
    ]
    parsed = report(found)
    assert alert_lines(parsed) == ["a Latency: changed from 5 ns to 7.5 ns (+50.00%) at report r-0"]
    assert report_rows(parsed)[1].alert is None
    assert comment_markdown(parsed).endswith("🚨 **1 alert**\n")


def test_alert_lines_say_between_which_versions_a_step_lies() -> None:
    found = without_thresholds()
    between = {
        "from": {"report": "r-0"},
        "to": {"report": "r-3"},
        "text": "between versions 7 (abc) and 8 (def)",
    }
    found["alerts"] = [
        alert_of(
            "a",
            "Latency",
            "nanoseconds (ns)",
            report="r-0",
            raised_by="r-3",
            metric={"uuid": "m-7", "value": 7.0},
            change={"before": 5.0, "after": 7.5, "between": between},
        )
    ]
    assert alert_lines(report(found)) == [
        "a Latency: changed from 5 ns to 7.5 ns (+50.00%) at report r-0,"
        " between versions 7 (abc) and 8 (def)"
    ]
