"""The runners page: admins create runners (the key shown once), rotate keys, pause, unpause
and archive; the table follows the runners' state while the page is open; everyone else is
refused as the API refuses them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect
from websockets.exceptions import InvalidStatus

from tests.browser import log_in_with_token, save_screenshot
from tests.console.accounts import create_member
from tests.harness import Deployment, RawChannel

LIVE = 15_000
"""ms: a few of the page's 2 s refreshes, with room for a loaded machine."""


@pytest.fixture
def admin_page(page: Page, console: Deployment) -> Page:
    log_in_with_token(page, console.server.token)
    return page


def test_admin_creates_a_runner_and_sees_its_key_once(
    admin_page: Page, console: Deployment
) -> None:
    page = admin_page
    page.goto("/console/runners")
    page.get_by_label("Name").fill("bench-box")
    page.get_by_role("checkbox", name=re.compile("small")).check()
    with page.expect_response("**/console/runners") as answer:
        page.get_by_role("button", name="Create runner").click()
    assert answer.value.status == 201
    expect(page.get_by_role("heading", level=1)).to_have_text("Runner bench-box created")
    key = page.locator("#runner-key").inner_text().strip()
    assert re.fullmatch(r"bencher_runner_[0-9a-f]{64}", key), key

    # The key is real: the runner's channel opens with it.
    channel = RawChannel(console.server, "bench-box", key)
    try:
        page.get_by_role("link", name="Back to the runners").click()
        row = page.locator('tr[data-runner="bench-box"]')
        expect(row.locator("td.state")).to_have_text("idle", timeout=LIVE)
        expect(row).to_contain_text("small")
        assert key not in page.content()
    finally:
        channel.close()
    with console.admin() as client:
        assert [s.slug for s in client.get_runner("bench-box").specs] == ["small"]


def test_the_table_follows_runners_while_the_page_is_open(
    admin_page: Page, console: Deployment
) -> None:
    page = admin_page
    page.goto("/console/runners")
    slug, key = console.new_runner("live-one")  # after the page loaded: no reload follows
    row = page.locator(f'tr[data-runner="{slug}"]')
    expect(row.locator("td.state")).to_have_text("offline", timeout=LIVE)
    channel = RawChannel(console.server, slug, key)
    try:
        expect(row.locator("td.state")).to_have_text("idle", timeout=LIVE)
        save_screenshot(page, "runners")
    finally:
        channel.close()
    expect(row.locator("td.state")).to_have_text("offline", timeout=LIVE)


def test_pause_unpause_and_archive_with_the_keyboard(admin_page: Page, console: Deployment) -> None:
    page = admin_page
    slug, key = console.new_runner("keyboard-box")
    page.goto("/console/runners")
    row = page.locator(f'tr[data-runner="{slug}"]')

    row.get_by_role("button", name="Pause keyboard-box").focus()
    page.keyboard.press("Enter")
    expect(row.locator("td.state")).to_have_text("paused")
    with console.admin() as client:
        assert client.get_runner(slug).paused is True

    row.get_by_role("button", name="Unpause keyboard-box").focus()
    page.keyboard.press("Enter")
    expect(row.locator("td.state")).to_have_text("offline")
    with console.admin() as client:
        assert client.get_runner(slug).paused is False

    channel = RawChannel(console.server, slug, key)  # archiving closes it, as the API's does
    try:
        row.get_by_role("button", name="Archive keyboard-box").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/console/runners")
        expect(row).to_have_count(0)
        code, reason = channel.wait_closed()
        assert (code, reason) == (1008, "runner archived")
    finally:
        channel.close()
    with console.admin() as client:
        assert client.get_runner(slug).archived is not None


def test_rotating_a_key_shows_the_new_one_once_and_retires_the_old(
    admin_page: Page, console: Deployment
) -> None:
    page = admin_page
    slug, old_key = console.new_runner("rotated-box")
    page.goto("/console/runners")
    page.get_by_role("button", name="Rotate the key of rotated-box").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New key for rotated-box")
    new_key = page.locator("#runner-key").inner_text().strip()
    assert re.fullmatch(r"bencher_runner_[0-9a-f]{64}", new_key) and new_key != old_key
    with pytest.raises(InvalidStatus):
        RawChannel(console.server, slug, old_key)
    RawChannel(console.server, slug, new_key).close()


def _run_on(console: Deployment, spec: str) -> str:
    body = {"project": "bench", "spec": spec, "template": "bench.noop", "args": {}}
    with console.admin() as client:
        return str(client.run({**body, "settings": {"adapter": "json"}}).job)


