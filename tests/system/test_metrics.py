"""``/metrics``: a job's life counted once in each series, labelled by tier, status and route
template; every series carries its replica; several replicas never share a series."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.databases import postgres_database
from tests.harness import deploy, wait_until
from tests.metrics_scrape import scrape

TRANSITIONS = [
    ("pending", "claimed"),
    ("claimed", "running"),
    ("running", "completed"),
    ("completed", "processed"),
]


@pytest.mark.engine_independent
def test_a_job_is_counted_once_at_each_step_and_logged_as_json(
    tmp_path: Path, database_url: str
) -> None:
    with deploy(tmp_path, database_url) as deployment:
        before = scrape(deployment.server.url)
        assert before.value("benchrunner_job_claims_total") == 0
        assert before.value("benchrunner_jobs", status="pending") == 0
        runner = deployment.runner_process("agent").start()
        wait_until(lambda: scrape(deployment.server.url).value("benchrunner_connected_runners"))
        job_uuid = deployment.submit("bench.noop")
        deployment.wait_status(job_uuid, "processed")
        after = scrape(deployment.server.url)
        runner.kill()
    for source, target in TRANSITIONS:
        assert (
            after.value("benchrunner_job_transitions_total", status_from=source, status_to=target)
            == 1
        ), (source, target)
    assert after.value("benchrunner_job_claims_total", tier="team") == 1
    assert after.value("benchrunner_job_claims_total") == 1
    assert after.value("benchrunner_job_queue_duration_seconds_count", tier="team") == 1
    assert after.value("benchrunner_job_starts_total") == 1
    assert after.value("benchrunner_job_failures_total") == 0
    assert after.value("benchrunner_connected_runners") == 1
    assert after.value("benchrunner_sweeper_leader") == 1
    assert after.value("benchrunner_database_up") == 1
    assert after.value("benchrunner_jobs", status="running") == 0
    # Request latency by route template: the job's UUID never becomes a label.
    routes = after.labels_of("benchrunner_http_request_duration_seconds_count", "route")
    assert "/v0/projects/{project}/jobs/{job}" in routes
    assert not any(job_uuid in route for route in routes)
    replicas = {s.labels.get("replica") for s in after.samples}
    assert len(replicas) == 1 and None not in replicas

    lines = deployment.server.log_lines()
    moves = [line for line in lines if line.get("job") == job_uuid and "status_to" in line]
    assert [(m["status_from"], m["status_to"]) for m in moves] == TRANSITIONS
    for move in moves:
        assert isinstance(move["duration_ms"], int) and move["duration_ms"] >= 0
        assert move["tier"] == "team" and move["level"] == "info"
    assert moves[0]["runner"] == moves[1]["runner"] == runner.slug


def test_queue_depth_by_status_and_tier_is_read_at_scrape_time(
    tmp_path: Path, database_url: str
) -> None:
    with deploy(tmp_path, database_url) as deployment:
        waiting = [deployment.submit("bench.noop") for _ in range(3)]
        channel = deployment.channel("raw")
        assert channel.claim()["uuid"] == waiting[0]
        found = scrape(deployment.server.url)
    assert found.value("benchrunner_jobs", status="pending", tier="team") == 2
    assert found.value("benchrunner_jobs", status="claimed", tier="team") == 1
    assert found.value("benchrunner_jobs", status="pending", tier="free") == 0


@pytest.mark.postgresql
def test_each_replica_exposes_its_own_series(tmp_path: Path) -> None:
    with postgres_database() as url, deploy(tmp_path, url) as deployment:
        second = deployment.add_replica("second")
        job_uuid = deployment.submit("bench.noop")
        channel = deployment.channel("raw", server=second)
        assert channel.claim()["uuid"] == job_uuid
        first_found, second_found = scrape(deployment.server.url), scrape(second.url)
        leaders = wait_until(
            lambda: (
                (
                    scrape(deployment.server.url).value("benchrunner_sweeper_leader")
                    + scrape(second.url).value("benchrunner_sweeper_leader")
                )
                or None
            )
        )
    assert first_found.labels_of("benchrunner_job_claims_total", "replica") != (
        second_found.labels_of("benchrunner_job_claims_total", "replica")
    )
    assert second_found.labels_of("benchrunner_job_claims_total", "replica") == {"second"}
    assert first_found.value("benchrunner_job_claims_total") == 0
    assert second_found.value("benchrunner_job_claims_total", replica="second") == 1
    assert first_found.value("benchrunner_connected_runners") == 0
    assert second_found.value("benchrunner_connected_runners") == 1
    # Shared state is the same from either replica; only one of them leads.
    for found in (first_found, second_found):
        assert found.value("benchrunner_jobs", status="claimed") == 1
    assert leaders == 1
