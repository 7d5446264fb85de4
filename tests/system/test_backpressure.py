"""Backpressure (docs/decisions/submission.md): a server-wide cap on pending plus in-flight jobs and
a per-organization cap on pending jobs; over either, 429 with ``Retry-After``; the CLI waits and
submits again with ``--retry-on-busy``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Deployment, cli, deploy, wait_until
from tests.system.test_idempotent_submission import direct_run, post, template_run
from tests.system.test_image_cli import cli_env

RETRY_AFTER = "1"


@contextlib.contextmanager
def busy_deployment(tmp_path: Path, database_url: str, **caps: str) -> Iterator[Deployment]:
    """A deployment with these ``benchrunner server`` options (underscores for dashes)."""
    with deploy(
        tmp_path,
        database_url,
        options={name.replace("_", "-"): value for name, value in caps.items()},
        env={"BENCHRUNNER_BUSY_RETRY_AFTER": RETRY_AFTER},
    ) as deployment:
        yield deployment


@pytest.fixture
def queue_of_two(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with busy_deployment(
        tmp_path, database_url, max_queued_jobs="2", max_pending_per_organization="0"
    ) as deployment:
        yield deployment


@pytest.fixture
def one_pending_per_org(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with busy_deployment(tmp_path, database_url, max_pending_per_organization="1") as deployment:
        yield deployment


def post_run(deployment: Deployment, project: str | None = None) -> httpx.Response:
    body = template_run(deployment, project=project or deployment.project)
    return post(deployment.server, body, None)


def assert_busy(response: httpx.Response, *phrases: str) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["Retry-After"] == RETRY_AFTER
    body: dict[str, Any] = response.json()
    assert body["error_code"] == "queue_full"
    for phrase in phrases:
        assert phrase in body["message"]


def test_the_server_cap_counts_pending_and_in_flight_jobs(queue_of_two: Deployment) -> None:
    deployment = queue_of_two
    channel = deployment.channel("r1")
    first = deployment.submit()
    assert channel.claim()["uuid"] == first  # in flight
    second = deployment.submit()

    assert_busy(post_run(deployment), "job queue is full", "2 jobs are pending or running")
    # Direct results make no job: never refused by a cap.
    assert post(deployment.server, direct_run(deployment), None).status_code == 201
    with deployment.admin() as client:
        client.cancel_job(deployment.project, second)
    assert post_run(deployment).status_code == 201


def test_the_organization_cap_counts_its_pending_jobs_only(
    one_pending_per_org: Deployment,
) -> None:
    deployment = one_pending_per_org
    first = deployment.submit()
    assert_busy(post_run(deployment), "organization 'acme' has 1 pending jobs")

    with deployment.admin() as client:
        client.create_organization("globex", "team")
        client.create_project("globex", "other", "public")
    assert post_run(deployment, project="other").status_code == 201

    channel = deployment.channel("r1")
    assert channel.claim()["uuid"] == first  # in flight: no longer pending
    assert post_run(deployment).status_code == 201


@pytest.mark.engine_independent
def test_the_cli_waits_and_submits_again_with_retry_on_busy(
    tmp_path: Path, database_url: str
) -> None:
    with busy_deployment(tmp_path, database_url, max_queued_jobs="1") as deployment:
        env = cli_env(deployment, tmp_path)
        waiting = deployment.submit()
        command = ("run", "--spec", deployment.spec, "--template", "bench.sleep")

        refused = cli(*command, env=env, check=False)
        assert refused.returncode == 1
        assert "job queue is full" in refused.stderr
        assert "--retry-on-busy" in refused.stderr

        stderr = tmp_path / "retry.err"
        with stderr.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "benchrunner", *command, "--retry-on-busy", "--json"],
                stdout=subprocess.PIPE,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env},
                text=True,
            )
        try:
            wait_until(
                lambda: stderr.read_text().count("waiting 1 s before submitting again") >= 2,
                timeout=30,
                message="the CLI to wait twice",
            )
            with deployment.admin() as client:
                client.cancel_job(deployment.project, waiting)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, stderr.read_text()
        assert "server busy: the server's job queue is full" in stderr.read_text()
        submitted = deployment.job(str(json.loads(out)["job"]))
        assert submitted.status == "pending"
