"""The pieces of a bisection started by a bisect threshold's alert (docs/how-to/bisect.md):
the candidates from a report's range, the template arguments that take each commit, and the
one line the alert, its webhook event and the CLI show."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
import typer

from benchrunner.api.reports import Report
from benchrunner.cli.report_format import bisect_lines, comment_markdown
from benchrunner.cli.run_body import RunFlags, build_body
from benchrunner.client import request_json
from benchrunner.server.bisection.auto import Skip, candidates_of, commit_args
from benchrunner.server.bisection.views import culprit_text
from benchrunner.server.processing.webhooks import render_body
from tests.unit import report_samples as samples

BAD = "f" * 40


@pytest.mark.parametrize(
    ("stored", "candidates"),
    [
        (json.dumps(["a1", "b2", BAD]), ["a1", "b2", BAD]),
        (json.dumps(["a1", "b2"]), ["a1", "b2", BAD]),  # bad added when last is another
        (json.dumps(["a1", "", BAD]), ["a1", BAD]),
    ],
)
def test_candidates_come_from_the_reports_range(stored: str, candidates: list[str]) -> None:
    assert candidates_of(stored, BAD) == candidates


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        (None, "gave no bisect_range"),
        ("", "gave no bisect_range"),
        (json.dumps([BAD]), "is the only commit since the previous report"),
        (json.dumps([]), "is the only commit since the previous report"),
    ],
)
def test_a_range_with_nothing_to_search_says_why(stored: str | None, why: str) -> None:
    with pytest.raises(Skip, match=why):
        candidates_of(stored, BAD)


@pytest.mark.parametrize(
    ("args", "recipe"),
    [
        ({"repo": "/r", "commit": BAD}, {"repo": "/r", "commit": "{commit}"}),
        ({"ref": f"origin/{BAD}", "n": 3}, {"ref": "origin/{commit}", "n": 3}),
        ({"repo": "/r", "commit": "HEAD"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_template_argument_holding_the_hash_takes_each_commit(
    args: dict[str, Any] | None, recipe: dict[str, Any] | None
) -> None:
    assert commit_args(args, BAD) == recipe


@pytest.mark.parametrize(
    ("figures", "text"),
    [
        ((1.051, 1.046, 1.057), "caused by abc1234, +5.1% [4.6, 5.7]"),
        ((0.9, 0.88, 0.92), "caused by abc1234, -10.0% [-12.0, -8.0]"),
    ],
)
def test_culprit_text(figures: tuple[float, float, float], text: str) -> None:
    assert culprit_text("abc1234def", *figures) == text


def _report(*alerts: dict[str, Any]) -> Report:
    return samples.report({**samples.without_thresholds(), "results": [], "alerts": list(alerts)})


def _alert(uuid: str, bisect: dict[str, Any] | None) -> dict[str, Any]:
    return samples.alert_of("sort", "latency", "", uuid=uuid, limit="upper", bisect=bisect)


def test_the_run_summary_says_what_became_of_each_alerts_bisection() -> None:
    report = _report(
        _alert("a1", {"state": "started", "reason": None}),
        _alert("a2", {"state": "skipped", "reason": "the report gave no bisect_range"}),
        _alert("a3", None),
    )
    assert bisect_lines(report) == [
        "sort latency: a bisection started (benchrunner alert show a1)",
        "sort latency: not bisected: the report gave no bisect_range",
    ]
    comment = comment_markdown(report)
    assert "Bisections:\n- sort latency: a bisection started" in comment, comment
    assert "not bisected: the report gave no bisect\\_range" in comment, comment
    assert "Bisections" not in comment_markdown(_report(_alert("a3", None)))


def test_run_sends_the_bisect_range_and_image() -> None:
    now = dt.datetime.now(dt.UTC)
    flags = RunFlags(
        template="t", spec="s", bisect_range=["a1", BAD], bisect_image="sortlib:{commit}"
    )
    body = build_body(flags, now)
    assert (body.bisect_range, body.bisect_image) == (["a1", BAD], "sortlib:{commit}")
    assert "bisect_range" not in request_json(build_body(RunFlags(template="t", spec="s"), now))
    with pytest.raises(typer.BadParameter, match=r"must hold \{commit\}"):
        build_body(RunFlags(template="t", spec="s", bisect_image="sortlib:latest"), now)


def test_slacks_alert_bisected_message_names_the_culprit() -> None:
    view = {
        "uuid": "a1",
        "kind": "boundary",
        "value": 5000.0,
        "limit": "upper",
        "benchmark": {"name": "sort"},
        "measure": {"name": "Latency", "units": "ns"},
        "branch": {"name": "main"},
        "testbed": {"name": "ci"},
        "bisection": {"text": "caused by abc1234, +5.1% [4.6, 5.7]"},
    }
    owner = SimpleNamespace(name="Bench", uuid="p1", slug="bench")
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    delivery = uuid.UUID(int=1)
    slack = json.loads(render_body("slack", "alert.bisected", delivery, now, owner, view))
    assert slack["text"].startswith("Alert bisected in Bench: sort Latency = 5000 ns")
    assert slack["text"].endswith(": caused by abc1234, +5.1% [4.6, 5.7]"), slack["text"]
    raised = json.loads(render_body("slack", "alert.raised", delivery, now, owner, view))
    assert "caused by" not in raised["text"]
    plain = json.loads(render_body("json", "alert.bisected", delivery, now, owner, view))
    assert plain["alert"]["bisection"] == view["bisection"]
