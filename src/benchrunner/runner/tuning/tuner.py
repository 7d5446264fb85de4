"""Apply the settings of ``settings.py`` and put them back: each original is recorded in the
state file before its file is written, and ``restore`` undoes the entries newest first."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from benchrunner.runner.tuning import tasks
from benchrunner.runner.tuning.hostfs import HostFs
from benchrunner.runner.tuning.settings import (
    SETTINGS,
    Blocked,
    CoreSplit,
    Form,
    MoveTasks,
    Step,
    already,
    current,
)
from benchrunner.runner.tuning.state import Entry, StateFile

log = logging.getLogger(__name__)


class TuningRefusedError(Exception):
    """Strict tuning could not apply ``setting``; the host was put back as it was."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"cannot tune {setting}: {reason}")
        self.setting = setting


@dataclass(frozen=True)
class Outcome:
    setting: str
    applied: bool
    detail: str
    """What was done, or why it could not be."""


class _Cannot(Exception):
    pass


def apply_settings(
    fs: HostFs, cores: CoreSplit, state: StateFile, *, strict: bool
) -> list[Outcome]:
    """Apply every setting, recording each original in ``state`` first. Strict: the first
    setting that cannot be applied restores everything and raises TuningRefusedError.
    Best effort: it is reported in the outcome and the rest goes on. Raises OSError if the
    state file cannot be written (then nothing unrecorded was changed)."""
    outcomes: list[Outcome] = []
    for name, plan in SETTINGS:
        planned = plan(fs, cores)
        applied_before = len(state.entries)
        try:
            if isinstance(planned, Blocked):
                raise _Cannot(planned.reason)
            detail = _apply(fs, name, planned, state)
        except _Cannot as cannot:
            if strict:
                failures = restore(fs, state)
                reason = str(cannot) + (
                    f" (and could not restore: {'; '.join(failures)})" if failures else ""
                )
                raise TuningRefusedError(name, reason) from None
            # Half a setting is no setting: what of it was applied goes back now.
            failures = restore(fs, state, since=applied_before)
            undone = f" (and could not undo: {'; '.join(failures)})" if failures else ""
            outcomes.append(Outcome(name, False, str(cannot) + undone))
            continue
        outcomes.append(Outcome(name, True, detail))
    return outcomes


def _apply(fs: HostFs, name: str, changes: list[Step], state: StateFile) -> str:
    changed = skipped = 0
    notes: list[str] = []
    for change in changes:
        if isinstance(change, MoveTasks):
            notes.append(_move_tasks(fs, name, change, state))
            continue
        if change.form is Form.DIRECTORY:
            if fs.path(change.path).is_dir():
                # Not ours (a crashed run's was removed before): neither used nor removed.
                raise _Cannot(f"/{change.path} already exists")
            state.record(Entry(name, change.path, None))
            try:
                fs.make_directory(change.path)
            except OSError as exc:
                state.replace(state.entries[:-1])
                raise _Cannot(f"/{change.path}: {exc.strerror}") from None
            changed += 1
            continue
        found = current(fs, change)
        if found is None:
            if not change.required:
                skipped += 1
                continue
            raise _Cannot(f"/{change.path} cannot be read")
        if already(found, change):
            continue
        if change.recorded:
            state.record(Entry(name, change.path, change.undo or found))
        try:
            fs.write(change.path, change.value)
        except OSError as exc:
            if change.recorded:
                state.replace(state.entries[:-1])
            if not change.required:
                skipped += 1
                continue
            raise _Cannot(f"/{change.path}: {exc.strerror or exc}") from None
        changed += 1
    detail = f"{changed} file(s) changed" if changed else "already as wanted"
    detail += f", {skipped} refused by the kernel and left" if skipped else ""
    return ", ".join([detail, *notes])


def _move_tasks(fs: HostFs, name: str, move: MoveTasks, state: StateFile) -> str:
    affinity = tasks.affinities(fs, move.source)
    state.record(Entry(name, move.source, None, move.back_from, affinity))
    try:
        moved = tasks.move_all(fs, move.source, move.target)
    except OSError as exc:
        raise _Cannot(f"/{move.target}/tasks: {exc.strerror or exc}") from None
    if moved.refused:
        log.info(
            "%d thread(s) bound to a CPU stay in /%s: %s",
            len(moved.refused),
            move.source,
            " ".join(sorted(moved.refused, key=int)),
        )
    return (
        f"{len(moved.moved)} task(s) moved to /{move.target}, "
        f"{len(moved.refused)} bound to a CPU left in /{move.source}"
    )


def restore(fs: HostFs, state: StateFile, *, since: int = 0) -> list[str]:
    """Undo ``state``'s entries from the ``since``-th on, newest first. Returns what could not
    be restored (those stay in the state file for the next try; with none left the file is
    removed)."""
    left: list[Entry] = []
    failures: list[str] = []
    for entry in reversed(state.entries[since:]):
        try:
            if entry.tasks_from:
                tasks.move_back(fs, entry.path, entry.tasks_from, entry.affinity)
            elif entry.undo is None:
                fs.remove_directory(entry.path)
            else:
                fs.write(entry.path, entry.undo)
        except FileNotFoundError:
            if entry.undo is not None:
                failures.append(f"/{entry.path}: absent")
                left.append(entry)
        except OSError as exc:
            failures.append(f"/{entry.path}: {exc.strerror or exc}")
            left.append(entry)
        else:
            log.info("restored %s: /%s", entry.setting, entry.path)
    state.replace(state.entries[:since] + list(reversed(left)))
    return failures
