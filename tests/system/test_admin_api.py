"""The admin and project API over real HTTP: addressing, permissions, pagination, errors.

One server per engine serves the whole module; each test works in an organization, project and
spec of its own (``tenant``), and names its runners, specs and users after itself."""

from __future__ import annotations

import httpx
import pytest

from benchrunner.client import ApiError
from benchrunner.server.admin.bootstrap import bootstrap_admin
from tests.harness import Deployment
from tests.registry_support import make_user


def test_resources_by_uuid_or_slug(tenant: Deployment) -> None:
    own = tenant.project
    with tenant.admin() as client:
        spec = client.get_spec(tenant.spec)
        assert client.get_spec(spec.uuid).slug == tenant.spec
        runner = client.create_runner(f"{own} Bench 01", [tenant.spec])
        assert runner.slug == f"{own}-bench-01"
        assert client.get_runner(runner.uuid).specs[0].uuid == spec.uuid
        project = client.get_project(own)
        assert client.get_project(project.uuid).slug == own
        taken = client.create_runner(f"{own} Bench 01")
        assert taken.slug.startswith(f"{own}-bench-01-") and taken.slug != f"{own}-bench-01"


def test_patch_runner_pause_rename_and_bad_slug(tenant: Deployment) -> None:
    r1, r2 = f"{tenant.project}-r1", f"{tenant.project}-r2"
    with tenant.admin() as client:
        client.create_runner(r1, [tenant.spec])
        updated = client.update_runner(r1, name="Runner One", paused=True)
        assert (updated.name, updated.paused) == ("Runner One", True)
        with pytest.raises(ApiError) as bad:
            client.update_runner(r1, slug="Not A Slug")
        assert bad.value.status == 400 and "'not-a-slug'" in bad.value.message
        client.create_runner(r2)
        with pytest.raises(ApiError) as taken:
            client.update_runner(r1, slug=r2)
        assert taken.value.status == 409


def test_a_spec_in_use_cannot_be_deleted(tenant: Deployment) -> None:
    tenant.submit("bench.noop")
    with tenant.admin() as client:
        with pytest.raises(ApiError) as used:
            client.delete_spec(tenant.spec)
        assert used.value.status == 409
        spare = f"{tenant.spec}-spare"
        client.create_spec(spare, architecture="x86_64", cpu=1, memory=1, disk=1)
        client.delete_spec(spare)
        with pytest.raises(ApiError) as gone:
            client.get_spec(spare)
        assert gone.value.status == 404


def test_pagination_headers(tenant: Deployment) -> None:
    for _ in range(5):
        tenant.submit("bench.noop")
    with tenant.admin() as client:
        page = client.list_jobs(tenant.project, per_page=2, page=2)
    assert len(page) == 2 and page.total == 5


def test_private_projects_are_invisible_to_outsiders(tenant: Deployment) -> None:
    own = tenant.project
    admin2_token = bootstrap_admin(tenant.server.db, f"admin2-{own}@test.dev")
    secret = f"{own}-secret"
    with tenant.admin() as client:
        client.create_project(tenant.org, secret, "private", slug=secret)
        job = client.run({"project": secret, "spec": tenant.spec, "template": "bench.noop"}).job
    # An anonymous caller cannot tell a private project from a missing one.
    anonymous = httpx.get(f"{tenant.server.url}/v0/projects/{secret}/jobs/{job}")
    assert anonymous.status_code == 404
    assert "not found" in anonymous.json()["message"]
    with tenant.server.client(admin2_token) as admin2:
        assert admin2.get_project(secret).visibility == "private"  # admins see everything
    # A signed-in user outside the organization cannot tell it from a missing one either.
    outsider_token = make_user(tenant.server, f"outsider-{own}@test.dev")
    with tenant.server.client(outsider_token) as outsider:
        with pytest.raises(ApiError) as hidden:
            outsider.get_project(secret)
        assert hidden.value.status == 404
        # Runner and spec administration is for server admins only.
        with pytest.raises(ApiError) as refused:
            outsider.create_runner(f"{own}-x", [tenant.spec])
        assert refused.value.status == 403
    response = httpx.post(
        f"{tenant.server.url}/v0/runners",
        json={"name": "x"},
        headers={"Authorization": "Bearer benchrunner_api_" + "0" * 64},
    )
    assert response.status_code == 401


def test_anonymous_cannot_write_to_a_claimed_organization(tenant: Deployment) -> None:
    response = httpx.post(
        f"{tenant.server.url}/v0/run",
        json={"project": tenant.project, "spec": tenant.spec, "template": "bench.noop"},
    )
    assert response.status_code == 403
    assert response.json()["message"] == f"you may not change project '{tenant.project}'"


def test_direct_results_are_parsed_at_once(tenant: Deployment) -> None:
    body = {
        "project": tenant.project,
        "branch": "feature/x",
        "testbed": "ci",
        "settings": {"adapter": "json"},
        "results": ['{"sort": {"latency": {"value": 3.5, "lower_value": 3, "upper_value": 4}}}'],
        "start_time": "2026-01-01T00:00:00Z",
        "end_time": "2026-01-01T00:01:00Z",
    }
    with tenant.admin() as client:
        report = client.run(body)
        assert "job" not in report.model_fields_set
        metric = report.results[0][0].measures[0].metric
        assert (metric.value, metric.lower_value, metric.upper_value) == (3.5, 3, 4)
        assert report.branch.name == "feature/x"
        with pytest.raises(ApiError) as bad:
            client.run({**body, "results": ["not json"]})
        assert bad.value.status == 400 and "results[0]" in bad.value.message
