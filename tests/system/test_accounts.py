"""Accounts as organizations need them (Bencher's endpoints): a server admin creates and lists
users; users create, list and revoke their own API tokens (shown once, hashed at rest); an
organization's leaders add members with a role, change it and remove them.

The test that lists every user of the server starts a server of its own; the others share one
per engine, each in an organization of its own (``tenant``) with users named after it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from benchrunner.client import ApiError, BenchrunnerClient
from benchrunner.server.store.engine import Database
from benchrunner.server.store.tables import api_token
from tests.harness import Deployment, cli
from tests.registry_support import make_user


def _status(call: object) -> int:
    """The HTTP status of an ``ApiError`` the call raised (the call is a zero-argument lambda)."""
    assert callable(call)
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value.status


def _stored_tokens(deployment: Deployment) -> list[sa.Row[tuple[str, str]]]:
    db = Database(deployment.server.db, read_threads=1)
    try:
        query = sa.select(api_token.c.name, api_token.c.token_hash)
        return db.read_sync(lambda conn: list(conn.execute(query)))
    finally:
        db.close()


def test_a_user_creates_lists_and_revokes_their_own_tokens(deployment: Deployment) -> None:
    with deployment.admin() as admin:
        ada = admin.create_user("Ada", "ada@test.dev")
        # A server admin may issue a user's first token; the user takes it from there.
        first = admin.create_token(ada.slug, "from the admin")
        users = {u.email: u for u in admin.list_users(per_page=10)}
        assert set(users) == {"admin@test.dev", "ada@test.dev"}
        admin_slug = users["admin@test.dev"].slug
        assert admin.get_user(admin_slug).admin is True
    assert first.user == ada.uuid and first.token.startswith("benchrunner_api_")

    with BenchrunnerClient(deployment.server.url, first.token) as as_ada:
        assert as_ada.get_user(ada.slug).email == "ada@test.dev"
        ci = as_ada.create_token(ada.uuid, "ci", ttl=3600)
        assert ci.expiration is not None and ci.revoked is None
        listed = as_ada.list_tokens(ada.slug)
        assert [t.name for t in listed] == ["ci", "from the admin"]
        assert all(
            "token" not in (t.model_extra or {}) for t in listed
        )  # shown once, at creation only
        # Another user's account is not found; server-wide lists are for admins.
        assert _status(lambda: as_ada.list_tokens(admin_slug)) == 404
        assert _status(lambda: as_ada.get_user(admin_slug)) == 404
        assert _status(lambda: as_ada.create_token(admin_slug, "mine now")) == 404
        assert _status(lambda: as_ada.list_users()) == 403

    with BenchrunnerClient(deployment.server.url, ci.token) as with_ci:
        with_ci.revoke_token(ada.slug, ci.uuid)
        assert _status(lambda: with_ci.get_user(ada.slug)) == 401  # it revoked itself
    with BenchrunnerClient(deployment.server.url, first.token) as as_ada:
        as_ada.revoke_token(ada.slug, ci.uuid)  # again: no error, nothing changes
        assert [t.name for t in as_ada.list_tokens(ada.slug)] == ["from the admin"]
        [revoked] = as_ada.list_tokens(ada.slug, revoked=True)
        assert revoked.uuid == ci.uuid and revoked.revoked is not None
        unknown = "00000000-0000-4000-8000-000000000000"
        assert _status(lambda: as_ada.revoke_token(ada.slug, unknown)) == 404

    stored = {row.name: row.token_hash for row in _stored_tokens(deployment)}
    for created in (first, ci):
        assert stored[created.name] == hashlib.sha256(created.token.encode()).hexdigest()
    assert not {first.token, ci.token} & set(stored.values())


@pytest.mark.engine_independent
def test_token_bodies_are_checked(tenant: Deployment) -> None:
    with tenant.http() as http:
        for body in ({"name": ""}, {"name": "x", "ttl": 0}, {"name": "x", "ttl": 2**32}, {}):
            answer = http.post("/v0/users/admin/tokens", json=body)
            assert answer.status_code == 400, (body, answer.text)
        assert http.get("/v0/users/admin/tokens/not-a-uuid").status_code == 400


@pytest.mark.engine_independent
def test_an_empty_or_malformed_authorization_header_is_a_401_that_says_so(
    tenant: Deployment,
) -> None:
    """``Bearer $TOKEN`` with the variable unset must not pass for an anonymous caller (who
    would be told 403 or 404 about a project they own); no header at all still does."""
    project = f"{tenant.project}-p"
    run = {"project": project, "results": [json.dumps({"b": {"latency": {"value": 1}}})]}
    with httpx.Client(base_url=tenant.server.url, timeout=30) as http:
        for header in ("", "Bearer", "Token abc", "bearer"):
            for answer in (
                http.get(f"/v0/projects/{project}", headers={"Authorization": header}),
                http.post("/v0/run", json=run, headers={"Authorization": header}),
            ):
                assert answer.status_code == 401, (header, answer.text)
                assert "Authorization header is empty or malformed" in answer.json()["message"]
                assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert http.get(f"/v0/projects/{project}").status_code == 404  # anonymous: not found


def test_leaders_add_change_and_remove_members(tenant: Deployment) -> None:
    own, org = tenant.project, tenant.org
    lead_email, bob_email = f"lead-{own}@test.dev", f"bob-{own}@test.dev"
    stranger_email, bob_slug = f"stranger-{own}@test.dev", f"bob-{own}"
    lead = make_user(tenant.server, lead_email)
    bob = make_user(tenant.server, bob_email)
    stranger = make_user(tenant.server, stranger_email)
    secret = f"{own}-secret"
    with tenant.admin() as admin:
        admin.create_project(org, secret, "private", slug=secret)
        assert admin.add_member(org, lead_email, "leader").role == "leader"
        assert _status(lambda: admin.add_member(org, lead_email)) == 409
        assert _status(lambda: admin.add_member(org, f"nobody-{own}@test.dev")) == 404
    with BenchrunnerClient(tenant.server.url, lead) as leader:
        added = leader.add_member(org, bob_email)
        assert (added.email, added.role) == (bob_email, "member")
        members = {m.email: m.role for m in leader.list_members(org, per_page=10)}
        assert members == {
            "admin@test.dev": "leader",
            lead_email: "leader",
            bob_email: "member",
        }
    with BenchrunnerClient(tenant.server.url, bob) as member:
        assert member.get_project(secret).slug == secret
        assert len(member.list_members(org, per_page=10)) == 3  # members may look
        assert _status(lambda: member.add_member(org, stranger_email)) == 403
        assert _status(lambda: member.update_member(org, bob_slug, "leader")) == 403
    with BenchrunnerClient(tenant.server.url, stranger) as outsider:
        assert _status(lambda: outsider.list_members(org)) == 404
        assert _status(lambda: outsider.add_member(org, stranger_email)) == 404
    with BenchrunnerClient(tenant.server.url, lead) as leader:
        assert leader.update_member(org, bob_slug, "leader").role == "leader"
        assert leader.update_member(org, bob_slug, "member").role == "member"
        leader.remove_member(org, bob_slug)
        assert _status(lambda: leader.remove_member(org, bob_slug)) == 404
    with BenchrunnerClient(tenant.server.url, bob) as former:
        assert _status(lambda: former.get_project(secret)) == 404


def test_an_organization_keeps_its_last_leader(tenant: Deployment) -> None:
    own = tenant.project
    solo_slug, helper_slug = f"solo-{own}", f"helper-{own}"
    solo = make_user(tenant.server, f"{solo_slug}@test.dev")
    make_user(tenant.server, f"{helper_slug}@test.dev")
    with BenchrunnerClient(tenant.server.url, solo) as founder:
        org = founder.create_organization(f"Solo {own}").slug
        assert org == f"solo-{own}"
        for refused in (
            lambda: founder.update_member(org, solo_slug, "member"),
            lambda: founder.remove_member(org, solo_slug),
        ):
            with pytest.raises(ApiError) as last:
                refused()
            assert last.value.status == 409
            assert "last leader" in last.value.message
        founder.add_member(org, f"{helper_slug}@test.dev", "leader")
        assert founder.update_member(org, solo_slug, "member").role == "member"
    with tenant.admin() as admin:
        assert _status(lambda: admin.remove_member(org, helper_slug)) == 409
        admin.remove_member(org, solo_slug)
        assert [m.email for m in admin.list_members(org)] == [f"{helper_slug}@test.dev"]


@pytest.mark.engine_independent
def test_the_cli_manages_tokens_members_and_organization_runners(
    tenant: Deployment, tmp_path: Path
) -> None:
    admin_env = tenant.cli_env(tmp_path)

    def run(*args: str, env: dict[str, str] = admin_env) -> Any:
        return json.loads(cli(*args, "--json", env=env).stdout)

    own, org = tenant.project, tenant.org
    bob_email = f"bob-{own}@test.dev"
    bob = run("user", "create", f"Bob {own}", "--email", bob_email)
    assert bob["slug"] == f"bob-{own}"
    first = run("user", "token", "create", bob["slug"], "first")
    bob_env = {**admin_env, "BENCHRUNNER_TOKEN": first["token"]}
    ci = run("user", "token", "create", bob["slug"], "ci", "--ttl", "600", env=bob_env)
    assert [t["name"] for t in run("user", "token", "list", bob["slug"], env=bob_env)] == [
        "ci",
        "first",
    ]
    revoked = cli("user", "token", "revoke", bob["slug"], ci["uuid"], env=bob_env)
    assert ci["uuid"] in revoked.stdout + revoked.stderr
    assert [t["uuid"] for t in run("user", "token", "list", bob["slug"], "--revoked")] == [
        ci["uuid"]
    ]
    refused = cli("org", "list", env={**admin_env, "BENCHRUNNER_TOKEN": ci["token"]}, check=False)
    assert refused.returncode == 1 and "invalid or expired API token" in refused.stderr

    added = run("org", "member", "add", org, bob_email, "--role", "leader")
    assert added["role"] == "leader"
    assert {m["email"] for m in run("org", "member", "list", org, env=bob_env)} == {
        "admin@test.dev",
        bob_email,
    }
    assert (
        run("org", "member", "set-role", org, bob["slug"], "--role", "member")["role"] == "member"
    )
    cli("org", "member", "remove", org, bob["slug"], env=admin_env)
    assert [m["email"] for m in run("org", "member", "list", org)] == ["admin@test.dev"]

    box_slug = f"{own}-box"
    box = run("runner", "create", box_slug, "--spec", tenant.spec, "--organization", org)
    assert box["organization"] == run("org", "show", org)["uuid"] and box["token"]
    assert [r["slug"] for r in run("runner", "list", "--organization", org)] == [box_slug]
    shown = cli("runner", "show", box_slug, "--organization", org, env=admin_env).stdout
    assert "last seen" in shown and box["organization"] in shown
    archived = run("runner", "archive", box_slug, "--organization", org)
    assert archived["archived"] is not None
