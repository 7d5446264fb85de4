"""The report page's distributions: each benchmark and measure's samples (all its iterations',
``core.samples``) drawn on the server as a small SVG, a box (quartiles, median, whiskers to the
extremes) over a strip of every kept sample, so a reader sees the spread and the outliers behind
one mean without JavaScript."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from benchrunner.core.samples import Samples

WIDTH = 480
HEIGHT = 56
MARGIN = 8
BOX_TOP = 10
BOX_BOTTOM = 30
STRIP_TOP = 36
STRIP_BOTTOM = 50


@dataclass(frozen=True)
class Distribution:
    benchmark: str
    measure: str
    units: str
    count: int
    """All samples, kept or not."""
    kept: int
    minimum: float
    median: float
    maximum: float
    svg: Markup


def distributions(view: Mapping[str, Any], found: Mapping[str, Samples]) -> list[Distribution]:
    """One distribution per benchmark and measure of a report's view (``views.report_view``),
    from ``found`` (each metric's samples by its UUID), in the view's order."""
    grouped: dict[tuple[str, str], tuple[str, list[Samples]]] = {}
    for iteration in view.get("results") or []:
        for bench in iteration:
            for entry in bench["measures"]:
                kept = found.get(entry["metric"]["uuid"])
                if kept is None:
                    continue
                key = (bench["benchmark"]["name"], entry["measure"]["name"])
                grouped.setdefault(key, (entry["measure"]["units"], []))[1].append(kept)
    shown: list[Distribution] = []
    for (benchmark, measure), (units, parts) in grouped.items():
        values = sorted(v for part in parts for v in part.values)
        low = min(part.minimum for part in parts)
        high = max(part.maximum for part in parts)
        label = f"{benchmark}, {measure}: {len(values)} samples from {low:.6g} to {high:.6g}"
        shown.append(
            Distribution(
                benchmark=benchmark,
                measure=measure,
                units=units,
                count=sum(part.count for part in parts),
                kept=len(values),
                minimum=low,
                median=_quantile(values, 0.5),
                maximum=high,
                svg=box_strip_svg(values, low, high, label),
            )
        )
    return shown


def box_strip_svg(values: Sequence[float], low: float, high: float, label: str) -> Markup:
    """A box plot over a strip of ``values`` (sorted) on an axis from ``low`` to ``high``."""
    span = high - low
    inner = WIDTH - 2 * MARGIN

    def x(value: float) -> float:
        return MARGIN + (inner / 2 if span <= 0 else (value - low) / span * inner)

    q1, median, q3 = (_quantile(values, q) for q in (0.25, 0.5, 0.75))
    middle = (BOX_TOP + BOX_BOTTOM) / 2
    parts = [
        f'<svg class="samples-plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>',
        _line(x(values[0]), middle, x(q1), middle, "whisker"),
        _line(x(q3), middle, x(values[-1]), middle, "whisker"),
        f'<rect class="box" x="{x(q1):.1f}" y="{BOX_TOP}" width="{max(x(q3) - x(q1), 1):.1f}" '
        f'height="{BOX_BOTTOM - BOX_TOP}" fill="none" stroke="currentColor"/>',
        _line(x(median), BOX_TOP, x(median), BOX_BOTTOM, "median", width=2),
    ]
    rows = STRIP_BOTTOM - STRIP_TOP
    for index, value in enumerate(values):
        # A fixed spread over the strip's height (golden-ratio steps): dots of equal value
        # stay apart, and the same samples always draw the same picture.
        y = STRIP_TOP + (index * 0.618034 % 1.0) * rows
        parts.append(
            f'<circle class="sample" cx="{x(value):.1f}" cy="{y:.1f}" r="1.5" '
            'fill="currentColor" fill-opacity="0.5"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - the label is escaped, the rest is numbers


def _line(x1: float, y1: float, x2: float, y2: float, kind: str, *, width: int = 1) -> str:
    return (
        f'<line class="{kind}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
        f'stroke="currentColor" stroke-width="{width}"/>'
    )


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks of sorted ``values`` (NumPy's default)."""
    position = (len(values) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(values) - 1)
    return values[below] + (values[above] - values[below]) * (position - below)
