"""Adapter measurements -> the metrics a report stores: iterations folded into one when
``settings.fold`` says so, as Bencher folds them. (``adapters.parse`` has already kept one
measurement per benchmark and measure.)"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import PurePosixPath

from benchrunner import adapters
from benchrunner.adapters.base import Fold, Measurement
from benchrunner.adapters.fold import fold as fold_iterations
from benchrunner.protocol import IterationResult, JsonJobOutput
from benchrunner.server.store.reports import MetricValue

log = logging.getLogger(__name__)


def report_metrics(
    iterations: Sequence[Sequence[Measurement]], fold: Fold | None
) -> list[MetricValue]:
    """The metrics of a report from each iteration's measurements (iteration i's metrics have
    ``iteration`` i; folded, there is one iteration, 0). Each keeps its samples
    (``core.samples``): the harness's, and folded, those of every iteration it was made of
    (an iteration's value stands for it when its harness gave none)."""
    if fold is None or not iterations:
        return [
            MetricValue(
                index, m.benchmark, m.measure, m.value, m.lower_value, m.upper_value, m.samples
            )
            for index, measurements in enumerate(iterations)
            for m in measurements
        ]
    behind: dict[tuple[str, str], list[float]] = {}
    for measurements in iterations:
        for m in measurements:
            behind.setdefault((m.benchmark, m.measure), []).extend(m.samples or (m.value,))
    return [
        MetricValue(
            0,
            m.benchmark,
            m.measure,
            m.value,
            m.lower_value,
            m.upper_value,
            tuple(behind[(m.benchmark, m.measure)]),
        )
        for m in fold_iterations(iterations, fold)
    ]


def iteration_texts(result: IterationResult, index: int) -> list[tuple[str, str]]:
    """``(where, text)`` of each output an iteration's results are read from: its collected
    files when there are any, otherwise its stdout. ``where`` names the output in errors."""
    if result.output:
        return [
            (f"iteration {index} file {path!r}", result.output[path])
            for path in sorted(result.output)
        ]
    return [(f"iteration {index} stdout", result.stdout or "")]


REPLACED = "\ufffd"
"""What the runner reads a byte that is not UTF-8 as (U+FFFD REPLACEMENT CHARACTER)."""


def unread_output(adapter: str, where: str, text: str, error: adapters.AdapterError) -> str:
    """The report's error for an output ``adapter`` could not read; it says so when the output
    held a NUL character or bytes that are not UTF-8 (the runner sends them as U+FFFD)."""
    message = adapters.could_not_read(adapter, where, error)
    if "\x00" in text:
        message += f" (the output contains a NUL character at character {text.index(chr(0))})"
    if REPLACED in text:
        message += (
            f" (the output is not UTF-8 text: U+FFFD at character {text.index(REPLACED)} "
            "stands for bytes the runner could not decode)"
        )
    return message


def flag_measurements(result: IterationResult) -> list[Measurement]:
    """Bencher's ``build-time`` (seconds to two decimals, benchmark named after the command)
    and ``file-size`` (bytes, benchmark named after the file's name) of the iteration's
    ``build_time``/``file_sizes``."""
    times = [
        Measurement(command, "build-time", round(seconds, 2))
        for command, seconds in (result.build_time or {}).items()
    ]
    sizes = [
        Measurement(PurePosixPath(path).name, "file-size", float(size))
        for path, size in (result.file_sizes or {}).items()
    ]
    return times + sizes


def measure_output(
    adapter: str,
    output: JsonJobOutput,
    settings: adapters.Settings | None = None,
    fold: adapters.Fold | None = None,
) -> tuple[list[MetricValue], str | None]:
    """Metrics of every iteration (folded into one with ``fold``), or the first parse error
    (and no metrics)."""
    if not output.results:
        return [], "the job produced no iterations"
    iterations: list[list[adapters.Measurement]] = []
    for index, result in enumerate(output.results):
        found: list[adapters.Measurement] = []
        flags = flag_measurements(result)
        for where, text in iteration_texts(result, index):
            if flags and not text.strip():
                continue  # a build timed or sized that printed no results of its own
            try:
                found.extend(adapters.parse(adapter, text, settings))
            except adapters.AdapterError as exc:
                return [], unread_output(adapter, where, text, exc)
            except Exception as exc:  # an adapter bug must not wedge the job in `completed`
                log.exception("adapter %s crashed", adapter)
                return [], f"iteration {index}: adapter {adapter!r} failed: {exc!r}"
        # Several collected files make one iteration: one result per benchmark and measure
        # across them too, the last read.
        iterations.append(adapters.kept([*found, *flags]))
    return report_metrics(iterations, fold), None
