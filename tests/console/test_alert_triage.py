"""Triage in real Chromium against a real server: an alert's verdict recorded with the
buttons on its page (who and when shown there), and the project's alerts page counting it in
its thresholds' precision (docs/how-to/thresholds-alerts.md)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import log_in_with_token
from tests.console.benchmark_history import Regressed, submit_regression
from tests.harness import Deployment


@pytest.fixture
def regressed(console: Deployment, request: pytest.FixtureRequest) -> Regressed:
    slug = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    return submit_regression(console, slug)


def test_an_alert_is_triaged_from_its_page_and_counted(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    alert_url = f"/console/projects/{regressed.project}/alerts/{regressed.alert}"
    alerts_url = f"/console/projects/{regressed.project}/alerts"
    page.goto(alert_url)  # anonymous: read, not triaged
    expect(page.locator("#alert-verdict")).to_have_text("untriaged")
    expect(page.get_by_role("button", name="False positive")).to_have_count(0)

    log_in_with_token(page, console.server.token)
    page.goto(alerts_url)
    overall = page.locator('#alert-precision tr[data-threshold="all"]')
    expect(overall.locator("td.precision")).to_have_text("n/a")

    page.goto(alert_url)
    page.get_by_role("button", name="False positive").click()
    page.wait_for_url(f"**{alert_url}?verdict=false_positive")
    expect(page.get_by_role("status")).to_have_text("This alert is now triaged as false positive.")
    expect(page.locator("#alert-verdict")).to_have_attribute("data-verdict", "false_positive")
    expect(page.locator("#alert-triaged")).to_contain_text("by admin")
    expect(page.get_by_role("button", name="False positive")).to_have_count(0)
    # The status is Bencher's and stays as it was.
    expect(page.locator("#alert-status")).to_have_text("active")
    with console.admin() as client:
        found = client.get_alert(regressed.project, regressed.alert)
    assert (found.verdict, found.status) == ("false_positive", "active")
    assert found.verdict_by is not None and found.verdict_by.name == "admin"
    assert found.threshold is not None

    page.goto(alerts_url)
    expect(overall.locator("td.precision")).to_have_text("0%")
    listed = page.locator(f'tr[data-alert="{regressed.alert}"]')
    expect(listed.locator("td.alert-verdict")).to_have_text("false positive")
    [threshold] = page.locator("#alert-precision tbody tr").all()
    expect(threshold).to_have_attribute("data-threshold", found.threshold.uuid)
    expect(threshold.locator("td").nth(3)).to_have_text("1")  # one false positive
    # The threshold's page says it too.
    threshold.get_by_role("link").click()
    expect(page.locator("#threshold-precision")).to_contain_text("0% · 1 alert:")
    expect(page.locator("#threshold-precision")).to_contain_text("1 false positive")

    page.goto(alert_url)
    page.get_by_role("button", name="True positive").click()
    expect(page.locator("#alert-verdict")).to_have_text("True positive")
    page.goto(alerts_url)
    expect(overall.locator("td.precision")).to_have_text("100%")

    page.goto(alert_url)
    page.get_by_role("button", name="Untriage").click()
    expect(page.get_by_role("status")).to_have_text("This alert's verdict was taken back.")
    expect(page.locator("#alert-verdict")).to_have_text("untriaged")
    with console.admin() as client:
        assert client.get_alert(regressed.project, regressed.alert).verdict is None
