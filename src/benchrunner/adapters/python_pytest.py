"""pytest-benchmark's JSON export (``pytest --benchmark-json=FILE``) -> latency per test.

Each entry of ``benchmarks`` is one test, named by its ``fullname`` (``bench.py::test_fib[10]``);
its ``stats`` are in seconds. As Bencher's ``python_pytest``: with ``average`` ``mean`` (the
default) the value is ``stats.mean`` and lower/upper are the mean minus/plus ``stats.stddev``;
with ``median`` the value is ``stats.median`` and lower/upper are the median minus/plus the
whole ``stats.iqr``. All four stats must be there, as Bencher requires, whichever is used.
Each round's time (``stats.data``, which pytest-benchmark saves with
``--benchmark-save-data``) is kept as the measurement's samples, in nanoseconds.
"""

from __future__ import annotations

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings, errors_named
from benchrunner.adapters.json_fields import (
    as_array,
    as_object,
    load,
    member,
    name_member,
    number_member,
    path,
)
from benchrunner.adapters.json_numbers import decimal_round_trip
from benchrunner.adapters.values import (
    NANOSECONDS_PER,
    plus_minus,
    samples_scaled,
    to_nanoseconds,
)

HARNESS = "python_pytest"

_CENTRE_AND_SPREAD = {"mean": ("mean", "stddev"), "median": ("median", "iqr")}


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One measurement per benchmarked test, in the export's order; AdapterError naming the
    field when ``text`` is not a pytest-benchmark export."""
    with errors_named(HARNESS):
        return _measurements(load(text), settings)


def _measurements(document: object, settings: Settings) -> list[Measurement]:
    root = as_object(document, "")
    # pytest-benchmark always writes these two; Bencher requires them, and they tell this
    # export apart from other JSON with a "benchmarks" array (pyperf's).
    for key in ("machine_info", "commit_info"):
        member(root, key, "")
    benchmarks = as_array(member(root, "benchmarks", ""), "benchmarks")
    if not benchmarks:
        raise AdapterError("benchmarks is empty: no test was benchmarked")
    centre_key, spread_key = _CENTRE_AND_SPREAD[settings.average or "mean"]
    found = []
    for index, entry in enumerate(benchmarks):
        where = path("benchmarks", index)
        benchmark = as_object(entry, where)
        name = name_member(benchmark, "fullname", where)
        stats_where = path(where, "stats")
        stats = as_object(member(benchmark, "stats", where), stats_where)
        seconds = {
            key: decimal_round_trip(number_member(stats, key, stats_where), path(stats_where, key))
            for key in ("mean", "stddev", "median", "iqr")
        }
        value = to_nanoseconds(seconds[centre_key], "s", path(stats_where, centre_key))
        spread = to_nanoseconds(seconds[spread_key], "s", path(stats_where, spread_key))
        lower, upper = plus_minus(value, spread, stats_where)
        samples = samples_scaled(stats.get("data"), NANOSECONDS_PER["s"])
        found.append(Measurement(name, LATENCY, value, lower, upper, samples=samples))
    return found
