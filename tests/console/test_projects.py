"""Projects in the console follow the API's visibility: a public project's pages read without
signing in; a private one is a 404 to anyone outside its organization."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import save_screenshot
from tests.harness import Deployment


@pytest.fixture(scope="module")
def private_project(console: Deployment) -> str:
    with console.admin() as client:
        client.create_project("acme", "secret-bench", "private")
    return "secret-bench"


def test_anonymous_reads_a_public_project_but_not_a_private_one(
    page: Page, private_project: str
) -> None:
    page.goto("/console/projects")
    table = page.get_by_role("table")
    expect(table.get_by_role("link", name="bench", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name=private_project)).to_have_count(0)
    save_screenshot(page, "projects")

    response = page.goto("/console/projects/bench")
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", level=1)).to_have_text("bench")

    response = page.goto(f"/console/projects/{private_project}")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.get_by_role("alert")).to_contain_text(private_project)


def test_with_one_project_the_navigation_goes_straight_to_it(page: Page) -> None:
    page.goto("/console")  # anonymous: the public project "bench" is the only one to see
    for name in ("Jobs", "Reports", "Perf", "Alerts", "Thresholds", "Bisections", "Calibrations"):
        nav = page.get_by_role("navigation", name="Main")
        if name in ("Thresholds", "Bisections", "Calibrations"):
            nav.get_by_text("More", exact=True).click()  # the less used entries are under it
        nav.get_by_role("link", name=name).click()
        page.wait_for_url(f"**/console/projects/bench/{name.lower()}")
        expect(page.get_by_role("heading", level=1)).to_have_text(name)


def test_with_several_the_navigation_asks_for_a_project_first(
    page: Page, console: Deployment
) -> None:
    with console.admin() as client:
        client.create_project("acme", "bench-two", "public")
    page.goto("/console")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Perf").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Perf")
    link = page.get_by_role("main").get_by_role("link", name="bench", exact=True)
    expect(link).to_have_attribute("href", "/console/projects/bench/perf")
    # An empty project's pages say what to do next, with the command.
    page.goto("/console/projects/bench-two/jobs")
    expect(page.locator(".empty-next")).to_contain_text(
        "benchrunner run --project bench-two --spec SPEC --template bench.sleep"
    )
    page.goto("/console/projects/bench-two/reports")
    expect(page.locator(".empty-next")).to_contain_text("each run makes one")
    page.goto("/console/projects/bench-two/perf")
    expect(page.locator(".empty-next")).to_contain_text(
        "benchrunner run --project bench-two --spec SPEC --template bench.sleep"
    )
    for section in ("alerts", "thresholds"):
        page.goto(f"/console/projects/bench-two/{section}")
        expect(page.locator(".empty-next")).to_contain_text(
            "benchrunner threshold create --project bench-two --branch main"
        )
