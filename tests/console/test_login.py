"""Signing in to the console with a password or an API token, signing out, CSRF on forms, and
the API's permissions on the pages: a member sees their organizations' private projects, an
outsider gets 404 for them, anonymous viewers read public projects."""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser import log_in_with_password, log_in_with_token, save_screenshot
from tests.console.accounts import create_member
from tests.harness import Deployment
from tests.registry_support import make_user

MEMBER = "mia@test.dev"
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def team(console: Deployment) -> str:
    """Organization ``beta`` with a private project ``beta-private``; MEMBER belongs to it."""
    with console.admin() as client:
        client.create_organization("beta", "team")
        client.create_project("beta", "beta-private", "private")
    create_member(console, MEMBER, PASSWORD, "beta")
    return "beta-private"


def session_cookie(context: BrowserContext) -> dict[str, object] | None:
    found = [c for c in context.cookies() if c.get("name") == "benchrunner_session"]
    return dict(found[0]) if found else None


def test_password_login_shows_the_members_private_project_and_logout_ends_it(
    page: Page, team: str
) -> None:
    log_in_with_password(page, MEMBER, PASSWORD)
    expect(page.get_by_role("banner")).to_contain_text(MEMBER)
    cookie = session_cookie(page.context)
    assert cookie is not None
    assert (cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (True, True, "Lax")

    page.goto("/console/projects")
    expect(page.get_by_role("table").get_by_role("link", name=team)).to_be_visible()
    response = page.goto(f"/console/projects/{team}")
    assert response is not None and response.status == 200

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/console")
    expect(page.get_by_role("banner").get_by_role("link", name="Log in")).to_be_visible()
    assert session_cookie(page.context) is None
    response = page.goto(f"/console/projects/{team}")
    assert response is not None and response.status == 404


def test_a_copied_session_cookie_stops_working_at_logout(page: Page, team: str) -> None:
    log_in_with_password(page, MEMBER, PASSWORD)
    cookie = session_cookie(page.context)
    assert cookie is not None
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/console")
    page.context.add_cookies([cookie])  # type: ignore[list-item]
    response = page.goto(f"/console/projects/{team}")
    assert response is not None and response.status == 404


def test_the_session_reads_the_api_as_the_console_does_but_writes_nothing(
    page: Page, team: str
) -> None:
    """The console's export links (a perf page's CSV and JSON) are API reads: a signed-in
    member follows them into a private project; a write with the cookie alone is anonymous."""
    for path in (f"/v0/projects/{team}", f"/v0/projects/{team}/jobs"):
        assert page.request.get(path).status == 404  # not signed in yet
    log_in_with_password(page, MEMBER, PASSWORD)
    assert page.request.get(f"/v0/projects/{team}").json()["slug"] == team
    assert page.request.get(f"/v0/projects/{team}/jobs").status == 200
    sneaked = page.request.post(
        "/v0/organizations/beta/projects", data={"name": "sneaked", "visibility": "private"}
    )
    assert sneaked.status in (401, 404), sneaked.text()
    assert page.request.get("/v0/projects/sneaked").status == 404
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/console")
    assert page.request.get(f"/v0/projects/{team}").status == 404


def test_a_wrong_password_is_refused_beside_the_form(page: Page, team: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/console/login")
    save_screenshot(page, "login")
    page.get_by_label("Email", exact=True).fill(MEMBER)
    page.get_by_label("Password", exact=True).fill(PASSWORD + "!")
    with page.expect_response("**/console/login") as answer:
        page.get_by_role("button", name="Log in", exact=True).click()
    assert answer.value.status == 400
    expect(page.get_by_role("alert")).to_have_text("The email or the password is wrong.")
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-invalid", "true")
    assert session_cookie(page.context) is None


def test_token_login_as_an_outsider_reads_public_projects_but_not_private_ones(
    page: Page, console: Deployment, team: str
) -> None:
    outsider = make_user(console.server, "olga@test.dev")
    log_in_with_token(page, outsider)
    expect(page.get_by_role("banner")).to_contain_text("olga@test.dev")
    response = page.goto("/console/projects/bench")
    assert response is not None and response.status == 200
    response = page.goto(f"/console/projects/{team}")
    assert response is not None and response.status == 404
    expect(page.get_by_role("alert")).to_contain_text("not found")


def test_an_invalid_token_is_refused(page: Page) -> None:
    page.goto("/console/login")
    page.get_by_label("API token", exact=True).fill("bencher_api_not-a-token")
    page.get_by_role("button", name="Log in with token").click()
    expect(page.get_by_role("alert")).to_have_text("That API token is not valid (or has expired).")
    assert session_cookie(page.context) is None


def test_login_returns_to_the_page_asked_for_but_never_off_site(
    page: Page, console: Deployment
) -> None:
    page.goto("/console/login?next=/console/projects")
    page.get_by_label("Email", exact=True).fill(MEMBER)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password", exact=True).press("Enter")
    page.wait_for_url("**/console/projects")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/console")
    page.goto("/console/login?next=//evil.example/console")
    page.get_by_label("Email", exact=True).fill(MEMBER)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password", exact=True).press("Enter")
    page.wait_for_url("**/console")
    assert page.url == f"{console.server.url}/console"


def test_forms_without_their_csrf_token_are_refused(page: Page, console: Deployment) -> None:
    log_in_with_token(page, console.server.token)
    # The browser's own cookies go along, as a forged cross-site form's would; the token does not.
    forged = page.request.post("/console/runners", form={"name": "forged"})
    assert forged.status == 403
    assert "CSRF" in forged.text()
    stale = page.request.post("/console/runners", form={"name": "forged", "csrf_token": "0" * 64})
    assert stale.status == 403
    with console.admin() as client:
        assert [r for r in client.list_runners(per_page=255) if r.name == "forged"] == []
    assert page.request.post("/console/logout").status == 403
    page.goto("/console")
    expect(page.get_by_role("banner")).to_contain_text("admin@test.dev")
