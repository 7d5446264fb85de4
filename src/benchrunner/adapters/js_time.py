"""``console.time`` / ``console.timeEnd``: one latency per timer line, in nanoseconds.

Two spellings are read:

- the browser's, which is Bencher's ``js_time`` format: ``<label>: <integer><unit> - timer
  ended`` with a unit of ps, ns, us/µs/μs, ms or s;
- Node's (``console.timeEnd`` in Node.js), which Bencher does not read: ``<label>: <n>ms``,
  ``<label>: <n.nnn>s``, ``<label>: <m:ss.mmm> (m:ss.mmm)`` or ``<label>: <h:mm:ss.mmm>
  (h:mm:ss.mmm)``.

A timer is one measurement, so there are no bounds, and ``settings.average`` cannot apply:
Bencher refuses the output when it is set, and so does this adapter.
"""

from __future__ import annotations

from benchrunner.adapters.base import LATENCY, AdapterError, Measurement, Settings
from benchrunner.adapters.finite import finite_measurement
from benchrunner.adapters.tail_tokens import lines, split_tail, unsigned
from benchrunner.adapters.values import (
    MAX_BENCHMARK_NAME,
    NANOSECONDS_PER,
    check_name,
    parse_number,
)

HARNESS = "js_time"
_NODE_CLOCKS = {"(m:ss.mmm)": 2, "(h:mm:ss.mmm)": 3}
"""Node's suffix for a duration of a minute or more -> how many ``:``-separated parts."""
_LINE_ENDINGS = ("ended", "s", ".mmm)")  # browser; Node: ms or s; Node: (m:ss.mmm)
_CLOCK_DIGITS = 12  # hours or minutes longer than this are not a timer Node printed


def parse(text: str, settings: Settings) -> list[Measurement]:
    """One latency measurement per timer line, in printed order."""
    if settings.average is not None:
        raise AdapterError(
            f"{HARNESS}: a console.time timer has no mean or median; "
            "Bencher reads it only with settings.average unset"
        )
    found: list[Measurement] = []
    for number, line in lines(text):
        if not line.endswith(_LINE_ENDINGS) or ":" not in line:  # most lines: cheaply out
            continue
        try:
            measurement = _browser_timer(line) or _node_timer(line)
        except AdapterError as exc:
            raise AdapterError(f"{HARNESS}: line {number}: {exc}") from None
        if measurement is not None:
            found.append(measurement)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no '<label>: <n>ms - timer ended' (browser) or "
            "'<label>: <n>ms' (Node.js) timer line found"
        )
    return found


def _label(head: str) -> str | None:
    if len(head) < 2 or not head.endswith(":"):
        return None
    return head[:-1]


def _timer(label: str, nanoseconds: float) -> Measurement:
    check_name(label, "benchmark", MAX_BENCHMARK_NAME)
    return finite_measurement(label, LATENCY, nanoseconds)


def _browser_timer(line: str) -> Measurement | None:
    split = split_tail(line, 4)
    if split is None:
        return None
    head, (duration, dash, timer, ended) = split
    label = _label(head)
    if label is None or (dash, timer, ended) != ("-", "timer", "ended"):
        return None
    digits = duration.rstrip("psnuµμm")
    unit = duration[len(digits) :]
    count = unsigned(digits)
    if count is None or unit not in NANOSECONDS_PER:
        return None
    return _timer(label, float(count) * NANOSECONDS_PER[unit])


def _node_timer(line: str) -> Measurement | None:
    clock_parts = _NODE_CLOCKS.get(line[line.rfind(" ") + 1 :])
    split = split_tail(line, 1 if clock_parts is None else 2)
    if split is None:
        return None
    head, (duration, *_) = split
    label = _label(head)
    if label is None:
        return None
    if clock_parts is None:
        nanoseconds = _node_short(duration)
    else:
        nanoseconds = _node_clock(duration, clock_parts)
    return None if nanoseconds is None else _timer(label, nanoseconds)


def _plain_decimal(text: str, fraction_digits: int | None = None) -> bool:
    """Digits with an optional fraction, as JavaScript's ``toFixed`` prints them; exactly
    ``fraction_digits`` after the point when given."""
    whole, point, fraction = text.partition(".")
    if fraction_digits is not None and (not point or len(fraction) != fraction_digits):
        return False
    return text.isascii() and whole.isdigit() and (not point or fraction.isdigit())


def _node_short(duration: str) -> float | None:
    """``12.345ms`` (up to three decimals) or ``1.234s`` (exactly three) in nanoseconds."""
    for unit, fraction_digits in (("ms", None), ("s", 3)):
        amount = duration.removesuffix(unit)
        if amount != duration:
            if not _plain_decimal(amount, fraction_digits):
                return None
            return parse_number(amount, "duration") * NANOSECONDS_PER[unit]
    return None


def _node_clock(duration: str, parts: int) -> float | None:
    """``m:ss.mmm`` (``parts`` 2) or ``h:mm:ss.mmm`` (3) in nanoseconds."""
    fields = duration.split(":")
    if len(fields) != parts:
        return None
    first, *padded, seconds = fields
    if not all(f.isascii() and f.isdigit() and len(f) == 2 for f in padded):
        return None
    if not (first.isascii() and first.isdigit() and len(first) <= _CLOCK_DIGITS):
        return None
    if len(seconds) != 6 or not _plain_decimal(seconds, 3):
        return None
    total = float(int(first))
    for field in padded:
        total = total * 60 + int(field)
    return (total * 60 + parse_number(seconds, "duration")) * NANOSECONDS_PER["s"]
