"""Perf, reports, alerts and thresholds in real Chromium against a real server: a regression
submitted through ``POST /v0/run`` shows on the perf plot as an alert marker (on the canvas,
where the page says it drew it) and in the alerts list; an alert is dismissed and a threshold
created and edited through the forms, with the keyboard."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import log_in_with_token, save_screenshot
from tests.console.benchmark_history import (
    HISTORY,
    REGRESSION,
    Regressed,
    submit_regression,
)
from tests.harness import Deployment

ALERT_RGB = (0xD5, 0x00, 0x00)


@pytest.fixture
def regressed(console: Deployment, request: pytest.FixtureRequest) -> Regressed:
    slug = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    return submit_regression(console, slug)


def _drawn(page: Page) -> dict[str, Any]:
    figure = page.locator("figure.perf-chart")
    expect(figure).to_have_attribute("data-state", "drawn")
    return {
        "scale": figure.get_attribute("data-scale"),
        "markers": json.loads(figure.get_attribute("data-drawn-markers") or "null"),
    }


def _rgba(page: Page, left: float, top: float) -> list[int]:
    """The RGBA of the plot's canvas at a point given in CSS pixels (the canvas is
    transparent where nothing is drawn: the page's white shows through)."""
    rgba: list[int] = page.evaluate(
        """([left, top]) => {
            const canvas = document.querySelector("figure.perf-chart canvas");
            const scale = canvas.width / canvas.getBoundingClientRect().width;
            const data = canvas.getContext("2d")
                .getImageData(Math.round(left * scale), Math.round(top * scale), 1, 1).data;
            return [data[0], data[1], data[2], data[3]];
        }""",
        [left, top],
    )
    return rgba


def _pixel(page: Page, left: float, top: float) -> list[int]:
    """The RGB of the plot's canvas at a point given in CSS pixels."""
    return _rgba(page, left, top)[:3]


