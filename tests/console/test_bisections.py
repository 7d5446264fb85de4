"""Bisections in real Chromium against a real server (docs/how-to/bisect.md): started from an
alert's Bisect form (good and bad prefilled from its report and the one before), followed on
the bisection's page, canceled with its button, listed, and the outcome shown on the alert's
page. No runner serves this module's spec, so a bisection's first duet waits in the queue: the
pages are checked as it runs and once it ends, not the search itself (tests/system/
test_bisection.py runs that)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect
from sqlalchemy.engine import Connection

from benchrunner.server.bisection import rows
from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import bisection
from tests.browser import log_in_with_password, log_in_with_token, save_screenshot
from tests.console.accounts import create_member
from tests.console.benchmark_history import HISTORY, Regressed, submit_regression
from tests.harness import Deployment, wait_until

VERSIONS = [f"{day:x}" * 40 for day in range(1, len(HISTORY) + 2)]
"""Each report's version (a 40-character hash), oldest first: the last one regressed."""
BETWEEN = ["a1" * 20, "b2" * 20]
"""Commits after the good version and before the bad one, oldest first."""


@pytest.fixture
def regressed(console: Deployment, request: pytest.FixtureRequest) -> Regressed:
    slug = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    return submit_regression(console, slug, hashes=VERSIONS)


def _api_bisection(console: Deployment, project: str, **fields: Any) -> dict[str, Any]:
    body = {
        "benchmarks": ["sort"],
        "measure": "latency",
        "good": VERSIONS[-2],
        "bad": VERSIONS[-1],
        "candidates": [*BETWEEN, VERSIONS[-1]],
        "template": "bench.gitwork",
        "args": {"repo": "/nonexistent", "commit": "{commit}"},
        "spec": console.spec,
        **fields,
    }
    with console.admin() as client:
        return dict(client.create_bisection(project, body))


