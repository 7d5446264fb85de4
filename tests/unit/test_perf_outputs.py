from __future__ import annotations

import csv
import datetime as dt
import io

import numpy as np
import pytest
from matplotlib.image import imread

from benchrunner.server.views.perf.csv_export import COLUMNS, perf_csv
from benchrunner.server.views.perf.plot import DPI, HEIGHT_INCHES, WIDTH_INCHES, perf_png
from benchrunner.server.views.perf.series import Point, Series

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _series(
    *, alert_at: int | None, benchmark: str = "sort", noisy_at: int | None = None
) -> Series:
    points = [
        Point(
            report=f"r{i}",
            start_time=T0 + dt.timedelta(hours=i),
            end_time=T0 + dt.timedelta(hours=i, minutes=1),
            value=100.0 + (30.0 if alert_at is not None and i >= alert_at else i % 3),
            lower_limit=None if i < 3 else 90.0,
            upper_limit=None if i < 3 else 110.0,
            alert_limit="upper" if i == alert_at else None,
            alert_status="active" if i == alert_at else None,
            version=i + 1,
            hash=f"{i:040x}",
            noisy=i == noisy_at,
        )
        for i in range(12)
    ]
    return Series("main", "localhost", benchmark, "latency", "nanoseconds (ns)", points)


def _red_pixels(png: bytes) -> int:
    image = imread(io.BytesIO(png), format="png")
    red, green, blue = image[..., 0], image[..., 1], image[..., 2]
    return int(np.count_nonzero((red > 0.9) & (green < 0.2) & (blue < 0.2)))


def test_the_plot_is_a_png_of_the_documented_size() -> None:
    png = perf_png([_series(alert_at=None)], title="demo")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = imread(io.BytesIO(png), format="png")
    assert image.shape[:2] == (int(HEIGHT_INCHES * DPI), int(WIDTH_INCHES * DPI))


def test_alerts_are_marked_in_red_and_only_when_there_are_some() -> None:
    assert _red_pixels(perf_png([_series(alert_at=None)], title="demo")) == 0
    assert _red_pixels(perf_png([_series(alert_at=8)], title="demo")) > 20


def _series_pixels(png: bytes) -> int:
    """Pixels of the first series' colour (matplotlib's C0, #1f77b4)."""
    image = imread(io.BytesIO(png), format="png")[..., :3]
    c0 = np.array([0x1F, 0x77, 0xB4]) / 255
    return int(np.count_nonzero(np.abs(image - c0).max(axis=-1) < 0.05))


def test_a_noisy_reports_point_is_drawn_hollow_with_a_legend_entry() -> None:
    quiet = perf_png([_series(alert_at=None)], title="demo")
    noisy = perf_png([_series(alert_at=None, noisy_at=5)], title="demo")
    # A ring in the series' colour around the point, and its legend entry's: more of the
    # colour; no alert either way.
    assert _series_pixels(noisy) > _series_pixels(quiet) + 40
    assert _red_pixels(noisy) == 0


def test_an_empty_query_still_draws_a_plot() -> None:
    assert perf_png([], title="nothing").startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("values", "limit"),
    [
        ([1e308, -1e308, 1.7e308], None),  # the axis span overflows a float
        ([1.7e308, 1.7e308, 1.7e308], float("inf")),  # a limit drawn past the largest float
        ([-5e-324, 5e-324, 0.0], None),
    ],
)
def test_values_at_the_ends_of_the_float_range_still_draw_a_plot(
    values: list[float], limit: float | None
) -> None:
    points = [
        Point(
            report=f"r{i}",
            start_time=T0 + dt.timedelta(hours=i),
            end_time=T0 + dt.timedelta(hours=i),
            value=value,
            upper_limit=limit,
            alert_limit="upper" if i == 2 else None,
        )
        for i, value in enumerate(values)
    ]
    series = Series("main", "localhost", "huge", "latency", "nanoseconds (ns)", points)
    png = perf_png([series], title="huge")
    assert png.startswith(b"\x89PNG") and _red_pixels(png) > 20


def test_csv_has_one_row_per_point_and_reads_back() -> None:
    text = perf_csv([_series(alert_at=8), _series(alert_at=None, benchmark="hash")])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 24
    alerted = [r for r in rows if r["alert"]]
    assert [(r["benchmark"], r["report"], r["alert"], r["alert_status"]) for r in alerted] == [
        ("sort", "r8", "upper", "active")
    ]
    first = rows[0]
    assert first["start_time"] == "2026-11-01T00:00:00Z"
    assert float(first["value"]) == 100.0
    assert first["lower_limit"] == ""  # no limit yet: an empty cell, not "None"
    assert float(rows[5]["upper_limit"]) == 110.0


@pytest.mark.parametrize("name", ['=HYPERLINK("x")', "+1", "-1+2", "@SUM(A1)"])
def test_csv_cells_that_a_spreadsheet_would_run_are_quoted(name: str) -> None:
    series = Series("main", "localhost", name, "latency", "ns", _series(alert_at=None).points)
    rows = list(csv.DictReader(io.StringIO(perf_csv([series]))))
    assert rows[0]["benchmark"] == "'" + name
