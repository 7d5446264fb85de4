"""The ``sandbox`` executor: an image job run by an OCI runtime (runc) in its own namespaces.

    prepare: cores for spec.cpu -> pull by digest (job's token) -> cached rootfs -> overlay with
             a writable layer of spec.disk bytes -> image config resolved (args, env, cwd, user)
    each iteration: container recorded in flight -> config.json written -> ``runc run`` in the
             foreground (killed with the runner), its output captured -> ``runc delete`` ->
             file_paths read from inside the container's root filesystem
    cancel during setup: the pull stops at its next chunk (``interrupt_setup``)
    cancel/timeout: ``runc kill TERM``, ``KILL`` after the kill grace
    cleanup: container deleted, overlay and writable layer unmounted and removed

``file_paths`` are resolved inside the container's root filesystem as the container sees it
(``runner/confined.py``): relative to the working directory, absolute paths and symlinks from
its root; a ``..`` or symlink climbing above that root, or anything but a regular file, is
refused with a note on stderr, and the other files are still collected. The files are read once
the container has ended (no process can change them any more), from the host's side, where the
container's own mounts (``/proc``, ``/sys``, ``/dev``) do not exist; a hard link can only name
another file of the container's own filesystems.
With the job's ``file_size`` they are sized instead of read, the same way, and with
``build_time`` each iteration's wall time is reported (``executors/files.py``).

A runner killed while a container runs: its guard removes the container at once, and the next
start removes whatever is recorded in flight or listed under the runtime's state directory.

Template jobs are refused here: a runner that should run both kinds runs one agent per executor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.protocol import IterationResult, JsonClaimedJob
from benchrunner.runner.confined import ConfinedPathError, Confinement, file_size, read_file
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.base import Executor, ExecutorError, PreparedJob
from benchrunner.runner.executors.bundle import (
    BundleError,
    Limits,
    Process,
    process_args,
    process_env,
    resolve_user,
    runtime_config,
    working_dir,
)
from benchrunner.runner.executors.capture import (
    PipeReader,
    bounded_text,
    close_pipes,
    require_pidfd,
    with_notes,
)
from benchrunner.runner.executors.files import command_time, each_file
from benchrunner.runner.executors.group import start_leader
from benchrunner.runner.executors.runtime import OciRuntime, OciRuntimeError
from benchrunner.runner.executors.scratch import JobRootfs, ScratchError
from benchrunner.runner.executors.spawn import Leader
from benchrunner.runner.inflight import JOB_VARIABLE, InFlight
from benchrunner.runner.oci.cache import CacheError, ImageCache
from benchrunner.runner.oci.pull import ImageConfig, PullError, Registry, pull_image

log = logging.getLogger(__name__)

DEFAULT_PIDS_LIMIT = 4096
_PASSWD_LIMIT = 1 << 20
_SIGNAL_RETRY = 0.1
_KILL_WAIT = 10.0


class SandboxExecutor(Executor):
    name = "sandbox"
    starts_before_setup = True  # a pull can take long: heartbeats must flow meanwhile

    def __init__(
        self,
        *,
        registry_url: Callable[[], str],
        work_root: Path,
        kill_grace: float = 10.0,
        max_output_bytes: int = 1_048_576,
        cores: CorePlan | None = None,
        runtime: str = "runc",
        pids_limit: int = DEFAULT_PIDS_LIMIT,
        in_flight: InFlight | None = None,
        clock: ThreadClock | None = None,
    ) -> None:
        """``registry_url``: gives the URL of the server the runner is connected to now (the job's
        token is sent nowhere else).
        ``work_root`` holds the image cache, the runtime state and the per-job directories.
        ``in_flight`` records each job's container (None: not recorded).
        ``clock``: the runner's, on which a stopped container's kill grace runs out.
        Raises ExecutorError if the runtime or the work directory is unusable, or where a
        child's exit cannot be watched (``require_pidfd``)."""
        require_pidfd()
        self._registry_url = registry_url
        self._in_flight = in_flight
        self._clock = clock or SystemThreadClock()
        self._kill_grace = kill_grace
        self._max_output_bytes = max_output_bytes
        self._cores = cores or CorePlan.detect()
        self._pids_limit = pids_limit
        self._jobs_root = work_root / "jobs"
        self._lock = threading.Lock()
        self._setups: dict[uuid.UUID, threading.Event] = {}
        try:
            self.cache = ImageCache(work_root / "images")
            self.runtime = OciRuntime(runtime, work_root / "runtime")
            self._jobs_root.mkdir(parents=True, exist_ok=True)
        except (CacheError, OciRuntimeError, OSError) as exc:
            raise ExecutorError(f"sandbox executor unavailable: {exc}") from None
        for leftover in self.runtime.containers():
            log.warning("removing container %s left by an earlier run", leftover)
            self.runtime.delete(leftover)
        for directory in self._jobs_root.iterdir():
            log.warning("removing job directory %s left by an earlier run", directory)
            JobRootfs.discard(directory)

    def prepare(self, job: JsonClaimedJob) -> SandboxJob:
        config, spec = job.config, job.spec
        if config.kind != "image" or config.digest is None or config.project is None:
            raise ExecutorError(
                "executor 'sandbox' runs image jobs only; run template jobs on a runner "
                "started with --executor process"
            )
        cores = self._job_cores(spec.cpu)
        self._check_capacity(spec.memory, spec.disk)
        interrupted = threading.Event()
        with self._lock:
            self._setups[job.uuid] = interrupted
        try:
            return self._prepare(job, cores, interrupted)
        finally:
            with self._lock:
                del self._setups[job.uuid]

    def interrupt_setup(self, job: uuid.UUID) -> None:
        with self._lock:
            interrupted = self._setups.get(job)
        if interrupted is not None:
            interrupted.set()

    def _prepare(
        self, job: JsonClaimedJob, cores: frozenset[int], interrupted: threading.Event
    ) -> SandboxJob:
        config, spec = job.config, job.spec
        assert config.digest is not None and config.project is not None
        registry = Registry(self._registry_url(), job.oci_token, interrupted=interrupted)
        try:
            image = pull_image(
                registry,
                self.cache,
                repository=str(config.project),
                digest=config.digest,
                architecture=spec.architecture,
            )
            lower = self.cache.rootfs(image.manifest_digest, image.layers)
        except (PullError, CacheError) as exc:
            raise ExecutorError(f"image {config.digest}: {exc}") from None
        finally:
            registry.close()
        try:
            process = _process(image.config, lower, config.entrypoint, config.cmd, config.env)
        except BundleError as exc:
            raise ExecutorError(f"image {config.digest}: {exc}") from None
        if interrupted.is_set():
            raise ExecutorError("setup interrupted")
        try:
            # A duet prepares its two sides under one job uuid: each gets a directory.
            directory = self._jobs_root / f"{job.uuid}-{uuid.uuid4().hex[:8]}"
            job_rootfs = JobRootfs.create(directory, lower, spec.disk)
        except ScratchError as exc:
            raise ExecutorError(str(exc)) from None
        return SandboxJob(
            job=job.uuid,
            process=process,
            limits=Limits(cpus=cores, memory=spec.memory, pids=self._pids_limit),
            network=spec.network,
            rootfs=job_rootfs,
            runtime=self.runtime,
            file_paths=config.file_paths,
            build_time=bool(config.build_time),
            file_size=bool(config.file_size),
            kill_grace=self._kill_grace,
            max_output_bytes=self._max_output_bytes,
            in_flight=self._in_flight,
            clock=self._clock,
        )

    def _check_capacity(self, memory: int, disk: int) -> None:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        if memory > physical:
            raise ExecutorError(
                f"spec asks for {memory} bytes of memory; this machine has {physical}"
            )
        free = shutil.disk_usage(self._jobs_root).free
        if disk > free:
            raise ExecutorError(
                f"spec asks for {disk} bytes of disk; {self._jobs_root} has {free} free"
            )

    def _job_cores(self, wanted: int) -> frozenset[int]:
        available = sorted(self._cores.job_cores)
        if wanted > len(available):
            raise ExecutorError(
                f"spec asks for {wanted} dedicated core(s); this machine can give "
                f"{len(available)} (one core stays with the runner)"
            )
        return frozenset(available[:wanted])


