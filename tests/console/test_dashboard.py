"""The dashboard: queue depth, runners connected, and the latest jobs and alerts of the
projects the viewer may read."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import log_in_with_token, save_screenshot
from tests.console.benchmark_history import submit_regression
from tests.harness import Deployment, RawChannel


@pytest.fixture(scope="module")
def channel(console: Deployment) -> RawChannel:
    """A connected runner, driven by hand: it sends no heartbeat unless a test does."""
    return console.channel("dash-runner")


@pytest.fixture(scope="module")
def jobs(console: Deployment, channel: RawChannel) -> dict[str, str]:
    """Two pending jobs of the public project, one of a private one, and one running on
    ``channel``; by name."""
    with console.admin() as client:
        client.create_project("acme", "hidden", "private")
    running = console.submit("bench.noop")
    claimed = channel.claim()
    assert claimed["uuid"] == running
    channel.ask({"event": "running"})
    console.wait_status(running, "running")
    return {
        "running": running,
        "pending1": console.submit("bench.noop"),
        "pending2": console.submit("bench.noop"),
        "private": console.submit("bench.noop", project="hidden"),
    }


def test_admin_sees_the_queue_connected_runners_and_every_recent_job(
    page: Page, console: Deployment, jobs: dict[str, str], channel: RawChannel
) -> None:
    log_in_with_token(page, console.server.token)
    # A heartbeat keeps the job running for another heartbeat timeout, however long the tests
    # before this one took.
    assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": jobs["running"]}
    page.goto("/console")
    expect(page.locator('dd[data-status="pending"]')).to_have_text("3")
    expect(page.locator('dd[data-status="running"]')).to_have_text("1")
    expect(page.locator('dd[data-status="connected"]')).to_have_text("1")
    recent = page.get_by_role("region", name="Recent jobs")
    for uuid in jobs.values():
        expect(recent.get_by_role("link", name=uuid[:8])).to_be_visible()
    expect(recent.get_by_role("row", name=jobs["running"][:8])).to_contain_text("dash-runner")
    save_screenshot(page, "dashboard")


def test_anonymous_sees_only_public_projects_jobs(page: Page, jobs: dict[str, str]) -> None:
    page.goto("/console")
    recent = page.get_by_role("region", name="Recent jobs")
    expect(recent.get_by_role("link", name=jobs["pending1"][:8])).to_be_visible()
    expect(recent.get_by_role("link", name=jobs["private"][:8])).to_have_count(0)
    expect(recent).not_to_contain_text("hidden")


def test_recent_alerts_list_a_regression_linking_to_its_page(
    page: Page, console: Deployment
) -> None:
    regressed = submit_regression(console, "dash-alerts")
    page.goto("/console")  # anonymous: the project is public
    recent = page.get_by_role("region", name="Recent alerts")
    row = recent.locator(f'tr[data-alert="{regressed.alert}"]')
    expect(row).to_contain_text("upper")
    expect(row).to_contain_text("150")
    expect(row).to_contain_text("dash-alerts")
    row.get_by_role("link", name="sort").click()
    page.wait_for_url(f"**/console/projects/dash-alerts/alerts/{regressed.alert}")
    expect(page.locator("#alert-status")).to_have_text("active")
