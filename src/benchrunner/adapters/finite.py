"""A measurement whose computed numbers are all finite.

Converting units or adding a margin can overflow a float that was finite when read
(``1e300 s/op`` in nanoseconds); the store must never see infinity.
"""

from __future__ import annotations

import math

from benchrunner.adapters.base import AdapterError, Measurement


def finite_measurement(
    benchmark: str,
    measure: str,
    value: float,
    lower_value: float | None = None,
    upper_value: float | None = None,
) -> Measurement:
    """``Measurement(...)``, or AdapterError naming the benchmark when a number overflowed."""
    for number in (value, lower_value, upper_value):
        if number is not None and not math.isfinite(number):
            raise AdapterError(f"{benchmark!r}: {measure} is too large for a float once converted")
    return Measurement(benchmark, measure, value, lower_value, upper_value)