class _Finished:
    """Whether the running iteration's container has ended, waited for on the runner's clock."""

    def __init__(self, clock: ThreadClock) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._set = False

    def set(self) -> None:
        with self._cond:
            self._set = True
            self._cond.notify_all()

    def clear(self) -> None:
        with self._cond:
            self._set = False

    def is_set(self) -> bool:
        with self._cond:
            return self._set

    def wait_until(self, deadline: float) -> bool:
        """Whether it ended by the time the clock reached ``deadline``."""
        with self._cond:
            while not self._set and self._clock.monotonic() < deadline:
                self._clock.wait(self._cond, deadline)
            return self._set


class SandboxJob(PreparedJob):
    def __init__(
        self,
        *,
        job: uuid.UUID,
        process: Process,
        limits: Limits,
        network: bool,
        rootfs: JobRootfs,
        runtime: OciRuntime,
        file_paths: Sequence[str] | None,
        kill_grace: float,
        max_output_bytes: int,
        in_flight: InFlight | None = None,
        build_time: bool = False,
        file_size: bool = False,
        clock: ThreadClock | None = None,
    ) -> None:
        """``build_time``: report each iteration's wall time; ``file_size``: report the sizes
        of ``file_paths`` instead of reading them (Bencher's job flags); ``clock``: the
        runner's, on which the kill grace runs out."""
        self.job = job
        self.process = process
        self.limits = limits
        self.rootfs = rootfs
        self._network = network
        self._runtime = runtime
        self._file_paths = file_paths
        self._build_time = build_time
        self._file_size = file_size
        self._kill_grace = kill_grace
        self._limit = max_output_bytes
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self._container: str | None = None
        self._child: Leader | None = None
        self._clock = clock or SystemThreadClock()
        self._finished = _Finished(self._clock)
        self._canceled = False
        self._cleaned = False

    @property
    def container(self) -> str | None:
        """The id of the container of the running iteration, if one is running."""
        with self._lock:
            return self._container

    def container_id(self, index: int) -> str:
        return f"benchrunner-{self.job}-{index}"

    def config(self, index: int) -> dict[str, object]:
        process = Process(
            args=self.process.args,
            env=[
                *self.process.env,
                f"{JOB_VARIABLE}={self.job}",
                f"BENCHRUNNER_ITERATION={index}",
            ],
            cwd=self.process.cwd,
            uid=self.process.uid,
            gid=self.process.gid,
        )
        return runtime_config(
            process,
            self.limits,
            network=self._network,
            cgroups_path=f"/benchrunner/{self.container_id(index)}",
        )

    def run_iteration(self, index: int) -> IterationResult:
        container = self.container_id(index)
        (self.rootfs.bundle / "config.json").write_text(json.dumps(self.config(index)))
        with self._lock:
            if self._canceled:
                return IterationResult(stderr="[benchrunner: canceled before the iteration]\n")
            self._finished.clear()
            begun = time.monotonic()
            child = self._start(index, container)
            self._container = container
            self._child = child
        try:
            reader = PipeReader(child, self._limit, self.on_output, self._clock)
        except OSError as exc:
            self._end_unwatched(child, container)
            raise ExecutorError(f"cannot watch iteration {index}'s runtime: {exc}") from None
        try:
            self._started()
            reader.until_exit()
            returncode = child.wait()
            seconds = time.monotonic() - begun
            with self._lock:
                self._container = None
                self._child = None
                self._finished.set()
            self._runtime.delete(container)
            held = reader.finish(self._kill_grace)
        finally:
            reader.close()
        stdout, stderr = reader.text("stdout"), reader.text("stderr")
        notes = [f"[benchrunner: {stream} held open after the container ended]" for stream in held]
        exit_code = returncode
        if returncode < 0:  # the runtime itself was killed
            exit_code = 128 - returncode
            notes.append(
                f"[benchrunner: runtime killed by signal {signal.Signals(-returncode).name}]"
            )
        elif (name := _signal_name(returncode - 128)) is not None:
            # The runtime reports a signal as 128 + its number, like a shell: ambiguous.
            notes.append(
                f"[benchrunner: exit code {returncode}: killed by {name} "
                "(or exited with that code)]"
            )
        output, sizes = self._collect_files(notes)
        return IterationResult(
            exit_code=exit_code,
            stdout=stdout,
            stderr=with_notes(stderr, notes),
            output=output,
            build_time=command_time(self.process.args, seconds) if self._build_time else None,
            file_sizes=sizes,
        )

    def _end_unwatched(self, child: Leader, container: str) -> None:
        """End an iteration whose runtime's exit cannot be watched: the container killed and
        removed, the runtime waited for, its pipes closed."""
        self._runtime.kill(container, "KILL")
        child.kill()
        child.wait()
        close_pipes(child)
        with self._lock:
            self._container = None
            self._child = None
            self._finished.set()
        self._runtime.delete(container)

    def cancel(self) -> None:
        with self._lock:
            self._canceled = True
            container = self._container
        if container is not None:
            threading.Thread(
                target=self._stop, args=(container,), name=f"stop-{container}", daemon=True
            ).start()

    def cleanup(self) -> None:
        with self._lock:
            self._canceled = True
            container, already = self._container, self._cleaned
            self._cleaned = True
        if already:
            return
        if container is not None:
            self._runtime.kill(container, "KILL")
            self._finished.wait_until(self._clock.monotonic() + self._kill_grace)
            self._runtime.delete(container)
        if self._in_flight is not None:
            self._in_flight.forget(self.job)
        self.rootfs.remove()

    def _stop(self, container: str) -> None:
        """SIGTERM, SIGKILL after the kill grace, retried: the runtime may not have created the
        container yet when the cancel comes, and a signal to a missing container is lost."""
        grace_end = self._clock.monotonic() + self._kill_grace
        signal_name = "TERM"
        give_up = grace_end + _KILL_WAIT
        while not self._finished.is_set():
            now = self._clock.monotonic()
            if signal_name == "TERM" and now >= grace_end:
                signal_name = "KILL"
            if now >= give_up:
                log.error("container %s did not stop; killing its runtime process", container)
                self._kill_runtime()
                return
            if self._runtime.kill(container, signal_name) and signal_name == "TERM":
                # Delivered: wait out the grace before escalating.
                if self._finished.wait_until(grace_end):
                    return
                continue
            self._finished.wait_until(self._clock.monotonic() + _SIGNAL_RETRY)

    def _kill_runtime(self) -> None:
        with self._lock:
            child = self._child
        if child is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)

    def _start(self, index: int, container: str) -> Leader:
        if self._in_flight is not None:
            try:
                # Before the runtime starts: a runner killed from then on leaves it recorded.
                self._in_flight.container(self.job, container, self._runtime.command)
            except OSError as exc:
                raise ExecutorError(
                    f"cannot record the container before it starts: {exc}"
                ) from None
        try:
            return start_leader(
                self._runtime.run_argv(self.rootfs.bundle, container),
                env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
            )
        except OSError as exc:
            raise ExecutorError(
                f"iteration {index} could not start {self._runtime.name}: {exc.strerror or exc}"
            ) from None

    def _collect_files(
        self, notes: list[str]
    ) -> tuple[dict[str, str] | None, dict[str, int] | None]:
        """The ``file_paths``' texts, or with ``file_size`` their sizes."""
        if self._file_paths is None:
            return None, None
        confinement, root = Confinement.CONTAINER, "the container's root"
        rootfs = self.rootfs.rootfs

        def located(name: str) -> str:
            if not name or "\x00" in name:
                raise ConfinedPathError("not a valid path")
            # Relative to the container's working directory; absolute names stay absolute.
            return str(PurePosixPath(self.process.cwd) / name)

        if self._file_size:
            return None, each_file(
                self._file_paths,
                lambda name: file_size(
                    rootfs, located(name), confinement=confinement, root_name=root
                ),
                notes,
            )
        texts = each_file(
            self._file_paths,
            lambda name: read_file(
                rootfs, located(name), self._limit + 1, confinement=confinement, root_name=root
            ),
            notes,
        )
        return {name: bounded_text(data, self._limit) for name, data in texts.items()}, None


def _process(
    image: ImageConfig,
    rootfs: Path,
    entrypoint: list[str] | None,
    cmd: list[str] | None,
    env: dict[str, str] | None,
) -> Process:
    def text(path: str) -> str | None:
        try:
            data = read_file(rootfs, path, _PASSWD_LIMIT, confinement=Confinement.CONTAINER)
        except ConfinedPathError as exc:
            raise BundleError(f"{path}: {exc}") from None
        return None if data is None else data.decode("utf-8", errors="replace")

    uid, gid = 0, 0
    if image.user:
        uid, gid = resolve_user(image.user, text("/etc/passwd"), text("/etc/group"))
    return Process(
        args=process_args(image.entrypoint, image.cmd, entrypoint, cmd),
        env=process_env(image.env, env),
        cwd=working_dir(image.working_dir),
        uid=uid,
        gid=gid,
    )


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None
