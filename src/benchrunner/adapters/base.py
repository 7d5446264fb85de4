"""What every adapter takes and returns, and the one error it raises.

An adapter is a module of this package with a function ``parse(text, settings)`` that turns
one iteration's output of one harness into measurements in Bencher Metric Format terms: a
benchmark name, a measure slug (``latency`` in nanoseconds, ``throughput`` in operations per
second, or another the harness reports) and a value with optional lower and upper values.
Adapters are pure: no I/O, no clock, no globals that change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Protocol

Average = Literal["mean", "median"]
Fold = Literal["min", "max", "mean", "median"]

LATENCY = "latency"
"""Nanoseconds per operation (Bencher's built-in ``latency`` measure)."""
THROUGHPUT = "throughput"
"""Operations per second (Bencher's built-in ``throughput`` measure)."""


class AdapterError(ValueError):
    """The output could not be parsed; the message says where and why."""


@dataclass(frozen=True)
class Measurement:
    benchmark: str
    measure: str
    value: float
    lower_value: float | None = None
    upper_value: float | None = None
    samples: tuple[float, ...] = field(default=(), compare=False)
    """The harness's own per-sample figures behind ``value`` (pyperf's values, hyperfine's
    times, ...), in its order and in the value's unit; empty when it gives none. Extra data
    only: never part of the value, the bounds, or a measurement's equality."""


@dataclass(frozen=True)
class Settings:
    """``settings`` of ``POST /v0/run`` that reach an adapter. ``average`` chooses the central
    value a harness reports both ways (None: the adapter's own default, as Bencher's)."""

    average: Average | None = None


class _ErrorsNamed:
    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _: TracebackType | None
    ) -> None:
        if isinstance(exc, AdapterError):
            raise AdapterError(f"{self._prefix}: {exc}") from None


def errors_named(prefix: str) -> _ErrorsNamed:
    """``with errors_named(HARNESS):`` raises an AdapterError from inside again with
    ``<prefix>: `` in front of its message, so helpers that name only a field or a value give
    an error that names the harness (and the line, when ``prefix`` holds it)."""
    return _ErrorsNamed(prefix)


def check_average(harness: str, average: Average | None, reports: Average | None) -> None:
    """Bencher's rule for a harness that prints one central value: ``settings.average`` either
    names that value (``reports``) or is left out; asking for the other one finds nothing."""
    if average is not None and average != reports:
        printed = f"only a {reports}" if reports else "a single value, neither mean nor median"
        raise AdapterError(
            f"{harness}: the harness prints {printed} per benchmark; "
            f"settings.average {average!r} cannot be read from it"
        )


class Adapter(Protocol):
    def __call__(self, text: str, settings: Settings, /) -> list[Measurement]: ...
