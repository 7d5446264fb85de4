"""The console's reports list and perf page cost a fixed number of statements however many noisy
and duet reports they show (docs/decisions/noise.md): a report's noise verdict comes with its row, a
duet's ratio count with the page's counts, a point's noisiness with the perf points and a series'
duet ratios in one more statement. Counted as ``test_job_queries`` counts, on the in-process
server; the reports are completed through a raw runner channel with the figures a runner
sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import wait_until
from tests.inprocess import InProcessChannel, InProcessServer, serve_in_process
from tests.system.test_job_queries import counted

NOISY = {
    "before": {"rounds": 32, "median_ns": 40_000, "cv": 0.3},
    "after": {"rounds": 32, "median_ns": 40_000, "cv": 0.01},
}
PERF = (
    "/console/projects/bench/perf?branches=main&testbeds=box&benchmarks=timed"
    "&measures=latency&start_time=0&end_time=4102444800000"
)


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[InProcessServer]:
    with serve_in_process(tmp_path, database_url) as running:
        yield running


def _submit(server: InProcessServer, **fields: Any) -> str:
    body = {
        "project": "bench",
        "branch": "main",
        "testbed": "box",
        "spec": "small",
        "template": "bench.timed",
        "settings": {"adapter": "json"},
        **fields,
    }
    with server.admin() as client:
        return str(client.run(body).job)


def _complete(channel: InProcessChannel, job_uuid: str, **completed: Any) -> None:
    assert channel.claim()["uuid"] == job_uuid
    assert channel.ask({"event": "running"})["event"] == "ack"
    done = channel.ask({"event": "completed", "job": job_uuid, **completed})
    assert done == {"event": "ack", "job": job_uuid}


def _stdout(value: float) -> str:
    return json.dumps({"timed": {"latency": {"value": value}}})


def _noisy_report(server: InProcessServer, channel: InProcessChannel) -> None:
    job_uuid = _submit(server, args={"ms": 1})
    results = [{"exit_code": 0, "stdout": _stdout(100.0), "stderr": ""}]
    _complete(channel, job_uuid, results=results, noise=NOISY)


def _duet_report(server: InProcessServer, channel: InProcessChannel) -> None:
    job_uuid = _submit(
        server,
        baseline={"args": {"ms": 1}},
        contender={"args": {"ms": 2}},
        duet={"seed": 1, "resamples": 200},
        job={"iter": 2},
    )
    results = [
        {"exit_code": 0, "stdout": _stdout(value), "stderr": "", "side": side, "round": rounds}
        for rounds in (0, 1)
        for side, value in (("baseline", 100.0 + rounds), ("contender", 120.0 + rounds))
    ]
    _complete(channel, job_uuid, results=results)


def _statements(server: InProcessServer, path: str) -> int:
    with httpx.Client(base_url=server.url, timeout=30) as anonymous, counted(server) as counter:
        page = anonymous.get(path)
    assert page.status_code == 200, page.text
    return len(counter.statements)


def _processed(server: InProcessServer) -> None:
    def done() -> bool:
        with server.admin() as client:
            jobs = client.list_jobs("bench", per_page=100)
        return all(job.status == "processed" for job in jobs)

    wait_until(done, timeout=30, message="every job processed")


def test_the_reports_list_and_perf_page_cost_the_same_with_1_and_with_6_of_each(
    server: InProcessServer,
) -> None:
    channel = server.channel("r1")
    _noisy_report(server, channel)
    _duet_report(server, channel)
    _processed(server)
    few = (_statements(server, "/console/projects/bench/reports"), _statements(server, PERF))
    for _ in range(5):
        _noisy_report(server, channel)
        _duet_report(server, channel)
    _processed(server)
    channel.close()
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        listed = anonymous.get("/console/projects/bench/reports").text
        plotted = anonymous.get(PERF).text
    assert listed.count('class="noisy-mark"') == 6 and listed.count("ratio(s)") == 6
    assert plotted.count('data-noisy="true"') == 6
    assert plotted.count("contender higher") == 6
    many = (_statements(server, "/console/projects/bench/reports"), _statements(server, PERF))
    assert few == many


def test_the_report_and_job_pages_render_the_verdicts(server: InProcessServer) -> None:
    channel = server.channel("r1")
    _noisy_report(server, channel)
    _duet_report(server, channel)
    _processed(server)
    channel.close()
    with server.admin() as client:
        jobs = client.list_jobs("bench", per_page=10)
    [noisy_job] = [job for job in jobs if job.config.duet is None]
    [duet_job] = [job for job in jobs if job.config.duet is not None]
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        noisy = anonymous.get(f"/console/projects/bench/reports/{noisy_job.report}").text
        job = anonymous.get(f"/console/projects/bench/jobs/{noisy_job.uuid}").text
        duet = anonymous.get(f"/console/projects/bench/reports/{duet_job.report}").text
    for page in (noisy, job):
        assert 'data-verdict="noisy"' in page
        assert "cv 30.0% &gt; limit 5.0%" in page  # the server's default limit
    assert 'id="duet"' not in noisy and 'id="noise"' not in duet
    assert '<td class="duet-verdict">contender higher</td>' in duet
    assert "No absolute metrics" in duet