def test_a_runners_page_and_its_specs_page_show_its_jobs_and_keep_its_actions(
    admin_page: Page, console: Deployment
) -> None:
    page = admin_page
    page.set_viewport_size({"width": 1280, "height": 800})
    with console.admin() as client:
        client.create_spec(
            name="page-spec", architecture="x86_64", cpu=2, memory=1 << 30, disk=1 << 30
        )
    slug, key = console.new_runner("page-box", ["page-spec"])
    channel = RawChannel(console.server, slug, key)
    try:
        running = _run_on(console, "page-spec")
        assert channel.claim()["uuid"] == running
        channel.ask({"event": "running"})
        console.wait_status(running, "running")
        pending = _run_on(console, "page-spec")  # no runner free: it waits

        page.goto("/console/runners")
        page.locator(f'tr[data-runner="{slug}"]').get_by_role("link", name="page-box").click()
        page.wait_for_url(f"**/console/runners/{slug}")
        expect(page.locator("#runner-state")).to_have_text("busy")
        expect(page.locator("#runner-job")).to_contain_text(running[:8])
        latest = page.get_by_role("region", name="Latest jobs")
        expect(latest.locator(f'tr[data-job="{running}"] [data-status]')).to_have_text("running")
        expect(latest.locator(f'tr[data-job="{pending}"]')).to_have_count(0)  # not its job
        save_screenshot(page, "runner")

        # Its spec's page: the runner serving it, busy, and every job asking for the spec.
        page.locator("#runner-specs").get_by_role("link", name="page-spec").click()
        page.wait_for_url("**/console/specs/page-spec")
        expect(page.locator(f'tr[data-runner="{slug}"] td.state')).to_have_text("busy")
        latest = page.get_by_role("region", name="Latest jobs")
        expect(latest.locator(f'tr[data-job="{pending}"] [data-status]')).to_have_text("pending")
        expect(latest.locator(f'tr[data-job="{running}"]')).to_have_count(1)
        expect(page.locator("#spec-facts")).to_contain_text("1 GiB")

        # The admin actions on the runner's page come back to it.
        page.goto(f"/console/runners/{slug}")
        page.get_by_role("button", name="Pause page-box").click()
        page.wait_for_url(f"**/console/runners/{slug}")
        expect(page.locator("#runner-state")).to_have_text("paused")
        page.get_by_role("button", name="Unpause page-box").click()
        expect(page.locator("#runner-state")).to_have_text("busy")
        with console.admin() as client:
            assert client.get_runner(slug).paused is False
        page.get_by_role("button", name="Archive page-box").click()
        page.wait_for_url(f"**/console/runners/{slug}")
        expect(page.locator("#runner-state")).to_have_text("archived")
        expect(page.get_by_role("button", name="Unpause page-box")).to_have_count(0)
    finally:
        channel.close()


def test_the_specs_list_links_each_spec_and_unknown_ones_are_not_found(
    admin_page: Page,
) -> None:
    page = admin_page
    page.goto("/console/specs")
    save_screenshot(page, "specs")
    page.get_by_role("table").get_by_role("link", name="small", exact=True).click()
    page.wait_for_url("**/console/specs/small")
    expect(page.get_by_role("heading", level=1)).to_contain_text("small")
    for path in ("/console/specs/no-such-spec", "/console/runners/no-such-runner"):
        response = page.goto(path)
        assert response is not None and response.status == 404, path


def test_runners_and_specs_are_for_admins_only(page: Page, console: Deployment) -> None:
    pages = ("/console/runners", "/console/specs", "/console/runners/any", "/console/specs/small")
    for path in pages:
        response = page.goto(path)
        assert response is not None and response.status == 401
        expect(page.get_by_role("main").get_by_role("link", name="Log in")).to_be_visible()
    create_member(console, "rita@test.dev", "rita's password", None)
    page.goto("/console/login")
    page.get_by_label("Email", exact=True).fill("rita@test.dev")
    page.get_by_label("Password", exact=True).fill("rita's password")
    page.get_by_label("Password", exact=True).press("Enter")
    page.wait_for_url("**/console")
    for path in pages:
        response = page.goto(path)
        assert response is not None and response.status == 403


@pytest.fixture
def page_without_javascript(browser: Browser, console: Deployment) -> Iterator[Page]:
    context = browser.new_context(base_url=console.server.url, java_script_enabled=False)
    yield context.new_page()
    context.close()


def test_pages_read_and_forms_work_without_javascript(
    page_without_javascript: Page, console: Deployment
) -> None:
    page = page_without_javascript
    log_in_with_token(page, console.server.token)
    page.goto("/console/specs")
    expect(page.get_by_role("table")).to_contain_text("small")
    page.goto("/console/runners")
    page.get_by_label("Name").fill("no-script-box")
    page.get_by_label("Name").press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Runner no-script-box created")
    with console.admin() as client:
        assert client.get_runner("no-script-box").name == "no-script-box"


def test_a_name_over_the_limit_is_refused_beside_the_field(admin_page: Page) -> None:
    page = admin_page
    page.goto("/console/runners")
    # What a client that ignores the input's maxlength sends.
    page.get_by_label("Name").evaluate("input => input.removeAttribute('maxlength')")
    page.get_by_label("Name").fill("x" * 65)
    with page.expect_response("**/console/runners") as answer:
        page.get_by_role("button", name="Create runner").click()
    assert answer.value.status == 400
    expect(page.locator("#create-error")).to_have_text("A runner's name is at most 64 characters.")
    expect(page.get_by_label("Name")).to_have_value("x" * 65)
