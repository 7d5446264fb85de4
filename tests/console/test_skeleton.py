"""The console's frame: served at /console, reached from /, the navigation on every page."""

from __future__ import annotations

from playwright.sync_api import Page, expect

NAV_LABELS = [
    "Dashboard",
    "Runners",
    "Specs",
    "Projects",
    "Jobs",
    "Reports",
    "Perf",
    "Alerts",
    "Thresholds",
]


def test_root_redirects_to_the_dashboard_with_its_navigation(page: Page) -> None:
    response = page.goto("/")
    assert response is not None and response.ok
    assert page.url.endswith("/console")
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link")).to_have_text(NAV_LABELS)
    expect(nav.get_by_role("link", name="Dashboard")).to_have_attribute("aria-current", "page")
    # The stylesheet and htmx come from the server itself.
    assert page.evaluate("typeof htmx") == "object"
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"
