"""``run`` and ``report`` against a canned HTTP API on loopback: bodies sent, output, exit codes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchrunner.cli.main import app
from tests.unit.report_samples import with_thresholds, without_thresholds


@dataclass
class FakeApi:
    """Answers ``POST /v0/run`` and report and job reads with ``report``; keeps what it got."""

    url: str
    report: dict[str, Any] = field(default_factory=with_thresholds)
    job: str | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    read: dict[str, Any] | None = None
    """The report a read answers, when it is not (yet) ``report``."""
    unanswered_reads: int = 0
    """How many report reads are answered ``503`` first."""

    def answer(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        self.paths.append(f"{method} {path}")
        if method == "POST" and path == "/v0/run":
            assert body is not None
            self.bodies.append(body)
            return 201, {**self.report, **({"job": self.job} if self.job else {})}
        if path == f"/v0/projects/demo/reports/{self.report['uuid']}":
            if self.unanswered_reads:
                self.unanswered_reads -= 1
                return 503, {"message": "database unavailable", "request_id": "x"}
            return 200, self.report if self.read is None else self.read
        if self.job and path == f"/v0/projects/demo/jobs/{self.job}":
            return 200, {
                "uuid": self.job,
                "status": "processed",
                "report": self.report["uuid"],
                "project": "demo",
                "config": {"timeout": 60, "template": "bench.sleep"},
                "created": "2026-01-01T00:00:00Z",
                "modified": "2026-01-01T00:00:00Z",
            }
        return 404, {"message": f"no route {method} {path}", "request_id": "x"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeApi]:
    for name in ("BENCHRUNNER_HOST", "BENCHRUNNER_TOKEN", "BENCHRUNNER_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("BENCHRUNNER_CONFIG", str(tmp_path / "config.toml"))
    fake: FakeApi

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, answer = fake.answer(method, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._reply("GET")

        def do_POST(self) -> None:
            self._reply("POST")

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeApi(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def invoke(api: FakeApi, *argv: str) -> Any:
    return CliRunner().invoke(app, [*argv, "--host", api.url, "--project", "demo"])


RESULTS = '{"parse": {"latency": {"value": 980}}}'
THRESHOLD = (
    "--threshold-measure",
    "latency",
    "--threshold-test",
    "percentage",
    "--threshold-upper-boundary",
    "0.1",
)


def test_run_sends_the_threshold_and_err_fails_on_the_alert(api: FakeApi) -> None:
    result = invoke(api, "run", "--results", RESULTS, *THRESHOLD, "--err")
    assert result.exit_code == 1, result.output
    assert api.bodies[0]["thresholds"] == {
        "models": {"latency": {"test": "percentage", "upper_boundary": 0.1}}
    }
    assert api.bodies[0]["settings"] == {"adapter": "magic"}
    assert not any("testbed" in key for key in api.bodies[0]["context"])
    assert "branch" not in api.bodies[0] and "testbed" not in api.bodies[0]
    assert "🚨 upper" in result.stdout
    assert result.stderr.startswith("error: 1 alert detected in report r-1 (--err)")


@pytest.mark.parametrize(
    ("report", "err", "code"),
    [
        (with_thresholds(), False, 0),
        (without_thresholds(), True, 0),
        ({**with_thresholds(), "alerts": []}, True, 0),
        ({**without_thresholds(), "error": "adapter json: not JSON"}, False, 1),
    ],
)
def test_run_exit_codes(api: FakeApi, report: dict[str, Any], err: bool, code: int) -> None:
    api.report = report
    result = invoke(api, "run", "--results", RESULTS, *(["--err"] if err else []))
    assert result.exit_code == code, result.output


def test_run_waits_for_a_pending_judgment_and_err_fails_on_its_alert(api: FakeApi) -> None:
    """docs/decisions/processing.md: a direct run answered ``"judgment": "pending"`` is read
    again until judged, and ``--err`` applies to the judged report's alerts."""
    api.read = with_thresholds()
    api.report = {**with_thresholds(), "alerts": [], "judgment": "pending"}
    result = invoke(api, "run", "--results", RESULTS, "--err")
    assert result.exit_code == 1, result.output
    assert "GET /v0/projects/demo/reports/r-1" in api.paths
    assert result.stderr.startswith("error: 1 alert detected in report r-1 (--err)")


