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
    "Bisections",
    "Calibrations",
]


def test_root_redirects_to_the_dashboard_with_its_navigation(page: Page) -> None:
    errors: list[str] = []  # a script or style the page's policy blocked shows up here
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
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
    assert errors == []


def test_console_errors_are_pages_and_api_errors_stay_json(page: Page) -> None:
    missing = page.goto("/console/no-such-page")
    assert missing is not None and missing.status == 404
    assert missing.headers["content-type"].startswith("text/html")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()

    api = page.request.get("/v0/projects/no-such-project")
    assert api.status == 404
    assert api.json()["error_code"] == "not_found"


def test_pages_forbid_inline_scripts_and_assets_come_from_the_server(page: Page) -> None:
    response = page.goto("/console")
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert response.headers["cache-control"] == "no-store"
    for asset in ("vendor/htmx.min.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css"):
        served = page.request.get(f"/console/static/{asset}")
        assert served.status == 200, asset
    licences = {"vendor/htmx.LICENSE": "Zero-Clause BSD", "vendor/uPlot.LICENSE": "The MIT License"}
    for path, licence in licences.items():
        assert page.request.get(f"/console/static/{path}").text().startswith(licence), path
