"""The spare files the runner writes over (src/benchrunner/runner/spares.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchrunner.runner.spares import SpareFiles


def test_a_kept_file_is_renamed_to_a_name_of_this_process_and_taken_back(tmp_path: Path) -> None:
    spares = SpareFiles(tmp_path, ".x-spare-", kept=2)
    old = tmp_path / "old.json"
    old.write_bytes(b"old")
    spares.keep(old)
    assert not old.exists()
    (kept,) = tmp_path.iterdir()
    assert kept.name.startswith(f".x-spare-{os.getpid()}-")
    assert spares.take() == kept
    assert spares.take() is None


def test_past_the_number_kept_a_file_is_removed(tmp_path: Path) -> None:
    spares = SpareFiles(tmp_path, ".x-spare-", kept=2)
    for n in range(3):
        path = tmp_path / f"{n}.json"
        path.write_bytes(b"x")
        spares.keep(path)
    assert len(list(tmp_path.iterdir())) == 2


def test_a_spare_written_over_is_kept_again_under_its_own_name(tmp_path: Path) -> None:
    spares = SpareFiles(tmp_path, ".x-spare-", kept=2)
    path = tmp_path / "a.json"
    path.write_bytes(b"a")
    spares.keep(path)
    spare = spares.take()
    assert spare is not None
    spares.keep(spare)
    assert list(tmp_path.iterdir()) == [spare]
    assert spares.take() == spare


def test_a_missing_file_is_an_error_and_keeps_nothing(tmp_path: Path) -> None:
    spares = SpareFiles(tmp_path, ".x-spare-")
    with pytest.raises(FileNotFoundError):
        spares.keep(tmp_path / "gone.json")
    assert spares.take() is None
