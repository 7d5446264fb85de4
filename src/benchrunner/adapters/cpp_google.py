"""Google Benchmark's JSON: what ``--benchmark_format=json`` prints on stdout, and the same
document ``--benchmark_out=FILE`` writes (``--benchmark_out_format=json``, its default).

As Bencher reads it: every entry of ``benchmarks`` is a benchmark named by its ``name``, with a
``latency`` of its ``real_time`` in its ``time_unit`` (ns, us, ms, s) as nanoseconds, and no
lower or upper value. With ``--benchmark_repetitions`` every repetition is printed under the
same name (a report keeps the last, as Bencher's results map does) and the aggregates are
entries of their own: ``<name>_mean``, ``<name>_median``, ``<name>_stddev``.
``settings.average`` may be unset or ``mean`` (Bencher reads the output the same way for both);
``median`` finds no result in Bencher, and is an AdapterError here: the medians are the
``<name>_median`` benchmarks.

Where Bencher would record a number that is not a time, the entry is left out: a benchmark that
failed (``error_occurred``, whose ``real_time`` is 0), an aggregate whose ``aggregate_unit`` is
not ``time`` (``_cv``, a fraction), and the complexity fits (``_BigO``, ``_RMS``), which have no
``real_time`` (Bencher refuses the whole document for them).

With several repetitions, every repetition's time (of the same ``run_name``) is kept as the
samples of each repetition's measurement and of the ``_mean`` and ``_median`` aggregates.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchrunner.adapters import json_numbers
from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.json_numbers import decimal_round_trip
from benchrunner.adapters.values import check_benchmark_name, number, to_nanoseconds

HARNESS = "cpp_google"


def _document(text: str) -> dict[str, Any]:
    try:
        document = json_numbers.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer with too many digits
        raise AdapterError(f"{HARNESS}: not Google Benchmark JSON: {exc}") from None
    except RecursionError:
        raise AdapterError(f"{HARNESS}: not Google Benchmark JSON: nested too deeply") from None
    if (
        not isinstance(document, dict)
        or not isinstance(document.get("context"), dict)
        or not isinstance(document["context"].get("caches"), list)
        or not isinstance(document.get("benchmarks"), list)
    ):
        raise AdapterError(
            f"{HARNESS}: not Google Benchmark JSON (expected an object with 'context' "
            "and its 'caches', and a 'benchmarks' list)"
        )
    return document


def _has_no_time(entry: dict[str, Any]) -> bool:
    if entry.get("error_occurred") is True:
        return True
    if entry.get("run_type") != "aggregate":
        return False
    return "real_time" not in entry or entry.get("aggregate_unit", "time") != "time"


def _measurement(entry: object, where: str) -> Measurement | None:
    if not isinstance(entry, dict):
        raise AdapterError(f"{where} must be an object")
    if _has_no_time(entry):
        return None
    name = entry.get("name")
    if not isinstance(name, str):
        raise AdapterError(f"{where}.name must be a string")
    check_benchmark_name(where, name)
    if "real_time" not in entry:
        raise AdapterError(f"{where}.real_time is missing")
    real_time = decimal_round_trip(
        number(entry["real_time"], f"{where}.real_time"), f"{where}.real_time"
    )
    unit = entry.get("time_unit")
    if not isinstance(unit, str):
        raise AdapterError(f"{where}.time_unit must be a string")
    return Measurement(name, LATENCY, to_nanoseconds(real_time, unit, f"{where}.time_unit"))


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per entry of ``benchmarks``, in the order Google Benchmark printed them."""
    if settings.average == "median":
        raise AdapterError(
            f"{HARNESS}: settings.average 'median' cannot be read (as in Bencher): Google "
            "Benchmark reports every repetition and aggregate as a benchmark of its own, the "
            "medians as '<name>_median'; use 'mean' or leave settings.average unset"
        )
    found: list[tuple[Measurement, str | None]] = []
    repetitions: dict[str, list[float]] = {}
    for index, entry in enumerate(_document(text)["benchmarks"]):
        measurement = _measurement(entry, f"{HARNESS}: benchmarks[{index}]")
        if measurement is None:
            continue
        assert isinstance(entry, dict)
        run: str | None = _run_name(entry, measurement.benchmark)
        if entry.get("run_type") != "aggregate":
            repetitions.setdefault(_run_name(entry, measurement.benchmark), []).append(
                measurement.value
            )
        elif entry.get("aggregate_name") not in ("mean", "median"):
            run = None
        found.append((measurement, run))
    if not found:
        raise AdapterError(f"{HARNESS}: 'benchmarks' has no entry with a time")
    return [
        replace(m, samples=tuple(repetitions[run]))
        if run is not None and len(repetitions.get(run, ())) > 1
        else m
        for m, run in found
    ]


def _run_name(entry: dict[str, Any], name: str) -> str:
    run = entry.get("run_name")
    return run if isinstance(run, str) else name
