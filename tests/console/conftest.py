"""Console tests: one server per test module (on SQLite: the pages are engine-independent, the
store functions under them are tested on both engines elsewhere) and one Chromium per session,
with a fresh browser context (no cookies) per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser import CHROMIUM, CHROMIUM_ARGS
from tests.harness import Deployment, deploy


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("console")
    with deploy(tmp, f"sqlite:///{tmp / 'benchrunner.db'}") as deployment:
        yield deployment


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium per module: Playwright's synchronous API keeps an event loop running in
    this thread while it lives, and a later test's ``asyncio.run`` in the same process would
    find it; closing it with the module ends that loop."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing: install Debian's chromium (tools/system-packages.sh)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, console: Deployment) -> Iterator[Page]:
    """A page in a new browser context (its own cookies) whose relative URLs go to the
    module's server."""
    context = browser.new_context(base_url=console.server.url)
    page = context.new_page()
    yield page
    context.close()
