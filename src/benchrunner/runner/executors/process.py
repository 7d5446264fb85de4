"""The ``process`` executor: a template job's argv run directly on this machine.

Isolation is light (docs/decisions/executors.md): no shell, a new session and process group per
iteration (killed with the runner, see ``group.py``), an environment allowlist, a fresh working
directory per job, the job cores as CPU affinity. Only templates listed in the runner's own
templates file run here, with arguments re-checked against that file, whatever the server sent.

``file_paths`` are read by the runner after each iteration, confined to the job's working
directory (``runner/confined.py``): an absolute path, a ``..`` or a symlink leading out, a file
hard-linked from elsewhere or anything but a regular file is refused with a note on stderr, and
the other files are still collected.
With the job's ``file_size`` they are sized instead of read, the same way, and with
``build_time`` each iteration's wall time is reported (``executors/files.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchrunner.core.clock import SystemThreadClock, ThreadClock
from benchrunner.core.templates import TemplateError, TemplateRegistry
from benchrunner.protocol import IterationResult, JsonClaimedJob
from benchrunner.runner import pickup_trace
from benchrunner.runner.confined import Confinement, file_size, read_file
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.base import Executor, ExecutorError, PreparedJob
from benchrunner.runner.executors.capture import (
    PipeReader,
    bounded_text,
    close_pipes,
    require_pidfd,
    with_notes,
)
from benchrunner.runner.executors.files import command_time, each_file
from benchrunner.runner.executors.group import ProcessGroup, become_subreaper, start_leader
from benchrunner.runner.executors.spawn import Leader, survey_descriptors
from benchrunner.runner.inflight import JOB_VARIABLE, InFlight

log = logging.getLogger(__name__)

_SPARE_PREFIX = "benchrunner-next-"
"""The working directory made ahead, until a job takes it and it is renamed after the job."""

# Nothing else of the runner's environment reaches a job: above all not the runner key.
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")


class ProcessExecutor(Executor):
    name = "process"

    def __init__(
        self,
        templates: TemplateRegistry,
        *,
        kill_grace: float = 10.0,
        max_output_bytes: int = 1_048_576,
        cores: CorePlan | None = None,
        workdir_root: Path | None = None,
        environ: Mapping[str, str] | None = None,
        in_flight: InFlight | None = None,
        clock: ThreadClock | None = None,
    ) -> None:
        """``environ`` is where the allowlisted variables are read from, once (default: the
        runner's own environment); ``workdir_root`` holds the per-job working directories
        (default: TMPDIR); ``in_flight`` records each job's process group (None: not
        recorded); ``clock``: the runner's, on which the kill grace and the reading of a job's
        output run out. Raises ExecutorError where a child's exit cannot be watched
        (``require_pidfd``)."""
        self._templates = templates
        self._in_flight = in_flight
        self._kill_grace = kill_grace
        self._clock = clock or SystemThreadClock()
        self._max_output_bytes = max_output_bytes
        self._cores = cores or CorePlan()
        self._workdir_root = workdir_root
        environ = os.environ if environ is None else environ
        # Read once: the runner's environment does not change while it runs.
        self._base_env = {name: environ[name] for name in ENV_ALLOWLIST if name in environ}
        self._spare_lock = threading.Lock()
        self._spare: Path | None = None
        self._closed = False
        require_pidfd()
        become_subreaper()
        survey_descriptors()

    def prepare(self, job: JsonClaimedJob) -> ProcessJob:
        config = job.config
        if config.template is None:
            raise ExecutorError(
                "executor 'process' cannot run image jobs; start the runner with --executor sandbox"
            )
        if config.template not in self._templates:
            approved = ", ".join(self._templates.names()) or "none"
            raise ExecutorError(
                f"template {config.template!r} is not approved on this runner "
                f"(runner templates: {approved})"
            )
        try:
            argv = self._templates.get(config.template).argv(config.args or {})
        except TemplateError as exc:
            raise ExecutorError(str(exc)) from None
        try:
            workdir = self._working_directory(job.uuid)
        except OSError as exc:
            raise ExecutorError(f"cannot create the job's working directory: {exc}") from None
        return ProcessJob(
            job=job.uuid,
            argv=argv,
            file_paths=config.file_paths,
            build_time=bool(config.build_time),
            file_size=bool(config.file_size),
            workdir=workdir,
            base_env=self._base_env,
            kill_grace=self._kill_grace,
            max_output_bytes=self._max_output_bytes,
            cores=self._cores,
            in_flight=self._in_flight,
            clock=self._clock,
        )

    def between_jobs(self) -> None:
        """Make the next job's working directory now: ``mkdtemp`` on the way of a job start
        cost about a seventh of the runner's pickup share (benchmarks/RESULTS.md). And list the
        descriptors its spawn is to close (``spawn.py``)."""
        survey_descriptors()
        with self._spare_lock:
            if self._spare is not None or self._closed:
                return
        try:
            spare = Path(tempfile.mkdtemp(prefix=_SPARE_PREFIX, dir=self._workdir_root))
        except OSError as exc:
            log.warning("cannot make the next job's working directory ahead: %s", exc)
            return
        with self._spare_lock:
            if self._spare is None and not self._closed:
                self._spare = spare
                return
        shutil.rmtree(spare, ignore_errors=True)

    def close(self) -> None:
        with self._spare_lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            shutil.rmtree(spare, ignore_errors=True)

    def _working_directory(self, job: uuid.UUID) -> Path:
        """A new, empty directory of mode 0700 named after ``job``: the one made ahead, renamed,
        or else a new one."""
        prefix = f"benchrunner-{job}-"
        with self._spare_lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            named = spare.with_name(prefix + spare.name.removeprefix(_SPARE_PREFIX))
            try:
                spare.rename(named)
                return named
            except OSError as exc:
                log.warning("cannot take the working directory made ahead: %s", exc)
                shutil.rmtree(spare, ignore_errors=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self._workdir_root))


class ProcessJob(PreparedJob):
    def __init__(
        self,
        *,
        job: uuid.UUID,
        argv: Sequence[str],
        file_paths: Sequence[str] | None,
        workdir: Path,
        base_env: Mapping[str, str],
        kill_grace: float,
        max_output_bytes: int,
        cores: CorePlan,
        in_flight: InFlight | None = None,
        build_time: bool = False,
        file_size: bool = False,
        clock: ThreadClock | None = None,
    ) -> None:
        """``build_time``: report each iteration's wall time; ``file_size``: report the sizes
        of ``file_paths`` instead of reading them (Bencher's job flags)."""
        self.job = job
        self.argv = list(argv)
        self.workdir = workdir
        self._file_paths = file_paths
        self._build_time = build_time
        self._file_size = file_size
        self._base_env = base_env
        self._kill_grace = kill_grace
        self._clock = clock or SystemThreadClock()
        self._limit = max_output_bytes
        self._cores = cores
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self._group: ProcessGroup | None = None
        self._canceled = False
        self._interrupted = False

    def environment(self, index: int) -> dict[str, str]:
        return {
            **self._base_env,
            JOB_VARIABLE: str(self.job),
            "BENCHRUNNER_ITERATION": str(index),
            "BENCHRUNNER_WORKDIR": str(self.workdir),
        }

    def run_iteration(self, index: int) -> IterationResult:
        with self._lock:
            # Under the lock so a concurrent cancel() either sees the group or stops the start.
            if self._canceled:
                return IterationResult(stderr="[benchrunner: canceled before the iteration]\n")
            begun = time.monotonic()
            group = ProcessGroup(self._start(index), self._kill_grace, self._clock)
            self._group = group
        leader = group.leader
        try:
            reader = PipeReader(leader, self._limit, self.on_output, self._clock)
        except OSError as exc:
            group.kill()
            leader.wait()
            close_pipes(leader)
            with self._lock:
                self._group = None
            raise ExecutorError(f"cannot watch iteration {index}'s process: {exc}") from None
        try:
            self._started()
            reader.until_exit()
            returncode = leader.wait()
            ended = time.monotonic()
            # A background process left in the group would perturb the next iteration and
            # keep the pipes open: the group ends with its leader.
            group.stop(reader.pause)
            held = reader.finish(self._kill_grace)
        finally:
            reader.close()
        stdout, stderr = reader.text("stdout"), reader.text("stderr")
        seconds = ended - begun
        with self._lock:
            self._group = None
        notes = [
            f"[benchrunner: {stream} is held open by a process outside the job's "
            "process group; stopped reading]"
            for stream in held
        ]
        exit_code = returncode
        if returncode < 0:
            exit_code = 128 - returncode
            notes.append(f"[benchrunner: killed by signal {signal.Signals(-returncode).name}]")
        output, sizes = self._collect_files(notes)
        return IterationResult(
            exit_code=exit_code,
            stdout=stdout,
            stderr=with_notes(stderr, notes),
            output=output,
            build_time=command_time(self.argv, seconds) if self._build_time else None,
            file_sizes=sizes,
        )

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def cancel(self) -> None:
        with self._lock:
            self._canceled = True
            group = self._group
            if group is not None and group.leader.poll() is None:
                self._interrupted = True
        if group is not None:
            group.terminate()

    def cleanup(self) -> None:
        with self._lock:
            self._canceled = True
            group = self._group
        if group is not None:
            group.kill()
        if self._in_flight is not None:
            self._in_flight.forget(self.job)
        try:
            self.workdir.rmdir()  # most jobs leave it empty: no tree to walk
        except OSError:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _start(self, index: int) -> Leader:
        if self._in_flight is not None:
            try:
                self._in_flight.job(self.job)
            except OSError as exc:
                # Unrecorded, its processes could outlive a runner killed now: do not start.
                raise ExecutorError(f"cannot record the job before it starts: {exc}") from None
        pickup_trace.step("recorded")
        # Before the thread moves to the job cores: on its own core this work runs warm.
        env = self.environment(index)
        guarded = self._in_flight is not None and self._in_flight.watched()
        started_ns = 0
        try:
            with self._cores.job_affinity() as leave:

                def started() -> None:
                    nonlocal started_ns
                    started_ns = pickup_trace.now()
                    leave()

                pickup_trace.step("moved")
                leader = start_leader(
                    self.argv, env=env, cwd=self.workdir, guarded=guarded, started=started
                )
            self._cores.admit(leader.pid)
        except OSError as exc:
            raise ExecutorError(
                f"iteration {index} could not start {self.argv[0]!r}: {exc.strerror or exc}"
            ) from None
        pickup_trace.job_started(self.job, started_ns)
        if self._in_flight is not None:
            try:
                self._in_flight.group(self.job, leader.pid)
            except OSError as exc:
                # The job's record stands: its processes are still found by their environment.
                log.warning("job %s: cannot record process group %d: %s", self.job, leader.pid, exc)
        return leader

    def _collect_files(
        self, notes: list[str]
    ) -> tuple[dict[str, str] | None, dict[str, int] | None]:
        """The ``file_paths``' texts, or with ``file_size`` their sizes."""
        if self._file_paths is None:
            return None, None
        confinement, root = Confinement.DIRECTORY, "the job's working directory"
        if self._file_size:
            return None, each_file(
                self._file_paths,
                lambda name: file_size(self.workdir, name, confinement=confinement, root_name=root),
                notes,
            )
        texts = each_file(
            self._file_paths,
            lambda name: read_file(
                self.workdir, name, self._limit + 1, confinement=confinement, root_name=root
            ),
            notes,
        )
        return {name: bounded_text(data, self._limit) for name, data in texts.items()}, None
