"""What every adapter returns, and the one error it raises."""

from __future__ import annotations

from dataclasses import dataclass


class AdapterError(ValueError):
    """The output could not be parsed; the message says where and why."""


@dataclass(frozen=True)
class Measurement:
    benchmark: str
    measure: str
    value: float
    lower_value: float | None = None
    upper_value: float | None = None
