"""How a runner is configured: what ``benchrunner runner up`` passes to ``run_agent``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchrunner.core.releases import UpdateChannel
from benchrunner.protocol import MAX_POLL_TIMEOUT, MIN_POLL_TIMEOUT
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.per_job import MAX_CLAIM_POLL_TIMEOUT
from benchrunner.runner.transport import TransportName, transport_name

DEFAULT_MAX_AGE = 1.0
"""Seconds: how old the noise guard's "before" of an arriving job may be."""


@dataclass(kw_only=True)
class RunnerOptions:
    """``host``: http(s) URL of the server (ws/wss derived), or several replicas' URLs separated
    by commas, tried in turn whenever a connection fails or ends. ``runner``: UUID or slug. ``key``:
    ``bencher_runner_<64 hex>``, never logged or shown in ``repr``. ``templates``: this
    machine's approved templates (None: no template job may run). ``spool``: directory of
    undelivered results (created if missing). ``drain_grace``/``kill_grace``: seconds a job may
    finish after SIGTERM / between SIGTERM and SIGKILL of its process group.
    ``delivery_grace``: seconds a stopping runner keeps trying to deliver its last results
    before it exits and leaves them in the spool.
    ``max_output_bytes``: per stream and iteration. ``once``: exit after one job.
    ``sandbox_dir``: the sandbox executor's image cache, runtime state and job directories
    (one per runner: leftover containers found there at start are removed).
    ``oci_runtime``: ``runc`` or ``crun``. ``cores``: the core plan (``runner up --tune`` passes
    its partition). ``signing_key``: PEM Ed25519 private key that signs every result (for a
    runner registered with its public key). ``update``: install the releases the server offers
    (``update``) and restart as them. ``update_channel``: ``stable`` or ``canary``."""

    host: str
    runner: str
    key: str = field(repr=False)
    templates: Path | None
    executor: str = "process"
    spool: Path
    poll_timeout: int = 30
    drain_grace: float = 300.0
    kill_grace: float = 10.0
    delivery_grace: float = 5.0
    max_output_bytes: int = 1_048_576
    heartbeat_interval: float = 1.0
    once: bool = False
    sandbox_dir: Path | None = None
    oci_runtime: str = "runc"
    cores: CorePlan | None = None
    """Which cores the runner's threads and its jobs use; None: split the allowed ones."""
    noise_guard: bool = True
    """Calibrate the job cores around each job (``noise`` in the output), unless the job's
    spec turns it off; in a cpuset partition (``cores.job_cgroup``), which the runner's own
    threads cannot enter, a process moved into it calibrates them."""
    noise_max_age: float = DEFAULT_MAX_AGE
    """Seconds: the idle calibration is retaken when older, so a job's "before" is never
    older than this when the job arrives."""
    signing_key: Path | None = None
    update: bool = True
    update_channel: UpdateChannel = "stable"
    transport: TransportName = "channel"
    """``channel``: one WebSocket for everything (docs/decisions/channel.md); ``per-job``: claim
    with a long-poll and report each job on its own WebSocket (docs/decisions/channel.md)."""

    @property
    def hosts(self) -> list[str]:
        return [h.strip() for h in self.host.split(",") if h.strip()]

    def validate(self) -> None:
        """Raises ValueError naming the first unusable option."""
        if not self.hosts:
            raise ValueError("host must name at least one server URL")
        if not MIN_POLL_TIMEOUT <= self.poll_timeout <= MAX_POLL_TIMEOUT:
            raise ValueError(f"poll_timeout must be {MIN_POLL_TIMEOUT}-{MAX_POLL_TIMEOUT} s")
        transport_name(self.transport)
        if self.transport == "per-job" and self.poll_timeout > MAX_CLAIM_POLL_TIMEOUT:
            raise ValueError(f"poll_timeout must be at most {MAX_CLAIM_POLL_TIMEOUT} s per-job")
        if min(self.drain_grace, self.kill_grace, self.delivery_grace) < 0:
            raise ValueError("drain_grace, kill_grace and delivery_grace must not be negative")
        if not 0 < self.noise_max_age <= 3600:
            raise ValueError("noise_max_age must be more than 0 and at most 3600 s")
        if self.heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        if self.max_output_bytes < 1:
            raise ValueError("max_output_bytes must be positive")
        if not self.key:
            raise ValueError("a runner key is required")
