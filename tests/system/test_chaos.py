"""Chaos: real processes, real faults, then the promises checked
(docs/decisions/result-delivery.md).

Four runners work through a stream of tally jobs (each appends its tag to one shared file as
it ends, so the file counts executions) while three faults hit jobs in flight, one after the
other: SIGKILL of the server mid-run and its restart on the same database and data directory;
SIGKILL of a runner mid-job and its restart on the same spool; SIGSTOP of a runner until the
server has failed its job for silence, then SIGCONT. Afterwards no job may be stuck in flight,
none may have run twice, no finished result may be lost, every job's event timeline must
follow the transition table, and nothing of the killed runner's job may still run.

The scenario runs once per engine (a module fixture); each test checks one promise against
its outcome. The figures go to ``chaos-<engine>.json`` in the scenario's temporary directory
and into every assertion message.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import itertools
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchrunner.api.jobs import Job
from benchrunner.api.server import Health
from benchrunner.core.events import JobEvent, status_reached
from benchrunner.core.states import TRANSITIONS, JobStatus
from tests.databases import ENGINES, fresh_database
from tests.harness import Deployment, RunnerProcess, deploy, wait_progressing, wait_until

pytestmark = pytest.mark.timeout(600)

RUNNERS = 4
STREAM = 120
"""Tally jobs of 0.2-1 s each: enough to keep every runner busy through the faults."""
HEARTBEAT_TIMEOUT = 5.0
"""Part of the scenario (the killed and the stopped runner's jobs fail after it), yet five of
the runner's 1 s heartbeats, so that load alone fails no job."""
STOPPED_JOB_MS = 5000
"""The stopped runner's job ends while its runner is stopped (the runner is continued only
once the server has failed the job and the job has written its tag): the result exists, and
only the runner, once continued, can deliver it."""
URGENT = "urgent"
"""A project of an enterprise organization: its jobs are claimed before the stream's, so a
fault can be aimed at the runner that takes one."""
ENDED = frozenset({"processed", "failed", "canceled"})
SETTLE_TIMEOUT = 180.0
STALL_TIMEOUT = 60.0
"""How long the stream may go without a job ending before the scenario calls it stuck: a
tally job takes at most a second, and four runners take them in parallel."""
ORPHAN_GRACE = 10.0
"""How long after its runner's restart the killed runner's job may take to be gone."""


@dataclass
class Outcome:
    engine: str
    views: dict[str, Job]
    """Every job's final view, events included."""
    tags: dict[str, str]
    """Tally job -> its tag."""
    executions: collections.Counter[str]
    """Tag -> lines in the tally file."""
    server_killed_at: dt.datetime
    running_at_server_kill: list[str]
    killed_runners_job: str
    spooled_at_runner_kill: list[str]
    survivors: list[int]
    """Processes of the killed runner's job still alive after the runner's restart."""
    stopped_runners_job: str
    crashed_runners: list[str]
    tracebacks: list[str]
    """Server and runner logs that hold a traceback."""
    seconds: float
    figures_path: Path

    @property
    def stuck(self) -> list[str]:
        return sorted(u for u, view in self.views.items() if view.status not in ENDED)

    @property
    def duplicated(self) -> list[str]:
        return sorted(tag for tag, count in self.executions.items() if count > 1)

    @property
    def lost(self) -> list[str]:
        """Jobs whose result existed but that did not end ``processed``: tally jobs that ran to
        their end (tag written), results spooled when their runner was killed, and jobs running
        when the server was killed (their runners went on and kept the result)."""
        finished = {u for u, tag in self.tags.items() if self.executions[tag]}
        finished |= {*self.spooled_at_runner_kill, *self.running_at_server_kill}
        return sorted(
            u
            for u in finished
            if (self.views[u].status if u in self.views else None) != "processed"
        )

    @property
    def phantom(self) -> list[str]:
        """Processed tally jobs whose tag never reached the file: a result nobody produced."""
        return sorted(
            u
            for u, tag in self.tags.items()
            if self.views[u].status == "processed" and not self.executions[tag]
        )

    @property
    def illegal_timelines(self) -> dict[str, list[str]]:
        timelines = {u: [e.event_type for e in v.events] for u, v in self.views.items()}
        return {
            u: kinds for u, kinds in timelines.items() if not _legal(kinds, self.views[u].status)
        }

    def figures(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "runners": RUNNERS,
            "jobs": len(self.views),
            "faults": {"server SIGKILL": 1, "runner SIGKILL": 1, "runner SIGSTOP": 1},
            "statuses": dict(collections.Counter(v.status for v in self.views.values())),
            "executions": sum(self.executions.values()),
            "stuck": len(self.stuck),
            "duplicated": len(self.duplicated),
            "lost": len(self.lost),
            "phantom": len(self.phantom),
            "illegal timelines": len(self.illegal_timelines),
            "orphans": len(self.survivors),
            "logs with a traceback": len(self.tracebacks),
            "seconds": round(self.seconds),
        }

    def report(self) -> str:
        return f"chaos figures ({self.figures_path}): {json.dumps(self.figures())}"


def _legal(kinds: list[str], status: str) -> bool:
    """``job_created``, then one event per transition of the table, ending at the job's
    status."""
    if not kinds or kinds[0] != JobEvent.CREATED:
        return False
    moving = [kind for kind in kinds[1:] if kind not in (JobEvent.CANCEL_REQUESTED, JobEvent.RERUN)]
    reached = [status_reached(kind) for kind in moving]
    if None in reached:
        return False
    states = [JobStatus.PENDING, *(s for s in reached if s is not None)]
    steps = itertools.pairwise(states)
    return all((a, b) in TRANSITIONS for a, b in steps) and states[-1].wire == status


# ----------------------------------------------------------------------------- the scenario


@pytest.fixture(scope="module", params=ENGINES)
def chaos(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    engine = str(request.param)
    tmp = tmp_path_factory.mktemp(f"chaos-{engine}")
    pidfile = tmp / "family.pids"
    try:
        with (
            fresh_database(engine, tmp) as url,
            deploy(tmp, url, heartbeat_timeout=HEARTBEAT_TIMEOUT) as deployment,
        ):
            outcome = _scenario(deployment, engine, pidfile)
    finally:
        _kill_leftovers(pidfile)  # an orphan would otherwise sleep on for ten minutes
    outcome.figures_path.write_text(json.dumps(outcome.figures(), indent=2) + "\n")
    print(outcome.report())
    return outcome


def _scenario(deployment: Deployment, engine: str, pidfile: Path) -> Outcome:
    began = time.monotonic()
    tally = deployment.tmp / "tally.txt"
    tally.touch()
    with deployment.admin() as client:
        client.create_organization("vip", "enterprise")
        client.create_project("vip", URGENT, "public")
    runners = [deployment.runner_process(f"runner-{i}").start() for i in range(RUNNERS)]
    by_uuid = _by_uuid(deployment, runners)
    wait_progressing(
        lambda: _health(deployment).connected_runners == RUNNERS,
        lambda: _health(deployment).connected_runners,
        stall=deployment.server.start_timeout,  # a loaded machine's slowest start
        message="every runner connected",
    )
    tags: dict[str, str] = {}
    with deployment.admin() as client:
        for n in range(STREAM):
            args = {"file": str(tally), "tag": f"job-{n}", "ms": 200 + (n * 83) % 800}
            tags[deployment.submit("bench.tally", args, client=client)] = f"job-{n}"
    projects = dict.fromkeys(tags, deployment.project)

    # 1. The server dies mid-run and restarts on the same database and data directory. How
    # soon a fifth of the stream is done depends on the machine's load: only a stream that
    # stopped moving is a failure.
    running = wait_progressing(
        lambda: _mid_run(deployment),
        lambda: tally.read_text().count("\n"),
        stall=STALL_TIMEOUT,
        message="the stream under way, jobs running",
    )
    server_killed_at = dt.datetime.now(dt.UTC)
    deployment.server.kill(signal.SIGKILL)
    deployment.server.start()

    # 2. A runner dies mid-job and restarts on the same spool.
    family = deployment.submit("bench.family", {"pidfile": str(pidfile)}, project=URGENT)
    projects[family] = URGENT
    view = deployment.wait_status(family, "running", project=URGENT, timeout=60)
    victim = by_uuid[str(view.runner)]
    pids = [
        int(pid)
        for pid in wait_until(
            lambda: pidfile.exists() and pidfile.read_text(), message="the job's pid file"
        ).split()
    ]
    victim.kill(signal.SIGKILL)
    spooled = sorted(path.stem for path in victim.spool.glob("*.json"))
    victim.start()
    survivors = _survivors(pids)

    # 3. A runner stops mid-job for longer than the heartbeat timeout, then goes on.
    args = {"file": str(tally), "tag": "stopped", "ms": STOPPED_JOB_MS}
    stopped = deployment.submit("bench.tally", args, project=URGENT)
    tags[stopped], projects[stopped] = "stopped", URGENT
    view = deployment.wait_status(stopped, "running", project=URGENT, timeout=60)
    sleeper = by_uuid[str(view.runner)]
    assert sleeper.proc is not None
    # `running` is reported before the job's process starts: stop the runner only once it has,
    # or the stop would freeze a job that never began.
    wait_until(lambda: _job_process_started(stopped), message="the stopped job's process")
    sleeper.proc.send_signal(signal.SIGSTOP)
    try:
        # "processed" only if the job ended before the stop: the fault missed (checked below).
        deployment.wait_status(
            stopped, "failed", "processed", project=URGENT, timeout=HEARTBEAT_TIMEOUT + 30
        )
        wait_until(
            lambda: "stopped" in tally.read_text().split(),
            timeout=STOPPED_JOB_MS / 1000 + 30,
            message="the stopped runner's job to end",
        )
    finally:
        sleeper.proc.send_signal(signal.SIGCONT)

    _settle(deployment, set(projects.values()))
    views = {u: deployment.job(u, project) for u, project in projects.items()}
    return Outcome(
        engine=engine,
        views=views,
        tags=tags,
        executions=collections.Counter(tally.read_text().split()),
        server_killed_at=server_killed_at,
        running_at_server_kill=running,
        killed_runners_job=family,
        spooled_at_runner_kill=spooled,
        survivors=survivors,
        stopped_runners_job=stopped,
        crashed_runners=[r.slug for r in runners if r.proc is None or r.proc.poll() is not None],
        tracebacks=sorted(
            log.name
            for log in [*deployment.server.data_dir.glob("*.log"), *deployment.tmp.glob("*.log")]
            if "Traceback" in log.read_text(errors="replace")
        ),
        seconds=time.monotonic() - began,
        figures_path=deployment.tmp / f"chaos-{engine}.json",
    )


def _job_process_started(job_uuid: str) -> bool:
    """Whether a process of the job runs: the runner gives each job ``BENCHRUNNER_JOB``."""
    marker = f"BENCHRUNNER_JOB={job_uuid}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if marker in environ.read_bytes().split(b"\0"):
                return True
    return False


def _by_uuid(deployment: Deployment, runners: list[RunnerProcess]) -> dict[str, RunnerProcess]:
    with deployment.admin() as client:
        return {str(client.get_runner(r.slug).uuid): r for r in runners}


def _health(deployment: Deployment) -> Health:
    with deployment.server.client(None) as client:
        return client.health()


def _mid_run(deployment: Deployment) -> list[str] | None:
    """The stream's running jobs, once a fifth of it is processed and two or more run."""
    with deployment.admin() as client:
        processed = client.list_jobs(deployment.project, status="processed", per_page=1).total
        running = client.list_jobs(deployment.project, status="running", per_page=255)
    if (processed or 0) < STREAM // 5 or len(running) < 2:
        return None
    return [str(job.uuid) for job in running]


def _settle(deployment: Deployment, projects: set[str]) -> None:
    """Wait until every job has ended; past the deadline, what is left counts as stuck."""

    def unfinished() -> int:
        with deployment.admin() as client:
            return sum(
                1
                for project in projects
                for job in client.list_jobs(project, per_page=255)
                if job.status not in ENDED
            )

    with contextlib.suppress(AssertionError):  # what is left is reported as stuck
        wait_until(
            lambda: unfinished() == 0, timeout=SETTLE_TIMEOUT, interval=1.0, message="all ended"
        )


def _job_process(pid: int) -> bool:
    """True while ``pid`` is one of the family job's processes (not reaped, not reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return b"time.sleep(600)" in cmdline and state != "Z"


def _survivors(pids: list[int]) -> list[int]:
    with contextlib.suppress(AssertionError):  # what is left is reported as orphans
        wait_until(
            lambda: not any(_job_process(pid) for pid in pids),
            timeout=ORPHAN_GRACE,
            message="the killed runner's job to be gone",
        )
    return [pid for pid in pids if _job_process(pid)]


def _kill_leftovers(pidfile: Path) -> None:
    if not pidfile.exists():
        return
    for pid in (int(p) for p in pidfile.read_text().split()):
        if _job_process(pid):
            os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- the promises


def test_no_job_is_left_in_flight(chaos: Outcome) -> None:
    assert not chaos.stuck, f"stuck: {chaos.stuck}; {chaos.report()}"


def test_no_job_ran_twice(chaos: Outcome) -> None:
    assert not chaos.duplicated, f"ran twice: {chaos.duplicated}; {chaos.report()}"


def test_no_finished_result_is_lost(chaos: Outcome) -> None:
    assert not chaos.lost, f"lost: {chaos.lost}; {chaos.report()}"
    assert not chaos.phantom, f"processed but never ran: {chaos.phantom}; {chaos.report()}"
    unexplained = [
        u
        for u, view in chaos.views.items()
        if view.status in ("failed", "canceled") and not view.events[-1].message
    ]
    assert not unexplained, f"ended without a reason: {unexplained}; {chaos.report()}"


def test_every_timeline_follows_the_transition_table(chaos: Outcome) -> None:
    assert not chaos.illegal_timelines, f"{chaos.illegal_timelines}; {chaos.report()}"


def test_every_fault_hit_a_job_in_flight(chaos: Outcome) -> None:
    """The scenario proves its points only if each fault met a job that was still running."""
    across = [
        u
        for u in chaos.running_at_server_kill
        if any(
            e.event_type == "job_completed"
            and dt.datetime.fromisoformat(e.created) > chaos.server_killed_at
            for e in chaos.views[u].events
        )
    ]
    assert across, f"no result crossed the server's restart; {chaos.report()}"
    killed = chaos.views[chaos.killed_runners_job]
    assert killed.status == "failed", f"{killed.events}; {chaos.report()}"
    # Failed for its runner's silence while it ran, then completed by the result that the
    # runner, continued, delivered.
    stopped = [e.event_type for e in chaos.views[chaos.stopped_runners_job].events]
    assert stopped[-3:] == [
        "heartbeat_stale_recovered",
        "job_completed",
        "job_processed",
    ], f"{stopped}; {chaos.report()}"
    assert not chaos.crashed_runners, f"runners exited: {chaos.crashed_runners}; {chaos.report()}"


def test_no_process_logged_a_traceback(chaos: Outcome) -> None:
    assert not chaos.tracebacks, f"tracebacks in {chaos.tracebacks}; {chaos.report()}"


def test_a_killed_runner_leaves_no_process_of_its_job(chaos: Outcome) -> None:
    assert not chaos.survivors, f"orphans: {chaos.survivors}; {chaos.report()}"


# ------------------------------------------------------------------ the checks can fail


@pytest.mark.parametrize(
    ("kinds", "status", "legal"),
    [
        (
            ["job_created", "job_claimed", "job_started", "job_completed", "job_processed"],
            "processed",
            True,
        ),
        (
            [
                "job_created",
                "job_claimed",
                "job_started",
                "heartbeat_stale_recovered",
                "job_completed",
                "job_processed",
            ],
            "processed",
            True,
        ),
        (["job_created", "job_claimed", "job_failed"], "failed", True),
        (
            ["job_created", "job_claimed", "job_started", "job_completed", "job_completed"],
            "completed",
            False,
        ),
        (["job_created", "job_claimed", "job_completed"], "completed", False),
        (["job_created", "job_claimed", "job_started", "job_failed"], "running", False),
        (["job_claimed", "job_started"], "running", False),
        (["job_created", "job_canceled", "job_claimed"], "claimed", False),
        (["job_created", "vanished"], "pending", False),
    ],
)
def test_the_timeline_check(kinds: list[str], status: str, legal: bool) -> None:
    assert _legal(kinds, status) is legal


def test_the_outcome_checks(tmp_path: Path) -> None:
    def view(status: str) -> Job:
        events = [{"event_type": "job_created", "message": "x", "created": "c"}]
        return Job.model_validate(
            {"uuid": "j", "report": "r", "project": "p", "created": "c", "modified": "m"}
            | {"status": status, "events": events, "config": {"timeout": 60}}
        )

    outcome = Outcome(
        engine="none",
        views={
            "ran": view("processed"),
            "ran-lost": view("failed"),
            "never-ran": view("processed"),
            "twice": view("processed"),
            "stuck": view("running"),
            "spooled": view("failed"),
        },
        tags={"ran": "a", "ran-lost": "b", "never-ran": "c", "twice": "d", "stuck": "e"},
        executions=collections.Counter({"a": 1, "b": 1, "d": 2}),
        server_killed_at=dt.datetime.now(dt.UTC),
        running_at_server_kill=[],
        killed_runners_job="stuck",
        spooled_at_runner_kill=["spooled"],
        survivors=[],
        stopped_runners_job="ran",
        crashed_runners=[],
        tracebacks=[],
        seconds=0.0,
        figures_path=tmp_path / "figures.json",
    )
    assert outcome.stuck == ["stuck"]
    assert outcome.duplicated == ["d"]
    assert outcome.lost == ["ran-lost", "spooled"]
    assert outcome.phantom == ["never-ran"]
    assert set(outcome.illegal_timelines) == set(outcome.views)  # "created" alone, not pending
