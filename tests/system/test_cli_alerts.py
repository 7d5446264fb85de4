"""The CI path through the real CLI and a real server: thresholds sent by ``run``, ``--err`` on a
regression, ``report comment`` with the alert, ``$GITHUB_STEP_SUMMARY``, and a runner job whose
output no adapter can read failing ``run --wait``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Deployment, cli

pytestmark = pytest.mark.engine_independent


def cli_env(deployment: Deployment, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "BENCHRUNNER_HOST": deployment.server.url,
        "BENCHRUNNER_TOKEN": deployment.server.token,
        "BENCHRUNNER_PROJECT": deployment.project,
        "BENCHRUNNER_CONFIG": str(tmp_path / "no-config.toml"),
        **extra,
    }


THRESHOLD = (
    "--threshold-measure",
    "latency",
    "--threshold-test",
    "percentage",
    "--threshold-upper-boundary",
    "0.1",
)


def submit(env: dict[str, str], tmp_path: Path, value: float, *, check: bool = True) -> Any:
    results = tmp_path / f"results-{value}.json"
    results.write_text(json.dumps({"sort": {"latency": {"value": value}}}))
    return cli(
        "run",
        "--branch",
        "feature",
        "--testbed",
        "ci",
        "--adapter",
        "json",
        "--results",
        str(results),
        *THRESHOLD,
        "--err",
        "--json",
        env=env,
        check=check,
    )


def test_err_the_comment_and_the_step_summary_catch_a_regression_and_a_bad_job(
    deployment: Deployment, tmp_path: Path
) -> None:
    """Steady history, then a regression: ``--err`` exits 1 and the comment shows the alert.
    Then a runner job whose output the adapter cannot read: ``run --wait`` exits 1."""
    summary = tmp_path / "step-summary.md"
    env = cli_env(deployment, tmp_path, GITHUB_STEP_SUMMARY=str(summary))
    history = [json.loads(submit(env, tmp_path, value).stdout) for value in (100.0, 102.0, 98.0)]
    assert [report["alerts"] for report in history] == [[], [], []]  # steady: no alert
    first, second = (report["results"][0][0]["measures"][0] for report in history[:2])
    # no history yet: as Bencher v0.6.12, a boundary with a null baseline and null limits
    assert first["boundary"] == {"baseline": None, "lower_limit": None, "upper_limit": None}
    assert first["threshold"]["model"]["test"] == "percentage"
    assert second["boundary"] == {"baseline": 100.0, "lower_limit": None, "upper_limit": 110.0}
    steady = history[-1]

    regressed = submit(env, tmp_path, 150.0, check=False)
    assert regressed.returncode == 1, regressed.stderr
    assert "1 alert detected" in regressed.stderr
    report = json.loads(regressed.stdout)
    (entry,) = report["results"][0][0]["measures"]
    assert entry["threshold"]["model"]["test"] == "percentage"
    assert entry["boundary"]["upper_limit"] > entry["boundary"]["baseline"]
    (alert,) = report["alerts"]
    assert (alert["limit"], alert["status"]) == ("upper", "active")

    table = cli("report", "show", report["uuid"], env=env, check=False)
    assert table.returncode == 0, table.stderr
    assert "🚨 upper" in table.stdout
    assert "1 alert:" in table.stdout

    comment = cli("report", "comment", report["uuid"], "--only-alerts", env=env)
    assert comment.stdout.startswith("### Benchmarks: project ")
    assert "branch `feature`, testbed `ci`" in comment.stdout
    assert "| `sort` | `Latency` | 150 ns | 100 ns | +50.00% | — | 110 ns | 🚨 upper |" in (
        comment.stdout
    ), comment.stdout
    assert comment.stdout.endswith("🚨 **1 alert**\n")
    assert summary.read_text() == comment.stdout

    quiet = cli("report", "comment", steady["uuid"], "--only-alerts", env=env)
    assert quiet.stdout == ""
    assert summary.read_text() == comment.stdout

    # One server for both halves: a server start costs more than the checks.
    deployment.runner_process("r1").start()
    result = cli(
        "run",
        "--spec",
        deployment.spec,
        "--template",
        "bench.garbage",
        "--adapter",
        "json",
        "--wait",
        "--wait-timeout",
        "60",
        env=env,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "job " in result.stdout and ": processed" in result.stdout
    assert "has an error" in result.stderr
