"""The pickup trace (``runner/pickup_trace.py``) of a runner process started with it: one line
per job, with the steps stamped on the way to its first process and none after."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

SCRIPT = """
import uuid
from benchrunner.runner import pickup_trace

first, second = uuid.UUID(int=1), uuid.UUID(int=2)
pickup_trace.job_received(first, 100)
pickup_trace.step("slot")
pickup_trace.job_started(first, 200)
pickup_trace.step("late")  # a later iteration's: no job waits for its first process
pickup_trace.job_started(first, 300)  # a later process of the same job: no line
pickup_trace.job_received(second, 400)
pickup_trace.job_started(second, 500)
"""


def test_each_job_gets_one_line_with_its_own_steps(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    env = {**os.environ, "BENCHRUNNER_PICKUP_TRACE": str(trace)}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=60)
    first, second = (line.split() for line in trace.read_text().splitlines())
    assert first[:3] == [uuid_of(1), "100", "200"]
    assert [step.partition("=")[0] for step in first[3:]] == ["parsed", "slot"]
    stamps = [int(step.partition("=")[2]) for step in first[3:]]
    assert stamps == sorted(stamps)
    assert second[:3] == [uuid_of(2), "400", "500"]
    assert [step.partition("=")[0] for step in second[3:]] == ["parsed"]


def test_without_the_variable_nothing_is_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BENCHRUNNER_PICKUP_TRACE"}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=60, cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


def uuid_of(number: int) -> str:
    return str(uuid.UUID(int=number))
