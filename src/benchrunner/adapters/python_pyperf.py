"""pyperf's JSON result file (``python -m pyperf timeit ... -o FILE``, a ``pyperf.Runner``
script's ``-o FILE``) -> latency per benchmark. Bencher has no such adapter; the mapping is ours.

The file is a suite: ``benchmarks``, each with ``runs``; a run's ``values`` are seconds per
loop iteration, and its ``warmups`` are left out, as pyperf leaves them out of its statistics.
A benchmark's name is its ``name`` metadata (looked up as pyperf does: the suite's metadata,
overridden by the benchmark's, overridden by each run's, common to all its runs). Over all
values of all runs, with ``average`` ``mean`` (the default, as pyperf's own summary) the value
is the mean and lower/upper are the mean minus/plus the sample standard deviation; with
``median`` the value is the median and lower/upper are the median minus/plus the median
absolute deviation: the two pairs ``pyperf stats`` prints. With a single value there is no
spread and no lower/upper. Every value (in nanoseconds) is kept as the measurement's samples.
Benchmarks whose unit is not ``second`` (``--track-memory`` writes ``byte``) are skipped, as
Bencher skips asv's memory rows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings, errors_named
from benchrunner.adapters.json_fields import JsonObject, as_array, as_object, load, member, path
from benchrunner.adapters.values import (
    MAX_BENCHMARK_NAME,
    NANOSECONDS_PER,
    brief,
    check_name,
    number,
    plus_minus,
    samples_scaled,
    to_nanoseconds,
)

HARNESS = "python_pyperf"

FORMAT_VERSION = "1.0"
"""The file format pyperf has written since its 1.0 (2017)."""

_NO_VALUE = object()


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One measurement per benchmark measured in seconds, in the file's order; AdapterError
    naming the field when ``text`` is not a pyperf result file or has no such benchmark."""
    with errors_named(HARNESS):
        return _measurements(load(text), settings)


def _measurements(document: object, settings: Settings) -> list[Measurement]:
    root = as_object(document, "")
    version = member(root, "version", "")
    if version != FORMAT_VERSION:
        raise AdapterError(
            f"version is {brief(version)}; pyperf's format {FORMAT_VERSION!r} is read"
        )
    suite_metadata = _metadata(root, "")
    benchmarks = as_array(member(root, "benchmarks", ""), "benchmarks")
    if not benchmarks:
        raise AdapterError("benchmarks is empty: the file holds no benchmark")
    found = []
    units = set()
    for index, entry in enumerate(benchmarks):
        where = path("benchmarks", index)
        benchmark = as_object(entry, where)
        common = {**suite_metadata, **_metadata(benchmark, where)}
        runs = [
            as_object(run, path(path(where, "runs"), run_index))
            for run_index, run in enumerate(
                as_array(member(benchmark, "runs", where), path(where, "runs"))
            )
        ]
        unit = _run_metadata("unit", common, runs, where, default="second")
        if unit != "second":
            units.add(brief(unit))
            continue
        name = _run_metadata("name", common, runs, where)
        if not isinstance(name, str):
            raise AdapterError(f"{where} has no 'name' metadata (a string) common to its runs")
        check_name(name, "benchmark", MAX_BENCHMARK_NAME)
        values = _values(runs, where)
        found.append(_measurement(name, values, settings, where))
    if not found:
        raise AdapterError(
            f"no benchmark is measured in seconds (units: {', '.join(sorted(units))})"
        )
    return found


def _metadata(document: JsonObject, where: str) -> JsonObject:
    metadata = document.get("metadata", {})
    return as_object(metadata, path(where, "metadata"))


def _run_metadata(
    key: str, common: JsonObject, runs: Sequence[JsonObject], where: str, default: object = None
) -> object:
    """The value of metadata ``key`` every run of a benchmark has (pyperf's common metadata)."""
    seen: object = _NO_VALUE
    for run_index, run in enumerate(runs):
        own = _metadata(run, path(path(where, "runs"), run_index))
        value = own.get(key, common.get(key, default))
        if seen is not _NO_VALUE and value != seen:
            raise AdapterError(f"{where}: its runs disagree on metadata {key!r}")
        seen = value
    return common.get(key, default) if seen is _NO_VALUE else seen


def _values(runs: Sequence[JsonObject], where: str) -> list[float]:
    """Every run's values in seconds; runs without ``values`` (calibration) add none."""
    values: list[float] = []
    for run_index, run in enumerate(runs):
        run_where = path(path(where, "runs"), run_index)
        raw = as_array(run.get("values", []), path(run_where, "values"))
        for i, value in enumerate(raw):
            if type(value) is float and math.isfinite(value):  # the usual case, read fast
                values.append(value)
            else:
                values.append(number(value, path(path(run_where, "values"), i)))
    if not values:
        raise AdapterError(f"{where} has no values: none of its runs measured anything")
    return values


def _measurement(name: str, seconds: list[float], settings: Settings, where: str) -> Measurement:
    try:
        if (settings.average or "mean") == "median":
            centre = statistics.median(seconds)
            spread = statistics.median(abs(value - centre) for value in seconds)
        else:
            centre = math.fsum(seconds) / len(seconds)
            spread = _sample_stdev(seconds, centre)
    except OverflowError:
        raise AdapterError(f"{where}: its values are too large to average") from None
    value = to_nanoseconds(centre, "s", where)
    samples = samples_scaled(seconds, NANOSECONDS_PER["s"])
    if len(seconds) < 2:
        return Measurement(name, LATENCY, value, samples=samples)
    lower, upper = plus_minus(value, to_nanoseconds(spread, "s", where), where)
    return Measurement(name, LATENCY, value, lower, upper, samples=samples)


def _sample_stdev(values: Sequence[float], mean: float) -> float:
    """As ``statistics.stdev`` (pyperf's), in linear time for any number of values."""
    if len(values) < 2:
        return 0.0
    return math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1))
