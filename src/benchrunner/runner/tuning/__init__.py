"""A quiet host for benchmarks (docs/decisions/noise.md): ``preflight`` says what on this host
perturbs measurements; ``session.tuned_host`` applies the reversible settings for a runner's life
and puts them back, also after a crash (``state.py``). Every file is reached through ``HostFs``,
whose root tests replace with a tree of their own.

Errors: ``HostLockedError`` (another tuned runner), ``TuningRefusedError`` (strict tuning could
not apply a setting; the host is as it was), ``RestoreError`` (a setting could not be put back;
kept in the state file), ``StateFileError`` (a state file that tuning did not write).
"""

from __future__ import annotations

from benchrunner.runner.tuning.cpulist import parse_cpulist
from benchrunner.runner.tuning.hostfs import HostFs
from benchrunner.runner.tuning.lock import HostLockedError
from benchrunner.runner.tuning.preflight import Preflight, describe, run_preflight
from benchrunner.runner.tuning.session import (
    RestoreError,
    TunedHost,
    TuneMode,
    restore_leftovers,
    tuned_host,
)
from benchrunner.runner.tuning.settings import CoreSplit
from benchrunner.runner.tuning.state import StateFileError
from benchrunner.runner.tuning.tuner import TuningRefusedError

__all__ = [
    "CoreSplit",
    "HostFs",
    "HostLockedError",
    "Preflight",
    "RestoreError",
    "StateFileError",
    "TuneMode",
    "TunedHost",
    "TuningRefusedError",
    "core_split",
    "describe",
    "parse_cpulist",
    "restore_leftovers",
    "run_preflight",
    "tuned_host",
]


def core_split(fs: HostFs, job: frozenset[int]) -> CoreSplit:
    """The job cores and the rest of the online cores (the housekeeping ones)."""
    online = fs.online_cores() or job
    return CoreSplit(job=job, housekeeping=frozenset(online - job))
