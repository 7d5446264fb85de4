"""Console passwords: Argon2id hashes that verify only the password they were made from, the
rules a new one must meet, and reading one from a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.core import passwords


def test_a_hash_verifies_its_password_and_no_other() -> None:
    hashed = passwords.hash_password("correct horse battery")
    assert hashed.startswith("$argon2id$")
    assert passwords.verify(hashed, "correct horse battery")
    assert not passwords.verify(hashed, "correct horse battery ")
    assert not passwords.verify(hashed, "")


def test_no_hash_and_a_broken_hash_never_verify() -> None:
    assert not passwords.verify(None, "benchrunner decoy password")
    assert not passwords.verify("not-a-hash", "anything at all")


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short", "at least 8 characters"),
        ("x" * (passwords.MAX_LENGTH + 1), "at most 1024 characters"),
        ("with a \x00 inside", "NUL"),
    ],
)
def test_rules_of_a_new_password(password: str, reason: str) -> None:
    with pytest.raises(passwords.PasswordRejected, match=reason):
        passwords.hash_password(password)


def test_a_password_file_gives_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "password"
    path.write_text("a long passphrase\nignored second line\n")
    assert passwords.read_password_file(path) == "a long passphrase"
    path.write_text("")
    with pytest.raises(passwords.PasswordRejected):
        passwords.read_password_file(path)
