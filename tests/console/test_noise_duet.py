"""Noise and duets in the console, in Chromium against a real server and runner process: a report
taken on a noisy machine (the spec's CV limit set to 0, so the runner's own calibrations flag
it) is marked on its page, in the reports list, on its job's page and on the perf plot (a
hollow marker with its legend entry), and its page says why its threshold raised no alert; a
duet run's ratios show on its report page and in a perf panel of their own, apart from the
absolute values."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from benchrunner.api.jobs import Job
from tests.browser import log_in_with_token, save_screenshot
from tests.harness import Deployment

PROJECT = "quiet-machine"
DAY = dt.timedelta(days=1)
HISTORY_NS = (5.2e6, 5.3e6, 5.25e6)
"""Earlier direct runs of ``timed``'s latency: the quiet points beside the noisy one."""
FIRST_LINE_RGB = (0x1F, 0x5F, 0xBF)  # perf.js's first palette colour
ALERT_RGB = (0xD5, 0x00, 0x00)
TIMEOUT = 90


@dataclass(frozen=True)
class Runs:
    noisy_job: Job
    noisy: dict[str, Any]
    duet_job: Job
    duet: dict[str, Any]
    history: list[dict[str, Any]]

    def perf_url(self) -> str:
        start = (dt.datetime.now(dt.UTC) - 10 * DAY).date().isoformat()
        end = (dt.datetime.now(dt.UTC) + DAY).date().isoformat()
        return (
            f"/console/projects/{PROJECT}/perf?branches=main&testbeds=box&benchmarks=timed"
            f"&measures=latency&start_time={start}&end_time={end}"
        )


def _body(console: Deployment, **fields: Any) -> dict[str, Any]:
    return {
        "project": PROJECT,
        "branch": "main",
        "testbed": "box",
        "spec": console.spec,
        "template": "bench.timed",
        "settings": {"adapter": "json"},
        **fields,
    }


@pytest.fixture(scope="module")
def runs(console: Deployment) -> Iterator[Runs]:
    """Three quiet direct runs, then on a runner: a job whose spec's limits make it noisy under
    a static threshold its value exceeds, and a duet whose contender sleeps three times as
    long as its baseline."""
    with console.http() as api:
        patched = api.patch(
            f"/v0/specs/{console.spec}", json={"noise_cv_limit": 0.0, "noise_drift_limit": 0.0}
        )
    assert patched.status_code == 200, patched.text
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    with console.admin() as client:
        client.create_project("acme", PROJECT, "public")
        history = []
        for days_ago, value in zip((4, 3, 2), HISTORY_NS, strict=True):
            at = (now - days_ago * DAY).isoformat()
            results = json.dumps({"timed": {"latency": {"value": value}}})
            history.append(
                client.run(
                    {
                        "project": PROJECT,
                        "branch": "main",
                        "testbed": "box",
                        "start_time": at,
                        "end_time": at,
                        "settings": {"adapter": "json"},
                        "results": [results],
                    }
                ).model_dump(mode="json", exclude_unset=True)
            )
    runner = console.runner_process("noise-duet-runner").start()
    try:
        with console.admin() as client:
            noisy_uuid = client.run(
                _body(
                    console,
                    args={"ms": 5},
                    thresholds={"models": {"latency": {"test": "static", "upper_boundary": 1.0}}},
                )
            ).job
        noisy_job = console.wait_status(
            str(noisy_uuid), "processed", timeout=TIMEOUT, project=PROJECT
        )
        with console.admin() as client:
            duet_uuid = client.run(
                _body(
                    console,
                    # twentyfold, so a loaded machine's stretched sleeps keep the interval
                    # above the margin
                    baseline={"args": {"ms": 5}},
                    contender={"args": {"ms": 100}},
                    duet={"seed": 7, "margin": 0.05, "resamples": 2000},
                    job={"iter": 6},
                )
            ).job
        duet_job = console.wait_status(
            str(duet_uuid), "processed", timeout=TIMEOUT, project=PROJECT
        )
        with console.admin() as client:
            noisy = client.get_report(PROJECT, noisy_job.report).model_dump(
                mode="json", exclude_unset=True
            )
            duet = client.get_report(PROJECT, duet_job.report).model_dump(
                mode="json", exclude_unset=True
            )
    finally:
        runner.kill()
    assert noisy["noise"]["verdict"] == "noisy", noisy["noise"]
    assert noisy["alerts"] == [] and noisy["noise"]["alerts"].startswith("not judged: noisy")
    [ratio] = duet["duet"]["results"]
    assert (ratio["alert"]["limit"], ratio["alert"]["status"]) == ("upper", "active"), ratio
    yield Runs(noisy_job, noisy, duet_job, duet, history)


