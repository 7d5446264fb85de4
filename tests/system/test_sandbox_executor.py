"""The sandbox executor with real runc, mounts and cgroups, on the busybox test image.

The image is served by a loopback registry (``tests/oci_registry.py``); the pull from the
server's own registry is covered by ``test_sandbox_jobs.py``. Needs root and runc.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import queue
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchrunner.protocol import (
    Canceled,
    Failed,
    IterationResult,
    JsonClaimedJob,
    JsonJobConfig,
    JsonSpec,
)
from benchrunner.runner.agent import IN_FLIGHT_DIR, Agent, RunnerOptions
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.events import AgentEvent, JobFinished, JobStarted
from benchrunner.runner.executors import ExecutorError
from benchrunner.runner.executors.sandbox import SandboxExecutor, SandboxJob
from benchrunner.runner.job import CancelReason, JobRun
from benchrunner.runner.spool import Spool
from tests.harness import REPO, wait_until
from tests.oci_layout import Image, TarEntry, busybox_image, gzip_bytes, tar_bytes, write_layout
from tests.oci_registry import REPOSITORY, TOKEN, LocalRegistry, local_registry
from tests.thread_clock import ManualThreadClock

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("runc") is None, reason="needs root and runc"
    ),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a core for the job"),
]

MiB = 1024 * 1024
JOB_CGROUPS = Path("/sys/fs/cgroup/pids/benchrunner")  # cgroup v1, as on our machines
KILL_GRACE = 2.0


@pytest.fixture(scope="module")
def registry() -> Iterator[LocalRegistry]:
    with local_registry() as running:
        yield running


@pytest.fixture
def executor(tmp_path: Path, registry: LocalRegistry) -> Iterator[SandboxExecutor]:
    executor = SandboxExecutor(
        registry_url=lambda: registry.url,
        work_root=tmp_path / "sandbox",
        kill_grace=KILL_GRACE,
        max_output_bytes=64 * 1024,
        cores=CorePlan.detect(),
    )
    yield executor
    # Whatever the test did: no container, no mount, no job directory left.
    assert executor.runtime.containers() == []
    assert str(tmp_path) not in Path("/proc/self/mounts").read_text()
    assert list((tmp_path / "sandbox" / "jobs").iterdir()) == []
    # runc removes a container's cgroups with it: no process of a job can be left in one.
    assert list(JOB_CGROUPS.glob("benchrunner-*")) == []


class Jobs:
    """Builds claimed image jobs on images served by the registry."""

    def __init__(self, tmp_path: Path, registry: LocalRegistry) -> None:
        self._tmp = tmp_path
        self._registry = registry

    def claimed(
        self,
        image: Image | None = None,
        *,
        cpu: int = 1,
        memory: int = 256 * MiB,
        disk: int = 64 * MiB,
        network: bool = False,
        timeout: int = 60,
        **config: Any,
    ) -> JsonClaimedJob:
        layout = write_layout(self._tmp / f"layout-{uuid.uuid4()}", [image or busybox_image()])
        self._registry.serve(layout)
        now = dt.datetime.now(dt.UTC)
        spec = JsonSpec(
            uuid=uuid.uuid4(),
            name="sandbox",
            slug="sandbox",
            architecture="x86_64",
            cpu=cpu,
            memory=memory,
            disk=disk,
            network=network,
            created=now,
            modified=now,
        )
        job_config = JsonJobConfig(
            timeout=timeout, project=uuid.UUID(REPOSITORY), digest=layout.digest, **config
        )
        return JsonClaimedJob(
            uuid=uuid.uuid4(),
            spec=spec,
            config=job_config,
            oci_token=TOKEN,
            timeout=timeout,
            created=now,
            nonce="nonce",
        )


@pytest.fixture
def jobs(tmp_path: Path, registry: LocalRegistry) -> Jobs:
    return Jobs(tmp_path, registry)


def run(executor: SandboxExecutor, job: JsonClaimedJob, index: int = 0) -> IterationResult:
    prepared = executor.prepare(job)
    try:
        return prepared.run_iteration(index)
    finally:
        prepared.cleanup()


def shell(script: str, **config: Any) -> dict[str, Any]:
    return {"entrypoint": ["/bin/sh", "-c", script], **config}


def test_no_network_inside_without_spec_network(executor: SandboxExecutor, jobs: Jobs) -> None:
    with socket.create_server(("127.0.0.1", 0)) as host_server:
        port = host_server.getsockname()[1]
        # (busybox-static's wget crashes in its resolver: nc it is)
        script = f"ls /sys/class/net; echo x | nc -w 3 127.0.0.1 {port} || echo unreachable"
        result = run(executor, jobs.claimed(**shell(script)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "lo\nunreachable\n"


def test_spec_network_shares_the_host_network(executor: SandboxExecutor, jobs: Jobs) -> None:
    with socket.create_server(("127.0.0.1", 0)) as host_server:
        port = host_server.getsockname()[1]
        accepted: list[bool] = []
        thread = threading.Thread(
            target=lambda: accepted.append(bool(host_server.accept())), daemon=True
        )
        thread.start()
        script = f"echo x | nc -w 3 127.0.0.1 {port}; echo done"
        run(executor, jobs.claimed(network=True, **shell(script)))
        thread.join(5)
    assert accepted == [True]


def test_the_job_runs_on_its_dedicated_cores_only(executor: SandboxExecutor, jobs: Jobs) -> None:
    result = run(executor, jobs.claimed(**shell("grep Cpus_allowed_list /proc/self/status")))
    job_core = min(CorePlan.detect().job_cores)
    assert result.stdout == f"Cpus_allowed_list:\t{job_core}\n"


def test_a_spec_the_machine_cannot_honour_is_refused(executor: SandboxExecutor, jobs: Jobs) -> None:
    cores = len(os.sched_getaffinity(0))
    with pytest.raises(ExecutorError, match=f"asks for {cores} dedicated core"):
        executor.prepare(jobs.claimed(cpu=cores, **shell("true")))


def test_the_memory_limit_kills_an_allocator(executor: SandboxExecutor, jobs: Jobs) -> None:
    # dd reads /dev/zero into one buffer of bs bytes: every page of it is touched.
    allocate = ["dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"]
    result = run(executor, jobs.claimed(memory=64 * MiB, entrypoint=allocate))
    assert result.exit_code == 128 + 9
    assert "exit code 137: killed by SIGKILL" in (result.stderr or "")
    fits = run(executor, jobs.claimed(memory=256 * MiB, entrypoint=allocate))
    assert fits.exit_code == 0, fits.stderr


def test_the_disk_limit_stops_a_writer(executor: SandboxExecutor, jobs: Jobs) -> None:
    write = ["dd", "if=/dev/zero", "of=/tmp/fill", "bs=1M", "count=100"]
    result = run(executor, jobs.claimed(disk=32 * MiB, entrypoint=write))
    assert result.exit_code != 0
    assert "No space left on device" in (result.stderr or "")


def test_cancel_kills_the_container_even_if_it_ignores_sigterm(
    executor: SandboxExecutor, jobs: Jobs
) -> None:
    prepared = executor.prepare(jobs.claimed(**shell("trap '' TERM; sleep 600 & wait")))
    assert isinstance(prepared, SandboxJob)
    outcome: queue.SimpleQueue[IterationResult] = queue.SimpleQueue()
    thread = threading.Thread(target=lambda: outcome.put(prepared.run_iteration(0)), daemon=True)
    thread.start()
    try:
        wait_until(lambda: executor.runtime.containers(), timeout=30)
        started = time.monotonic()
        prepared.cancel()
        result = outcome.get(timeout=KILL_GRACE + 20)
        assert time.monotonic() - started >= KILL_GRACE * 0.9  # SIGTERM was ignored
        assert result.exit_code == 128 + 9
        assert executor.runtime.containers() == []
        assert prepared.run_iteration(1).exit_code is None  # nothing runs after a cancel
    finally:
        prepared.cleanup()


def test_the_kill_grace_runs_out_on_the_runners_clock(
    tmp_path: Path, registry: LocalRegistry, jobs: Jobs
) -> None:
    clock = ManualThreadClock(start=1000.0)
    executor = SandboxExecutor(
        registry_url=lambda: registry.url,
        work_root=tmp_path / "sandbox",
        kill_grace=10.0,
        max_output_bytes=64 * 1024,
        cores=CorePlan.detect(),
        clock=clock,
    )
    prepared = executor.prepare(jobs.claimed(**shell("trap '' TERM; sleep 600 & wait")))
    assert isinstance(prepared, SandboxJob)
    outcome: queue.SimpleQueue[IterationResult] = queue.SimpleQueue()
    thread = threading.Thread(target=lambda: outcome.put(prepared.run_iteration(0)), daemon=True)
    thread.start()
    try:
        wait_until(lambda: executor.runtime.containers(), timeout=30)
        prepared.cancel()
        wait_until(lambda: clock.waiting() == [1010.0], timeout=30, message="the grace's wait")
        clock.advance(9.0)
        wait_until(lambda: clock.waiting() == [1010.0], message="the grace waiting on")
        assert thread.is_alive()  # SIGTERM is ignored: no SIGKILL before 1010
        assert executor.runtime.containers() != []
        clock.advance(1.0)
        result = outcome.get(timeout=30)
        assert result.exit_code == 128 + 9
    finally:
        prepared.cleanup()
    assert executor.runtime.containers() == []


def test_a_cancel_before_the_runtime_created_the_container_still_stops_it(
    executor: SandboxExecutor, jobs: Jobs
) -> None:
    # The job handles SIGTERM: a lost SIGTERM would show as a SIGKILL after the grace.
    prepared = executor.prepare(jobs.claimed(**shell("trap 'exit 3' TERM; sleep 600 & wait")))
    assert isinstance(prepared, SandboxJob)
    outcome: queue.SimpleQueue[IterationResult] = queue.SimpleQueue()
    thread = threading.Thread(target=lambda: outcome.put(prepared.run_iteration(0)), daemon=True)
    thread.start()
    try:
        wait_until(lambda: prepared.container is not None, timeout=30, interval=0.001)
        prepared.cancel()  # runc is only starting: its first kill finds no container
        result = outcome.get(timeout=KILL_GRACE + 20)
        assert result.exit_code == 3, result.stderr
    finally:
        prepared.cleanup()


def test_a_cancel_during_the_pull_interrupts_it(
    executor: SandboxExecutor, jobs: Jobs, registry: LocalRegistry
) -> None:
    image = busybox_image()
    image.layers.append(gzip_bytes(tar_bytes([TarEntry("big", os.urandom(8 * MiB))])))
    job = jobs.claimed(image, **shell("true"))
    outcome: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()

    def prepare() -> None:
        try:
            executor.prepare(job).cleanup()
            outcome.put(None)
        except BaseException as exc:
            outcome.put(exc)

    registry.chunk_delay = 0.05  # 8 MiB at 64 KiB per 50 ms: about 6 s
    try:
        asked = len(registry.requests)
        threading.Thread(target=prepare, daemon=True).start()
        wait_until(lambda: any("/blobs/" in path for path in registry.requests[asked:]))
        started = time.monotonic()
        executor.interrupt_setup(job.uuid)
        error = outcome.get(timeout=30)
    finally:
        registry.chunk_delay = 0.0
    assert isinstance(error, ExecutorError)
    assert "pull interrupted" in str(error)
    assert time.monotonic() - started < 3.0
    assert list((executor.cache.root / "tmp").iterdir()) == []


def test_a_server_cancel_during_the_pull_cancels_the_job(
    executor: SandboxExecutor, jobs: Jobs, registry: LocalRegistry, tmp_path: Path
) -> None:
    image = busybox_image()
    image.layers.append(gzip_bytes(tar_bytes([TarEntry("big", os.urandom(8 * MiB))])))
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    job = jobs.claimed(image, **shell("true"))
    run_ = JobRun(
        job, executor=executor, spool=Spool(tmp_path / "spool"), post=events.put, cores=CorePlan()
    )
    registry.chunk_delay = 0.05
    try:
        asked = len(registry.requests)
        run_.start()
        wait_until(lambda: any("/blobs/" in path for path in registry.requests[asked:]))
        run_.cancel(CancelReason.SERVER)
        assert run_.join(10)
    finally:
        registry.chunk_delay = 0.0
    kinds = []
    while not events.empty():
        kinds.append(events.get_nowait())
    assert kinds[0] == JobStarted(job.uuid)  # running was reported before the pull
    assert isinstance(kinds[-1], JobFinished)
    assert kinds[-1].message == Canceled(job=job.uuid)


def test_a_spec_beyond_the_machine_memory_is_refused(executor: SandboxExecutor, jobs: Jobs) -> None:
    with pytest.raises(ExecutorError, match="bytes of memory; this machine has"):
        executor.prepare(jobs.claimed(memory=1 << 60, **shell("true")))


def test_timeout_fails_the_job_and_kills_the_container(
    executor: SandboxExecutor, jobs: Jobs, tmp_path: Path
) -> None:
    events: queue.SimpleQueue[AgentEvent] = queue.SimpleQueue()
    job = jobs.claimed(timeout=2, entrypoint=["sleep", "600"])
    run_ = JobRun(
        job, executor=executor, spool=Spool(tmp_path / "spool"), post=events.put, cores=CorePlan()
    )
    run_.start()
    assert run_.join(60)
    finished: list[JobFinished] = []
    while not events.empty():
        event = events.get_nowait()
        if isinstance(event, JobFinished):
            finished.append(event)
    message = finished[0].message
    assert isinstance(message, Failed)
    assert message.error == "job exceeded its timeout of 2 s"
    assert [result.exit_code for result in message.results] in ([128 + 15], [128 + 9])


def test_a_second_job_sees_nothing_of_the_first(executor: SandboxExecutor, jobs: Jobs) -> None:
    image = busybox_image()
    first = run(
        executor, jobs.claimed(image, **shell("echo secret > /tmp/left; echo >> /etc/passwd"))
    )
    assert first.exit_code == 0, first.stderr
    second = run(
        executor, jobs.claimed(image, **shell("test ! -e /tmp/left; grep -c '' /etc/passwd"))
    )
    assert second.exit_code == 0, second.stderr
    assert second.stdout == "2\n"


def test_image_env_workdir_and_user_are_honoured_and_job_env_added(
    executor: SandboxExecutor, jobs: Jobs
) -> None:
    image = busybox_image(
        {
            "Entrypoint": ["/bin/sh", "-c"],
            "Cmd": ['echo "$FROM_IMAGE $FROM_JOB"; pwd; id -u'],
            "Env": ["FROM_IMAGE=image", "FROM_JOB=image"],
            "WorkingDir": "/tmp",
            "User": "nobody",
        }
    )
    result = run(executor, jobs.claimed(image, env={"FROM_JOB": "job"}))
    assert result.stdout == "image job\n/tmp\n65534\n"


def test_job_cmd_overrides_the_image_cmd(executor: SandboxExecutor, jobs: Jobs) -> None:
    image = busybox_image({"Entrypoint": ["echo"], "Cmd": ["from image"]})
    assert run(executor, jobs.claimed(image)).stdout == "from image\n"
    assert run(executor, jobs.claimed(image, cmd=["from", "job"])).stdout == "from job\n"


def test_file_paths_are_read_from_inside_the_container(
    executor: SandboxExecutor, jobs: Jobs, tmp_path: Path
) -> None:
    host_file = tmp_path / "host-secret"
    host_file.write_text("host data")
    script = (
        "echo rel > out.json; echo abs > /tmp/abs.txt; ln -s /tmp/abs.txt /tmp/link; "
        f"ln -s {host_file} /tmp/escape; ln -s ../../../.. /tmp/up; mkfifo /tmp/pipe; "
        "ln /etc/passwd /tmp/passwd"
    )
    image = busybox_image({"WorkingDir": "/tmp"})
    paths = [
        "out.json",
        "/tmp/abs.txt",
        "link",
        "missing.txt",
        "/tmp/escape",
        "/proc/self/environ",
        "../../../etc/hostname",
        f"up{tmp_path}/host-secret",
        "pipe",
        "",
        "passwd",
    ]
    result = run(executor, jobs.claimed(image, file_paths=paths, **shell(script)))
    assert result.exit_code == 0, result.stderr
    assert result.output is not None
    assert result.output.pop("passwd").startswith("root:")  # a hard link is the image's own file
    assert result.output == {"out.json": "rel\n", "/tmp/abs.txt": "abs\n", "link": "abs\n"}
    # An absolute path or symlink resolves inside the container's root, where neither that
    # host path nor the container's /proc mount exists; one climbing above that root is refused.
    outside = "the container's root"
    assert result.stderr == "".join(
        f"[benchrunner: file_path {name!r} {reason}]\n"
        for name, reason in [
            ("missing.txt", "not found"),
            ("/tmp/escape", "not found"),
            ("/proc/self/environ", "not found"),
            ("../../../etc/hostname", f"refused: '..' on its path leaves {outside}"),
            (f"up{tmp_path}/host-secret", f"refused: '..' on its path leaves {outside}"),
            ("pipe", "refused: not a regular file"),
            ("", "refused: not a valid path"),
        ]
    )


# A stand-in for a sandbox runner: records in flight (and starts the guard, if asked), then runs
# one iteration of the job read from stdin, until it is killed.
RUNNER_STAND_IN = """
import sys
from pathlib import Path
from benchrunner.protocol import JsonClaimedJob
from benchrunner.runner.agent import IN_FLIGHT_DIR, Agent, RunnerOptions
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.sandbox import SandboxExecutor
from benchrunner.runner.guard import Guard
from benchrunner.runner.inflight import InFlight

