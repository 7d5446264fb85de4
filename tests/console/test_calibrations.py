"""Calibrations in real Chromium against a real server and a real runner process
(docs/how-to/thresholds-alerts.md): one started from the form, followed on its page until its
runs are done, its proposal shown per benchmark and applied with its button; the empty list
says what to do next, and a calibration that cannot run yet offers no Apply."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser import log_in_with_token, save_screenshot
from tests.harness import Deployment, wait_until

PROJECT = "calibrated"


@pytest.fixture(scope="module")
def served(console: Deployment) -> Iterator[Deployment]:
    """The module's server with a public project and a runner of its spec (the noise guard off:
    its own calibration would take longer than the runs)."""
    with console.admin() as client:
        client.create_project("acme", PROJECT, "public")
    console.runner_process("calibrating", BENCHRUNNER_NOISE_GUARD="false").start()
    with console.server.client() as client:
        wait_until(lambda: client.health().waiting_runners == 1, timeout=60)
    yield console


def test_a_calibration_is_started_followed_and_applied(page: Page, served: Deployment) -> None:
    base = f"/console/projects/{PROJECT}/calibrations"
    page.goto(base)  # anonymous: nothing to start from here, and what to do next
    expect(page.locator(".empty-next")).to_contain_text(
        f"benchrunner calibrate --project {PROJECT}"
    )
    expect(page.get_by_role("link", name="New calibration")).to_have_count(0)

    log_in_with_token(page, served.server.token)
    page.goto(base)
    page.get_by_role("link", name="New calibration").click()
    form = page.locator("#calibration-form")
    expect(form.get_by_label("Runs", exact=False).first).to_have_value("10")
    # No spec chosen, too few runs: the form again, saying why, with what was typed.
    form.get_by_label("Template", exact=True).select_option("bench.timed")
    form.get_by_label("Arguments").fill("ms=5")
    form.locator("#c-runs").fill("2")
    form.get_by_role("button", name="Start calibration").click()
    expect(page.locator("#spec-error")).to_have_text("choose the spec every run runs on")
    expect(page.locator("#runs-error")).to_contain_text("greater than or equal to 3")
    form = page.locator("#calibration-form")
    expect(form.get_by_label("Arguments")).to_have_value("ms=5")

    form.get_by_label("Spec", exact=True).select_option(served.spec)
    form.locator("#c-runs").fill("3")
    form.locator("#c-branch").fill("release")
    form.get_by_role("button", name="Start calibration").click()
    page.wait_for_url(re.compile(rf".*{base}/[0-9a-f-]{{36}}$"))
    uuid = page.url.rsplit("/", 1)[-1]
    expect(page.locator("#calibration-jobs tbody tr")).to_have_count(3)
    # The page follows the runs without a reload until the proposal comes.
    expect(page.locator("#calibration-state")).to_have_text("done", timeout=120_000)
    expect(page.locator("#calibration-runs")).to_have_text("3 of 3 processed")
    row = page.locator('#calibration-benchmarks tr[data-benchmark="timed"]')
    with served.admin() as client:
        [proposed] = client.get_calibration(PROJECT, uuid).benchmarks
    assert proposed.proposal is not None and proposed.cv is not None
    assert proposed.detectable_change is not None
    boundary = proposed.proposal.upper_boundary
    expect(row.locator("td.proposal")).to_have_text(
        f"t_test, boundary {boundary:g}, max 64 samples"
    )
    expect(row.locator("td.cv")).to_have_text(f"{proposed.cv * 100:.2f} %")
    expect(row.locator("td.detectable")).to_have_text(f"{proposed.detectable_change * 100:.2f} %")
    save_screenshot(page, "calibration")

    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_role("status")).to_contain_text("1 threshold(s) of release on localhost")
    expect(page.get_by_role("button", name="Apply again")).to_be_visible()
    with served.admin() as client:
        found = client.get_calibration(PROJECT, uuid)
        [threshold] = client.list_thresholds(PROJECT, branch="release")
    assert found.applied is not None
    assert threshold.model is not None and threshold.model.test == "t_test"
    assert threshold.benchmark is not None and threshold.benchmark.name == "timed"
    page.get_by_role("link", name="See the thresholds").click()
    expect(page.locator(f'tr[data-threshold="{threshold.uuid}"]')).to_contain_text("release")

    page.goto(base)
    listed = page.locator(f'tr[data-calibration="{uuid}"]')
    expect(listed).to_have_attribute("data-state", "done")
    expect(listed.locator("td").nth(4)).to_have_text("3 of 3")
    save_screenshot(page, "calibrations")


def test_a_calibration_that_cannot_run_yet_offers_no_apply(page: Page, served: Deployment) -> None:
    with served.admin() as client:
        client.create_spec(
            name="unserved", architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30,
            network=False,
        )  # fmt: skip
        created = client.create_calibration(
            PROJECT, {"spec": "unserved", "template": "bench.noop", "runs": 3}
        )
    log_in_with_token(page, served.server.token)
    page.goto(f"/console/projects/{PROJECT}/calibrations/{created.uuid}")
    expect(page.locator("#calibration-state")).to_have_text("running")
    expect(page.locator("#calibration-jobs tbody tr[data-status=pending]")).to_have_count(3)
    expect(page.get_by_role("button", name="Apply")).to_have_count(0)
    expect(page.locator("#calibration-live")).to_have_attribute("hx-trigger", "every 2s")
