"""Lower and upper values from a centre and a spread, as harnesses report ``value ± spread``."""

from __future__ import annotations

import math

from benchrunner.adapters.base import AdapterError


def plus_minus(value: float, spread: float, where: str) -> tuple[float, float]:
    """``(value - spread, value + spread)``; an AdapterError naming ``where`` when either
    overflows a float."""
    lower, upper = value - spread, value + spread
    if not (math.isfinite(lower) and math.isfinite(upper)):
        raise AdapterError(f"{where}: {value} ± {spread} is too large")
    return lower, upper
