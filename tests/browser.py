"""Driving the console in a real browser: Debian's Chromium through Playwright.

Playwright never downloads a browser here: it is pointed at ``/usr/bin/chromium`` (the
``chromium`` Debian package, installed by tools/system-packages.sh), run headless, without the
sandbox (the tests run as root) and without background networking (nothing leaves the machine).
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Page

from tests.harness import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking"]
README_SCREENSHOTS = REPO / "docs" / "screenshots"
"""The documentation's pictures: ``make screenshots`` has the console tests write them here."""


def screenshots_dir() -> Path:
    """Where the tests save screenshots: ``$BENCHRUNNER_SCREENSHOTS``, else ``build/screenshots``
    (ignored by git, so a test run leaves the documentation's pictures as they are)."""
    return Path(os.environ.get("BENCHRUNNER_SCREENSHOTS") or REPO / "build" / "screenshots")


def save_screenshot(page: Page, name: str) -> Path:
    """Save the whole page as ``<name>.png`` in ``screenshots_dir()``."""
    path = screenshots_dir() / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    assert path.stat().st_size > 0, path
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
