"""Benchmark.js: the line each benchmark's ``cycle`` event prints,
``<name> x <ops/sec> ops/sec ±<percent>% (<runs> runs sampled)``.

Throughput in operations per second; the relative margin of error becomes the bounds,
``value ∓ value * percent / 100``, as Bencher's ``js_benchmark`` does. Benchmark.js prints one
figure, which Bencher reads only when ``average`` is unset or ``median``. Other lines are
ignored.
"""

from __future__ import annotations

from benchrunner.adapters.base import THROUGHPUT, AdapterError, Measurement, Settings
from benchrunner.adapters.finite import finite_measurement
from benchrunner.adapters.tail_tokens import decimal, lines, split_tail, unsigned
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name

HARNESS = "js_benchmark"
_TAIL_TOKENS = 7  # x, <ops/sec>, ops/sec, ±<percent>%, (<runs>, runs, sampled)


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One throughput measurement per Benchmark.js result line, in printed order."""
    if settings.average == "mean":
        raise AdapterError(
            f"{HARNESS}: Benchmark.js prints no mean; Bencher reads it only with "
            "settings.average 'median' or unset"
        )
    found: list[Measurement] = []
    for number, line in lines(text):
        if not line.endswith("sampled)") or "ops/sec" not in line:  # most lines: cheaply out
            continue
        try:
            measurement = _result(line, f"line {number}")
        except AdapterError as exc:
            raise AdapterError(f"{HARNESS}: {exc}") from None
        if measurement is not None:
            found.append(measurement)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no '<name> x <n> ops/sec ±<p>% (<n> runs sampled)' result line found"
        )
    return found


def _result(line: str, where: str) -> Measurement | None:
    split = split_tail(line, _TAIL_TOKENS)
    if split is None:
        return None
    name, (x, ops, unit, margin, runs, runs_word, sampled) = split
    if (x, unit, runs_word, sampled) != ("x", "ops/sec", "runs", "sampled)"):
        return None
    if not margin.startswith("±") or not margin.endswith("%") or not runs.startswith("("):
        return None
    if not name or unsigned(runs[1:]) is None:
        return None
    value = decimal(ops, f"{where}: ops/sec")
    percent = decimal(margin[1:-1], f"{where}: ±%")
    if value is None or percent is None:
        return None
    check_name(name, f"{where}: benchmark", MAX_BENCHMARK_NAME)
    error = value * (percent / 100.0)
    return finite_measurement(name, THROUGHPUT, value, value - error, value + error)
