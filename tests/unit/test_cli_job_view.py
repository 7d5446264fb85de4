"""``job show`` prints what each iteration wrote, not its size."""

from __future__ import annotations

import pytest

from benchrunner.api.jobs import Job
from benchrunner.cli.views import print_job


def test_job_show_prints_each_iterations_output(capsys: pytest.CaptureFixture[str]) -> None:
    job = Job.model_validate(
        {
            "uuid": "j-1",
            "report": "r-1",
            "project": "p-1",
            "created": "2026-01-01T00:00:00Z",
            "modified": "2026-01-01T00:00:00Z",
            "status": "processed",
            "spec": {
                "uuid": "s-1",
                "name": "local",
                "slug": "local",
                "architecture": "x86_64",
                "cpu": 2,
                "memory": 1 << 30,
                "disk": 1 << 30,
            },
            "config": {"timeout": 60, "template": "bench.sleep", "args": {"ms": 20}},
            "events": [],
            "output": {
                "results": [
                    {"exit_code": 0, "stdout": '{"sleep": {"latency": {"value": 20}}}\n'},
                    {
                        "exit_code": 3,
                        "stdout": "",
                        "stderr": "boom\n",
                        "output": {"out.json": "{}"},
                    },
                ],
                "error": "iteration 1 exited 3",
            },
        }
    )
    print_job(job)
    printed = capsys.readouterr().out
    assert "bytes" not in printed
    assert "bench.sleep ms=20" in printed
    assert '{"sleep": {"latency": {"value": 20}}}' in printed
    assert "==> iteration 0 stdout (exit code 0) <==" in printed
    assert "==> iteration 1 stderr (exit code 3) <==\nboom" in printed
    assert "==> iteration 1 file out.json <==" in printed
    assert printed.rstrip().endswith("error: iteration 1 exited 3")
