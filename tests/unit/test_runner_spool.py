"""The runner's spool: durable terminal results, atomic writes, oldest-first listing."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from benchrunner.protocol import (
    Canceled,
    Completed,
    Failed,
    IterationResult,
    TerminalMessage,
    encode,
)
from benchrunner.runner.spool import Spool


def completed(job: uuid.UUID | None = None) -> Completed:
    return Completed(
        job=job or uuid.uuid4(),
        results=[
            IterationResult(exit_code=0, stdout="é ok\n", stderr="", output={"out.json": "{}"})
        ],
    )


@pytest.mark.parametrize(
    "message",
    [
        completed(),
        Failed(job=uuid.uuid4(), results=[IterationResult(exit_code=3)], error="iteration 0"),
        Failed(job=uuid.uuid4(), error="template 'x' is not approved"),
        Canceled(job=uuid.uuid4()),
    ],
    ids=["completed", "failed", "failed-no-results", "canceled"],
)
def test_write_then_read_round_trips(tmp_path: Path, message: TerminalMessage) -> None:
    spool = Spool(tmp_path)
    path = spool.write(message)
    assert path == tmp_path / f"{message.job}.json"
    assert path.read_text(encoding="utf-8") == encode(message)
    assert spool.read(message.job) == message
    assert spool.pending() == [message]


def test_directory_is_created_private(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "spool"
    Spool(directory)
    assert directory.is_dir()
    assert directory.stat().st_mode & 0o777 == 0o700


def test_delete_forgets_and_is_idempotent(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    message = completed()
    spool.write(message)
    spool.delete(message.job)
    assert spool.read(message.job) is None
    assert spool.pending() == []
    spool.delete(message.job)  # not an error
    assert all(path.name.startswith(".spool-spare-") for path in tmp_path.iterdir())
    Spool(tmp_path)  # a start removes the spares
    assert list(tmp_path.iterdir()) == []


def test_a_deleted_message_file_is_written_over_by_the_next_whole(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    long = completed()
    spool.write(long)
    spool.delete(long.job)
    (spare,) = tmp_path.iterdir()
    inode = spare.stat().st_ino
    short = Canceled(job=uuid.uuid4())
    path = spool.write(short)
    assert path.stat().st_ino == inode
    assert path.read_text(encoding="utf-8") == encode(short)
    assert spool.pending() == [short]
    assert list(tmp_path.iterdir()) == [path]


def test_pending_lists_oldest_first(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    messages: list[TerminalMessage] = [
        completed(),
        Canceled(job=uuid.uuid4()),
        Failed(job=uuid.uuid4(), error="x"),
    ]
    for age, message in zip((300, 100, 200), messages, strict=True):
        path = spool.write(message)
        os.utime(path, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    assert spool.pending() == [messages[0], messages[2], messages[1]]


def test_rewrite_replaces_whole_file_without_leftovers(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    job = uuid.uuid4()
    spool.write(Failed(job=job, error="first"))
    spool.write(completed(job))
    assert spool.read(job) == completed(job)
    assert [p.name for p in tmp_path.iterdir()] == [f"{job}.json"]


def test_failed_write_keeps_previous_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = Spool(tmp_path)
    job = uuid.uuid4()
    original = Failed(job=job, error="original")
    spool.write(original)

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        spool.write(completed(job))
    monkeypatch.undo()
    assert spool.read(job) == original
    assert [p.name for p in tmp_path.iterdir()] == [f"{job}.json"]


def test_stale_temporaries_and_foreign_files_are_not_results(tmp_path: Path) -> None:
    message = completed()
    Spool(tmp_path).write(message)
    (tmp_path / ".spool-abc123").write_text("half a message")
    (tmp_path / "notes.txt").write_text("not a result")
    spool = Spool(tmp_path)  # a restart after a crash mid-write
    assert not (tmp_path / ".spool-abc123").exists()
    assert spool.pending() == [message]
    assert (tmp_path / "notes.txt").exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"event":"ready","poll_timeout":30}',
        '{"event":"completed","job":"JOB"}',
    ],
    ids=["invalid-json", "not-terminal", "missing-results"],
)
def test_unusable_file_is_quarantined(tmp_path: Path, content: str) -> None:
    job = uuid.uuid4()
    path = tmp_path / f"{job}.json"
    path.write_text(content.replace("JOB", str(job)))
    good = completed()
    spool = Spool(tmp_path)
    spool.write(good)
    assert spool.pending() == [good]
    assert not path.exists()
    assert (tmp_path / f"{job}.json.corrupt").exists()


def test_file_holding_another_job_is_quarantined(tmp_path: Path) -> None:
    message = completed()
    wrong = tmp_path / f"{uuid.uuid4()}.json"
    wrong.write_text(encode(message))
    assert Spool(tmp_path).pending() == []
    assert wrong.with_name(wrong.name + ".corrupt").exists()
