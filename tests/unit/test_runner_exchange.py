"""``replace_existing``: the target always names a whole file, the temporary is gone after."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.runner.exchange import replace_existing


def test_an_existing_target_gets_the_new_content_and_the_old_inode_is_unlinked(
    tmp_path: Path,
) -> None:
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    target.write_text("old")
    new.write_text("new")
    old_inode = target.stat().st_ino
    replace_existing(new, target)
    assert target.read_text() == "new"
    assert target.stat().st_ino != old_inode
    assert not new.exists()
    assert [path.name for path in tmp_path.iterdir()] == ["record.json"]


def test_a_missing_target_is_created_by_a_rename(tmp_path: Path) -> None:
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    new.write_text("new")
    replace_existing(new, target)
    assert target.read_text() == "new"
    assert not new.exists()


def test_a_missing_new_file_raises_and_leaves_the_target(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_text("old")
    with pytest.raises(FileNotFoundError):
        replace_existing(tmp_path / ".temp", target)
    assert target.read_text() == "old"
