"""Two replicas that share only PostgreSQL and the object store (docs/how-to/deploy.md): each has
its own data directory and runs in its own network namespace, reaching the database and the S3
server through the one link it has (a TCP relay on the test's end, as PostgreSQL and moto
listen on loopback only); the replicas cannot reach each other. Where network namespaces
cannot be made (not root), both run on loopback, still with their own data directories.

What goes in through one replica comes out through the other: an image, a chunked upload, a
runner release, and a job run by a runner connected to the first replica (its output, log and
report). Garbage collection and retention run on the sweeper's leader alone. Nothing is left
in either data directory but the server's log.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from benchrunner.api.jobs import Job
from benchrunner.api.server import Health
from benchrunner.client import BenchrunnerClient
from benchrunner.server.admin.bootstrap import bootstrap_admin
from tests.databases import postgres_database
from tests.harness import (
    TEST_TEMPLATES,
    Deployment,
    RunnerProcess,
    ServerProcess,
    output_json,
    wait_until,
)
from tests.metrics_scrape import scrape
from tests.netns import namespaces_available, network_namespace
from tests.object_store import S3Server, StoreGate
from tests.oci_layout import busybox_image, sha256_digest, write_layout
from tests.registry_support import push_blob, registry_token, v2

pytestmark = pytest.mark.postgresql

PREFIX = "replicas"
GC_GRACE = 10.0
"""Seconds a pushed blob is safe from collection: a push's manifest comes well within them."""
_WIDE_PROGRAM = (
    "import sys; print('warming up on the runner', file=sys.stderr, flush=True); "
    'print(\'{"wide": {"latency": {"value": 3}}}\' + \' \' * 100000)'
)
WIDE_TEMPLATE = f"""
[templates."bench.wide"]
description = "A line on stderr, then a result padded past what a database row holds"
command = {json.dumps(["python3", "-c", _WIDE_PROGRAM])}
timeout = 60
"""


@dataclass
class Replicas:
    deployment: Deployment
    """Its server is replica A; a runner connected to A alone is started."""
    a: ServerProcess
    b: ServerProcess
    runner: RunnerProcess
    s3: S3Server
    bucket: str
    apart: bool
    """Whether each replica runs in a network namespace of its own."""

    def objects(self, prefix: str = "") -> list[str]:
        return self.s3.keys(self.bucket, f"{PREFIX}/{prefix}")

    def leader_and_follower(self) -> tuple[ServerProcess, ServerProcess]:
        leaders = wait_until(
            lambda: [s for s in (self.a, self.b) if _health(s).sweeper_leader],
            message="a sweeper leader",
        )
        assert len(leaders) == 1, leaders
        return leaders[0], self.b if leaders[0] is self.a else self.a


def _health(server: ServerProcess) -> Health:
    with server.client(None) as client:
        return client.health()


def _replica(
    stack: contextlib.ExitStack,
    tmp: Path,
    name: str,
    index: int,
    database_url: str,
    s3: S3Server,
    bucket: str,
    token: str,
) -> ServerProcess:
    """Replica ``name``, not started yet: in a namespace of its own whose link reaches the
    database and the S3 server through relays, when namespaces can be made."""
    db, endpoint, host, netns = database_url, s3.endpoint, "127.0.0.1", None
    if namespaces_available():
        namespace = stack.enter_context(network_namespace(name, index))
        database = sa.make_url(database_url)
        moto = s3.endpoint.removeprefix("http://").split(":")
        relays = [
            StoreGate((database.host or "127.0.0.1", database.port or 5432), host=namespace.peer),
            StoreGate((moto[0], int(moto[1])), host=namespace.peer),
        ]
        for relay in relays:
            relay.open()
            stack.callback(relay.close)
        db = database.set(host=namespace.peer, port=relays[0].port).render_as_string(
            hide_password=False
        )
        endpoint, host, netns = relays[1].endpoint, namespace.address, namespace.name
    data_dir = tmp / f"data-{name}"
    data_dir.mkdir()
    return ServerProcess(
        data_dir,
        tmp / "templates.toml",
        db,
        host=host,
        netns=netns,
        name=f"replica-{name}",
        token=token,
        env=s3.env(endpoint),
        options={
            "replica-name": f"replica-{name}",
            "blob-store": f"s3://{bucket}/{PREFIX}",
            "retention-interval": "0.5",
            "retention-days": "0",
            "retention-keep": "1",
            "registry-gc-grace": str(GC_GRACE),
        },
    )


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[Replicas]:
    if os.environ.get("CI", "").lower() == "true" and not namespaces_available():
        pytest.fail("CI runs as root with iproute2: it must put the replicas in namespaces")
    tmp = tmp_path_factory.mktemp("apart")
    (tmp / "templates.toml").write_text(TEST_TEMPLATES + WIDE_TEMPLATE)
    bucket = s3.new_bucket()
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(postgres_database())
        token = bootstrap_admin(database_url, "admin@test.dev")
        a, b = (
            _replica(stack, tmp, name, i, database_url, s3, bucket, token)
            for i, name in enumerate("ab")
        )
        for server in (a, b):
            stack.callback(server.kill)  # before its namespace and relays go
        # Started together: they migrate once and agree on one signing key.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for started in [pool.submit(s.start) for s in (a, b)]:
                started.result()
        deployment = Deployment(a, tmp)
        with a.client() as client:
            client.create_organization("acme", "team")
            client.create_project("acme", "bench", "public")
            client.create_spec(
                name="small", architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30
            )
        runner = deployment.runner_process("on-a", servers=[a]).start()
        stack.callback(runner.kill)
        yield Replicas(deployment, a, b, runner, s3, bucket, namespaces_available())
        for server in (a, b):  # nothing a replica needs is in its data directory
            assert {p.name for p in server.data_dir.iterdir()} == {server.log.name}


