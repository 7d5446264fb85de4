"""The perf page's URL state: lists repeated or comma-separated, times as milliseconds or
dates, the scale, and what a bad URL gets beside its field."""

from __future__ import annotations

import datetime as dt
import urllib.parse

import pytest
from starlette.datastructures import QueryParams

from benchrunner.server.console.perf_state import parse_state
from benchrunner.server.views.perf.bounds import DEFAULT_SPAN, MAX_REFS

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
FULL = "branches=main&testbeds=box&benchmarks=sort&measures=latency"


def _state(query: str) -> object:
    return parse_state(QueryParams(query), NOW)


def test_repeated_and_comma_separated_lists_merge_in_order_without_repeats() -> None:
    state = parse_state(
        QueryParams("branches=main&branches=feature,main&branches=%20dev%20&testbeds=,"), NOW
    )
    assert state.refs["branches"] == ("main", "feature", "dev")
    assert state.refs["testbeds"] == ()
    assert not state.complete  # nothing chosen for three dimensions
    assert not state.errors


def test_default_range_is_the_year_up_to_now_and_scale_linear() -> None:
    state = parse_state(QueryParams(FULL), NOW)
    assert (state.start, state.end, state.scale) == (NOW - DEFAULT_SPAN, NOW, "linear")
    assert state.complete


@pytest.mark.parametrize(
    ("start", "end", "want_start", "want_end"),
    [
        (
            "2026-01-01",
            "2026-01-31",
            dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            dt.datetime(2026, 1, 31, 23, 59, 59, 999000, tzinfo=dt.UTC),
        ),
        (
            "1767225600000",
            "1767312000000",
            dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
        ),
    ],
)
def test_times_are_dates_or_milliseconds(
    start: str, end: str, want_start: dt.datetime, want_end: dt.datetime
) -> None:
    state = parse_state(QueryParams(f"{FULL}&start_time={start}&end_time={end}"), NOW)
    assert (state.start, state.end) == (want_start, want_end)
    assert state.complete


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ("start_time=yesterday", "start_time", "YYYY-MM-DD"),
        ("end_time=2026-13-01", "end_time", "YYYY-MM-DD"),
        ("end_time=999999999999999999", "end_time", "at most"),
        ("start_time=2026-02-01&end_time=2026-01-01", "start_time", "after the end"),
        ("branches=" + ",".join(f"b{i}" for i in range(MAX_REFS + 1)), "branches", "at most 64"),
        (
            "benchmarks=" + ",".join(f"k{i}" for i in range(17)) + "&branches=a,b&testbeds=c,d,e,f",
            "benchmarks",
            "at most 256",
        ),
    ],
)
def test_a_bad_url_gets_a_message_beside_its_field(extra: str, field: str, message: str) -> None:
    state = parse_state(QueryParams(f"{FULL}&{extra}"), NOW)
    assert message in state.errors[field]
    assert not state.complete


def test_query_string_round_trips_and_applies_changes() -> None:
    state = parse_state(
        QueryParams(f"{FULL}&branches=feature&start_time=2026-01-01&scale=log"), NOW
    )
    again = parse_state(QueryParams(state.query_string()), NOW)
    assert (again.refs, again.start, again.end, again.scale) == (
        state.refs,
        state.start,
        state.end,
        "log",
    )
    changed = urllib.parse.parse_qs(state.query_string(scale="linear"))
    assert changed["scale"] == ["linear"]
    assert changed["branches"] == ["main,feature"]
