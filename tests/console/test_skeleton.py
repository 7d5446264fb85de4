"""The console's frame: served at /console, reached from /, the navigation on every page."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from tests.browser import log_in_with_password, save_screenshot
from tests.console.accounts import create_member
from tests.harness import Deployment

NAV_LABELS = ["Dashboard", "Projects", "Jobs", "Reports", "Perf", "Alerts"]
MORE_LABELS = ["Thresholds", "Bisections", "Calibrations", "Runners", "Specs"]
LONG_EMAIL = "margaret.hamilton-performance@benchmarks.example.org"
HEADER_MAX_HEIGHT = 56
"""The header's height in pixels at 1280 px when it is one line: 52 measured with Chromium
(the Log out button is its tallest item); a second line would add at least 30."""


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
    nav.get_by_text("More", exact=True).click()
    expect(nav.get_by_role("link")).to_have_text(NAV_LABELS + MORE_LABELS)
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


def test_the_header_is_one_line_at_1280_px_with_a_long_email(
    page: Page, console: Deployment
) -> None:
    create_member(console, LONG_EMAIL, "correct horse battery", None)
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in_with_password(page, LONG_EMAIL, "correct horse battery")
    header = page.locator("header.top")
    expect(header.locator(".account")).to_contain_text(LONG_EMAIL)
    boxes = {
        part: header.locator(selector).bounding_box()
        for part, selector in {
            "brand": ".brand",
            "nav": "nav > ul",
            "account": ".account",
        }.items()
    }
    tops = {part: box["y"] for part, box in boxes.items() if box is not None}
    bottoms = {part: box["y"] + box["height"] for part, box in boxes.items() if box is not None}
    assert len(tops) == 3, boxes
    # One line: every part overlaps every other vertically, and the row is no taller than one.
    assert max(tops.values()) < min(bottoms.values()), boxes
    header_box = header.bounding_box()
    assert header_box is not None and header_box["height"] <= HEADER_MAX_HEIGHT, header_box


def test_more_opens_without_javascript_and_marks_the_current_entry(
    browser: Browser, console: Deployment
) -> None:
    context = browser.new_context(base_url=console.server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/console")
        nav = page.get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Bisections")).to_be_hidden()
        nav.get_by_text("More", exact=True).press("Enter")
        nav.get_by_role("link", name="Bisections").click()
        page.wait_for_url(re.compile(r"/bisections$"))  # the one project's, straight away
        expect(nav.get_by_role("link", name="Bisections")).to_be_hidden()  # a new page: closed
        expect(nav.locator("details.more")).to_have_attribute("data-current", "")
        nav.get_by_text("More", exact=True).click()
        expect(nav.get_by_role("link", name="Bisections")).to_have_attribute("aria-current", "page")
        expect(nav.locator("[aria-current]")).to_have_count(1)
        save_screenshot(page, "nav-more")
    finally:
        context.close()
