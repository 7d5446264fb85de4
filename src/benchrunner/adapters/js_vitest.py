"""Vitest bench: the JSON report of ``vitest bench --run --outputJson <file>``.

Each benchmark gives two measures, as Bencher's ``js_vitest``:

- ``latency`` from Tinybench's times in milliseconds, as nanoseconds: with ``average`` mean
  (the default) the mean, bounded by ± the standard deviation (``sd``); with median the median,
  without bounds (the report has no interquartile range);
- ``throughput``: ``hz`` operations per second, bounded by ± its relative margin of error
  (``rme`` percent), whatever the average.

The name is the group's ``fullName`` (``<file> > <describe> ...``), `` > ``, and the
benchmark's ``name``; just the ``name`` when ``fullName`` is empty or the whole would be too
long. The absolute ``filepath`` is not used, so names do not depend on the checkout's path.
"""

from __future__ import annotations

from benchrunner.adapters.base import LATENCY, THROUGHPUT, AdapterError, Measurement, Settings
from benchrunner.adapters.finite import finite_measurement
from benchrunner.adapters.json_reading import (
    as_array,
    as_object,
    as_string,
    load,
    member,
    name_member,
    number_member,
)
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, NANOSECONDS_PER

HARNESS = "js_vitest"


def parse(text: str, settings: Settings) -> list[Measurement]:
    """A latency and a throughput measurement per benchmark, files and groups in report order."""
    try:
        found = _measurements(load(text), settings)
    except AdapterError as exc:
        raise AdapterError(f"{HARNESS}: {exc}") from None
    if not found:
        raise AdapterError(f"{HARNESS}: the report has no benchmark in files[].groups[]")
    return found


def _measurements(document: object, settings: Settings) -> list[Measurement]:
    report = as_object(document, "the report")
    found: list[Measurement] = []
    for f, file_value in enumerate(as_array(member(report, "files", ""), "files")):
        file_where = f"files[{f}]"
        file = as_object(file_value, file_where)
        for g, group_value in enumerate(as_array(member(file, "groups", file_where), "groups")):
            group_where = f"{file_where}.groups[{g}]"
            group = as_object(group_value, group_where)
            full_name = as_string(member(group, "fullName", group_where), "fullName")
            benchmarks = as_array(member(group, "benchmarks", group_where), "benchmarks")
            for b, benchmark_value in enumerate(benchmarks):
                where = f"{group_where}.benchmarks[{b}]"
                found.extend(
                    _benchmark(full_name, as_object(benchmark_value, where), where, settings)
                )
    return found


def _benchmark(
    full_name: str, benchmark: dict[str, object], where: str, settings: Settings
) -> list[Measurement]:
    name = _joined(full_name, name_member(benchmark, "name", where))
    hz, mean, median, sd, rme = (
        number_member(benchmark, key, where) for key in ("hz", "mean", "median", "sd", "rme")
    )
    milliseconds = NANOSECONDS_PER["ms"]
    if settings.average == "median":
        latency = finite_measurement(name, LATENCY, median * milliseconds)
    else:
        value = mean * milliseconds
        spread = sd * milliseconds
        latency = finite_measurement(name, LATENCY, value, value - spread, value + spread)
    error = hz * (rme / 100.0)
    return [latency, finite_measurement(name, THROUGHPUT, hz, hz - error, hz + error)]


def _joined(full_name: str, name: str) -> str:
    joined = f"{full_name} > {name}"
    return name if not full_name or len(joined) > MAX_BENCHMARK_NAME else joined
