"""``swap_in``: the target always names a whole file; the old one is handed back."""

from __future__ import annotations

import ctypes
import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from benchrunner.runner import exchange
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


def _refusing(code: int) -> Callable[[int, bytes, int, bytes, int], int]:
    """An exchange call that fails with ``code``, as libc's ``renameat2`` reports it."""

    def refuse(_dir: int, _old: bytes, _dir2: int, _new: bytes, _flags: int) -> int:
        ctypes.set_errno(code)
        return -1

    return refuse


@pytest.mark.parametrize("code", [errno.EINVAL, errno.EPERM, errno.EOPNOTSUPP])
def test_an_exchange_refused_falls_back_to_a_rename_and_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(exchange, "_renameat2", _refusing(code))
    monkeypatch.setattr(exchange, "_looked_up", True)
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    target.write_text("old")
    new.write_text("new")
    assert not swap_in(new, target)
    assert target.read_text() == "new"
    assert exchange._renameat2 is None


def test_a_refusal_the_rename_shares_raises_and_keeps_the_exchange(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse = _refusing(errno.EPERM)
    monkeypatch.setattr(exchange, "_renameat2", refuse)
    monkeypatch.setattr(exchange, "_looked_up", True)
    target = tmp_path / "record.json"
    target.write_text("old")
    with pytest.raises(FileNotFoundError):  # the rename fails too: the file, not the exchange
        swap_in(tmp_path / ".missing", target)
    assert exchange._renameat2 is refuse
    assert target.read_text() == "old"


def test_another_error_of_the_exchange_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exchange, "_renameat2", _refusing(errno.EACCES))
    monkeypatch.setattr(exchange, "_looked_up", True)
    target, new = tmp_path / "record.json", tmp_path / ".temp"
    target.write_text("old")
    new.write_text("new")
    with pytest.raises(PermissionError):
        swap_in(new, target)
    assert target.read_text() == "old"
