"""Reports of Ruby's ``benchmark`` library: ``Benchmark.bm``, ``Benchmark.bmbm`` and
``Benchmark.benchmark``.

A report is a caption row ``user system total real`` followed by one row per labelled block::

                  user     system      total        real
    sort!     1.460000   0.000000   1.460000 (  1.460465)

As Bencher reads it: a ``latency`` of the ``real`` time (the number in parentheses, seconds) in
nanoseconds, named by the label as printed (``for:``, ``>total:``), with no lower or upper
value. Rows count only under a caption, and the first row that is not a labelled result ends the
report; so ``bmbm``'s rehearsal (which has no caption) is passed over, and so is an unlabelled
row and every row after it in its report. Ruby prints one time per block, neither a mean nor a
median, so ``settings.average`` must be left unset (in Bencher either finds nothing).

Beyond Bencher: a caption right after the last row of a report starts the next report (Bencher
passes over the line that ends a report, and so over a report printed right after another);
blanks after the caption or after a row are allowed, and so is a real time too wide for its
column (``(1234.567890)``, with no blank after the parenthesis).
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.console_patterns import BLANK, NUMBER, SEPARATOR
from benchrunner.adapters.tail_tokens import decimal, lines
from benchrunner.adapters.values import MAX_BENCHMARK_NAME, check_name, to_nanoseconds

HARNESS = "ruby_benchmark"
_CAPTION = re.compile(rf"{BLANK}++user{BLANK}++system{BLANK}++total{BLANK}++real{BLANK}*+")
_ROW = re.compile(
    rf"(.+?){SEPARATOR}({NUMBER}){BLANK}++({NUMBER}){BLANK}++({NUMBER}){BLANK}++"
    rf"\({BLANK}*+({NUMBER})\){BLANK}*+"
)


def _is_caption(line: str) -> bool:
    return _CAPTION.fullmatch(line) is not None


def _row(line: str, where: str) -> Measurement | None:
    """A labelled ``<label> <user> <system> <total> (<real>)`` row, or None."""
    match = _ROW.fullmatch(line)
    if match is None:
        return None
    label, *times, real = match.groups()
    seconds = decimal(real, where)
    if seconds is None or any(decimal(time, where) is None for time in times):
        return None
    check_name(label, "benchmark", MAX_BENCHMARK_NAME)
    return Measurement(label, LATENCY, to_nanoseconds(seconds, "s", where))


def parse(text: str, settings: Settings) -> list[Measurement]:
    """Latency per labelled report row, in the order Ruby printed them."""
    if settings.average is not None:
        raise AdapterError(
            f"{HARNESS}: Ruby's Benchmark prints one real time per block, neither a mean nor a "
            f"median; settings.average {settings.average!r} cannot be read from it (as in "
            "Bencher): leave it unset"
        )
    found: list[Measurement] = []
    in_report = False
    for number, line in lines(text):
        if not in_report:
            in_report = _is_caption(line)
            continue
        row = _row(line, f"{HARNESS}: line {number}")
        if row is None:
            in_report = _is_caption(line)  # the next report's caption may follow at once
        else:
            found.append(row)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no report found (a caption 'user system total real' followed by "
            "rows '<label> <user> <system> <total> (<real>)')"
        )
    return found
