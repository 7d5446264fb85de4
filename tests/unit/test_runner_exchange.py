"""``swap_in``: the target always names a whole file; the old one is handed back."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.runner.exchange import swap_in


def test_an_existing_target_is_exchanged_and_the_old_file_handed_back(tmp_path: Path) -> None:
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    target.write_text("old")
    new.write_text("new")
    assert swap_in(new, target)
    assert target.read_text() == "new"
    assert new.read_text() == "old"


def test_a_missing_target_is_created_by_a_rename(tmp_path: Path) -> None:
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    new.write_text("new")
    assert not swap_in(new, target)
    assert target.read_text() == "new"
    assert not new.exists()


def test_a_missing_new_file_raises_and_leaves_the_target(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_text("old")
    with pytest.raises(FileNotFoundError):
        swap_in(tmp_path / ".temp", target)
    assert target.read_text() == "old"
