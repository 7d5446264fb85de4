"""Users with console passwords: ``POST /v0/users`` (server admins), ``benchrunner user
create --password-file`` and ``benchrunner admin bootstrap --password-file``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.client import ApiError
from benchrunner.core import passwords
from benchrunner.server.store import accounts
from benchrunner.server.store.engine import Database
from tests.harness import Deployment, cli
from tests.registry_support import make_user


def stored_hash(deployment: Deployment, email: str) -> str | None:
    db = Database(deployment.server.db, read_threads=1)
    try:
        found = db.read_sync(accounts.user_with_password_hash, email)
    finally:
        db.close()
    assert found is not None, email
    return found[1]


def test_an_admin_creates_a_user_with_a_password(deployment: Deployment) -> None:
    with deployment.admin() as client:
        created = client.create_user("Ada", "ada@test.dev", password="analytical engine")
        assert created.email == "ada@test.dev" and created.admin is False
        assert not {"password", "password_hash"} & set(created)
        # A taken email is refused whether the name (and so the slug) is new or taken too.
        for name in ("Ada again", "Ada"):
            with pytest.raises(ApiError) as taken:
                client.create_user(name, "ada@test.dev", password="another password")
            assert taken.value.status == 409
            assert taken.value.message == "a user with email 'ada@test.dev' exists"
        with pytest.raises(ApiError) as short:
            client.create_user("Bob", "bob@test.dev", password="short")
        assert short.value.status == 400 and "password" in short.value.message
    assert passwords.verify(stored_hash(deployment, "ada@test.dev"), "analytical engine")


def test_only_admins_create_users(deployment: Deployment) -> None:
    member = make_user(deployment.server, "member@test.dev", member_of="acme")
    for token in (member, None):
        with deployment.server.client(token) as client, pytest.raises(ApiError) as refused:
            client.create_user("Eve", "eve@test.dev", password="let me in please")
        assert refused.value.status == (403 if token else 401)


@pytest.mark.engine_independent
def test_user_create_and_admin_bootstrap_read_a_password_file(
    deployment: Deployment, tmp_path: Path
) -> None:
    password_file = tmp_path / "password"
    password_file.write_text("from a file, not argv\n")
    env = deployment.cli_env(tmp_path)
    cli(
        "user",
        "create",
        "Grace",
        "--email",
        "grace@test.dev",
        "--password-file",
        str(password_file),
        env=env,
    )
    assert passwords.verify(stored_hash(deployment, "grace@test.dev"), "from a file, not argv")

    cli(
        "admin",
        "bootstrap",
        "--email",
        "root@test.dev",
        "--db",
        deployment.server.db,
        "--password-file",
        str(password_file),
        env=env,
    )
    assert passwords.verify(stored_hash(deployment, "root@test.dev"), "from a file, not argv")

    password_file.write_text("short\n")
    refused = cli(
        "user",
        "create",
        "Hal",
        "--email",
        "hal@test.dev",
        "--password-file",
        str(password_file),
        env=env,
        check=False,
    )
    assert refused.returncode == 2
    assert "at least 8 characters" in refused.stderr + refused.stdout
