"""Bencher Metric Format: ``{"<benchmark>": {"<measure>": {"value": v, "lower_value"?: l,
"upper_value"?: u}}}``."""

from __future__ import annotations

import json
import math

from benchrunner.adapters.base import AdapterError, Measurement

MAX_BENCHMARK_NAME = 1024
MAX_MEASURE_NAME = 64


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AdapterError(f"{where} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        raise AdapterError(f"{where} is too large for a float") from None
    if not math.isfinite(number):
        raise AdapterError(f"{where} must be finite, got {value!r}")
    return number


def _name(name: str, what: str, longest: int) -> None:
    if not name or len(name) > longest:
        raise AdapterError(f"{what} name must be 1-{longest} characters")
    # Names are stored as text: PostgreSQL refuses NUL, and a lone surrogate is not UTF-8.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise AdapterError(f"{what} name {name!r} has a lone surrogate") from None
    if "\x00" in name:
        raise AdapterError(f"{what} name {name!r} has a NUL character")


def parse_bmf(text: str) -> list[Measurement]:
    try:
        document = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"not valid JSON (Bencher Metric Format): {exc}") from None
    except RecursionError:
        raise AdapterError("not valid Bencher Metric Format: nested too deeply") from None
    if not isinstance(document, dict) or not document:
        raise AdapterError("Bencher Metric Format must be a non-empty JSON object of benchmarks")
    found: list[Measurement] = []
    for benchmark, measures in document.items():
        _name(benchmark, "benchmark", MAX_BENCHMARK_NAME)
        if not isinstance(measures, dict) or not measures:
            raise AdapterError(f"benchmark {benchmark!r} must map measures to metrics")
        for measure, metric in measures.items():
            where = f"{benchmark!r} / {measure!r}"
            _name(measure, "measure", MAX_MEASURE_NAME)
            if not isinstance(metric, dict) or "value" not in metric:
                raise AdapterError(f"{where} must be an object with a 'value'")
            value = _number(metric["value"], f"{where} value")
            lower = metric.get("lower_value")
            upper = metric.get("upper_value")
            found.append(
                Measurement(
                    benchmark=benchmark,
                    measure=measure,
                    value=value,
                    lower_value=None if lower is None else _number(lower, f"{where} lower_value"),
                    upper_value=None if upper is None else _number(upper, f"{where} upper_value"),
                )
            )
    return found
