"""Bencher Metric Format: ``{"<benchmark>": {"<measure>": {"value": v, "lower_value"?: l,
"upper_value"?: u}}}``."""

from __future__ import annotations

from benchrunner.adapters import json_numbers
from benchrunner.adapters.base import AdapterError, Measurement, Settings
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, MAX_MEASURE_NAME, check_name, number


def parse(text: str, settings: Settings | None = None) -> list[Measurement]:
    """Bencher Metric Format; ``settings`` do not apply to it."""
    try:
        document = json_numbers.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"not valid JSON (Bencher Metric Format): {exc}") from None
    except RecursionError:
        raise AdapterError("not valid Bencher Metric Format: nested too deeply") from None
    if not isinstance(document, dict) or not document:
        raise AdapterError("Bencher Metric Format must be a non-empty JSON object of benchmarks")
    found: list[Measurement] = []
    for benchmark, measures in document.items():
        check_name(benchmark, "benchmark", MAX_BENCHMARK_NAME)
        if not isinstance(measures, dict) or not measures:
            raise AdapterError(f"benchmark {benchmark!r} must map measures to metrics")
        for measure, metric in measures.items():
            where = f"{benchmark!r} / {measure!r}"
            check_name(measure, "measure", MAX_MEASURE_NAME)
            if not isinstance(metric, dict) or "value" not in metric:
                raise AdapterError(f"{where} must be an object with a 'value'")
            value = number(metric["value"], f"{where} value")
            lower = metric.get("lower_value")
            upper = metric.get("upper_value")
            found.append(
                Measurement(
                    benchmark=benchmark,
                    measure=measure,
                    value=value,
                    lower_value=None if lower is None else number(lower, f"{where} lower_value"),
                    upper_value=None if upper is None else number(upper, f"{where} upper_value"),
                )
            )
    return found