registry, work_root, in_flight_dir, guard = sys.argv[1:]
job = JsonClaimedJob.model_validate_json(sys.stdin.read())
in_flight = InFlight(Path(in_flight_dir))
if guard == "guard":
    Guard(in_flight.directory)
executor = SandboxExecutor(
    registry_url=lambda: registry,
    work_root=Path(work_root),
    cores=CorePlan.detect(),
    in_flight=in_flight,
)
executor.prepare(job).run_iteration(0)
"""


def kill_a_runner_mid_job(
    executor: SandboxExecutor, jobs: Jobs, registry: LocalRegistry, tmp_path: Path, guard: bool
) -> str:
    """Start a stand-in runner on ``executor``'s work directory, SIGKILL it once its job's
    container runs; returns the container's id."""
    job = jobs.claimed(entrypoint=["sleep", "600"])
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUNNER_STAND_IN,
            registry.url,
            str(tmp_path / "sandbox"),
            str(tmp_path / "spool" / IN_FLIGHT_DIR),
            "guard" if guard else "-",
        ],
        stdin=subprocess.PIPE,
        cwd=REPO,
    )
    try:
        assert runner.stdin is not None
        runner.stdin.write(job.model_dump_json().encode())
        runner.stdin.close()
        wait_until(executor.runtime.containers, timeout=60, message="the job's container")
    finally:
        runner.kill()
        runner.wait(30)
    return f"benchrunner-{job.uuid}-0"


