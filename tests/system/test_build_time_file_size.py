"""Bencher's ``build_time``/``file_size`` job flags through a real server and runner: the job's
report holds a ``build-time`` metric for its command and a ``file-size`` metric per file found
inside the job's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.api.reports import Report
from tests.harness import Deployment, output_json

pytestmark = pytest.mark.engine_independent


def metrics(report: Report) -> dict[tuple[str, str], float]:
    (iteration,) = report.results
    return {
        (benchmark.benchmark.name, measure.measure.slug): measure.metric.value
        for benchmark in iteration
        for measure in benchmark.measures
    }


def test_a_job_with_build_time_and_file_size_reports_both_metrics(
    deployment: Deployment, tmp_path: Path
) -> None:
    secret = tmp_path / "config.toml"
    secret.write_text('token = "admin-token-secret"\n')
    deployment.runner_process("r1").start()
    # bench.links writes result.json ({}) and links files from outside in: only its own counts.
    job_uuid = deployment.submit(
        "bench.links",
        {"secret": str(secret)},
        file_paths=["result.json", "linked", "missing.bin"],
        build_time=True,
        file_size=True,
    )
    job = deployment.wait_status(job_uuid, "processed")
    (result,) = output_json(job)["results"]
    assert result["file_sizes"] == {"result.json": 2}
    assert "[benchrunner: file_path 'linked' refused: " in result["stderr"]
    assert "[benchrunner: file_path 'missing.bin' not found]" in result["stderr"]
    ((command, seconds),) = result["build_time"].items()
    assert command.startswith("python3 -c ")
    with deployment.admin() as client:
        report = client.get_report(deployment.project, job.report)
    found = metrics(report)
    assert set(found) == {(command, "build-time"), ("result.json", "file-size")}
    assert found[("result.json", "file-size")] == 2
    assert found[(command, "build-time")] == round(seconds, 2)
