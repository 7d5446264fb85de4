"""The figures of one queue_compare run, their medians over repeats, and the printed table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 <= q <= 1) of a non-empty sample."""
    if not values:
        raise ValueError("percentile of an empty sample")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Figures:
    """One system, engine and worker count, one run (or the medians of several)."""

    system: str
    engine: str
    workers: int
    jobs: int
    throughput: float
    """Jobs per second from the first submission to the last job done (benchrunner:
    ``processed``; Procrastinate: ``succeeded``)."""
    pickup_p50: float
    pickup_p90: float
    """Milliseconds from the client's clock before the submit call to the job's own clock at
    its start, one job at a time with idle workers."""
    server_cpu: float | None
    """CPU milliseconds per job of the ``benchrunner server`` process (None: Procrastinate)."""
    database_cpu: float | None
    """CPU milliseconds per job of the database's PostgreSQL backends (None: SQLite)."""
    worker_cpu: float
    """CPU milliseconds per job of the worker processes (benchrunner: the runner agents
    themselves, not the job processes they start)."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.system, self.engine, self.workers)


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def medians(runs: Sequence[Figures]) -> Figures:
    """Each figure's median over repeated runs of one system, engine and worker count."""
    first = runs[0]
    if any(run.key != first.key for run in runs):
        raise ValueError("medians of runs of different configurations")
    values: dict[str, object] = {}
    for field in fields(Figures):
        column = [getattr(run, field.name) for run in runs]
        if field.name in ("system", "engine", "workers", "jobs"):
            values[field.name] = column[0]
        else:
            values[field.name] = _median(column)
    return Figures(**values)  # type: ignore[arg-type]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}x"


HEADER = (
    "| system | engine | workers | jobs/s | pickup p50 ms | pickup p90 ms "
    "| server CPU ms/job | PostgreSQL CPU ms/job | worker CPU ms/job |"
)


def row(f: Figures) -> str:
    return (
        f"| {f.system} | {f.engine} | {f.workers} | {f.throughput:.1f} | {f.pickup_p50:.2f} "
        f"| {f.pickup_p90:.2f} | {_ms(f.server_cpu)} | {_ms(f.database_cpu)} "
        f"| {_ms(f.worker_cpu)} |"
    )


def ratio_row(ours: Figures, theirs: Figures) -> str:
    """benchrunner / the other system for each figure; CPU compares the whole cost on the
    server side (benchrunner: server + PostgreSQL; Procrastinate: PostgreSQL)."""
    our_side = (ours.server_cpu or 0.0) + (ours.database_cpu or 0.0)
    their_side = (theirs.server_cpu or 0.0) + (theirs.database_cpu or 0.0)
    return (
        f"| ratio {ours.system}/{theirs.system} | {ours.engine} | {ours.workers} "
        f"| {_ratio(ours.throughput, theirs.throughput)} "
        f"| {_ratio(ours.pickup_p50, theirs.pickup_p50)} "
        f"| {_ratio(ours.pickup_p90, theirs.pickup_p90)} "
        f"| server+PostgreSQL {_ratio(our_side, their_side or None)} "
        f"| {_ratio(ours.database_cpu, theirs.database_cpu)} "
        f"| {_ratio(ours.worker_cpu, theirs.worker_cpu)} |"
    )


def table(results: Sequence[Figures]) -> str:
    """A Markdown table of ``results`` (medians), with benchrunner/Procrastinate ratio rows
    for every engine and worker count that has both."""
    lines = [HEADER, "| " + " | ".join(["---"] * 9) + " |"]
    by_key = {f.key: f for f in results}
    for f in results:
        lines.append(row(f))
    for f in results:
        for other in ("procrastinate", "benchrunner-before"):
            theirs = by_key.get((other, f.engine, f.workers))
            if f.system == "benchrunner" and theirs is not None:
                lines.append(ratio_row(f, theirs))
    return "\n".join(lines)
