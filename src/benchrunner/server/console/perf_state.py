"""The perf page's state, all of it in the URL so that a plot can be shared: which branches,
testbeds, benchmarks and measures, the time range, and the y scale.

The names are the perf API's (``branches``, ``testbeds``, ``benchmarks``, ``measures``,
``start_time``, ``end_time``), so an API query string opens the same plot in the console. Each
list may be repeated (what an HTML form's checkboxes send) or comma-separated (the API's form),
of UUIDs, slugs or names. A time is the API's milliseconds since the epoch or a date
(``YYYY-MM-DD``, what a date input sends): a start date counts from its first moment, an end
date to its last, both in UTC.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from starlette.datastructures import QueryParams

from benchrunner.server.store.perf import MAX_SERIES
from benchrunner.server.views.perf.bounds import DEFAULT_SPAN, MAX_MS, MAX_REFS

DIMENSIONS = ("branches", "testbeds", "benchmarks", "measures")

Scale = Literal["linear", "log"]


@dataclass(frozen=True)
class PerfState:
    refs: Mapping[str, tuple[str, ...]]
    """Each dimension's references, in the order given, without repeats."""
    start: dt.datetime
    end: dt.datetime
    scale: Scale
    errors: Mapping[str, str] = field(default_factory=dict)
    """A message per field the URL got wrong (the page shows it beside the field)."""

    @property
    def complete(self) -> bool:
        """Every dimension names something and nothing is wrong: the query can run."""
        return not self.errors and all(self.refs[d] for d in DIMENSIONS)

    def query_string(self, **changes: str) -> str:
        """The state as a URL's query string (lists comma-separated, times in milliseconds,
        as the API reads them), with ``changes`` applied."""
        params = {d: ",".join(self.refs[d]) for d in DIMENSIONS if self.refs[d]}
        params["start_time"] = str(_millis(self.start))
        params["end_time"] = str(_millis(self.end))
        params["scale"] = self.scale
        params.update(changes)
        return urllib.parse.urlencode(params)


def _millis(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _refs(values: Sequence[str]) -> list[str]:
    items = (item.strip() for value in values for item in value.split(","))
    return list(dict.fromkeys(item for item in items if item))


def _moment(text: str, *, end: bool) -> dt.datetime:
    """A time parameter's moment; ValueError says what is wrong with it."""
    text = text.strip()
    if text.isdigit():
        millis = int(text)
        if millis > MAX_MS:
            raise ValueError(f"must be at most {MAX_MS} milliseconds since the epoch")
        return dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ValueError("must be a date (YYYY-MM-DD) or milliseconds since the epoch") from None
    start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    return start + dt.timedelta(days=1, milliseconds=-1) if end else start


def parse_state(params: QueryParams, now: dt.datetime) -> PerfState:
    """The state a perf URL asks for; what it gets wrong is in ``errors`` (never raised)."""
    errors: dict[str, str] = {}
    refs: dict[str, tuple[str, ...]] = {}
    for dimension in DIMENSIONS:
        items = _refs(params.getlist(dimension))
        if len(items) > MAX_REFS:
            errors[dimension] = f"{len(items)} chosen; at most {MAX_REFS} are allowed"
            items = items[:MAX_REFS]
        refs[dimension] = tuple(items)
    series = 1
    for dimension in DIMENSIONS:
        series *= len(refs[dimension])
    if series > MAX_SERIES:
        errors["benchmarks"] = (
            f"{series} lines (branches x testbeds x benchmarks x measures); "
            f"at most {MAX_SERIES} are allowed"
        )
    end = now
    if params.get("end_time"):
        try:
            end = _moment(params["end_time"], end=True)
        except ValueError as exc:
            errors["end_time"] = str(exc)
    start = end - DEFAULT_SPAN
    if params.get("start_time"):
        try:
            start = _moment(params["start_time"], end=False)
        except ValueError as exc:
            errors["start_time"] = str(exc)
    if start > end and "start_time" not in errors:
        errors["start_time"] = "must not be after the end"
    scale: Scale = "log" if params.get("scale") == "log" else "linear"
    return PerfState(refs=refs, start=start, end=end, scale=scale, errors=errors)
