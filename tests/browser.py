"""Driving the console in a real browser: Debian's Chromium through Playwright.

Playwright never downloads a browser here: it is pointed at ``/usr/bin/chromium`` (the
``chromium`` Debian package, installed by tools/system-packages.sh), run headless, without the
sandbox (the tests run as root) and without background networking (nothing leaves the machine).
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from tests.harness import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking"]
SCREENSHOTS = REPO / "docs" / "screenshots"


def save_screenshot(page: Page, name: str) -> Path:
    """Save the whole page as ``docs/screenshots/<name>.png`` (the README shows them)."""
    path = SCREENSHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path


def log_in_with_token(page: Page, token: str) -> None:
    """Sign in through the console's token form, as a person pasting their API token."""
    page.goto("/console/login")
    page.get_by_label("API token", exact=True).fill(token)
    page.get_by_role("button", name="Log in with token").click()
    page.wait_for_url("**/console")


def log_in_with_password(page: Page, email: str, password: str) -> None:
    """Sign in with email and password, submitting with the keyboard (Enter)."""
    page.goto("/console/login")
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_label("Password", exact=True).press("Enter")
    page.wait_for_url("**/console")