def test_a_bisection_starts_from_its_alert_and_is_followed_and_canceled(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    project = regressed.project
    alert_url = f"/console/projects/{project}/alerts/{regressed.alert}"
    page.goto(alert_url)  # anonymous: no form, and what to do next
    expect(page.locator("#alert-bisection")).to_contain_text("No bisection of this alert yet")
    expect(page.locator("#alert-bisection")).to_contain_text("benchrunner bisect")
    expect(page.locator("#bisect-form")).to_have_count(0)
    page.goto(f"/console/projects/{project}/bisections")
    expect(page.locator(".empty-next")).to_contain_text(f"benchrunner bisect --project {project}")
    expect(page.get_by_role("link", name="New bisection")).to_have_count(0)

    log_in_with_token(page, console.server.token)
    page.goto(alert_url)
    page.locator("#bisect summary").click()
    form = page.locator("#bisect-form")
    expect(form.get_by_label("Good version")).to_have_value(VERSIONS[-2])
    expect(form.get_by_label("Bad version")).to_have_value(VERSIONS[-1])
    expect(form.get_by_label("Benchmark")).to_have_value("sort")
    expect(form.get_by_label("Measure", exact=True)).to_have_value("latency")

    # No candidates, and no {commit} in the arguments: the form again, saying why.
    form.get_by_label("Template", exact=True).select_option("bench.gitwork")
    form.get_by_label("Arguments").fill("repo=/nonexistent\ncommit=HEAD")
    form.get_by_role("button", name="Bisect").click()
    expect(page.locator("#candidates-error")).to_contain_text("git rev-list")
    form = page.locator("#bisect-form")
    expect(form.get_by_label("Good version")).to_have_value(VERSIONS[-2])
    form.get_by_label("Candidate commits").fill("\n".join([*BETWEEN, VERSIONS[-1]]))
    form.get_by_role("button", name="Bisect").click()
    expect(page.locator("#args-error")).to_contain_text("{commit}")
    form = page.locator("#bisect-form")
    expect(form.get_by_label("Arguments")).to_have_value("repo=/nonexistent\ncommit=HEAD")

    form.get_by_label("Arguments").fill("repo=/nonexistent\ncommit={commit}")
    form.get_by_label("Spec", exact=True).select_option(console.spec)
    form.get_by_role("button", name="Bisect").click()
    page.wait_for_url(f"**/console/projects/{project}/bisections/*")
    uuid = page.url.rsplit("/", 1)[-1]
    expect(page.locator("#bisection-state")).to_have_text("running")
    expect(page.locator("#bisection-alert")).to_have_text("sort (Latency)")
    # The first duet, bad against good, shows on its own: the page follows the bisection.
    check = page.locator('#bisection-steps tr[data-kind="check"]')
    expect(check.locator("td").nth(1)).to_have_text(VERSIONS[-1][:12])
    expect(check.locator("td").nth(2)).to_have_text(VERSIONS[-2][:12])
    expect(check.locator("td").nth(3)).to_contain_text("pending")
    with console.admin() as client:
        found = client.get_bisection(project, uuid)
    assert (found.alert, found.candidates) == (regressed.alert, [*BETWEEN, VERSIONS[-1]])

    page.goto(alert_url)
    expect(page.locator("#alert-bisection-state")).to_have_text("running")
    page.goto(f"/console/projects/{project}/bisections")
    page.get_by_role("link", name="New bisection").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New bisection")
    expect(page.locator("#bisect-form").get_by_label("Good version")).to_have_value("")
    page.go_back()
    expect(page.locator(f'tr[data-bisection="{uuid}"]')).to_have_attribute("data-state", "running")
    page.locator(f'tr[data-bisection="{uuid}"] a').click()

    page.get_by_role("button", name="Cancel bisection").click()
    expect(page.locator("#bisection-state")).to_have_text("canceled")
    expect(page.locator("#bisection-reason")).to_contain_text("canceled by admin")
    expect(page.get_by_role("button", name="Cancel bisection")).to_have_count(0)
    expect(check.locator("td").nth(3)).to_contain_text("canceled")
    page.goto(alert_url)
    expect(page.locator("#alert-bisection")).to_contain_text("canceled: no first bad commit")
    expect(page.locator("#bisect summary")).to_have_text("Bisect again")


STEPS = (
    # kind, commit, baseline, verdict, ratio, interval
    ("check", VERSIONS[-1], VERSIONS[-2], "different", 1.49, (1.41, 1.57)),
    ("search", BETWEEN[0], VERSIONS[-2], "same", 1.004, (0.98, 1.03)),
    ("search", BETWEEN[1], VERSIONS[-2], "different", 1.51, (1.43, 1.6)),
    ("confirm", BETWEEN[1], BETWEEN[0], "different", 1.5, (1.42, 1.58)),
)
"""What the search would have measured, step by step, had a runner run its duets."""


def _finish(console: Deployment, project: str, bisection_uuid: str) -> None:
    """Give the bisection the steps of ``STEPS`` and end it with ``BETWEEN[1]`` the first bad
    commit, through the store functions the server's search uses."""
    with console.admin() as client:
        wait_until(lambda: client.get_bisection(project, bisection_uuid).steps, timeout=30)
    db = Database(console.server.db, read_threads=1)
    try:

        def unit(conn: Connection) -> None:
            now = dt.datetime.now(dt.UTC)
            found = conn.execute(
                sa.select(bisection.c.id).where(bisection.c.uuid == uuid.UUID(bisection_uuid))
            ).scalar_one()
            (check_id,) = [s.id for s in rows.steps_of(conn, found)]
            for position, (kind, commit, baseline, verdict, ratio, (lower, upper)) in enumerate(
                STEPS
            ):
                step_id = check_id
                if kind != "check":
                    step_id = rows.step_add(conn, found, kind, position, commit, baseline, 10, now)
                rows.step_update(
                    conn,
                    step_id,
                    status="done",
                    verdict=verdict,
                    ratio=ratio,
                    lower_value=lower,
                    upper_value=upper,
                )
            assert rows.bisection_update(
                conn,
                found,
                state=rows.DONE,
                culprit=BETWEEN[1],
                culprit_parent=BETWEEN[0],
                culprit_ratio=1.5,
                culprit_lower=1.42,
                culprit_upper=1.58,
                finished=now,
            )

        db.write_sync(unit)
    finally:
        db.close()


def test_a_done_bisection_names_its_first_bad_commit(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    started = _api_bisection(console, regressed.project, alert=regressed.alert)
    _finish(console, regressed.project, started["uuid"])
    page.goto(f"/console/projects/{regressed.project}/bisections/{started['uuid']}")
    expect(page.locator("#bisection-state")).to_have_text("done")
    culprit = page.locator("#bisection-culprit")
    expect(culprit).to_have_attribute("data-commit", BETWEEN[1])
    expect(culprit).to_contain_text(f"against its parent {BETWEEN[0]} it measured 1.5000")
    expect(culprit).to_contain_text("[1.4200, 1.5800]")
    shown = page.locator("#bisection-steps tbody tr")
    expect(shown).to_have_count(len(STEPS))
    expect(shown.locator("td.verdict")).to_have_text(
        ["different", "same", "different", "different"]
    )
    expect(shown.nth(1).locator("td").nth(5)).to_have_text("[0.9800, 1.0300]")
    # Anonymous: read, no Cancel (it has ended anyway) and no Bisect form.
    expect(page.get_by_role("button", name="Cancel bisection")).to_have_count(0)
    save_screenshot(page, "bisection")
    page.goto(f"/console/projects/{regressed.project}/alerts/{regressed.alert}")
    expect(page.locator("#alert-culprit")).to_have_text(BETWEEN[1])
    expect(page.locator("#alert-bisection-state")).to_have_text("done")
    page.goto(f"/console/projects/{regressed.project}/bisections")
    row = page.locator(f'tr[data-bisection="{started["uuid"]}"]')
    expect(row.locator("td.outcome")).to_have_text(f"first bad {BETWEEN[1][:12]}")
    save_screenshot(page, "bisections")


def test_only_a_member_who_may_change_the_project_starts_or_cancels_one(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    """A signed-in outsider reads a public project's bisection but gets no form or button, and
    the server refuses the forms' requests all the same (the API's rule: 403)."""
    started = _api_bisection(console, regressed.project, alert=regressed.alert)
    create_member(console, "outsider@example.com", "outsider-password", None)
    log_in_with_password(page, "outsider@example.com", "outsider-password")
    bisection_url = f"/console/projects/{regressed.project}/bisections/{started['uuid']}"
    page.goto(bisection_url)
    expect(page.locator("#bisection-state")).to_have_text("running")
    expect(page.get_by_role("button", name="Cancel bisection")).to_have_count(0)
    page.goto(f"/console/projects/{regressed.project}/alerts/{regressed.alert}")
    expect(page.locator("#alert-bisection-state")).to_have_text("running")
    expect(page.locator("#bisect-form")).to_have_count(0)

    hx_headers = page.locator("body").get_attribute("hx-headers") or "{}"
    headers = {"X-CSRF-Token": json.loads(hx_headers)["X-CSRF-Token"]}
    canceled = page.request.post(bisection_url + "/cancel", headers=headers, max_redirects=0)
    assert canceled.status == 403, canceled.text()
    form: dict[str, str | float | bool] = {
        "good": VERSIONS[-2],
        "bad": VERSIONS[-1],
        "benchmark": "sort",
        "measure": "latency",
        "candidates": VERSIONS[-1],
        "template": "bench.gitwork",
        "args": "repo=/nonexistent\ncommit={commit}",
    }
    new_url = f"/console/projects/{regressed.project}/bisections/new"
    refused = page.request.post(new_url, form=form, headers=headers, max_redirects=0)
    assert refused.status == 403, refused.text()
    with console.admin() as client:
        assert client.get_bisection(regressed.project, started["uuid"]).state == "running"
        assert len(client.list_bisections(regressed.project)) == 1