def test_a_regression_shows_as_an_alert_marker_on_the_perf_plot(
    page: Page, regressed: Regressed
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(regressed.perf_url())
    drawn = _drawn(page)
    assert drawn["scale"] == "linear"
    [marker] = drawn["markers"]
    assert (marker["alert"], marker["limit"], marker["status"]) == (
        regressed.alert,
        "upper",
        "active",
    )
    assert marker["value"] == REGRESSION
    assert marker["report"] == regressed.last["uuid"]
    red, green, blue = _pixel(page, marker["left"], marker["top"])
    assert red > 150 and green < 80 and blue < 80, (red, green, blue)
    # The same points as a table, the regressed one marked with its alert.
    rows = page.locator("details.perf-table tbody tr")
    expect(rows).to_have_count(len(HISTORY) + 1)
    expect(page.locator(f'tr.alerted[data-alert="{regressed.alert}"]')).to_contain_text("upper")
    save_screenshot(page, "perf")

    # The log scale: the switch redraws in place and the URL keeps it, for sharing.
    page.get_by_label("Log").check()
    expect(page.locator("figure.perf-chart")).to_have_attribute("data-scale", "log")
    assert "scale=log" in page.url
    assert [m["alert"] for m in _drawn(page)["markers"]] == [regressed.alert]
    expect(page.locator("#perf-share")).to_have_attribute("href", re.compile("scale=log"))
    page.reload()
    expect(page.get_by_label("Log")).to_be_checked()
    expect(page.locator("figure.perf-chart")).to_have_attribute("data-scale", "log")

    # And the alert in the project's alerts list.
    page.goto(f"/console/projects/{regressed.project}/alerts")
    row = page.locator(f'tr[data-alert="{regressed.alert}"]')
    expect(row).to_contain_text("sort")
    expect(row.locator("td.alert-status")).to_have_text("active")


def _band_probe(page: Page) -> dict[str, Any]:
    """Where the first line's threshold band lies on the canvas, in CSS pixels: halfway
    between two of its early reports (before the regression), the band's top and bottom there,
    the line of values (which may cross it) and a point well above it, all read from the
    drawn plot's own scales."""
    probe: dict[str, Any] = page.evaluate(
        """() => {
            const figure = document.querySelector("figure.perf-chart");
            const chart = figure.chart;  // as drawn: its columns unpacked
            const plot = figure.plot;
            const band = chart.lines[0].band;
            const at = band.high.findIndex((h, i) => h !== null && band.low[i] !== null
                && band.high[i + 1] != null && band.low[i + 1] != null);
            const x = (chart.x[at] + chart.x[at + 1]) / 2;
            const high = (band.high[at] + band.high[at + 1]) / 2;
            const low = (band.low[at] + band.low[at + 1]) / 2;
            const values = chart.lines[0].values;
            const value = (values[at] + values[at + 1]) / 2;
            const dpr = devicePixelRatio;
            const left = plot.valToPos(x, "x") + plot.bbox.left / dpr;
            const y = (v) => plot.valToPos(v, "y") + plot.bbox.top / dpr;
            return {
                index: at, left: left, high: y(high), low: y(low), line: y(value),
                above: y(high + 3 * (high - low)), plotTop: plot.bbox.top / dpr,
            };
        }"""
    )
    return probe


def test_the_perf_plot_draws_the_threshold_band(page: Page, regressed: Regressed) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(regressed.perf_url())
    _drawn(page)
    probe = _band_probe(page)
    assert 0 <= probe["index"] < len(HISTORY) - 1, probe  # between two steady reports
    assert probe["high"] < probe["low"] - 10, probe  # the band is taller than a line
    # Inside the band, off the line of values: the line's blue, translucent (12 %; more
    # where a grid line, translucent black, crosses it).
    height = probe["low"] - probe["high"]
    inside = [probe["high"] + share * height for share in (0.2, 0.35, 0.5, 0.65, 0.8)]
    clear = [top for top in inside if abs(top - probe["line"]) > 6]
    assert len(clear) >= 3, probe
    for top in clear:
        red, green, blue, alpha = _rgba(page, probe["left"], top)
        assert 20 <= alpha <= 80 and blue - red >= 50, (top, (red, green, blue, alpha), probe)
    # Above it, inside the plot: nothing drawn, or a grid line's black.
    assert probe["above"] > probe["plotTop"], probe
    red, green, blue, alpha = _rgba(page, probe["left"], probe["above"])
    assert alpha == 0 or blue - red < 10, (red, green, blue, alpha)


def test_an_alerts_page_shows_it_links_its_plot_and_dismisses_it(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    alert_url = f"/console/projects/{regressed.project}/alerts/{regressed.alert}"
    page.goto(alert_url)  # anonymous: a public project's alert is read, not changed
    expect(page.locator("#alert-status")).to_have_text("active")
    expect(page.get_by_role("button", name="Dismiss")).to_have_count(0)

    log_in_with_token(page, console.server.token)
    page.goto(f"/console/projects/{regressed.project}/alerts")
    row = page.locator(f'tr[data-alert="{regressed.alert}"]')
    row.get_by_role("link", name="sort").click()
    page.wait_for_url(f"**{alert_url}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("sort")
    expect(page.locator("#alert-value")).to_have_text("150")
    facts = page.locator("#alert-facts")
    for text in ("upper", "Latency", "main", "box"):
        expect(facts).to_contain_text(text)
    judged = page.locator(f'table.alerts tr[data-alert="{regressed.alert}"]')
    expect(judged).to_contain_text("percentage")
    expect(page.locator("#alert-report")).to_have_attribute(
        "href", f"/console/projects/{regressed.project}/reports/{regressed.last['uuid']}"
    )
    save_screenshot(page, "alert")

    # The plot around it marks it.
    page.locator("#alert-perf").click()
    page.wait_for_url("**/perf?**")
    assert [m["alert"] for m in _drawn(page)["markers"]] == [regressed.alert]
    page.go_back()

    page.get_by_role("button", name="Dismiss").click()
    page.wait_for_url(f"**{alert_url}?now=dismissed")
    expect(page.get_by_role("status")).to_have_text("This alert is now dismissed.")
    expect(page.locator("#alert-status")).to_have_text("dismissed")
    page.get_by_role("button", name="Silence").click()
    expect(page.locator("#alert-status")).to_have_text("silenced")
    with console.admin() as client:
        assert client.get_alert(regressed.project, regressed.alert).status == "silenced"


def test_a_private_projects_alert_is_not_found_by_outsiders(
    page: Page, console: Deployment
) -> None:
    hidden = submit_regression(console, "hidden-alert", visibility="private")
    alert_url = f"/console/projects/{hidden.project}/alerts/{hidden.alert}"
    response = page.goto(alert_url)
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    assert "sort" not in page.content()
    log_in_with_token(page, console.server.token)
    response = page.goto(alert_url)
    assert response is not None and response.status == 200
    response = page.goto(f"/console/projects/{hidden.project}/alerts/{'0' * 32}")
    assert response is not None and response.status == 404


def test_the_perf_page_reads_without_javascript(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    context = page.context.browser.new_context(  # type: ignore[union-attr]
        base_url=console.server.url, java_script_enabled=False
    )
    try:
        bare = context.new_page()
        bare.goto(regressed.perf_url())
        values = bare.locator("details.perf-table tbody tr td:nth-child(6)").all_inner_texts()
        assert [float(v) for v in values] == [*HISTORY, REGRESSION]
        chart = bare.locator("figure.perf-chart")
        expect(chart).to_have_count(1)
        expect(chart).not_to_have_attribute("data-state", "drawn")
        # The GET form changes the state without a script, from the keyboard: add the hash
        # benchmark, choose the log scale, press Show.
        bare.get_by_label("hash").focus()
        bare.keyboard.press("Space")
        bare.get_by_label("Log").focus()
        bare.keyboard.press("Space")
        bare.get_by_role("button", name="Show").focus()
        bare.keyboard.press("Enter")
        bare.wait_for_url("**scale=log**")
        assert "benchmarks=hash" in bare.url and "benchmarks=sort" in bare.url
        expect(bare.get_by_label("Log")).to_be_checked()
        benchmarks = bare.locator("details.perf-table tbody tr td:nth-child(2)")
        assert sorted(set(benchmarks.all_inner_texts())) == ["hash", "sort"]
        # Its CSV link is the perf API's with the same state.
        csv = bare.request.get(bare.get_by_role("link", name="CSV").get_attribute("href") or "")
        assert csv.ok and "150" in csv.text()
    finally:
        context.close()


def test_a_bad_perf_url_is_answered_beside_the_field(page: Page, regressed: Regressed) -> None:
    page.goto(regressed.perf_url().replace("benchmarks=sort", "benchmarks=nope"))
    expect(page.locator("#benchmarks-error")).to_have_text("no benchmark 'nope' in this project")
    expect(page.locator("figure.perf-chart")).to_have_count(0)


def test_the_report_page_shows_metrics_boundaries_and_the_alert(
    page: Page, regressed: Regressed
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/console/projects/{regressed.project}/reports")
    rows = page.locator("table tbody tr")
    expect(rows).to_have_count(len(HISTORY) + 1)
    # Newest first: the regression's report leads, with its one alert.
    expect(rows.first.locator("td").nth(6)).to_have_text("1")
    save_screenshot(page, "reports")
    rows.first.get_by_role("link").first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(regressed.last["uuid"])
    alerted = page.locator("table.metrics tr.alerted")
    expect(alerted).to_have_count(1)
    expect(alerted).to_contain_text("sort")
    expect(alerted).to_contain_text("150")
    expect(alerted).to_contain_text("percentage")
    unjudged = page.locator("table.metrics tr", has_text="memory")
    expect(unjudged).to_contain_text("no threshold")
    expect(page.locator(f'table.alerts tr[data-alert="{regressed.alert}"]')).to_contain_text(
        "upper"
    )
    save_screenshot(page, "report")


def test_an_alert_is_dismissed_from_the_list(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/console/projects/{regressed.project}/alerts")
    expect(page.get_by_role("button", name=re.compile("^Dismiss"))).to_have_count(0)  # anonymous

    log_in_with_token(page, console.server.token)
    page.goto(f"/console/projects/{regressed.project}/alerts")
    row = page.locator(f'tr[data-alert="{regressed.alert}"]')
    save_screenshot(page, "alerts")
    dismiss = row.get_by_role("button", name=re.compile("^Dismiss"))
    dismiss.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("is now dismissed")
    expect(page.locator(f'tr[data-alert="{regressed.alert}"]')).to_have_count(0)  # not active
    page.get_by_label("Status").select_option("dismissed")
    page.get_by_role("button", name="Filter").click()
    expect(row.locator("td.alert-status")).to_have_text("dismissed")
    with console.admin() as client:
        assert client.get_alert(regressed.project, regressed.alert).status == "dismissed"

    # Silence it from there; the form keeps the list's filter.
    row.get_by_role("button", name=re.compile("^Silence")).click()
    expect(page.get_by_role("status")).to_contain_text("is now silenced")
    assert "status=dismissed" in page.url
    with console.admin() as client:
        assert client.get_alert(regressed.project, regressed.alert).status == "silenced"


def test_a_form_without_its_csrf_token_changes_nothing(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    log_in_with_token(page, console.server.token)
    page.goto(f"/console/projects/{regressed.project}/alerts")
    response = page.request.post(
        f"/console/projects/{regressed.project}/alerts/{regressed.alert}/dismiss",
        form={"shown": "active"},
        max_redirects=0,
    )
    assert response.status == 403
    assert "CSRF" in response.text()
    with console.admin() as client:
        assert client.get_alert(regressed.project, regressed.alert).status == "active"


def test_a_threshold_is_created_and_edited_from_the_form(
    page: Page, regressed: Regressed, console: Deployment
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in_with_token(page, console.server.token)
    page.goto(f"/console/projects/{regressed.project}/thresholds")
    existing = page.locator("table.thresholds tbody tr")
    expect(existing).to_have_count(1)  # the one the runs created
    save_screenshot(page, "thresholds")
    page.get_by_role("link", name="New threshold").click()

    page.get_by_label("Branch").select_option("main")
    page.get_by_label("Testbed").select_option("box")
    page.get_by_label("Measure").select_option("latency")
    page.get_by_label("Benchmark").select_option("hash")
    page.get_by_label("Test", exact=True).select_option("t_test")
    upper = page.get_by_label("Upper boundary")
    upper.fill("1.5")  # outside [0.5, 1): the server's message goes beside the field
    upper.press("Enter")
    expect(page.locator("#upper_boundary-error")).to_contain_text("[0.5, 1.0)")
    expect(upper).to_have_attribute("aria-invalid", "true")
    expect(upper).to_have_value("1.5")
    expect(page.get_by_label("Benchmark")).to_have_value("hash")

    noisy = page.get_by_label("Alert on a noisy report too")
    expect(noisy).not_to_be_checked()
    noisy.check()
    upper.fill("0.95")
    page.get_by_label("Maximum sample size").fill("30")
    page.get_by_label("Maximum sample size").press("Enter")
    expect(page.get_by_role("status")).to_have_text("Threshold created.")
    expect(page.locator("dd.alert-when-noisy")).to_have_text("alert")
    expect(noisy).to_be_checked()
    threshold = page.url.split("/thresholds/")[1].split("?")[0]
    with console.admin() as client:
        created = client.get_threshold(regressed.project, threshold)
    assert created.benchmark is not None and created.benchmark.name == "hash"
    assert created.model is not None
    assert (created.model.test, created.model.upper_boundary) == ("t_test", 0.95)
    assert created.model.max_sample_size == 30
    assert created.alert_when_noisy is True

    page.get_by_label("Test", exact=True).select_option("static")
    page.get_by_label("Upper boundary").fill("120")
    page.get_by_label("Maximum sample size").fill("")
    page.get_by_label("Lower boundary").fill("130")  # above the upper: refused
    noisy.uncheck()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#lower_boundary-error")).to_contain_text("must not be greater")
    expect(noisy).not_to_be_checked()  # as typed, and not saved yet
    with console.admin() as client:
        assert client.get_threshold(regressed.project, threshold).alert_when_noisy is True
    page.get_by_label("Lower boundary").fill("")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Threshold updated.")
    expect(page.locator("dd.alert-when-noisy")).to_have_text("no alert")
    expect(page.locator("table.models tbody tr")).to_have_count(2)
    expect(page.locator("dd.current-test")).to_have_text("static")
    save_screenshot(page, "threshold-edit")
    with console.admin() as client:
        edited = client.get_threshold(regressed.project, threshold)
    assert edited.model is not None
    assert (edited.model.test, edited.model.upper_boundary) == ("static", 120.0)
    assert [m.test for m in edited.models or []] == ["static", "t_test"]
    assert edited.alert_when_noisy is False

    page.goto(f"/console/projects/{regressed.project}/thresholds")
    expect(page.locator(f'tr[data-threshold="{threshold}"] td.test')).to_have_text("static")


def test_a_private_projects_pages_are_not_found_by_outsiders(
    page: Page, console: Deployment
) -> None:
    with console.admin() as client:
        client.create_project("acme", "hidden-perf", "private")
    for section in ("reports", "perf", "alerts", "thresholds", "thresholds/new"):
        response = page.goto(f"/console/projects/hidden-perf/{section}")
        assert response is not None and response.status == 404, section
        expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    log_in_with_token(page, console.server.token)  # an admin sees them
    response = page.goto("/console/projects/hidden-perf/perf")
    assert response is not None and response.status == 200
