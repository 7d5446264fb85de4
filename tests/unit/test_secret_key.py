"""The server's JWT secret key file: replicas starting together on one data directory agree."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from benchrunner.server.oci_tokens import load_or_create_secret

REPLICAS = 8


def _start_together(data_dir: Path) -> list[str]:
    barrier = threading.Barrier(REPLICAS)
    keys: list[str] = []
    errors: list[BaseException] = []

    def replica() -> None:
        try:
            barrier.wait(timeout=30)
            keys.append(load_or_create_secret(data_dir, None))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=replica) for _ in range(REPLICAS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return keys


def test_replicas_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    for round_ in range(30):
        data_dir = tmp_path / f"round-{round_}"
        keys = _start_together(data_dir)
        assert len(keys) == REPLICAS
        assert len(set(keys)) == 1, f"round {round_}: {len(set(keys))} different keys"
        (key,) = set(keys)
        assert len(key) == 64
        key_file = data_dir / "secret_key"
        assert key_file.read_text() == key
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert [p.name for p in data_dir.iterdir()] == ["secret_key"]  # no staged files left


def test_an_existing_key_is_kept_and_a_configured_one_wins(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path, None)
    assert load_or_create_secret(tmp_path, None) == first
    assert load_or_create_secret(tmp_path, "configured") == "configured"


def test_an_empty_key_file_is_refused_not_used(tmp_path: Path) -> None:
    (tmp_path / "secret_key").write_text("")
    with pytest.raises(RuntimeError, match="is empty; delete it"):
        load_or_create_secret(tmp_path, None)
