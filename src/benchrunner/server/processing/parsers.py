"""Where processing decodes and parses job outputs: worker processes, off the event loop and
out of the server's GIL.

A worker thread is not enough. While it parses (milliseconds per 64 KiB output), every call
of the loop's thread that releases the GIL, as each SQLite statement run inline on the loop
does, waits up to the interpreter's switch interval (5 ms) to take it back: heartbeat acks
took tens of milliseconds and processing slowed down (``benchmarks/loop_latency.py``).
What crosses to a worker is small: an output's bytes and its report's parse settings in, the
metrics or an error out.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from concurrent.futures import ProcessPoolExecutor

from benchrunner import adapters
from benchrunner.adapters.base import Average, Fold
from benchrunner.protocol import JsonDuet, NoiseGuard
from benchrunner.server.processing.duet_results import measure_duet
from benchrunner.server.processing.outputs import UnusableOutput, decode_output
from benchrunner.server.processing.results import measure_output
from benchrunner.server.store.duets import NewDuet
from benchrunner.server.store.reports import MetricValue


def worker_count() -> int:
    """One core is left to the event loop; at most four workers."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def parser_pool() -> ProcessPoolExecutor:
    """Started on first use (``spawn``: no copy of the server's threads, locks or sockets).
    Its workers end with the server, however the server ends (SIGKILL included)."""
    return ProcessPoolExecutor(
        worker_count(),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_exit_with_parent,
    )


def _exit_with_parent() -> None:
    """A worker waits for tasks on a pipe it also holds a writing end of, so it would never see
    the server go: a thread watches the parent process and ends the worker with it."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def measure_stored(
    adapter: str, average: Average | None, fold: Fold | None, raw: bytes
) -> tuple[list[MetricValue], str | None, NoiseGuard | None]:
    """A stored output's metrics, or why it has none (see ``results.measure_output``), and the
    noise guard's figures when the runner took them."""
    try:
        output = decode_output(raw)
    except UnusableOutput as exc:
        return [], str(exc), None
    values, error = measure_output(adapter, output, adapters.Settings(average=average), fold)
    return values, error, output.noise


def measure_stored_duet(
    adapter: str, average: Average | None, duet: JsonDuet, raw: bytes
) -> tuple[NewDuet | None, str | None]:
    """A stored duet output's verdict, or why it has none (see ``duet_results.measure_duet``)."""
    try:
        output = decode_output(raw)
    except UnusableOutput as exc:
        return None, str(exc)
    return measure_duet(adapter, output, adapters.Settings(average=average), duet)
