"""Jobs in the console, in Chromium against a real server and a real runner process: submit from
the form and watch the log and the status live, cancel a running job (its processes end), the
server's validation beside the field, filters in the URL, and the forms without JavaScript."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, expect

from tests.browser import log_in_with_token, save_screenshot
from tests.console.sessions import admin_session
from tests.harness import Deployment, RunnerProcess, process_gone, wait_until
from tests.registry_support import push_image, registry_token, v2

JOB_URL = re.compile(r".*/console/projects/bench/jobs/(?P<job>[0-9a-f-]{36})$")
LIVE_TIMEOUT_MS = 30_000
"""Generous: a loaded machine (two cores, several test runs) may delay a runner's steps."""


@pytest.fixture(scope="module")
def runner(console: Deployment) -> Iterator[RunnerProcess]:
    runner = console.runner_process("console-runner").start()
    yield runner
    runner.kill()


def _unserved_job(console: Deployment) -> str:
    """A job that stays pending: its spec has no runner."""
    with console.admin() as client:
        if not any(spec.slug == "unserved" for spec in client.list_specs()):
            client.create_spec(
                name="unserved", architecture="x86_64", cpu=64, memory=1, disk=1, network=False
            )
        body = {"project": "bench", "spec": "unserved", "template": "bench.noop", "args": {}}
        return str(client.run({**body, "settings": {"adapter": "json"}}).job)


def _browser_errors(page: Page) -> list[str]:
    """The page's console errors from now on (a script failing, a policy violation)."""
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def _job_of(page: Page) -> str:
    found = JOB_URL.match(page.url)
    assert found is not None, page.url
    return found["job"]


