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


def _name_problem(name: str, limit: int) -> str | None:
    if not name or len(name) > limit:
        return f"must be 1-{limit} characters"
    if "\x00" in name:
        return "must not contain a NUL character"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "must be Unicode text (it holds a lone surrogate)"
    return None


def parse_bmf(text: str) -> list[Measurement]:
    try:
        document = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"not valid JSON (Bencher Metric Format): {exc}") from None
    if not isinstance(document, dict) or not document:
        raise AdapterError("Bencher Metric Format must be a non-empty JSON object of benchmarks")
    found: list[Measurement] = []
    for benchmark, measures in document.items():
        problem = _name_problem(benchmark, MAX_BENCHMARK_NAME)
        if problem is not None:
            raise AdapterError(f"benchmark name {problem}")
        if not isinstance(measures, dict) or not measures:
            raise AdapterError(f"benchmark {benchmark!r} must map measures to metrics")
        for measure, metric in measures.items():
            where = f"{benchmark!r} / {measure!r}"
            problem = _name_problem(measure, MAX_MEASURE_NAME)
            if problem is not None:
                raise AdapterError(f"measure name {problem}")
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