def _drawn(figure: Locator) -> dict[str, Any]:
    expect(figure).to_have_attribute("data-state", "drawn")
    return {
        "markers": json.loads(figure.get_attribute("data-drawn-markers") or "null"),
        "noisy": json.loads(figure.get_attribute("data-drawn-noisy") or "null"),
    }


def _pixel(figure: Locator, left: float, top: float) -> tuple[int, int, int]:
    """The RGB of the figure's canvas at a point given in CSS pixels."""
    rgb: list[int] = figure.evaluate(
        """(figure, [left, top]) => {
            const canvas = figure.querySelector("canvas");
            const scale = canvas.width / canvas.getBoundingClientRect().width;
            const data = canvas.getContext("2d")
                .getImageData(Math.round(left * scale), Math.round(top * scale), 1, 1).data;
            return [data[0], data[1], data[2]];
        }""",
        [left, top],
    )
    return rgb[0], rgb[1], rgb[2]


def _near(found: tuple[int, int, int], wanted: tuple[int, int, int], slack: int = 40) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(found, wanted, strict=True))


def test_a_noisy_reports_page_says_why_its_threshold_raised_no_alert(
    page: Page, runs: Runs
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/console/projects/{PROJECT}/reports/{runs.noisy['uuid']}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("noisy")
    section = page.locator("section#noise")
    expect(section).to_have_attribute("data-verdict", "noisy")
    expect(section.get_by_role("heading", level=2)).to_have_text("Noise guard: noisy")
    reason = page.locator("#noise-reason")
    spread = runs.noisy["noise"]["spread"]
    assert runs.noisy["noise"]["judged"] == "spread"
    expect(reason).to_contain_text(f"spread {spread * 100:.1f}% > limit 0.0%")
    expect(page.locator("#noise-advice")).to_contain_text("benchrunner runner preflight")
    expect(reason).to_contain_text("alert_when_noisy")
    expect(reason).to_contain_text(runs.noisy["noise"]["alerts"])
    figures = page.locator("#noise-figures")
    before = runs.noisy["noise"]["before"]["cv"] * 100
    expect(figures.locator("div", has_text="CV before")).to_contain_text(f"{before:.1f}%")
    expect(figures).to_contain_text("limit 0.0% over the limit")
    expect(figures).to_contain_text("Drift (after / before")
    # The metric is beyond the static threshold's limit: its alert was withheld, not raised.
    row = page.locator("table.metrics tbody tr", has_text="latency")
    expect(row).to_contain_text("beyond the limit: alert withheld (noisy)")
    expect(page.locator("table.metrics tr.alerted")).to_have_count(0)
    # From the keyboard: the alerts section's link goes to the reason.
    link = page.get_by_role("link", name="its machine was noisy")
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile("#noise-reason$"))
    save_screenshot(page, "report-noisy")


