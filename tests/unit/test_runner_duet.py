"""A duet job on the runner with the real ``process`` executor: both sides prepared, run in
the seeded order with each result tagged, and nothing left behind when a side is refused."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from benchrunner.core.duet_order import run_sequence
from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import JsonClaimedJob
from benchrunner.runner import duet
from benchrunner.runner.executors import ExecutorError, ProcessExecutor
from tests.unit.claimed_jobs import claimed_job

TEMPLATES = TemplateRegistry.parse(
    {
        "templates": {
            "echo": {
                "command": [sys.executable, "-c", "import sys; print(sys.argv[1])", "{n}"],
                "args": {"n": {"type": "int", "min": 1, "max": 10}},
            }
        }
    }
)


def duet_job(baseline: int, contender: int, rounds: int = 4, seed: int = 9) -> JsonClaimedJob:
    config: dict[str, Any] = {
        "timeout": 60,
        "iter": rounds,
        "template": "echo",
        "args": {"n": baseline},
        "duet": {
            "baseline": {"args": {"n": baseline}},
            "contender": {"args": {"n": contender}},
            "seed": seed,
        },
    }
    return claimed_job(config)


def test_both_sides_run_in_the_seeded_order_and_are_tagged(tmp_path: Path) -> None:
    job = duet_job(1, 2)
    executor = ProcessExecutor(TEMPLATES, workdir_root=tmp_path)
    prepared = duet.prepare(executor, job)
    try:
        assert duet.iterations(job) == 8
        results = [prepared.run_iteration(i) for i in range(duet.iterations(job))]
    finally:
        prepared.cleanup()
    assert [(r.round, r.side) for r in results] == run_sequence(9, 4)
    assert [r.stdout for r in results] == [
        "1\n" if side == "baseline" else "2\n" for _, side in run_sequence(9, 4)
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_refused_contender_leaves_nothing_of_the_baseline(tmp_path: Path) -> None:
    executor = ProcessExecutor(TEMPLATES, workdir_root=tmp_path)
    with pytest.raises(ExecutorError, match="must be <= 10"):
        duet.prepare(executor, duet_job(1, 11))
    assert list(tmp_path.iterdir()) == []


def test_a_plain_job_is_the_executors_own() -> None:
    job = claimed_job({"timeout": 60, "iter": 3, "template": "echo", "args": {"n": 1}})
    assert duet.iterations(job) == 3
    prepared = duet.prepare(ProcessExecutor(TEMPLATES), job)
    try:
        assert not isinstance(prepared, duet.DuetJob)
    finally:
        prepared.cleanup()