def test_a_container_dies_with_its_runner(
    executor: SandboxExecutor, jobs: Jobs, registry: LocalRegistry, tmp_path: Path
) -> None:
    kill_a_runner_mid_job(executor, jobs, registry, tmp_path, guard=True)
    in_flight = tmp_path / "spool" / IN_FLIGHT_DIR

    def removed() -> bool:
        return executor.runtime.containers() == [] and list(in_flight.iterdir()) == []

    try:
        wait_until(removed, timeout=30, message="the guard to remove the container")
    finally:
        # The next start removes the mounts the job left (checked by the fixture).
        SandboxExecutor(registry_url=lambda: registry.url, work_root=tmp_path / "sandbox")


def test_a_container_left_running_is_removed_at_the_next_start(
    executor: SandboxExecutor,
    jobs: Jobs,
    registry: LocalRegistry,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    container = kill_a_runner_mid_job(executor, jobs, registry, tmp_path, guard=False)
    assert executor.runtime.containers() == [container]  # nothing stopped it (no guard)
    options = RunnerOptions(
        host="http://127.0.0.1:9",
        runner="r1",
        key="bencher_runner_" + "0" * 64,
        templates=None,
        executor="sandbox",
        spool=tmp_path / "spool",
        sandbox_dir=tmp_path / "sandbox",
    )
    caplog.set_level(logging.WARNING)
    Agent(options)  # a start, up to the first claim
    assert executor.runtime.containers() == []
    assert f"removed container {container} left by job" in caplog.text


def test_a_hostile_image_is_a_clear_job_error(executor: SandboxExecutor, jobs: Jobs) -> None:
    hostile = gzip_bytes(tar_bytes([TarEntry("../../escape", b"x")]))
    image = busybox_image()
    image.layers.append(hostile)
    with pytest.raises(ExecutorError, match=r"'\.\.' in '\.\./\.\./escape' could escape the root"):
        executor.prepare(jobs.claimed(image, **shell("true")))


def test_template_jobs_are_refused(executor: SandboxExecutor, jobs: Jobs) -> None:
    job = jobs.claimed(**shell("true"))
    template_job = job.model_copy(
        update={"config": JsonJobConfig(timeout=10, template="bench.noop", args={})}
    )
    with pytest.raises(ExecutorError, match="runs image jobs only"):
        executor.prepare(template_job)


def test_a_containers_output_reaches_the_live_log_as_it_is_written(
    executor: SandboxExecutor, jobs: Jobs
) -> None:
    """The live log (``runner/log_stream.py``) gets each piece of a sandboxed job's output when
    the container writes it, not when it ends: the same path as the process executor's."""
    received: list[tuple[float, str, bytes]] = []
    prepared = executor.prepare(jobs.claimed(**shell("echo first; sleep 2; echo second >&2")))
    prepared.on_output = lambda stream, data: received.append((time.monotonic(), stream, data))
    try:
        result = prepared.run_iteration(0)
    finally:
        prepared.cleanup()
    assert result.exit_code == 0, result.stderr
    assert [(stream, data) for _, stream, data in received] == [
        ("stdout", b"first\n"),
        ("stderr", b"second\n"),
    ]
    assert received[1][0] - received[0][0] >= 1.5, "the first line came as it was written"


def test_build_time_and_file_size_are_taken_inside_the_container(
    executor: SandboxExecutor, jobs: Jobs, tmp_path: Path
) -> None:
    # Bencher's --build-time/--file-size for an image job: the command's wall time, the sizes
    # of the files it built (not their contents), resolved inside the container's root.
    (tmp_path / "host-file").write_bytes(b"h" * 99)
    script = f"head -c 4321 /dev/zero > app.bin; sleep 0.2; ln -s ../../../..{tmp_path} /tmp/up"
    image = busybox_image({"WorkingDir": "/tmp"})
    paths = ["app.bin", "missing.bin", "up/host-file"]
    config = shell(script, file_paths=paths, build_time=True, file_size=True)
    result = run(executor, jobs.claimed(image, **config))
    assert result.exit_code == 0, result.stderr
    assert (result.output, result.file_sizes) == (None, {"app.bin": 4321})
    assert result.build_time is not None
    ((command, seconds),) = result.build_time.items()
    assert command == shlex.join(["/bin/sh", "-c", script])
    assert 0.2 <= seconds < 60
    stderr = result.stderr or ""
    assert "[benchrunner: file_path 'missing.bin' not found]\n" in stderr
    assert "[benchrunner: file_path 'up/host-file' refused: " in stderr
