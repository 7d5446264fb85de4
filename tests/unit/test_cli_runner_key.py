"""How a runner gets its key: from a file only its owner can read (what ``benchrunner up``
writes), or from ``--key``/``$BENCHRUNNER_RUNNER_KEY`` for compatibility; anything else is a
one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchrunner.cli.local_setup import write_runner_key
from benchrunner.cli.main import app
from benchrunner.cli.runner_cmds import runner_key

KEY = "bencher_runner_" + "ab" * 32


def key_file(tmp_path: Path, text: str = KEY + "\n", mode: int = 0o600) -> Path:
    path = tmp_path / "runner.key"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_key_comes_from_a_file_or_the_option() -> None:
    assert runner_key(KEY, None) == KEY


def test_a_key_file_of_mode_0600_gives_its_key(tmp_path: Path) -> None:
    assert runner_key(None, key_file(tmp_path)) == KEY
    assert runner_key(None, key_file(tmp_path, f"  {KEY}  \n\n", mode=0o400)) == KEY


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        (KEY, 0o644, r"is open to other users \(mode 0644\); run: chmod 600 "),
        (KEY, 0o620, r"is open to other users \(mode 0620\)"),
        ("", 0o600, "must hold the runner key alone, on one line"),
        (f"{KEY}\nsecond line", 0o600, "must hold the runner key alone, on one line"),
    ],
)
def test_an_unsafe_or_unusable_key_file_is_refused(
    tmp_path: Path, text: str, mode: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        runner_key(None, key_file(tmp_path, text, mode))


def test_a_missing_key_file_or_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot read key file .*: No such file"):
        runner_key(None, tmp_path / "missing")
    with pytest.raises(ValueError, match="is not a regular file"):
        runner_key(None, tmp_path)


def test_the_key_must_be_given_exactly_once(tmp_path: Path) -> None:
    for key, path in ((None, None), (KEY, key_file(tmp_path))):
        with pytest.raises(ValueError, match="give the runner key once: --key-file FILE"):
            runner_key(key, path)


def test_runner_up_with_an_unsafe_key_file_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCHRUNNER_RUNNER_KEY", raising=False)
    path = key_file(tmp_path, mode=0o644)
    result = CliRunner().invoke(app, ["runner", "up", "--runner", "r1", "--key-file", str(path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: key file {path} is open to other users (mode 0644); run: chmod 600 {path}\n"
    )


def test_up_writes_the_key_file_for_its_owner_only(tmp_path: Path) -> None:
    old = tmp_path / "runner.key"
    old.write_text("an older key, once readable by all\n")
    old.chmod(0o644)
    path = write_runner_key(tmp_path, KEY)
    assert path == old
    assert path.stat().st_mode & 0o777 == 0o600
    assert runner_key(None, path) == KEY
