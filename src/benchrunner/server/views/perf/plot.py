"""A perf query as a PNG a README or pull request can embed: each series' values over time,
its threshold band (lower to upper limit) shaded, alerts marked, and the points of noisy
reports drawn hollow.

Uses matplotlib's object API with the Agg canvas (no pyplot, no global state), so plots can be
drawn on several threads at once.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from benchrunner.server.views.perf.series import Point, Series

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

WIDTH_INCHES = 10.0
HEIGHT_INCHES = 5.0
DPI = 100
MAX_LEGEND_ENTRIES = 12
NAN = float("nan")
LARGEST_PLAIN = 1e300
"""Beyond this, matplotlib's axis arithmetic (span, margins, ticks) overflows a float."""


def _times(points: Sequence[Point]) -> npt.NDArray[np.datetime64]:
    import numpy as np  # with matplotlib, only when a plot is drawn: not on every server start

    # naive UTC: matplotlib's date axis takes datetime64 without a time zone
    return np.array([p.start_time.replace(tzinfo=None) for p in points], dtype="datetime64[ms]")


def _y_scale(series: Sequence[Series]) -> float:
    """1, or the power of ten every y value is divided by when the largest is too large for
    matplotlib to lay out an axis over it (values up to the largest float are storable)."""
    ys: Iterable[float | None] = (
        y for s in series for p in s.points for y in (p.value, p.lower_limit, p.upper_limit)
    )
    largest = max((abs(y) for y in ys if y is not None and math.isfinite(y)), default=0.0)
    if largest <= LARGEST_PLAIN:
        return 1.0
    return 10.0 ** math.floor(math.log10(largest))


def perf_png(series: Sequence[Series], *, title: str) -> bytes:
    """The plot as PNG bytes. Series of several measures share the x axis; the y axis is
    labelled with the first series' measure and units (a perf image is usually one measure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH_INCHES, HEIGHT_INCHES), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(title, loc="left", fontsize=12)
    alerts_drawn = False
    noisy_drawn = False
    scale = _y_scale(series)

    def y(value: float | None) -> float:
        # An infinite limit (drawn from values near the largest float) is not drawn.
        return value / scale if value is not None and math.isfinite(value) else NAN

    for index, s in enumerate(series):
        if not s.points:
            continue
        color = f"C{index % 10}"
        times = _times(s.points)
        values = [y(p.value) for p in s.points]
        line = s.label if index < MAX_LEGEND_ENTRIES else None
        axes.plot(times, values, marker="o", markersize=3, linewidth=1.5, color=color, label=line)
        banded = [p for p in s.points if p.lower_limit is not None or p.upper_limit is not None]
        if banded:
            band_times = _times(banded)
            lows = [y(p.lower_limit if p.lower_limit is not None else p.value) for p in banded]
            highs = [y(p.upper_limit if p.upper_limit is not None else p.value) for p in banded]
            axes.fill_between(band_times, lows, highs, color=color, alpha=0.15, linewidth=0)
            for limits in ([p.lower_limit for p in banded], [p.upper_limit for p in banded]):
                if any(v is not None for v in limits):
                    # NaN breaks the line where a point has no limit on that side.
                    drawn = [y(v) for v in limits]
                    axes.plot(band_times, drawn, linestyle="--", linewidth=0.8, color=color)
        noisy = [p for p in s.points if p.noisy]
        if noisy:
            axes.scatter(
                _times(noisy),
                [y(p.value) for p in noisy],
                s=70,
                marker="o",
                facecolors="white",
                edgecolors=color,
                linewidths=2,
                zorder=4,
                label=None if noisy_drawn else "noisy report (hollow)",
            )
            noisy_drawn = True
        alerted = [p for p in s.points if p.alert_limit is not None]
        if alerted:
            axes.scatter(
                _times(alerted),
                [y(p.value) for p in alerted],
                s=80,
                marker="X",
                color="red",
                zorder=5,
                label=None if alerts_drawn else "alert",
            )
            alerts_drawn = True
    if series:
        first = series[0]
        scaled = "" if scale == 1.0 else f" (x {scale:.0e})"
        axes.set_ylabel(f"{first.measure}: {first.units}{scaled}")
    axes.grid(True, alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best", fontsize=8)
    else:
        axes.text(0.5, 0.5, "no data", transform=axes.transAxes, ha="center", va="center")
    figure.autofmt_xdate()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()