def test_a_template_job_from_the_form_streams_its_log_and_reaches_processed(
    page: Page, console: Deployment, runner: RunnerProcess, tmp_path: Path
) -> None:
    log_in_with_token(page, console.server.token)
    errors = _browser_errors(page)
    page.goto("/console/projects/bench/jobs/new")
    page.get_by_role("link", name="bench.ticker").click()
    gate = tmp_path / "gate"
    page.get_by_label("gate").fill(str(gate))
    page.get_by_label("ms").fill("150")
    page.get_by_label("text").fill("from-the-form")
    page.get_by_label("stream").select_option("stderr")
    page.get_by_label("Adapter").select_option("json")
    save_screenshot(page, "job-new")
    page.get_by_label("text").press("Enter")  # submitted with the keyboard

    page.wait_for_url(JOB_URL)
    job = _job_of(page)
    log = page.locator("#job-log")
    expect(log).to_contain_text("tick 1 from-the-form", timeout=LIVE_TIMEOUT_MS)
    page.evaluate("window.stillTheSamePage = true")
    # Lines written after the page was loaded arrive on it: the log follows the job.
    shown = log.inner_text().count("tick ")
    expect(log).to_contain_text(f"tick {shown + 3} from-the-form", timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#job-status")).to_have_text("running")
    gate.touch()
    expect(page.locator("#job-status")).to_have_text("processed", timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("#log-state")).to_contain_text("End of log", timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("window.stillTheSamePage") is True, "the page was reloaded"
    expect(page.locator("#job-timeline tr[data-event=job_processed]")).to_have_count(1)
    expect(page.locator("#iteration-1")).to_contain_text('{"ticker"')

    # What the page showed is the job's log as the API has it, whole and in order.
    with console.admin() as client:
        api_job = client.get_job("bench", job)
        text = client.job_logs("bench", job, limit=131072).content
    assert api_job.status == "processed"
    assert api_job.config.args == {
        "gate": str(gate),
        "ms": 150,
        "text": "from-the-form",
        "stream": "stderr",
    }
    assert log.text_content() == text
    save_screenshot(page, "job-detail")
    assert errors == []


def test_cancel_a_running_job_from_its_page_ends_the_runners_processes(
    page: Page, console: Deployment, runner: RunnerProcess, tmp_path: Path
) -> None:
    pidfile = tmp_path / "family.pids"
    job = console.submit("bench.family", {"pidfile": str(pidfile)})
    console.wait_status(job, "running")
    parent, child = (
        int(pid)
        for pid in wait_until(
            lambda: pidfile.exists() and pidfile.read_text(), message="the job's pid file"
        ).split()
    )
    assert not process_gone(parent) and not process_gone(child)

    log_in_with_token(page, console.server.token)
    page.goto(f"/console/projects/bench/jobs/{job}")
    expect(page.locator("#job-status")).to_have_text("running")
    page.get_by_role("button", name="Cancel job").click()
    page.wait_for_url(f"**/console/projects/bench/jobs/{job}")  # redirected back to the job
    expect(page.locator("#job-status")).to_have_text("canceled")
    requested = page.locator("#job-timeline tr[data-event=job_cancel_requested]")
    expect(requested).to_contain_text("admin@test.dev")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    wait_until(
        lambda: process_gone(parent) and process_gone(child),
        timeout=30,
        message="the job's processes to end",
    )
    assert console.status(job) == "canceled"
    assert runner.proc is not None and runner.proc.poll() is None


def test_the_servers_validation_error_shows_beside_its_field_with_the_values_kept(
    page: Page, console: Deployment
) -> None:
    with console.admin() as client:
        jobs_before = client.list_jobs("bench").total
    log_in_with_token(page, console.server.token)
    page.goto("/console/projects/bench/jobs/new?template=bench.sleep")
    ms = page.get_by_label("ms")
    expect(ms).to_have_value("10")  # the argument's default
    expect(ms).to_have_attribute("max", "60000")
    ms.fill("70000")
    page.get_by_role("button", name="Submit job").click()
    # The browser checks the range first: nothing is sent.
    assert ms.evaluate("input => input.validity.rangeOverflow") is True
    assert page.url.endswith("/jobs/new?template=bench.sleep")

    # A browser that does not check (or a forged request) gets the server's check.
    page.locator("#job-form").evaluate("form => { form.noValidate = true; }")
    page.get_by_label("Branch").fill("from-a-form")
    with page.expect_navigation() as answered:
        page.get_by_role("button", name="Submit job").click()
    response = answered.value
    assert response is not None and response.status == 400
    error = page.locator("#field-arg-ms-error")
    expect(error).to_have_text("argument 'ms' must be <= 60000, got 70000")
    field = page.locator(".field", has=page.get_by_label("ms"))
    expect(field.locator(".field-error")).to_have_text("argument 'ms' must be <= 60000, got 70000")
    expect(page.get_by_label("ms")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("ms")).to_have_value("70000")
    expect(page.get_by_label("Branch")).to_have_value("from-a-form")
    save_screenshot(page, "job-new-error")

    # What only the submission finds (here: a timeout over the template's limit) goes beside
    # its field too.
    page.get_by_label("ms").fill("100")
    page.get_by_label("Timeout").fill("61")
    page.locator("#job-form").evaluate("form => { form.noValidate = true; }")
    page.get_by_role("button", name="Submit job").click()
    expect(page.locator("#field-timeout-error")).to_have_text(
        "job.timeout 61 exceeds template 'bench.sleep''s limit of 60 s"
    )
    expect(page.locator("#field-arg-ms-error")).to_have_text("")
    expect(page.get_by_label("ms")).to_have_value("100")
    with console.admin() as client:
        assert client.list_jobs("bench").total == jobs_before  # nothing was submitted


def test_the_list_filters_in_its_url_and_updates_statuses_in_place(
    page: Page, console: Deployment, runner: RunnerProcess, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    job = console.submit("bench.ticker", {"gate": str(gate), "ms": 100, "stream": "stderr"})
    console.wait_status(job, "running")
    errors = _browser_errors(page)
    page.goto("/console/projects/bench/jobs")
    row = page.locator(f"tr[data-job='{job}']")
    expect(row.locator("[data-status]")).to_have_text("running")
    page.evaluate("window.stillTheSamePage = true")
    gate.touch()
    expect(row.locator("[data-status]")).to_have_text("processed", timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("window.stillTheSamePage") is True, "the page was reloaded"
    save_screenshot(page, "jobs")
    assert errors == []

    pending = _unserved_job(console)
    page.reload()
    expect(page.locator(f"tr[data-job='{pending}']")).to_have_count(1)
    page.get_by_label("processed").check()
    page.get_by_label("Runner").select_option("console-runner")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*/jobs\?.*runner=console-runner"))
    query = parse_qs(urlsplit(page.url).query)
    assert (query["status"], query["runner"]) == (["processed"], ["console-runner"])
    expect(page.locator(f"tr[data-job='{job}']")).to_have_count(1)
    expect(page.locator(f"tr[data-job='{pending}']")).to_have_count(0)
    assert set(page.locator("#job-rows [data-status]").all_inner_texts()) == {"processed"}
    expect(page.get_by_label("processed")).to_be_checked()  # the form shows the URL's state

    page.goto("/console/projects/bench/jobs?branch=no-such-branch")
    expect(page.locator("#filter-error")).to_have_text(
        "branch: no branch 'no-such-branch' in this project"
    )


def test_the_list_filters_by_spec(page: Page, console: Deployment, runner: RunnerProcess) -> None:
    served = console.submit("bench.noop")  # on the deployment's spec, which the runner serves
    waiting = _unserved_job(console)
    console.wait_status(served, "processed", "failed", timeout=LIVE_TIMEOUT_MS / 1000)
    page.goto("/console/projects/bench/jobs")
    shown = {"unserved": waiting, console.spec: served}
    for spec, job in shown.items():
        page.get_by_label("Spec").select_option(spec)
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(re.compile(rf".*/jobs\?.*spec={spec}"))
        assert parse_qs(urlsplit(page.url).query)["spec"] == [spec]
        expect(page.get_by_label("Spec")).to_have_value(spec)
        expect(page.locator(f"tr[data-job='{job}']")).to_have_count(1)
        for other in set(shown.values()) - {job}:
            expect(page.locator(f"tr[data-job='{other}']")).to_have_count(0)
        assert set(page.locator("#job-rows tr td:nth-child(4)").all_inner_texts()) == {spec}


POLL_WINDOW_S = 5.0


def _requests_while_open(page: Page, path: str, polled: str) -> dict[str, list[float]]:
    """Open ``path`` and record the requests the page makes from then on, for
    ``POLL_WINDOW_S`` and at least until ``polled`` was asked for three times: the times of
    each, by URL path (a followed log's offset changes, its path does not)."""
    seen: dict[str, list[float]] = {}

    def record(request: Request) -> None:
        seen.setdefault(urlsplit(request.url).path, []).append(time.monotonic())

    page.goto(path)
    page.on("request", record)
    try:
        start = time.monotonic()
        while time.monotonic() - start < POLL_WINDOW_S or len(seen.get(polled, [])) < 3:
            assert time.monotonic() - start < 30, f"{polled} was not polled: {seen}"
            page.wait_for_timeout(100)  # lets Playwright deliver the request events meanwhile
    finally:
        page.remove_listener("request", record)
    return seen


def test_no_page_polls_faster_than_once_a_second(
    page: Page, console: Deployment, runner: RunnerProcess, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    job = console.submit("bench.ticker", {"gate": str(gate), "ms": 100, "stream": "stderr"})
    try:
        console.wait_status(job, "running")
        log_in_with_token(page, console.server.token)
        jobs = "/console/projects/bench/jobs"
        live = {
            jobs: f"{jobs}/fragment",
            f"{jobs}/{job}": f"{jobs}/{job}/fragment",
            "/console/runners": "/console/runners/fragment",
        }
        for path, polled in live.items():
            seen = _requests_while_open(page, path, polled)
            for url, times in seen.items():
                gaps = [later - earlier for earlier, later in pairwise(times)]
                assert min(gaps, default=1.0) >= 1.0, (path, url, gaps)
    finally:
        gate.touch()
    console.wait_status(job, "processed", timeout=LIVE_TIMEOUT_MS / 1000)


def test_cancel_and_rerun_work_without_javascript(
    browser: Browser, console: Deployment, runner: RunnerProcess
) -> None:
    context = browser.new_context(base_url=console.server.url, java_script_enabled=False)
    page = context.new_page()
    try:
        log_in_with_token(page, console.server.token)
        pending = _unserved_job(console)
        page.goto(f"/console/projects/bench/jobs/{pending}")
        page.get_by_role("button", name="Cancel job").click()
        expect(page.locator("#job-status")).to_have_text("canceled")

        page.get_by_role("button", name="Rerun").click()
        page.wait_for_url(JOB_URL)
        rerun = _job_of(page)
        assert rerun != pending
        created = page.locator("#job-timeline tr[data-event=job_created]")
        expect(created).to_contain_text("admin@test.dev")
        page.goto(f"/console/projects/bench/jobs/{pending}")
        expect(page.locator("#job-timeline tr[data-event=job_rerun]")).to_have_count(1)
        # Read without JavaScript, the log is on the page as text.
        expect(page.locator("#job-log")).to_be_visible()

        # A page opened before the job finished offers a cancel the job no longer allows:
        # the same page again, with the reason.
        stale = _unserved_job(console)
        page.goto(f"/console/projects/bench/jobs/{stale}")
        with console.admin() as client:
            client.cancel_job("bench", stale)
        with page.expect_navigation() as answered:
            page.get_by_role("button", name="Cancel job").click()
        assert answered.value is not None and answered.value.status == 409
        expect(page.locator("#action-error")).to_contain_text("is already canceled")
        expect(page.locator("#job-status")).to_have_text("canceled")
    finally:
        context.close()


def test_a_long_log_comes_a_part_at_a_time(
    browser: Browser, console: Deployment, runner: RunnerProcess
) -> None:
    job = console.submit("bench.chatty")  # one line of 200,000 characters
    console.wait_status(job, "processed", "failed")
    whole = "x" * 200_000 + "\n"
    without_js = browser.new_context(base_url=console.server.url, java_script_enabled=False)
    try:
        page = without_js.new_page()
        page.goto(f"/console/projects/bench/jobs/{job}")
        assert page.locator("#job-log").text_content() == whole[:65536]
        page.get_by_role("link", name="Next part of the log").click()
        assert page.url.endswith("?log_offset=65536#log")
        assert page.locator("#job-log").text_content() == whole[65536 : 2 * 65536]
        expect(page.get_by_role("link", name="From the start")).to_be_visible()
    finally:
        without_js.close()
    with_js = browser.new_context(base_url=console.server.url)
    try:
        page = with_js.new_page()
        page.goto(f"/console/projects/bench/jobs/{job}")
        # The rest is streamed after the first part; the paging link is not needed.
        expect(page.locator("#log-state")).to_have_text("End of log.", timeout=LIVE_TIMEOUT_MS)
        assert page.locator("#job-log").text_content() == whole
        expect(page.locator("#log-more")).to_be_hidden()
    finally:
        with_js.close()


def test_a_form_without_its_csrf_token_changes_nothing(console: Deployment) -> None:
    """What another site can make a signed-in browser send: its cookies, but no token."""
    job = _unserved_job(console)
    url = f"{console.server.url}/console/projects/bench/jobs/{job}/cancel"
    cookies = {"benchrunner_session": admin_session(console), "benchrunner_csrf": "c" * 43}
    for form in ({}, {"csrf_token": "0" * 64}):
        response = httpx.post(url, data=form, cookies=cookies)
        assert response.status_code == 403, response.text
        assert "CSRF token" in response.text
    assert console.status(job) == "pending"


def test_an_image_job_from_a_tag_or_a_digest_with_errors_beside_the_image_field(
    page: Page, console: Deployment
) -> None:
    _unserved_job(console)  # makes the spec no runner serves: the job stays pending
    push = "repository:bench:push,pull"
    with v2(console.server, registry_token(console.server, console.server.token, push)) as reg:
        digest = push_image(reg, "bench", "console-v1", b"a layer")
    log_in_with_token(page, console.server.token)
    page.goto("/console/projects/bench/jobs/new")
    page.get_by_role("link", name="An image").click()
    image = page.get_by_role("textbox", name="Image")
    page.get_by_label("Spec").select_option("unserved")
    problems = {
        "console-v2": "no image tagged 'console-v2' in project 'bench''s registry",
        "sha256:" + "0" * 64: f"image sha256:{'0' * 64} is not in project 'bench''s registry",
    }
    for given, problem in problems.items():
        image.fill(given)
        page.get_by_role("button", name="Submit job").click()
        expect(page.locator("#field-image-error")).to_contain_text(problem)
        expect(image).to_have_value(given)
        expect(page.get_by_label("Spec")).to_have_value("unserved")

    image.fill("bench:console-v1")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(JOB_URL)
    expect(page.locator("#job-config")).to_contain_text(digest)
    assert console.job(_job_of(page)).config.digest == digest


def test_an_outsider_gets_404_from_every_jobs_page_of_a_private_project(
    console: Deployment,
) -> None:
    with console.admin() as client:
        client.create_project("acme", "hidden", "private")
    _unserved_job(console)
    with console.admin() as client:
        body = {"project": "hidden", "spec": "unserved", "template": "bench.noop", "args": {}}
        job = client.run({**body, "settings": {"adapter": "json"}}).job
    base = f"{console.server.url}/console/projects/hidden/jobs"
    pages = ["", "/fragment", "/new", f"/{job}", f"/{job}/fragment", f"/{job}/logs/follow"]
    for page in pages:
        response = httpx.get(base + page, timeout=30)
        assert response.status_code == 404, (page, response.status_code)
        assert "bench.noop" not in response.text  # nothing of the job
    public = httpx.get(f"{console.server.url}/console/projects/bench/jobs", timeout=30)
    assert public.status_code == 200


def test_a_reader_who_may_not_submit_gets_no_forms(console: Deployment) -> None:
    """The public project is readable without signing in, but only members change it."""
    job = _unserved_job(console)
    base = f"{console.server.url}/console/projects/bench/jobs"
    new = httpx.get(f"{base}/new?template=bench.sleep", timeout=30)
    assert new.status_code == 200
    assert "You may not submit jobs to this project" in new.text
    assert 'id="job-form"' not in new.text
    detail = httpx.get(f"{base}/{job}", timeout=30)
    assert detail.status_code == 200 and 'id="job-status"' in detail.text
    assert "Cancel job" not in detail.text and "Rerun" not in detail.text
