"""Password guessing in the console is cut off: after ten failures within five minutes even the
right password is refused (429), on a server of its own (the throttle counts by address, and
every test here comes from 127.0.0.1)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.console.accounts import create_member
from tests.harness import Deployment

EMAIL = "guessed@test.dev"
PASSWORD = "the right password"


def attempt(page: Page, password: str) -> int:
    page.goto("/console/login")
    page.get_by_label("Email", exact=True).fill(EMAIL)
    page.get_by_label("Password", exact=True).fill(password)
    with page.expect_response("**/console/login") as answer:
        page.get_by_label("Password", exact=True).press("Enter")
    return answer.value.status


def test_ten_wrong_passwords_lock_the_door_even_for_the_right_one(
    page: Page, console: Deployment
) -> None:
    create_member(console, EMAIL, PASSWORD, None)
    assert [attempt(page, f"guess number {n}") for n in range(10)] == [400] * 10
    assert attempt(page, PASSWORD) == 429
    expect(page.get_by_role("alert")).to_contain_text("Too many failed attempts")
    assert not [c for c in page.context.cookies() if c.get("name") == "benchrunner_session"]
