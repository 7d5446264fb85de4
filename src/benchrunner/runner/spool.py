"""The on-disk spool of terminal results not yet acknowledged by the server.

Every ``completed``/``failed``/``canceled`` message is written here *before* it is sent and
removed only after the server's ``ack``, so a result survives a lost connection and a restarted
runner process (docs/decisions/result-delivery.md). One file per job:
``{spool}/{job_uuid}.json``, holding exactly the wire message.

A removed message's file is kept under a hidden name (a *spare*, a few at most) and the next
message is written over it: a file made and a file freed per job cost more than the writing.
Spares are temporaries: a start removes them with any write cut short (``spares.py``). A power
cut soon after a result is written over a deleted one's spare can bring back the deleted
name holding the new result (the rename to the spare was not synced): that file is set aside
as ``.corrupt`` with a line saying whose result it holds. No result ever sent is lost: the
deleted one was acknowledged, and the new one's write had not returned, so it was not sent, as
with any write a power cut interrupts.

Writes are atomic and durable: a temporary file in the same directory is written, flushed and
fsynced, then renamed over the final name and the directory fsynced, all before the message is
sent. A reader therefore sees either no file or a complete one. Deletions are not synced (see
``delete``): what a power cut can undo there is a second delivery, never a lost result.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from pathlib import Path

from pydantic import ValidationError

from benchrunner.protocol import (
    Canceled,
    Completed,
    Failed,
    TerminalMessage,
    encode,
    runner_message,
)
from benchrunner.runner.durable import write_durably
from benchrunner.runner.spares import SpareFiles

log = logging.getLogger(__name__)

_SUFFIX = ".json"
_TEMP_PREFIX = ".spool-"
_SPARE_PREFIX = f"{_TEMP_PREFIX}spare-"
_CORRUPT_SUFFIX = ".corrupt"


class Spool:
    """Terminal messages by job, oldest first. Not thread-safe per job: one writer per job."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._remove_stale_temporaries()
        self._spares = SpareFiles(directory, _SPARE_PREFIX)

    def path(self, job: uuid.UUID) -> Path:
        return self.directory / f"{job}{_SUFFIX}"

    def write(self, message: TerminalMessage) -> Path:
        """Store ``message`` durably, replacing any earlier one for the same job.

        Raises OSError when the disk refuses; the caller decides whether to send anyway.
        """
        target = self.path(message.job)
        data = encode(message).encode("utf-8")
        spare = self._spares.take()
        # One writer per job: the temporary, unless a spare, is named after it.
        write_durably(target, data, temp_prefix=_TEMP_PREFIX, temp_name=target.name, spare=spare)
        return target

    def read(self, job: uuid.UUID) -> TerminalMessage | None:
        """The spooled message for ``job``, or None if there is none (or it is unreadable)."""
        return self._load(self.path(job))

    def pending(self) -> list[TerminalMessage]:
        """Every spooled message, oldest first (by modification time, then name).

        A file that cannot be parsed is renamed to ``*.corrupt`` and logged, never resent.
        """
        entries: list[tuple[int, str, Path]] = []
        for path in self.directory.iterdir():
            if path.name.startswith(".") or path.suffix != _SUFFIX:
                continue
            try:
                entries.append((path.stat().st_mtime_ns, path.name, path))
            except FileNotFoundError:
                continue
        messages: list[TerminalMessage] = []
        for _, _, path in sorted(entries):
            message = self._load(path)
            if message is not None:
                messages.append(message)
        return messages

    def delete(self, job: uuid.UUID) -> None:
        """Forget ``job``'s message (its file becomes a spare, or is removed); deleting a message
        that is not there is not an error.

        Not synced: a deletion that a power cut undoes only brings the message back to be sent
        again, and the server answers a resent terminal message with ``ack``
        (docs/decisions/result-delivery.md).
        """
        with contextlib.suppress(FileNotFoundError):
            self._spares.keep(self.path(job))

    def _load(self, path: Path) -> TerminalMessage | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            message = runner_message.validate_json(raw)
        except ValidationError as exc:
            self._quarantine(path, f"not a runner message: {exc.error_count()} error(s)")
            return None
        if not isinstance(message, Completed | Failed | Canceled):
            self._quarantine(path, f"not a terminal message: {message.event!r}")
            return None
        if path.name != f"{message.job}{_SUFFIX}":
            self._quarantine(path, f"holds job {message.job}, not the job its name says")
            return None
        return message

    def _quarantine(self, path: Path, why: str) -> None:
        log.error("spool file %s is unusable (%s); renamed to *%s", path, why, _CORRUPT_SUFFIX)
        with contextlib.suppress(OSError):
            path.replace(path.with_name(path.name + _CORRUPT_SUFFIX))

    def _remove_stale_temporaries(self) -> None:
        # Left behind only by a crash in the middle of write(); the final file was never renamed.
        for path in self.directory.glob(f"{_TEMP_PREFIX}*"):
            with contextlib.suppress(OSError):
                path.unlink()
