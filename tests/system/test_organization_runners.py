"""Organization runners (docs/decisions/organization-runners.md) against a real server and real
channels: an organization's leaders manage them under ``/v0/organizations/{organization}/runners``,
its members only read them, everyone else finds nothing; such a runner claims only its
organization's jobs, while a server runner still takes everyone's."""

from __future__ import annotations

import pytest

from benchrunner.client import ApiError, BenchrunnerClient
from tests.harness import Deployment, RawChannel
from tests.registry_support import make_user


def _status(call: object) -> int:
    assert callable(call)
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value.status


def _rival(deployment: Deployment) -> str:
    """A second organization (team plan: no limit on its jobs in flight) with a project and a
    leader who is no member of acme; the leader's API token."""
    leader = make_user(deployment.server, "rival@test.dev")
    with deployment.admin() as admin:
        admin.create_organization("rival", "team")
        admin.create_project("rival", "rival-bench", "public")
        admin.add_member("rival", "rival@test.dev", "leader")
    return leader


def test_leaders_manage_members_read_others_find_nothing(deployment: Deployment) -> None:
    lead = make_user(deployment.server, "lead@test.dev")
    member = make_user(deployment.server, "member@test.dev", member_of="acme")
    rival = _rival(deployment)
    with deployment.admin() as admin:
        admin.add_member("acme", "lead@test.dev", "leader")
        server_runner = admin.create_runner("shared", ["small"])
        acme = admin.get_organization("acme")
    assert server_runner.organization is None

    with BenchrunnerClient(deployment.server.url, lead) as leader:
        created = leader.create_runner("acme-box", ["small"], organization="acme")
        assert created.organization == acme.uuid and created.token
        assert created.last_seen_at is None and "last_heartbeat_at" in created.model_fields_set
        assert [s.slug for s in created.specs] == ["small"]
        assert [r.slug for r in leader.list_runners(organization="acme")] == ["acme-box"]
        # A server runner is not one of the organization's, even to its leader.
        assert _status(lambda: leader.get_runner("shared", organization="acme")) == 404
        assert _status(lambda: leader.list_runners()) == 403  # /v0/runners: admins only
        renamed = leader.update_runner("acme-box", name="Acme box", organization="acme")
        assert renamed.name == "Acme box"

    with BenchrunnerClient(deployment.server.url, member) as reader:
        assert [r.slug for r in reader.list_runners(organization="acme")] == ["acme-box"]
        assert reader.get_runner("acme-box", organization="acme").name == "Acme box"
        assert _status(lambda: reader.create_runner("mine", organization="acme")) == 403
        assert _status(lambda: reader.update_runner("acme-box", paused=True, organization="acme"))
        assert _status(lambda: reader.rotate_runner_token("acme-box", organization="acme")) == 403

    with BenchrunnerClient(deployment.server.url, rival) as outsider:
        outsider.create_runner("rival-box", ["small"], organization="rival")
        assert [r.slug for r in outsider.list_runners(organization="rival")] == ["rival-box"]
        assert _status(lambda: outsider.list_runners(organization="acme")) == 404
        assert _status(lambda: outsider.get_runner("acme-box", organization="acme")) == 404
        # Another organization's runner, under one's own organization: not found either.
        assert _status(lambda: outsider.get_runner("acme-box", organization="rival")) == 404
        assert _status(lambda: outsider.rotate_runner_token("acme-box", organization="rival"))

    with deployment.admin() as admin:  # server admins see and manage every runner
        owners = {r.slug: r.organization for r in admin.list_runners(per_page=10)}
        assert set(owners) == {"shared", "acme-box", "rival-box"}
        assert (owners["shared"], owners["acme-box"]) == (None, acme.uuid)
        assert owners["rival-box"] not in (None, acme.uuid)
        assert admin.get_runner("acme-box", organization="acme").slug == "acme-box"


def test_rotation_and_archiving_by_a_leader_lock_the_old_token_out(
    deployment: Deployment,
) -> None:
    with deployment.admin() as admin:
        created = admin.create_runner("acme-box", ["small"], organization="acme")
        channel = RawChannel(deployment.server, "acme-box", created.token)
        rotated = admin.rotate_runner_token("acme-box", organization="acme").token
        assert channel.wait_closed()[0] is not None  # the old token's channel is closed
        RawChannel(deployment.server, "acme-box", rotated).close()
        with deployment.http() as http:
            key = http.post("/v0/organizations/acme/runners/acme-box/key").json()
        assert key["key"].startswith("bencher_runner_") and len(key["key"]) == 45
        archived = admin.update_runner("acme-box", archived=True, organization="acme")
        assert archived.archived is not None
        assert _status(lambda: admin.rotate_runner_token("acme-box", organization="acme")) == 409
        assert admin.list_runners(organization="acme") == []


def test_organization_runners_claim_only_their_organizations_jobs(
    deployment: Deployment,
) -> None:
    rival = _rival(deployment)
    with BenchrunnerClient(deployment.server.url, rival) as client:
        rival_runner = client.create_runner("rival-box", ["small"], organization="rival")
    with deployment.admin() as admin:
        acme_runner = admin.create_runner("acme-box", ["small"], organization="acme")
    acme_box = RawChannel(deployment.server, "acme-box", acme_runner.token)
    rival_box = RawChannel(deployment.server, "rival-box", rival_runner.token)
    shared = deployment.channel("shared")
    try:
        rival_jobs = [deployment.submit("bench.noop", project="rival-bench") for _ in range(2)]
        # The rival's jobs are the only ones pending: acme's runner takes neither.
        assert acme_box.ask({"event": "ready", "poll_timeout": 1})["event"] == "no_job"
        acme_job = deployment.submit("bench.noop")
        assert acme_box.claim()["uuid"] == acme_job
        assert rival_box.claim()["uuid"] == rival_jobs[0]
        assert shared.claim()["uuid"] == rival_jobs[1]  # a server runner takes anyone's
        assert rival_box.ask({"event": "running"})["event"] == "ack"
        with deployment.admin() as admin:
            seen = admin.get_runner("rival-box")
        assert seen.last_seen_at is not None
        assert seen.last_heartbeat_at == seen.last_seen_at == seen.last_heartbeat
        assert deployment.status(rival_jobs[0], project="rival-bench") == "running"
    finally:
        acme_box.close()
        rival_box.close()