def test_the_reports_list_and_the_job_page_mark_the_noisy_report(page: Page, runs: Runs) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/console/projects/{PROJECT}/reports")
    noisy_row = page.locator("table tbody tr", has=page.locator(f'a[href$="{runs.noisy["uuid"]}"]'))
    expect(noisy_row.locator("td.noise")).to_contain_text("noisy")
    expect(noisy_row.locator("td.noise")).to_contain_text("> limit 0.0%")
    quiet_row = page.locator(
        "table tbody tr", has=page.locator(f'a[href$="{runs.history[0]["uuid"]}"]')
    )
    expect(quiet_row.locator("td.noise")).to_have_text("\u2013")  # a direct run has no guard
    duet_row = page.locator("table tbody tr", has=page.locator(f'a[href$="{runs.duet["uuid"]}"]'))
    expect(duet_row).to_contain_text("duet 1 ratio(s)")
    save_screenshot(page, "reports-noise-duet")

    page.goto(f"/console/projects/{PROJECT}/jobs/{runs.noisy_job.uuid}")
    expect(page.locator("#job-summary")).to_contain_text("processed noisy")
    expect(page.locator("section#noise")).to_have_attribute("data-verdict", "noisy")
    expect(page.locator("#noise-reason")).to_contain_text("alert_when_noisy")
    expect(page.locator("#noise-advice")).to_contain_text("benchrunner runner preflight")
    save_screenshot(page, "job-noisy")
    page.get_by_role("link", name="The report", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(runs.noisy["uuid"])


def test_a_duet_reports_page_shows_its_ratios_apart(page: Page, runs: Runs) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/console/projects/{PROJECT}/reports/{runs.duet['uuid']}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("duet")
    section = page.locator("section#duet")
    expect(section.get_by_role("heading", level=2)).to_have_text("Duet: contender / baseline")
    expect(page.locator("#duet-order")).to_have_text(runs.duet["duet"]["order"])
    [ratio] = runs.duet["duet"]["results"]
    row = section.locator('tr[data-duet-benchmark="timed"]')
    expect(row).to_have_attribute("data-alert-limit", "upper")
    expect(row.locator("td.duet-ratio")).to_have_text(f"{ratio['ratio']:.4f}")
    expect(row).to_contain_text(f"{ratio['lower_value']:.4f}")
    expect(row).to_contain_text(f"{ratio['upper_value']:.4f}")
    expect(row.locator("td.duet-verdict")).to_have_text("contender higher")
    expect(row).to_contain_text("alert: upper")
    expect(row.locator("td.duet-margin")).to_contain_text("± 5%")
    expect(row.locator("td.duet-margin")).to_contain_text("(run)")
    expect(section).to_contain_text("95% confidence interval")
    # Apart from the absolute metrics, of which a duet report has none.
    expect(page.locator("table.metrics")).to_have_count(0)
    expect(page.locator("#metrics-heading + p")).to_contain_text("No absolute metrics")
    save_screenshot(page, "report-duet")


def test_the_perf_plot_marks_noisy_points_and_shows_duets_apart(page: Page, runs: Runs) -> None:
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(runs.perf_url())
    absolute = page.locator("figure.perf-chart:not(.duet-chart)")
    drawn = _drawn(absolute)
    assert drawn["markers"] == []  # the noisy report's alert was withheld
    [hollow] = drawn["noisy"]
    assert hollow["value"] == runs.noisy["results"][0][0]["measures"][0]["metric"]["value"]
    # Hollow: the centre is the background, the ring the line's colour.
    centre = _pixel(absolute, hollow["left"], hollow["top"])
    assert _near(centre, (255, 255, 255)), centre
    ring = [_pixel(absolute, hollow["left"] + dx, hollow["top"]) for dx in (4, 5, 6)]
    assert any(_near(rgb, FIRST_LINE_RGB) for rgb in ring), ring
    expect(absolute.locator("figcaption")).to_contain_text("Hollow markers: 1 point(s)")
    expect(absolute.locator(".u-legend")).to_contain_text("noisy (hollow): timed · main · box")
    # The absolute table: the history and the noisy point, marked; no ratio among them.
    rows = page.locator("details.perf-table:not(.duet-table) tbody tr")
    expect(rows).to_have_count(len(HISTORY_NS) + 1)
    expect(page.locator('details.perf-table tr[data-noisy="true"]')).to_have_count(1)
    expect(page.locator('details.perf-table tr[data-noisy="true"]')).to_contain_text("noisy")

    # The duet's ratio in its own panel, with its interval and alert.
    panel = page.locator("section#duets")
    expect(panel.get_by_role("heading", level=2)).to_have_text("Duet ratios: contender / baseline")
    duet_figure = panel.locator("figure.duet-chart")
    [marker] = _drawn(duet_figure)["markers"]
    [ratio] = runs.duet["duet"]["results"]
    assert (marker["limit"], marker["report"]) == ("upper", runs.duet["uuid"])
    assert marker["value"] == ratio["ratio"]
    assert _near(_pixel(duet_figure, marker["left"], marker["top"]), ALERT_RGB, 80)
    expect(duet_figure.locator(".u-legend")).to_contain_text("interval high: timed · main · box")
    expect(duet_figure.locator(".u-legend")).to_contain_text("1: no change")
    [duet_row] = panel.locator("details.duet-table tbody tr").all()
    expect(duet_row).to_contain_text(f"{ratio['ratio']:.4f}")
    expect(duet_row).to_contain_text("contender higher")
    expect(duet_row).to_have_attribute("data-alert-limit", "upper")
    save_screenshot(page, "perf-noise-duet")


def test_a_duets_alert_is_on_the_alerts_page_and_the_dashboard_and_is_dismissed(
    page: Page, runs: Runs, console: Deployment
) -> None:
    [ratio] = runs.duet["duet"]["results"]
    alert_uuid = ratio["alert"]["uuid"]
    log_in_with_token(page, console.server.token)
    page.goto("/console")
    recent = page.get_by_role("region", name="Recent alerts")
    expect(recent.get_by_role("row", name=re.compile("duet"))).to_contain_text("timed")
    expect(recent.get_by_role("row", name=re.compile("duet"))).to_contain_text("ratio")

    page.goto(f"/console/projects/{PROJECT}/alerts")
    row = page.locator(f'table.alerts tr[data-alert="{alert_uuid}"]')
    expect(row.locator('td[data-kind="duet"]')).to_contain_text(f"ratio {ratio['ratio']:.4f}")
    expect(row).to_contain_text("upper (duet, margin run)")
    expect(row).to_contain_text("1.05")  # the upper limit: 1 + the run's 5 % margin
    expect(row.get_by_role("link", name=runs.duet["uuid"][:8])).to_be_visible()

    page.goto(f"/console/projects/{PROJECT}/alerts/{alert_uuid}")  # its own page
    duet_row = page.locator(f'tr[data-alert="{alert_uuid}"][data-kind="duet"]')
    expect(page.get_by_role("heading", name="Duet ratio and margin")).to_be_visible()
    expect(duet_row.locator("#alert-value")).to_have_text(f"{ratio['ratio']:.4f}")
    expect(duet_row).to_contain_text("1.05")
    expect(duet_row).to_contain_text("run")
    page.goto(f"/console/projects/{PROJECT}/alerts")
    try:
        row.get_by_role("button", name=re.compile("^Dismiss")).click()
        expect(page.get_by_role("status")).to_contain_text("is now dismissed")
        expect(page.locator(f'tr[data-alert="{alert_uuid}"]')).to_have_count(0)  # not active
        with console.admin() as client:
            assert client.get_alert(PROJECT, alert_uuid).status == "dismissed"
    finally:
        with console.admin() as client:
            client.update_alert(PROJECT, alert_uuid, "active")  # as the other tests find it


def test_the_pages_read_without_javascript(
    browser: Browser, console: Deployment, runs: Runs
) -> None:
    context = browser.new_context(base_url=console.server.url, java_script_enabled=False)
    try:
        bare = context.new_page()
        bare.goto(runs.perf_url())
        expect(bare.locator("figure.perf-chart").first).not_to_have_attribute("data-state", "drawn")
        noisy = bare.locator('details.perf-table tr[data-noisy="true"]')
        expect(noisy).to_contain_text("noisy")
        duet_rows = bare.locator("details.duet-table tbody tr")
        expect(duet_rows).to_have_count(1)
        expect(duet_rows).to_contain_text("alert: upper")
        bare.goto(f"/console/projects/{PROJECT}/reports/{runs.noisy['uuid']}")
        expect(bare.locator("#noise-reason")).to_contain_text("alert_when_noisy")
    finally:
        context.close()
