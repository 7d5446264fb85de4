"""The noise guard stays off a job's way: the runner calibrates while it waits for work, and a
job that arrives starts its process with no calibration in between (docs/results.md measures that
pickup). A real server and a real agent, whose calibration rounds are timestamped on the wall
clock the job's own process prints at its start (``bench.clock``)."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from pathlib import Path

from benchrunner.runner.agent import Agent
from benchrunner.runner.calibration_child import fixed_work
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.noise_guard import ROUNDS, NoiseProbe
from benchrunner.runner.options import RunnerOptions
from tests.harness import deploy, output_json, wait_until


def test_the_before_is_taken_while_idle_and_the_job_starts_without_a_calibration(
    tmp_path: Path,
) -> None:
    rounds: list[int] = []  # wall-clock ns at the end of each round (and warm-up)

    def work() -> None:
        fixed_work()
        rounds.append(time.time_ns())

    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        slug, key = deployment.new_runner("idle-calibration")
        options = RunnerOptions(
            host=deployment.server.url,
            runner=slug,
            key=key,
            templates=deployment.server.templates,
            spool=tmp_path / "spool",
            poll_timeout=30,
            noise_max_age=3600.0,  # no refresh while waiting: the test reads one idle "before"
        )
        probe = dataclasses.replace(NoiseProbe(), work=work)
        agent = Agent(options, noise_probe=probe)
        exit_codes: list[int] = []
        thread = threading.Thread(target=lambda: exit_codes.append(agent.run()), daemon=True)
        thread.start()
        try:
            # Idle, before any job: one calibration (warm-up and ROUNDS rounds), then `ready`.
            wait_until(lambda: len(rounds) > ROUNDS, timeout=30, message="an idle calibration")
            idle_rounds = len(rounds)
            submitted_ns = time.time_ns()
            job_uuid = deployment.submit("bench.clock")
            job = deployment.wait_status(job_uuid, "processed", timeout=60)
        finally:
            agent.request_drain()
            thread.join(30)
        assert exit_codes == [0]

    started_ns = json.loads(output_json(job)["results"][0]["stdout"])["clock"]["started_ns"][
        "value"
    ]
    assert submitted_ns < started_ns
    # Between the job's submission and its process's start, no round ran...
    assert not [r for r in rounds if submitted_ns < r < started_ns]
    # ... the idle one had ended before, and the one after the job came after it.
    assert idle_rounds == ROUNDS + 1 and rounds[idle_rounds - 1] < submitted_ns  # + the warm-up
    after = [r for r in rounds if r > started_ns]
    assert len(after) >= ROUNDS + 1
    noise = output_json(job)["noise"]
    assert noise["before"]["rounds"] == noise["after"]["rounds"] == ROUNDS
    assert noise["before_age_ms"] >= (submitted_ns - rounds[idle_rounds - 1]) / 1e6


def test_under_a_cpuset_partition_a_process_in_it_calibrates_the_job_cores(
    tmp_path: Path,
) -> None:
    # The partition of `runner up --tune` keeps the runner's threads off the job cores: the
    # calibrations before and after the job run in processes moved into the partition.
    rounds: list[int] = []
    procs = tmp_path / "cgroup.procs"  # a FIFO stands in for the partition's: one pid a write
    os.mkfifo(procs)
    admitted: list[str] = []
    reader = threading.Thread(target=_read_each_write, args=(procs, admitted), daemon=True)
    reader.start()
    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        slug, key = deployment.new_runner("partitioned")
        options = RunnerOptions(
            host=deployment.server.url,
            runner=slug,
            key=key,
            templates=deployment.server.templates,
            spool=tmp_path / "spool",
            poll_timeout=30,
            cores=dataclasses.replace(CorePlan.detect(), job_cgroup=procs),
        )
        probe = dataclasses.replace(NoiseProbe(), work=lambda: rounds.append(1))
        agent = Agent(options, noise_probe=probe)
        exit_codes: list[int] = []
        thread = threading.Thread(target=lambda: exit_codes.append(agent.run()), daemon=True)
        thread.start()
        try:
            job = deployment.wait_status(deployment.submit("bench.clock"), "processed", timeout=60)
        finally:
            agent.request_drain()
            thread.join(30)
        assert exit_codes == [0]
    noise = output_json(job)["noise"]
    assert noise["before"]["rounds"] == noise["after"]["rounds"] == ROUNDS
    assert noise["before"]["median_ns"] > 0 and noise["drift"] is not None
    assert rounds == [], "a round ran on the runner's own thread"
    with procs.open("w") as fifo:
        fifo.write(_END)
    reader.join(10)
    # The idle calibration's process, the job's, and the calibration's after it.
    assert len(admitted) >= 3 and len(set(admitted)) == len(admitted), admitted
    assert all(pid.isdigit() for pid in admitted), admitted


_END = "end"


def _read_each_write(fifo: Path, admitted: list[str]) -> None:
    """Collect what each opening of ``fifo`` for writing wrote, until ``_END``."""
    while True:
        with fifo.open() as one_writer:
            written = one_writer.read()
        if written == _END:
            return
        admitted.append(written)
