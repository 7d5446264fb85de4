"""BenchmarkDotNet: the JSON export (``--exporters json``, or ``[JsonExporterAttribute.Full]``;
the ``*-report-full.json`` or ``*-report-brief.json`` file under ``BenchmarkDotNet.Artifacts``).

As Bencher's ``c_sharp_dot_net``:

- the name is ``Namespace.Method`` (just ``Method`` when ``Namespace`` is null or absent); the
  type and ``Parameters`` are not part of it, so parameterised runs share a name;
- ``latency`` in nanoseconds (the export's unit) from ``Statistics``: with ``average`` mean (the
  default) ``Mean`` ± ``StandardDeviation``, with median ``Median`` ± ``InterquartileRange``;
- with the memory diagnoser (a ``Memory`` object), also ``allocated``
  (``BytesAllocatedPerOperation``), ``gen0-collects``, ``gen1-collects``, ``gen2-collects`` and
  ``total-operations``, without bounds.
"""

from __future__ import annotations

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings, errors_named
from benchrunner.adapters.json_fields import (
    JsonObject,
    as_array,
    as_object,
    as_string,
    load,
    member,
    name_member,
    number_member,
)
from benchrunner.adapters.json_numbers import decimal_round_trip
from benchrunner.adapters.values import (
    MAX_BENCHMARK_NAME,
    check_benchmark_name,
    check_name,
    finite_measurement,
    number,
)

HARNESS = "c_sharp_dot_net"

MEMORY_MEASURES: tuple[tuple[str, str], ...] = (
    ("allocated", "BytesAllocatedPerOperation"),
    ("gen0-collects", "Gen0Collections"),
    ("gen1-collects", "Gen1Collections"),
    ("gen2-collects", "Gen2Collections"),
    ("total-operations", "TotalOperations"),
)
"""Bencher's measure slug -> the ``Memory`` field it comes from, in Bencher's order."""


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Each benchmark's latency (then its memory measures), in export order."""
    with errors_named(HARNESS):
        export = as_object(load(text), "the export")
        member(export, "HostEnvironmentInfo", "")  # every export has it; Bencher requires it
        benchmarks = as_array(member(export, "Benchmarks", ""), "Benchmarks")
        found: list[Measurement] = []
        for i, benchmark in enumerate(benchmarks):
            where = f"Benchmarks[{i}]"
            found.extend(_benchmark(as_object(benchmark, where), where, settings))
    if not found:
        raise AdapterError(f"{HARNESS}: the export's Benchmarks array is empty")
    return found


def _benchmark(benchmark: JsonObject, where: str, settings: Settings) -> list[Measurement]:
    name = _name(benchmark, where)
    statistics_where = f"{where}.Statistics"
    statistics = as_object(member(benchmark, "Statistics", where), statistics_where)
    mean, deviation, median, quartiles = (
        decimal_round_trip(
            number_member(statistics, key, statistics_where), f"{statistics_where}.{key}"
        )
        for key in ("Mean", "StandardDeviation", "Median", "InterquartileRange")
    )
    value, spread = (median, quartiles) if settings.average == "median" else (mean, deviation)
    found = [finite_measurement(name, LATENCY, value, value - spread, value + spread)]
    memory = benchmark.get("Memory")
    if memory is not None:
        memory_where = f"{where}.Memory"
        fields = as_object(memory, memory_where)
        for measure, key in MEMORY_MEASURES:
            found.append(Measurement(name, measure, _count(fields, key, memory_where)))
    return found


def _name(benchmark: JsonObject, where: str) -> str:
    method = name_member(benchmark, "Method", where)
    namespace = benchmark.get("Namespace")
    if namespace is None:
        return method
    namespace = as_string(namespace, f"{where}.Namespace")
    check_name(namespace, f"{where}.Namespace", MAX_BENCHMARK_NAME)
    name = f"{namespace}.{method}"
    check_benchmark_name(where, name)
    return name


def _count(fields: JsonObject, key: str, where: str) -> float:
    raw = member(fields, key, where)
    count = number(raw, f"{where}.{key}")
    if not isinstance(raw, int) or count < 0:
        raise AdapterError(f"{where}.{key} must be a count (a whole number >= 0), got {raw!r}")
    return count