def test_run_waiting_for_a_judgment_reads_again_after_the_server_failed_to_answer(
    api: FakeApi,
) -> None:
    """The run is stored: a read of its pending report the server does not answer (``503``) is
    tried again, not the step failed for it."""
    api.read = with_thresholds()
    api.unanswered_reads = 2
    api.report = {**with_thresholds(), "alerts": [], "judgment": "pending"}
    result = invoke(api, "run", "--results", RESULTS, "--err")
    assert result.exit_code == 1, result.output
    assert api.paths.count("GET /v0/projects/demo/reports/r-1") == 3
    assert result.stderr.startswith("error: 1 alert detected in report r-1 (--err)")


@pytest.mark.parametrize(("err", "code"), [(True, 1), (False, 0)])
def test_run_with_a_judgment_still_pending_fails_err_or_warns(
    api: FakeApi, err: bool, code: int
) -> None:
    api.report = {**with_thresholds(), "alerts": [], "judgment": "pending"}
    argv = ("run", "--results", RESULTS, "--wait-timeout", "1", *(["--err"] if err else []))
    result = invoke(api, *argv)
    assert result.exit_code == code, result.output
    assert "judgment of report r-1 has not finished" in result.stderr
    assert result.stderr.startswith("error:" if err else "warning:")


def test_run_json_prints_the_raw_report_and_still_fails_on_err(api: FakeApi) -> None:
    result = invoke(api, "run", "--results", RESULTS, "--json", "--err")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == api.report


def test_run_wait_fails_on_the_alert_of_a_job(api: FakeApi) -> None:
    api.job = "j-1"
    argv = ("run", "--spec", "s", "--template", "t", "--wait", "--err")
    failed = invoke(api, *argv)
    assert failed.exit_code == 1, failed.output
    assert "error: 1 alert detected in report r-1" in failed.stderr
    assert "GET /v0/projects/demo/jobs/j-1" in api.paths
    passed = invoke(api, *argv[:-1])
    assert passed.exit_code == 0, passed.output


def test_run_wait_fails_on_a_report_error(api: FakeApi) -> None:
    api.job = "j-1"
    api.report = {**without_thresholds(), "error": "adapter 'go_bench' found no results"}
    result = invoke(api, "run", "--spec", "s", "--template", "t", "--wait")
    assert result.exit_code == 1
    assert "has an error: adapter 'go_bench' found no results" in result.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--spec", "s", "--template", "t", "--err"), "--err needs --wait"),
        (("--results", RESULTS, "--threshold-test", "t_test"), "--threshold-test is given"),
        (("--results", RESULTS, "--threshold-measure", "latency"), "has no test"),
        (("--results", RESULTS, "--adapter", "cobol"), "--adapter 'cobol'"),
        (("--results", RESULTS, "--average", "mode"), "--average"),
        (("--results", RESULTS, "--start-point-reset", "--hash", "HEAD"), "--hash 'HEAD'"),
    ],
)
def test_usage_errors_send_nothing(api: FakeApi, argv: tuple[str, ...], message: str) -> None:
    result = invoke(api, "run", *argv)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.replace("│", " ").split())
    assert api.bodies == []


def test_report_show(api: FakeApi) -> None:
    shown = invoke(api, "report", "show", "r-1")
    assert shown.exit_code == 0, shown.output
    assert "1,250.5 ns" in shown.stdout
    raw = invoke(api, "report", "show", "r-1", "--json")
    assert json.loads(raw.stdout) == api.report


def test_report_comment_goes_to_stdout_and_the_step_summary(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke(api, "report", "comment", "r-1", "--only-alerts")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("### Benchmarks: project `Demo`")
    assert result.stdout.endswith("🚨 **1 alert**\n")
    assert summary.read_text() == "# earlier step\n" + result.stdout


def test_only_alerts_prints_nothing_without_an_alert(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.report = without_thresholds()
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for flag in ("--only-alerts", "--ci-only-on-alert"):
        quiet = invoke(api, "report", "comment", "r-2", flag)
        assert (quiet.exit_code, quiet.stdout) == (0, "")
    assert not summary.exists()
    loud = invoke(api, "report", "comment", "r-2")
    assert loud.stdout.endswith("**0 alerts**\n")
    assert summary.read_text() == loud.stdout


def test_no_context_sends_none(api: FakeApi) -> None:
    result = invoke(api, "run", "--results", RESULTS, "--no-context", "--testbed", "ci")
    assert result.exit_code == 0, result.output
    assert "context" not in api.bodies[0]
    assert api.bodies[0]["testbed"] == "ci"
