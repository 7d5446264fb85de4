"""Measures as Bencher names them: a metric's measure key -> the measure's name, slug and units.

Bencher creates its built-in measures on first use with its own name and units, whether a
result names them by slug (``latency``), name (``Latency``) or display name; any other key
becomes a measure named by the key, with the key's slug and generic units.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchrunner.core import slugs

NANOSECONDS = "nanoseconds (ns)"
SECONDS = "seconds (s)"
BYTES = "bytes (B)"
GENERIC_UNITS = "units"


@dataclass(frozen=True)
class MeasureSpec:
    name: str
    slug: str
    units: str


def _spec(name: str, slug: str, units: str) -> MeasureSpec:
    return MeasureSpec(name, slug, units)


BUILT_IN: tuple[MeasureSpec, ...] = (
    _spec("Latency", "latency", NANOSECONDS),
    _spec("Throughput", "throughput", "operations / second (ops/s)"),
    # BenchmarkDotNet
    _spec("Allocated", "allocated", BYTES),
    _spec("Gen0 Collects", "gen0-collects", "collects"),
    _spec("Gen1 Collects", "gen1-collects", "collects"),
    _spec("Gen2 Collects", "gen2-collects", "collects"),
    # Bencher Metric Format extras
    _spec("Build Time", "build-time", SECONDS),
    _spec("File Size", "file-size", BYTES),
    # Iai
    _spec("Instructions", "instructions", "instructions"),
    _spec("L1 Accesses", "l1-accesses", "accesses"),
    _spec("L2 Accesses", "l2-accesses", "accesses"),
    _spec("RAM Accesses", "ram-accesses", "accesses"),
    _spec("Estimated Cycles", "estimated-cycles", "cycles"),
    # Gungraun (Iai-Callgrind): Callgrind, Cachegrind, DHAT
    _spec("L1 Hits", "l1-hits", "hits"),
    _spec("L2 Hits", "l2-hits", "hits"),
    _spec("LL Hits", "ll-hits", "hits"),
    _spec("RAM Hits", "ram-hits", "hits"),
    _spec("Total read+write", "total-read-write", "reads/writes"),
    _spec("Ge", "global-bus-events", "events"),
    _spec("Dr", "dr", "reads"),
    _spec("Dw", "dw", "writes"),
    _spec("I1mr", "i1mr", "misses (reads)"),
    _spec("D1mr", "d1mr", "misses (reads)"),
    _spec("D1mw", "d1mw", "misses (writes)"),
    _spec("ILmr", "ilmr", "misses (reads)"),
    _spec("DLmr", "dlmr", "misses (reads)"),
    _spec("DLmw", "dlmw", "misses (writes)"),
    _spec("I1 Miss Rate", "i1-miss-rate", "misses (%)"),
    _spec("LLi Miss Rate", "lli-miss-rate", "misses (%)"),
    _spec("D1 Miss Rate", "d1-miss-rate", "misses (%)"),
    _spec("LLd Miss Rate", "lld-miss-rate", "misses (%)"),
    _spec("LL Miss Rate", "ll-miss-rate", "misses (%)"),
    _spec("L1 Hit Rate", "l1-hit-rate", "hits (%)"),
    _spec("LL Hit Rate", "ll-hit-rate", "hits (%)"),
    _spec("RAM Hit Rate", "ram-hit-rate", "hits (%)"),
    _spec("SysCount", "sys-count", "syscalls"),
    _spec("SysTime", "sys-time", "msec/usec/nsec"),
    _spec("SysCpuTime", "sys-cpu-time", "nsec"),
    _spec("Bc", "bc", "branches"),
    _spec("Bcm", "bcm", "branches"),
    _spec("Bi", "bi", "branches"),
    _spec("Bim", "bim", "branches"),
    _spec("Total bytes", "total-bytes", BYTES),
    _spec("Total blocks", "total-blocks", "blocks"),
    _spec("At t-gmax bytes", "at-t-gmax-bytes", BYTES),
    _spec("At t-gmax blocks", "at-t-gmax-blocks", "blocks"),
    _spec("At t-end bytes", "at-t-end-bytes", BYTES),
    _spec("At t-end blocks", "at-t-end-blocks", "blocks"),
    _spec("Reads bytes", "reads-bytes", BYTES),
    _spec("Writes bytes", "writes-bytes", BYTES),
)

_BY_KEY: dict[str, MeasureSpec] = {key: spec for spec in BUILT_IN for key in (spec.name, spec.slug)}


def measure_spec(key: str) -> MeasureSpec:
    """The measure a result's key means: a built-in one by its name or slug, else a measure
    named by the key itself with generic units."""
    found = _BY_KEY.get(key)
    if found is not None:
        return found
    return MeasureSpec(key, slugs.slugify(key), GENERIC_UNITS)