def test_each_replica_is_apart(replicas: Replicas) -> None:
    """The set-up itself: each replica in its own namespace (when they can be made) with its
    own data directory, unable to reach the other."""
    a, b = replicas.a, replicas.b
    assert a.data_dir != b.data_dir
    assert {_health(a).replica, _health(b).replica} == {"replica-a", "replica-b"}
    for server in (a, b):  # each found the store the database names
        assert "blob store is not the one" not in server.log.read_text()
    assert replicas.objects("_identity/blob-store")
    if not replicas.apart:
        return
    assert a.netns is not None and b.netns is not None
    netns = a.netns
    reach = (
        "import socket,sys; s=socket.socket(); s.settimeout(2); "
        "sys.exit(s.connect_ex((sys.argv[1], int(sys.argv[2]))))"
    )

    def from_a(server: ServerProcess) -> int:
        argv = ["ip", "netns", "exec", netns, "python3", "-c", reach, server.host]
        return subprocess.run([*argv, str(server.port)], timeout=30, check=False).returncode

    assert from_a(a) == 0  # the probe itself works
    assert from_a(b) != 0  # B's address is on another link


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="skopeo not installed")
def test_an_image_pushed_through_one_replica_is_pulled_through_the_other(
    replicas: Replicas, tmp_path: Path
) -> None:
    a, b = replicas.a, replicas.b
    layout = write_layout(tmp_path / "src", [busybox_image()], tag="v1")
    creds = f"ci:{a.token}"
    push = ["--dest-tls-verify=false", f"--dest-creds={creds}", f"oci:{layout.path}:v1"]
    pull = ["--src-tls-verify=false", f"--src-creds={creds}"]
    for argv in (
        [*push, f"docker://{a.url.removeprefix('http://')}/bench:v1"],
        [
            *pull,
            f"docker://{b.url.removeprefix('http://')}/bench:v1",
            f"oci:{tmp_path / 'pull'}:v1",
        ],
    ):
        result = subprocess.run(
            ["skopeo", "--insecure-policy", "copy", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "pull" / "index.json").read_text().count(layout.digest) == 1
    assert replicas.objects("oci/blobs/sha256/")  # the layers are objects of the bucket


def test_a_chunked_upload_goes_on_through_the_other_replica(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    token = registry_token(a, a.token, "repository:bench:pull,push")  # signed by A, good on B
    data = os.urandom(3000)
    with v2(a, token) as on_a, v2(b, token) as on_b:
        location = on_a.post("/bench/blobs/uploads/").headers["Location"]
        first = on_a.patch(a.url + location, content=data[:1000])
        assert first.status_code == 202, first.text
        second = on_b.patch(
            b.url + first.headers["Location"],
            content=data[1000:],
            headers={"Content-Range": f"1000-{len(data) - 1}"},
        )
        assert second.status_code == 202, second.text
        done = on_a.put(a.url + second.headers["Location"], params={"digest": sha256_digest(data)})
        assert done.status_code == 201, done.text
        assert on_b.get(f"/bench/blobs/{sha256_digest(data)}").content == data


def test_a_release_published_through_one_replica_is_downloaded_through_the_other(
    replicas: Replicas,
) -> None:
    wheel = b"the wheel's bytes: only its name and checksum are checked"
    checksum = hashlib.sha256(wheel).hexdigest()
    with replicas.a.client() as client:  # canary: the runner, on stable, is not offered it
        release = client.publish_release(
            "benchrunner-99.0.0-py3-none-any.whl",
            wheel,
            channel="canary",
            version="99.0.0",
            checksum=checksum,
        )
    assert replicas.objects(f"runner-releases/{checksum}.whl")
    runner = replicas.runner
    answer = httpx.get(
        f"{replicas.b.url}/v0/runners/{runner.slug}/releases/{release.uuid}/" + release.filename,
        headers={"Authorization": f"Bearer {runner.key}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.content == wheel


def test_a_job_run_through_one_replica_is_read_through_the_other(replicas: Replicas) -> None:
    deployment, b = replicas.deployment, replicas.b
    with b.client() as through_b:  # submitted through B, run by the runner connected to A
        job_uuid = deployment.submit("bench.wide", client=through_b)
        done = wait_until(
            lambda: _finished(through_b.get_job(deployment.project, job_uuid)),
            timeout=60,
            message=f"job {job_uuid} processed",
        )
        assert done.status == "processed", done
        # The output is an object of the bucket (too large for a row), read back through B.
        assert [k for k in replicas.objects() if k.endswith(f"/output/v0/jobs/{job_uuid}")]
        [result] = output_json(done)["results"]
        assert result["stdout"].startswith('{"wide": {"latency": {"value": 3}}}')
        assert len(result["stdout"]) > 100_000
        assert "warming up on the runner" in _whole_log(through_b, deployment.project, job_uuid)
        report = through_b.get_report(deployment.project, done.report)
    [[iteration]] = report.results
    assert iteration.measures[0].metric.value == 3.0


def test_collection_and_retention_run_on_the_leader_alone(replicas: Replicas) -> None:
    leader, follower = replicas.leader_and_follower()
    deployment = replicas.deployment
    token = registry_token(follower, follower.token, "repository:bench:pull,push")
    with v2(follower, token) as client:
        abandoned = push_blob(client, "bench", os.urandom(2000))  # no manifest will name it
    blob = f"oci/blobs/sha256/{abandoned.removeprefix('sha256:')}"
    assert replicas.objects(blob)
    # With one job kept, the first job's output expires once the second has finished.
    with follower.client() as client:
        first = deployment.submit("bench.wide", client=client)
        deployment.wait_status(first, "processed", timeout=60)
        output = [k for k in replicas.objects() if k.endswith(f"/output/v0/jobs/{first}")]
        assert output
        second = deployment.submit("bench.noop", client=client)
        deployment.wait_status(second, "processed", timeout=60)
    wait_until(
        lambda: not replicas.objects(output[0].removeprefix(f"{PREFIX}/")),
        timeout=60,
        message="retention to delete the first job's output",
    )
    wait_until(
        lambda: not replicas.objects(blob),
        timeout=60,
        message="garbage collection to delete the abandoned blob",
    )

    assert _health(leader).sweeper_leader and not _health(follower).sweeper_leader
    on_leader, on_follower = scrape(leader.url), scrape(follower.url)
    for name in (
        "benchrunner_housekeeping_rounds_total",
        "benchrunner_retention_purged_jobs_total",
        "benchrunner_registry_gc_blobs_removed_total",
    ):
        assert on_leader.value(name) >= 1, name
        assert on_follower.value(name) == 0, name
    said_by_leader, said_by_follower = leader.log.read_text(), follower.log.read_text()
    for deleted in ("retention deleted the outputs of", "registry garbage collection unlinked"):
        assert deleted in said_by_leader and deleted not in said_by_follower


def _whole_log(client: BenchrunnerClient, project: str, job_uuid: str) -> str:
    pages: list[str] = []
    offset = 0
    while True:
        page = client.job_logs(project, job_uuid, offset=offset)
        pages.append(page.content)
        if page.is_complete or page.next_offset == offset:
            return "".join(pages)
        offset = page.next_offset


def _finished(view: Job) -> Job | None:
    return view if view.status in ("failed", "canceled", "processed") else None
