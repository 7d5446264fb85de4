"""The /v0 API under hostile input (docs/decisions/hostile-input.md): file paths that climb out,
chunked bodies over the limit, absurd pages, and private projects that must not exist for
outsiders.

Tests whose server settings are their own start a server; the others share one per engine
(``tenant``: an organization, project and spec of the test's own, so tests sharing it see none
of each other's jobs, runners or users), or, for tables of refusals, one on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.client import ApiError
from tests.harness import Deployment, deploy, wait_until
from tests.registry_support import make_user

# ------------------------------------------------------------------------- file paths


@pytest.mark.parametrize(
    ("path", "problem", "image_too"),
    [
        ("/proc/self/environ", "is absolute", False),
        ("/home/me/.config/benchrunner/config.toml", "is absolute", False),
        ("../secret", "climbs out", False),
        ("out/../../secret", "climbs out", False),
        ("..", "climbs out", False),
        ("", "is empty", True),
        ("out\x00.json", "NUL", True),
    ],
)
def test_run_refuses_file_paths_outside_the_jobs_directory(
    shared_deployment: Deployment, path: str, problem: str, image_too: bool
) -> None:
    """A template job's files are on the runner's host; an image job's are in its container,
    where absolute paths and ``..`` are the runner's to resolve inside the container's root."""
    template = {"template": "bench.noop"}
    image = {"image": "sha256:" + "0" * 64}
    for kind in (template, image):
        body = {
            "project": shared_deployment.project,
            "spec": shared_deployment.spec,
            **kind,
            "job": {"file_paths": ["results.json", path]},
        }
        response = post_run(shared_deployment, body, token=shared_deployment.server.token)
        message = response.json()["message"]
        if kind is image and not image_too:
            # Past the file paths: refused for its image, which is not in the registry.
            assert message.startswith(f"image {image['image']} is not in project"), message
            continue
        assert response.status_code == 400, (kind, response.text)
        assert "job.file_paths[1]" in message and problem in message, message
        if "\x00" not in path:  # (NUL is refused for any field, before file paths are read)
            assert message.startswith(f"job.file_paths[1] {path!r} "), message
    with shared_deployment.admin() as client:
        assert client.list_jobs(shared_deployment.project).total == 0


@pytest.mark.engine_independent
def test_run_accepts_file_paths_inside_the_jobs_directory(tenant: Deployment) -> None:
    paths = ["results.json", "out/metrics.json", "./out/x..y", "a/./b"]
    job_uuid = tenant.submit("bench.noop", file_paths=paths)
    assert tenant.job(job_uuid).config.file_paths == paths


def post_run(deployment: Deployment, body: dict[str, Any], token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{deployment.server.url}/v0/run", json=body, headers=headers)


# ------------------------------------------------------------------------- bodies and pages


@pytest.fixture
def small_bodies(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url, request_body_max_bytes=64 * 1024) as deployment:
        yield deployment


@pytest.mark.engine_independent
def test_a_chunked_body_over_the_limit_is_413_as_a_declared_one_is(
    small_bodies: Deployment,
) -> None:
    url = f"{small_bodies.server.url}/v0/run"
    headers = {
        "Authorization": f"Bearer {small_bodies.server.token}",
        "Content-Type": "application/json",
    }

    def chunks(count: int) -> Iterator[bytes]:
        yield b"{"
        for _ in range(count):
            yield b" " * 8192
        yield b"}"

    declared = httpx.post(url, content=b"".join(chunks(20)), headers=headers)
    chunked = httpx.post(url, content=chunks(20), headers=headers)
    assert "content-length" not in chunked.request.headers
    assert chunked.request.headers["transfer-encoding"] == "chunked"
    for response in (declared, chunked):
        assert response.status_code == 413, response.text
        assert response.json()["message"] == "request body exceeds 65536 bytes"
    # A chunked body within the limit still reaches the handler whole.
    body = b'{"project": "bench", "spec": "small", "template": "bench.noop"}'
    within = httpx.post(url, content=iter([body[:10], body[10:]]), headers=headers)
    assert within.status_code == 201, within.text
    with small_bodies.admin() as client:
        assert client.health().status == "ok"


def lists(own: Deployment) -> list[str]:
    return [
        f"/v0/projects/{own.project}/jobs",
        "/v0/organizations",
        f"/v0/organizations/{own.org}/projects",
        "/v0/specs",
        "/v0/runners",
    ]


ABSURD_PAGES = [
    {"page": "9223372036854775807"},
    {"page": "99999999999999999999999"},
    {"page": "2147483648", "per_page": "255"},
    {"per_page": "9223372036854775807"},
    {"page": "0"},
    {"page": "-1"},
]


@pytest.mark.engine_independent
def test_an_absurd_page_is_400_on_every_list_and_the_last_page_is_empty(
    tenant: Deployment,
) -> None:
    tenant.submit("bench.noop")
    tenant.new_runner("r1")  # named after the test by the tenant
    headers = {"Authorization": f"Bearer {tenant.server.token}"}
    with httpx.Client(base_url=tenant.server.url, headers=headers) as client:
        for path in lists(tenant):
            for params in ABSURD_PAGES:
                response = client.get(path, params=params)
                assert response.status_code == 400, (path, params, response.text)
                assert "page" in response.json()["message"]
            last = client.get(path, params={"page": "2147483647", "per_page": "255"})
            assert last.status_code == 200, (path, last.text)
            assert last.json() == []
            assert int(last.headers["X-Total-Count"]) >= 1, path


# ------------------------------------------------------------------------- text and times


def test_text_the_database_cannot_store_is_400_naming_the_field(tenant: Deployment) -> None:
    """NUL and lone surrogates: PostgreSQL refuses the first, UTF-8 cannot encode the second."""
    direct: dict[str, Any] = {
        "project": tenant.project,
        "settings": {"adapter": "json"},
        "results": ['{"sort": {"latency": {"value": 1}}}'],
        "start_time": "2026-01-01T00:00:00Z",
        "end_time": "2026-01-01T00:01:00Z",
    }
    template = {"project": tenant.project, "spec": tenant.spec, "template": "bench.noop"}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("/v0/run", {**direct, "branch": "main\x00"}, "branch contains a NUL character"),
        ("/v0/run", {**direct, "testbed": "ci\ud800"}, "testbed contains a lone surrogate"),
        ("/v0/run", {**template, "args": {"x\x00": 1}}, "a key in args contains a NUL"),
        ("/v0/run", {**template, "job": {"file_paths": ["a\ud800"]}}, "job.file_paths[0]"),
        (
            "/v0/run",
            {**direct, "results": ['{"sort\\u0000": {"latency": {"value": 1}}}']},
            "adapter json could not read results[0]: benchmark name 'sort\\x00' has a NUL",
        ),
        # Output the adapter cannot read: the adapter, the result and what was wrong.
        (
            "/v0/run",
            {**direct, "settings": {"adapter": "rust_criterion"}, "results": ["a\x00"]},
            "adapter rust_criterion could not read results[0]: contains a NUL character",
        ),
        (
            "/v0/run",
            {**direct, "results": [*direct["results"], '{"a": \udcff}']},
            "adapter json could not read results[1]: is not UTF-8 text (a lone surrogate",
        ),
        (
            "/v0/run",
            {**direct, "settings": {"adapter": "cpp_catch2"}, "results": ["all passed"]},
            "adapter cpp_catch2 could not read results[0]: no benchmark found",
        ),
        ("/v0/organizations", {"name": "a\x00"}, "name contains a NUL"),
        (
            f"/v0/organizations/{tenant.org}/projects",
            {"name": "p", "slug": "\ud800"},
            "slug contains",
        ),
        ("/v0/runners", {"name": "r\x00"}, "name contains a NUL"),
        (
            "/v0/specs",
            {"name": "s\x00", "architecture": "x86_64", "cpu": 1, "memory": 1, "disk": 1},
            "name contains a NUL",
        ),
    ]
    headers = {
        "Authorization": f"Bearer {tenant.server.token}",
        "Content-Type": "application/json",
    }
    with httpx.Client(base_url=tenant.server.url, headers=headers) as client:
        for path, body, message in cases:
            # json.dumps writes a lone surrogate as its \ud800 escape, as a hostile client would.
            response = client.post(path, content=json.dumps(body))
            assert response.status_code == 400, (path, body, response.text)
            assert message in response.json()["message"], (path, response.text)
        listed = client.get("/v0/runners", params={"name": "r\x00"})
        assert listed.status_code == 400 and "name contains a NUL" in listed.text
        for path in (
            "/v0/projects/be%00nch",
            "/v0/projects/be%00nch/jobs",
            "/v0/organizations/a%00",
            "/v0/organizations/a%00/projects",
            "/v0/specs/s%00",
            "/v0/runners/r%00",
        ):
            assert client.get(path).status_code == 404, path
    with tenant.admin() as admin:
        assert admin.list_jobs(tenant.project).total == 0


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2026-01-01T00:00:00", "2026-01-01T00:01:00", "start_time: Input should have timezone"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:01:00", "end_time: Input should have timezone"),
        ("9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59-23:59", "out of range"),
        ("0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00+01:00", "out of range"),
    ],
)
def test_times_without_a_zone_or_beyond_utc_are_400(
    shared_deployment: Deployment, start: str, end: str, message: str
) -> None:
    body = {
        "project": "bench",
        "settings": {"adapter": "json"},
        "results": ['{"sort": {"latency": {"value": 1}}}'],
        "start_time": start,
        "end_time": end,
    }
    response = post_run(shared_deployment, body, token=shared_deployment.server.token)
    assert response.status_code == 400, response.text
    assert message in response.json()["message"]


def test_times_in_any_zone_are_stored_as_utc(tenant: Deployment) -> None:
    body = {
        "project": tenant.project,
        "settings": {"adapter": "json"},
        "results": ['{"sort": {"latency": {"value": 1}}}'],
        "start_time": "2026-01-01T02:00:00+02:00",
        "end_time": "2026-01-01T00:01:00Z",
    }
    response = post_run(tenant, body, token=tenant.server.token)
    assert response.status_code == 201, response.text
    assert response.json()["start_time"] == "2026-01-01T00:00:00Z"


# ------------------------------------------------------------------------- private projects


def _complete_with_output(deployment: Deployment, job_uuid: str) -> None:
    channel = deployment.channel("private-runner")
    assert channel.claim()["uuid"] == job_uuid
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": "{}", "output": {"out.json": "the private output"}}
    done = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    assert done["event"] == "ack", done


def _reads(project: str, job: str, report: str) -> list[tuple[str, str]]:
    return [
        ("GET", f"/v0/projects/{project}"),
        ("GET", f"/v0/projects/{project}/jobs"),
        ("GET", f"/v0/projects/{project}/jobs/{job}"),
        ("POST", f"/v0/projects/{project}/jobs/{job}/cancel"),
        ("GET", f"/v0/projects/{project}/reports/{report}"),
    ]


def test_a_private_projects_jobs_reports_and_outputs_are_404_to_outsiders(
    tenant: Deployment,
) -> None:
    own = tenant.project
    member = make_user(tenant.server, f"member-{own}@test.dev", member_of=tenant.org)
    outsider = make_user(tenant.server, f"outsider-{own}@test.dev")
    secret_slug = f"{own}-secret"
    with tenant.admin() as client:
        secret = client.create_project(tenant.org, secret_slug, "private", slug=secret_slug)
        run = client.run({"project": secret_slug, "spec": tenant.spec, "template": "bench.noop"})
    job, report = str(run.job), run.uuid
    _complete_with_output(tenant, job)
    with tenant.admin() as client:
        wait_until(
            lambda: client.get_job(secret_slug, job).status == "processed",
            message="the private job processed",
        )

    base = tenant.server.url
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {member}"}) as as_member:
        seen = as_member.get(f"/v0/projects/{secret_slug}/jobs/{job}")
        assert seen.status_code == 200
        assert seen.json()["output"]["results"][0]["output"] == {"out.json": "the private output"}
        assert as_member.get(f"/v0/projects/{secret_slug}/reports/{report}").status_code == 200

    missing = "00000000-0000-4000-8000-000000000000"
    for token in (outsider, None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with httpx.Client(base_url=base, headers=headers) as caller:
            for ref in (secret_slug, secret.uuid):
                hidden = _reads(ref, job, report)
                absent = _reads("no-such-project", missing, missing)
                for (method, path), (_, path_absent) in zip(hidden, absent, strict=True):
                    answer = caller.request(method, path)
                    assert answer.status_code == 404, (token, path, answer.text)
                    assert "private output" not in answer.text
                    # Word for word what a project that does not exist gets.
                    alike = caller.request(method, path_absent)
                    assert alike.status_code == 404
                    assert _without_refs(answer.json(), ref, job, report) == _without_refs(
                        alike.json(), "no-such-project", missing, missing
                    )
            # Nor through a public project's path.
            for path in (f"/v0/projects/{own}/jobs/{job}", f"/v0/projects/{own}/reports/{report}"):
                assert caller.get(path).status_code == 404
    with tenant.admin() as client:
        assert client.get_job(secret_slug, job).status == "processed"  # the cancels did nothing


def _without_refs(body: dict[str, Any], *refs: str) -> tuple[str, str | None]:
    message = body["message"]
    for ref in refs:
        message = message.replace(ref, "REF")
    return message, body.get("error_code")


def _shape(answer: httpx.Response, wanted: str) -> dict[str, Any]:
    """What an anonymous run's answer says of its project, its slug's suffix masked."""
    project = answer.json()["project"]
    suffix = project["slug"].removeprefix(f"{wanted}-")
    assert len(suffix) == 8 and all(c in "0123456789abcdef" for c in suffix), project["slug"]
    return {
        "status": answer.status_code,
        "name": project["name"].replace(wanted, "WANTED"),
        "slug": project["slug"].replace(wanted, "WANTED").replace(suffix, "SUFFIX"),
        "visibility": project["visibility"],
    }


def test_an_anonymous_run_cannot_tell_a_private_slug_from_a_free_one(
    tenant: Deployment,
) -> None:
    secret_slug, fresh_slug = f"{tenant.project}-secret", f"{tenant.project}-fresh"
    with tenant.admin() as client:
        secret = client.create_project(tenant.org, secret_slug, "private", slug=secret_slug)
    body = {"spec": tenant.spec, "template": "bench.noop"}
    hidden = post_run(tenant, {**body, "project": secret_slug}, token=None)
    free = post_run(tenant, {**body, "project": fresh_slug}, token=None)
    assert hidden.status_code == free.status_code == 201, (hidden.text, free.text)
    # Alike: a new unclaimed public project named as asked, its slug with a suffix.
    assert _shape(hidden, secret_slug) == _shape(free, fresh_slug)
    assert hidden.json()["project"]["uuid"] != secret.uuid
    with tenant.admin() as client:
        assert client.list_jobs(secret_slug).total == 0
    # The next runs naming the same slug land in the same project, in both cases; so do runs
    # naming the project by the slug it was given.
    for first, wanted in ((hidden, secret_slug), (free, fresh_slug)):
        landed = first.json()["project"]
        again = post_run(tenant, {**body, "project": wanted}, token=None)
        by_slug = post_run(tenant, {**body, "project": landed["slug"]}, token=None)
        assert again.status_code == by_slug.status_code == 201
        assert again.json()["project"]["uuid"] == by_slug.json()["project"]["uuid"]
        assert again.json()["project"]["uuid"] == landed["uuid"]
    with tenant.admin() as client:
        assert client.get_project(secret_slug).uuid == secret.uuid
        with pytest.raises(ApiError) as free_slug:
            client.get_project(fresh_slug)  # nothing took the slug as asked
        assert free_slug.value.status == 404


def test_a_member_cannot_tell_a_private_slug_from_a_free_one(tenant: Deployment) -> None:
    own = tenant.project
    member = make_user(tenant.server, f"maker-{own}@test.dev")
    classified, unheard_of, makers = f"{own}-classified", f"{own}-unheard-of", f"{own}-makers"
    with tenant.admin() as client:
        client.create_project(tenant.org, classified, "private", slug=classified)
        client.create_organization(makers, "team", slug=makers)
        client.add_member(makers, f"maker-{own}@test.dev", "leader")
    created: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=tenant.server.url) as http:
        for wanted in (classified, unheard_of):
            answer = http.post(
                f"/v0/organizations/{makers}/projects",
                json={"name": wanted, "slug": wanted},
                headers={"Authorization": f"Bearer {member}"},
            )
            assert answer.status_code == 201, answer.text
            created[wanted] = answer.json()
    suffixed = {
        wanted: project["slug"].startswith(f"{wanted}-") and len(project["slug"]) == len(wanted) + 9
        for wanted, project in created.items()
    }
    assert suffixed == {classified: True, unheard_of: True}, created
    # A server admin sees every project: it gets a free slug as asked.
    with tenant.admin() as client:
        exact = f"{own}-exact"
        assert client.create_project(makers, exact, slug=exact).slug == exact


def test_a_signed_in_outsider_gets_the_missing_projects_answer(tenant: Deployment) -> None:
    own = tenant.project
    outsider = make_user(tenant.server, f"outsider-{own}@test.dev")
    secret_slug, nowhere = f"{own}-secret", f"{own}-nowhere"
    with tenant.admin() as client:
        client.create_project(tenant.org, secret_slug, "private", slug=secret_slug)
    body = {"spec": tenant.spec, "template": "bench.noop"}
    hidden = post_run(tenant, {**body, "project": secret_slug}, token=outsider)
    absent = post_run(tenant, {**body, "project": nowhere}, token=outsider)
    assert hidden.status_code == absent.status_code == 404
    assert _without_refs(hidden.json(), secret_slug) == _without_refs(absent.json(), nowhere)


def test_a_run_names_a_new_project_by_slug_only(tenant: Deployment) -> None:
    body = {"spec": tenant.spec, "template": "bench.noop"}
    not_a_slug = post_run(tenant, {**body, "project": "My Project"}, token=None)
    assert not_a_slug.status_code == 400
    assert "'my-project'" in not_a_slug.json()["message"]
    unknown_uuid = post_run(
        tenant, {**body, "project": "00000000-0000-4000-8000-000000000000"}, token=None
    )
    assert unknown_uuid.status_code == 404
