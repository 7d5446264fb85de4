"""A tuned runner's life: take the host lock, put back what a crashed earlier run left, apply
the settings, hold C-states and turn ASLR off for job processes, and undo all of it on exit.
Also the untuned start (``runner up`` without ``--tune``) and ``runner restore``: both only put
back what a state file names."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum

from benchrunner.runner.tuning import personality
from benchrunner.runner.tuning.dma_latency import DmaLatencyHold
from benchrunner.runner.tuning.hostfs import HostFs
from benchrunner.runner.tuning.lock import HostLock, HostLockedError
from benchrunner.runner.tuning.settings import PARTITION, CoreSplit
from benchrunner.runner.tuning.state import STATE_DIR, StateFile, StateFileError
from benchrunner.runner.tuning.tuner import (
    Outcome,
    TuningRefusedError,
    apply_settings,
    restore,
)

log = logging.getLogger(__name__)


class TuneMode(StrEnum):
    STRICT = "strict"
    BEST_EFFORT = "best-effort"


class RestoreError(Exception):
    """Some settings could not be put back; the state file keeps them for another try."""


@dataclass
class TunedHost:
    outcomes: list[Outcome] = field(default_factory=list)
    job_cgroup: str | None = None
    """Relative path of the partition's ``cgroup.procs`` (the v2 partition, or the v1 cpuset
    of the job cores) when the partition was applied."""


def restore_leftovers(fs: HostFs) -> list[str]:
    """``runner restore``: put back what a state file names, under the host lock. Returns
    the settings restored. Raises HostLockedError while a tuned runner lives, RestoreError
    (naming the files) if some could not be restored, StateFileError for a bad state file."""
    directory = fs.path(STATE_DIR)
    state = StateFile(directory)
    if not state.exists():
        return []
    lock = HostLock(directory)
    lock.acquire()
    try:
        return _restore_file(fs, state)
    finally:
        lock.release()


def _restore_file(fs: HostFs, state: StateFile) -> list[str]:
    entries = state.load()
    failures = restore(fs, state)
    if failures:
        raise RestoreError("could not restore " + "; ".join(failures))
    return sorted({entry.setting for entry in entries})


@contextmanager
def tuned_host(fs: HostFs, cores: CoreSplit, mode: TuneMode | None) -> Iterator[TunedHost]:
    """The host tuned for jobs on ``cores.job`` for the block (``mode`` None: only leftovers of
    a crashed run are restored, and one that cannot be is logged, not raised). Raises
    HostLockedError when another tuned runner holds the host, TuningRefusedError in strict
    mode, RestoreError or StateFileError when leftovers cannot be restored before tuning."""
    directory = fs.path(STATE_DIR)
    state = StateFile(directory)
    lock = HostLock(directory)
    if mode is None:
        # An untuned runner still runs on a host it could not put back: it says so loudly.
        try:
            _log_restored(restore_leftovers(fs))
        except HostLockedError as exc:
            log.info("not restoring the tuning state: %s", exc)
        except (RestoreError, StateFileError) as exc:
            log.error("the host keeps settings of a previous tuned run: %s", exc)
        yield TunedHost()
        return
    lock.acquire()
    try:
        if state.exists():
            _log_restored(_restore_file(fs, state))
    except BaseException:
        lock.release()  # and the state file stays as it is, for `runner restore`
        raise
    hold = DmaLatencyHold(fs)
    previous_personality: int | None = None
    try:
        tuned = TunedHost(apply_settings(fs, cores, state, strict=mode is TuneMode.STRICT))
        tuned.job_cgroup = _partition_procs(state)
        tuned.outcomes.append(_hold_c_states(hold))
        aslr, previous_personality = _aslr_off_for_jobs()
        tuned.outcomes.append(aslr)
        if mode is TuneMode.STRICT and not all(o.applied for o in tuned.outcomes):
            failed = next(o for o in tuned.outcomes if not o.applied)
            raise TuningRefusedError(failed.setting, failed.detail)
        yield tuned
    finally:
        hold.release()
        if previous_personality is not None:
            personality.set_personality(previous_personality)
        try:
            failures = restore(fs, state)
        finally:
            lock.release()
        if failures:
            log.error("could not restore: %s (kept in %s)", "; ".join(failures), state.path)


def _log_restored(restored: list[str]) -> None:
    if restored:
        log.warning("restored settings a previous tuned run left: %s", ", ".join(restored))


def _partition_procs(state: StateFile) -> str | None:
    # The directory the partition setting created (recorded only while it stays applied).
    for entry in state.entries:
        created = entry.undo is None and not entry.tasks_from
        if entry.setting == "cpuset_partition" and created and entry.path.endswith(PARTITION):
            return f"{entry.path}/cgroup.procs"
    return None


def _hold_c_states(hold: DmaLatencyHold) -> Outcome:
    try:
        hold.hold()
    except OSError as exc:
        return Outcome("c_states", False, f"cannot hold /dev/cpu_dma_latency: {exc.strerror}")
    return Outcome("c_states", True, "held through /dev/cpu_dma_latency = 0")


def _aslr_off_for_jobs() -> tuple[Outcome, int | None]:
    try:
        previous = personality.current()
        personality.set_personality(previous | personality.ADDR_NO_RANDOMIZE)
    except OSError as exc:
        return Outcome("aslr", False, f"personality refused: {exc.strerror}"), None
    return Outcome("aslr", True, "off for job processes (personality ADDR_NO_RANDOMIZE)"), previous
