"""Gungraun's console output (formerly iai-callgrind; adapter alias ``rust_iai_callgrind``).

A benchmark starts with a header line ``<module>::<group>::<function> <id>:<args>`` (two
``::``-separated parts free of blanks and colons, then anything; a header that wraps goes on
until the first line indented by two spaces, and the name is all of it, trimmed). Then come
blocks of metric lines, one block per Valgrind tool, each but Callgrind's under a banner like
``  ======= DHAT ========``. A metric line is ``  <label>: <new>|<old> <change>`` where
``<old> <change>`` is ``N/A (*********)`` on a first run, or the last run's value followed by
``(No change)`` or ``(<+-pct>%) [<+-factor>x]``, either of which may be ``+++inf+++``/
``---inf---``. Only ``<new>`` is kept, with no lower or upper value (one run), under Bencher's
measure slug for that tool and label (``rust_gungraun_measures``); Callgrind without cache
simulation prints only ``Instructions``. ANSI colour codes are removed first. Regression and
summary lines are passed over.

Gungraun's JSON summaries (``rust_gungraun_json``) are read instead when the output holds any,
as Bencher tries them first.
"""

from __future__ import annotations

import re

from benchrunner.adapters.base import AdapterError, Measurement, Settings, check_average
from benchrunner.adapters.console_text import BLANK, NUMBER, decimal, is_decimal
from benchrunner.adapters.rust_gungraun_json import parse_summaries
from benchrunner.adapters.rust_gungraun_measures import TOOLS
from benchrunner.adapters.values import check_benchmark_name

HARNESS = "rust_gungraun"

# Escape sequences of terminals: CSI (colours), OSC (titles, links), and two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*+[ -/]*+[@-~]|\x1b\][^\x07\x1b]*+(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")

_HEADER = re.compile(r"[^: \t\r\n]++::[^: \t\r\n]++::")

_INFINITY = r"(?:[+]++|-++)inf(?:[+]++|-++)"
_METRIC = re.compile(
    rf"{BLANK}++([^:]++):{BLANK}++({NUMBER})\|"
    rf"(?:N/A{BLANK}++\(\*++\)"
    rf"|({NUMBER}){BLANK}*+(?:\(No change\)"
    rf"|\((?:{_INFINITY}|[+-]({NUMBER})%)\){BLANK}++\[(?:{_INFINITY}|[+-]({NUMBER})x)\]))"
)
_BANNERS = {tool: re.compile(rf"{BLANK}++=++ {tool} =++") for tool, _ in TOOLS}


def _rows(text: str) -> list[str]:
    """Lines split at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (Bencher's line ending is any run of
    those characters)."""
    return re.split(r"\r\n|\r|\n", text)


def _skip_blank(rows: list[str], at: int) -> int:
    while at < len(rows) and rows[at] == "":
        at += 1
    return at


def _metric(line: str, where: str) -> tuple[str, float] | None:
    """(label, new value) of a metric line, or None when the line is not one."""
    match = _METRIC.fullmatch(line)
    if match is None:
        return None
    if not all(token is None or is_decimal(token) for token in match.groups()[1:]):
        return None
    value = decimal(match.group(2), where)
    return None if value is None else (match.group(1), value)


def _block(rows: list[str], at: int, where: str) -> tuple[list[tuple[str, float]], int] | None:
    """The measures of one tool's block starting at row ``at`` as (slug, value), and the row
    after it; None when no tool's block starts there."""
    for tool, labels in TOOLS:
        row = at
        if row < len(rows) and _BANNERS[tool].fullmatch(rows[row]):
            row = _skip_blank(rows, row + 1)
        elif tool != "CALLGRIND":
            continue
        measures: list[tuple[str, float]] = []
        read_any = False
        while row < len(rows):
            metric = _metric(rows[row], f"{where}, line {row + 1}")
            if metric is None:
                break
            read_any = True
            label, value = metric
            if label in labels:
                measures.append((labels[label], value))
            row = _skip_blank(rows, row + 1)
        if read_any:
            return measures, row
    return None


def _next_indented(rows: list[str]) -> list[int]:
    """For each row, the index of the first later row that starts with two spaces (or
    ``len(rows)``): where a header that starts at that row ends."""
    following = [len(rows)] * len(rows)
    upcoming = len(rows)
    for index in range(len(rows) - 1, -1, -1):
        following[index] = upcoming
        if rows[index].startswith("  "):
            upcoming = index
    return following


def parse(text: str, settings: Settings) -> list[Measurement]:
    """The measures of each benchmark, benchmarks and tools in output order; a measure a
    benchmark reports twice keeps its last value (Bencher's results map). JSON summaries when
    the output holds any, else the console text (Bencher's ``rust_gungraun``)."""
    check_average(HARNESS, settings.average, None)
    found = parse_summaries(text)
    return _console(text) if found is None else found


def parse_stdout(text: str, settings: Settings) -> list[Measurement]:
    """The console text only, JSON summaries passed over (Bencher's ``rust_gungraun_stdout``)."""
    check_average(HARNESS, settings.average, None)
    return _console(text)


def parse_json(text: str, settings: Settings) -> list[Measurement]:
    """The JSON summaries only (Bencher's ``rust_gungraun_json``)."""
    check_average(HARNESS, settings.average, None)
    found = parse_summaries(text)
    if found is None:
        raise AdapterError(f"{HARNESS}: no JSON summary of version 6 in the output")
    return found


def _console(text: str) -> list[Measurement]:
    rows = _rows(_ANSI.sub("", text))
    ends = _next_indented(rows)
    found: list[Measurement] = []
    row = 0
    while row < len(rows):
        header = _HEADER.match(rows[row])
        end = ends[row]
        # The name needs at least one character after the second "::".
        if (
            header is None
            or end == len(rows)
            or (end == row + 1 and header.end() == len(rows[row]))
        ):
            row += 1
            continue
        name = "\n".join(rows[row:end]).strip()
        where = f"{HARNESS}: benchmark {name[:80]!r}"
        measures: list[tuple[str, float]] = []
        row = end
        while (block := _block(rows, row, where)) is not None:
            measures.extend(block[0])
            row = block[1]
        if measures:
            check_benchmark_name(HARNESS, name)
            found.extend(Measurement(name, slug, value) for slug, value in measures)
    if not found:
        raise AdapterError(
            f"{HARNESS}: no benchmark found (a '<module>::<group>::<function>' line followed by "
            "'  <metric>: <new>|<old> ...' lines, or a JSON summary of version 6)"
        )
    return found
