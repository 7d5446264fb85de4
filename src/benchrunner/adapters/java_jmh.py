"""JMH: the JSON result file of ``-rf json`` (``-rff <file>``), an array with one object a
benchmark run.

As Bencher's ``java_jmh``: the name is the ``benchmark`` field as JMH wrote it (``params`` are
not added, so runs of one method with different ``@Param`` values share a name); the measure
follows ``primaryMetric.scoreUnit`` whatever the ``mode`` (thrpt, avgt, sample, ss):

- ``<unit>/op`` is ``latency``, converted to nanoseconds;
- ``ops/<unit>`` is ``throughput``, converted to operations per second;

with ``<unit>`` one of ps, ns, us/µs/μs, ms, s (JMH's ``min``, ``hr`` and ``day`` are refused,
as Bencher refuses them). ``score`` is the value and ``scoreConfidence`` (JMH's 99.9 %
interval, ``score ∓ scoreError``) the bounds. JMH reports no median: ``average`` median is
refused, as Bencher refuses it.
"""

from __future__ import annotations

from benchrunner.adapters.base import (
    LATENCY,
    THROUGHPUT,
    AdapterError,
    Measurement,
    Settings,
    errors_named,
)
from benchrunner.adapters.json_fields import (
    JsonObject,
    as_array,
    as_object,
    load,
    member,
    name_member,
    number_member,
    string_member,
)
from benchrunner.adapters.json_numbers import decimal_round_trip
from benchrunner.adapters.values import (
    NANOSECONDS_PER,
    SECONDS_PER,
    finite_measurement,
    number,
)

HARNESS = "java_jmh"


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One measurement per benchmark run, in file order."""
    if settings.average == "median":
        raise AdapterError(
            f"{HARNESS}: JMH reports no median; Bencher reads it only with "
            "settings.average 'mean' or unset"
        )
    with errors_named(HARNESS):
        runs = as_array(load(text), "the result file")
        found = [_run(as_object(run, f"[{i}]"), f"[{i}]") for i, run in enumerate(runs)]
    if not found:
        raise AdapterError(f"{HARNESS}: the result file is an empty array")
    return found


def _run(run: JsonObject, where: str) -> Measurement:
    name = name_member(run, "benchmark", where)
    member(run, "secondaryMetrics", where)  # every JMH result has it; Bencher requires it
    metric_where = f"{where}.primaryMetric"
    metric = as_object(member(run, "primaryMetric", where), metric_where)
    score_where = f"{metric_where}.score"
    score = decimal_round_trip(number_member(metric, "score", metric_where), score_where)
    confidence = as_array(member(metric, "scoreConfidence", metric_where), "scoreConfidence")
    if len(confidence) != 2:
        raise AdapterError(f"{metric_where}.scoreConfidence must be [lower, upper]")
    bound_where = f"{metric_where}.scoreConfidence"
    lower, upper = (
        decimal_round_trip(number(bound, f"{bound_where}[{i}]"), f"{bound_where}[{i}]")
        for i, bound in enumerate(confidence)
    )
    unit_where = f"{metric_where}.scoreUnit"
    unit = string_member(metric, "scoreUnit", metric_where)
    if unit.endswith("/op"):
        scale = _unit(NANOSECONDS_PER, unit.removesuffix("/op"), unit, unit_where)
        values = (score * scale, lower * scale, upper * scale)
        measure = LATENCY
    elif unit.startswith("ops/"):
        seconds = _unit(SECONDS_PER, unit.removeprefix("ops/"), unit, unit_where)
        values = (score / seconds, lower / seconds, upper / seconds)
        measure = THROUGHPUT
    else:
        raise AdapterError(f"{unit_where} {unit!r} is neither '<time>/op' nor 'ops/<time>'")
    return finite_measurement(name, measure, *values)


def _unit(table: dict[str, float], time_unit: str, unit: str, where: str) -> float:
    if time_unit not in table:
        raise AdapterError(f"{where} {unit!r} has a time unit other than ps, ns, us, ms or s")
    return table[time_unit]
