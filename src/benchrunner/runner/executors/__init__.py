"""Executors: how a claimed job is run on this machine (docs/decisions/executors.md).

``process`` runs template jobs, ``sandbox`` runs image jobs in an OCI runtime bundle (runc or
crun); ``microvm`` (Firecracker) will implement the same ``Executor`` interface.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchrunner.core.clock import ThreadClock
from benchrunner.core.templates import TemplateRegistry
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.base import Executor, ExecutorError, PreparedJob
from benchrunner.runner.executors.process import ProcessExecutor
from benchrunner.runner.inflight import InFlight

KNOWN_EXECUTORS = ("process", "sandbox", "microvm")

__all__ = [
    "KNOWN_EXECUTORS",
    "Executor",
    "ExecutorError",
    "PreparedJob",
    "ProcessExecutor",
    "create_executor",
]


def create_executor(
    name: str,
    templates: TemplateRegistry,
    *,
    kill_grace: float,
    max_output_bytes: int,
    cores: CorePlan,
    registry_url: Callable[[], str],
    sandbox_dir: Path,
    oci_runtime: str = "runc",
    in_flight: InFlight | None = None,
    clock: ThreadClock | None = None,
) -> Executor:
    """The executor called ``name``. ``registry_url`` (gives the URL of the server the runner
    is connected to), ``sandbox_dir`` (image cache, runtime state, job directories) and
    ``oci_runtime`` matter to ``sandbox`` only; ``in_flight`` records what each job runs;
    ``clock`` (the runner's) is where the executors' kill grace runs out.
    Raises ExecutorError for an unknown, not yet available or unusable executor."""
    if name == "process":
        return ProcessExecutor(
            templates,
            kill_grace=kill_grace,
            max_output_bytes=max_output_bytes,
            cores=cores,
            in_flight=in_flight,
            clock=clock,
        )
    if name == "sandbox":
        # Imported here: the process executor must work where the sandbox's needs are absent.
        from benchrunner.runner.executors.sandbox import SandboxExecutor

        return SandboxExecutor(
            registry_url=registry_url,
            work_root=sandbox_dir,
            kill_grace=kill_grace,
            max_output_bytes=max_output_bytes,
            cores=cores,
            runtime=oci_runtime,
            in_flight=in_flight,
            clock=clock,
        )
    if name in KNOWN_EXECUTORS:
        raise ExecutorError(f"executor {name!r} is not available in this version; use 'process'")
    raise ExecutorError(f"unknown executor {name!r} (known: {', '.join(KNOWN_EXECUTORS)})")
