"""Gungraun's JSON summaries (``--output-format=json`` or ``pretty-json``), found in the output.

Each benchmark's summary is a JSON object printed either on one line (a line that starts with
``{`` and ends with ``}`` once trimmed) or pretty, from a line that is just ``{`` to the ``}``
line at the same indent; other lines (cargo's, other tools' JSON) are passed over, as are
summaries that are not version ``"6"`` or do not have the shape Bencher reads. The benchmark is
``<module_path>::<id>`` (``<module_path>`` without an id). Each metric's new value (the first
of ``Both``, or ``Left``) is kept under Bencher's slug for it; a metric with only an old value
(``Right``) is passed over.
"""

from __future__ import annotations

from collections.abc import Iterator

from benchrunner.adapters import json_numbers
from benchrunner.adapters.base import Measurement
from benchrunner.adapters.console_text import lines
from benchrunner.adapters.rust_gungraun_measures import SUMMARY_KINDS
from benchrunner.adapters.values import U64_MAX, check_benchmark_name, number

HARNESS = "rust_gungraun"


class _NotASummary(Exception):
    """This JSON is not a Gungraun v6 benchmark summary Bencher reads."""


def _documents(text: str) -> Iterator[str]:
    rows = list(lines(text))
    index = 0
    while index < len(rows):
        row = rows[index]
        trimmed = row.strip()
        if trimmed == "{":
            end = _closing(rows, index)
            if end is not None:
                yield "\n".join(rows[index : end + 1])
                index = end + 1
                continue
            # Never closed (a summary cut short): not a summary; read on after its brace.
        elif trimmed.startswith("{") and trimmed.endswith("}"):
            yield row
        index += 1


def _closing(rows: list[str], start: int) -> int | None:
    """The row of the ``}`` closing the pretty summary opened at ``rows[start]`` (the same
    indent), or None."""
    indent = len(rows[start]) - len(rows[start].lstrip())
    for index in range(start + 1, len(rows)):
        inner = rows[index]
        if inner.strip() == "}" and len(inner) - len(inner.lstrip()) == indent:
            return index
    return None


def _field(document: object, key: str) -> object:
    if not isinstance(document, dict) or key not in document:
        raise _NotASummary(key)
    return document[key]


def _new_value(diff: object, where: str) -> float | None:
    metrics = _field(diff, "metrics")
    if not isinstance(metrics, dict) or len(metrics) != 1:
        raise _NotASummary("metrics")
    ((side, values),) = metrics.items()
    if side == "Right":
        return None
    if side == "Both" and isinstance(values, list) and len(values) == 2:
        new = values[0]
    elif side == "Left":
        new = values
    else:
        raise _NotASummary("metrics")
    if not isinstance(new, dict) or len(new) != 1:
        raise _NotASummary("metric")
    ((kind, value),) = new.items()
    if kind == "Int" and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= U64_MAX:
            raise _NotASummary("metric")
    elif kind != "Float" or not isinstance(value, int | float) or isinstance(value, bool):
        raise _NotASummary("metric")
    return number(value, where)


def _profile_measures(profile: object, name: str) -> list[tuple[str, float]]:
    tool = _field(profile, "tool")
    summary = _field(_field(_field(profile, "summaries"), "total"), "summary")
    if summary == "None":
        return []
    if not isinstance(summary, dict) or len(summary) != 1:
        raise _NotASummary("summary")
    ((kind, metrics),) = summary.items()
    by_tool = SUMMARY_KINDS.get(kind)
    if by_tool is None or not isinstance(metrics, dict) or not isinstance(tool, str):
        raise _NotASummary("summary")
    # Any tool's table lists every metric name of its kind (the error tools share theirs).
    known = next(iter(by_tool.values()))
    slugs = by_tool.get("", by_tool.get(tool, {}))
    measures: list[tuple[str, float]] = []
    for metric, diff in metrics.items():
        if metric not in known:
            raise _NotASummary(metric)  # not in Bencher's schema: the summary is not read
        value = _new_value(diff, f"{HARNESS}: {name!r} {metric}")
        if metric in slugs and value is not None:
            measures.append((slugs[metric], value))
    return measures


def _summary(document: str) -> tuple[str, list[tuple[str, float]]]:
    try:
        summary = json_numbers.loads(document)
    except (ValueError, RecursionError):
        raise _NotASummary("json") from None
    if _field(summary, "version") != "6":
        raise _NotASummary("version")
    module_path = _field(summary, "module_path")
    identifier = summary.get("id")
    profiles = _field(summary, "profiles")
    if not isinstance(module_path, str) or not isinstance(profiles, list):
        raise _NotASummary("module_path")
    if identifier is not None and not isinstance(identifier, str):
        raise _NotASummary("id")
    name = module_path if identifier is None else f"{module_path}::{identifier}"
    if not name:
        raise _NotASummary("name")
    measures = [m for profile in profiles for m in _profile_measures(profile, name)]
    return name, measures


def parse_summaries(text: str) -> list[Measurement] | None:
    """The measurements of every Gungraun v6 summary in ``text``; None when it holds no
    summary. Summaries whose tools report no metric give none (an empty list), as Bencher
    reads a benchmark with no metrics."""
    found: list[Measurement] | None = None
    for document in _documents(text):
        try:
            name, measures = _summary(document)
        except _NotASummary:
            continue
        check_benchmark_name(HARNESS, name)
        found = [] if found is None else found
        found.extend(Measurement(name, slug, value) for slug, value in measures)
    return found
