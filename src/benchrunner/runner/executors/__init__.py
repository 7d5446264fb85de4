"""Executors: how a claimed job is run on this machine (SPEC section 6).

Only ``process`` exists so far; ``sandbox`` (OCI bundle under runc/crun) and ``microvm``
(Firecracker) will implement the same ``Executor`` interface.
"""

from __future__ import annotations

from benchrunner.core.templates import TemplateRegistry
from benchrunner.runner.cores import CorePlan
from benchrunner.runner.executors.base import Executor, ExecutorError, PreparedJob
from benchrunner.runner.executors.process import ProcessExecutor

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
) -> Executor:
    """The executor called ``name``. Raises ExecutorError for an unknown or not yet available
    executor."""
    if name == "process":
        return ProcessExecutor(
            templates, kill_grace=kill_grace, max_output_bytes=max_output_bytes, cores=cores
        )
    if name in KNOWN_EXECUTORS:
        raise ExecutorError(f"executor {name!r} is not available in this version; use 'process'")
    raise ExecutorError(f"unknown executor {name!r} (known: {', '.join(KNOWN_EXECUTORS)})")
