"""A server whose blobs live in S3-compatible object storage (a real S3 server, moto's):
registry layers go up in parts and come back whole and by range, garbage collection and
retention delete objects, job outputs are in the bucket before their ``ack``, and a store that
is down answers 503 and loses no result. Nothing of them is in the data directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Deployment, RawChannel, deploy, output_json, wait_until
from tests.metrics_scrape import scrape
from tests.object_store import S3Server, StoreGate
from tests.oci_layout import OCI_MANIFEST, sha256_digest
from tests.registry_support import image_manifest, push_blob, registry_token, v2

PREFIX = "team/blobs"
LAYER_PART = 8 << 20  # the server's multipart part size
BIG_STDOUT = '{"ret": {"latency": {"value": 3}}}' + " " * 100_000  # past a row: a blob


def _object_store(s3: S3Server, bucket: str, endpoint: str | None = None) -> dict[str, Any]:
    return {"env": s3.env(endpoint), "options": {"blob-store": f"s3://{bucket}/{PREFIX}"}}


def _blob_keys(s3: S3Server, bucket: str) -> set[str]:
    top = f"{PREFIX}/oci/blobs/sha256/"
    return {"sha256:" + k.removeprefix(top) for k in s3.keys(bucket, top)}


def _push_in_chunks(client: httpx.Client, repo: str, data: bytes, chunk: int) -> str:
    started = client.post(f"/{repo}/blobs/uploads/")
    assert started.status_code == 202, started.text
    location = started.headers["Location"].removeprefix("/v2")
    for start in range(0, len(data), chunk):
        part = data[start : start + chunk]
        end = start + len(part) - 1
        sent = client.patch(
            location,
            content=part,
            headers={"Content-Range": f"{start}-{end}", "Content-Type": "application/octet-stream"},
        )
        assert sent.status_code == 202, sent.text
        location = sent.headers["Location"].removeprefix("/v2")
    digest = sha256_digest(data)
    done = client.put(location, params={"digest": digest})
    assert done.status_code == 201, done.text
    return digest


def test_layers_and_outputs_live_in_the_bucket_and_collection_and_retention_delete_them(
    tmp_path: Path, database_url: str, s3: S3Server
) -> None:
    bucket = s3.new_bucket()
    store = _object_store(s3, bucket)
    options = {
        **store["options"],
        "retention-interval": "0.2",
        "registry-gc-grace": "15",  # longer than these pushes to moto on a loaded machine
        "retention-days": "0",
        "retention-keep": "0",
    }
    layer = os.urandom(LAYER_PART + 1000)  # one PATCH: a two-part piece, copied into place
    chunked = os.urandom(3 * 1024 * 1024)  # three PATCHes: written anew as one object
    with deploy(tmp_path, database_url, env=store["env"], options=options) as deployment:
        server = deployment.server
        token = registry_token(server, server.token, "repository:bench:pull,push,delete")
        with v2(server, token) as client:
            config = b'{"architecture": "amd64"}'
            push_blob(client, "bench", config)
            push_blob(client, "bench", layer)
            _push_in_chunks(client, "bench", chunked, 1024 * 1024)
            manifest = image_manifest(config, [layer, chunked])
            tagged = client.put(
                "/bench/manifests/v1", content=manifest, headers={"Content-Type": OCI_MANIFEST}
            )
            assert tagged.status_code == 201, tagged.text
            pushed = {sha256_digest(b) for b in (config, layer, chunked)}
            assert _blob_keys(s3, bucket) == pushed
            assert s3.keys(bucket, f"{PREFIX}/_uploads/") == []
            assert not (server.data_dir / "blobs" / "oci").exists()

            for data in (layer, chunked):
                pulled = client.get(f"/bench/blobs/{sha256_digest(data)}")
                assert pulled.status_code == 200
                assert hashlib.sha256(pulled.content).digest() == hashlib.sha256(data).digest()
            ranged = client.get(
                f"/bench/blobs/{sha256_digest(layer)}", headers={"Range": "bytes=8388600-8388700"}
            )
            assert ranged.status_code == 206 and ranged.content == layer[8388600:8388701]

            assert client.delete(f"/bench/manifests/{sha256_digest(manifest)}").status_code == 202
        wait_until(
            lambda: not _blob_keys(s3, bucket),
            timeout=60,
            message="the deleted image's layers deleted from the bucket",
        )
        assert s3.keys(bucket, f"{PREFIX}/_collecting/") == []
        _retention_deletes_the_output(deployment, s3, bucket)
        found = scrape(server.url)
    assert found.value("benchrunner_retention_purged_jobs_total") == 1
    assert found.value("benchrunner_registry_gc_blobs_removed_total") == 3
    assert found.value("benchrunner_registry_gc_bytes_removed_total") == len(config) + len(
        layer
    ) + len(chunked)


def _retention_deletes_the_output(deployment: Deployment, s3: S3Server, bucket: str) -> None:
    channel = deployment.channel("raw")
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    channel.ask({"event": "running"})
    result = {"exit_code": 0, "stdout": BIG_STDOUT}
    done = channel.ask({"event": "completed", "job": job_uuid, "results": [result]})
    assert done["event"] == "ack", done
    processed = deployment.wait_status(job_uuid, "processed")
    wait_until(lambda: not _output_key(s3, bucket, job_uuid), message="the output object deleted")
    with deployment.admin() as client:
        report = client.get_report(deployment.project, processed.report)
    assert report.results, report  # processed from the object before it went


def _output_key(s3: S3Server, bucket: str, job_uuid: str) -> list[str]:
    return [k for k in s3.keys(bucket, PREFIX) if k.endswith(f"/output/v0/jobs/{job_uuid}")]


@pytest.mark.engine_independent  # the store fails before any statement
def test_a_result_is_acknowledged_only_once_its_output_is_in_the_bucket(
    tmp_path: Path, database_url: str, s3: S3Server
) -> None:
    host, port = s3.endpoint.removeprefix("http://").split(":")
    gate = StoreGate((host, int(port)))
    gate.open()
    bucket = s3.new_bucket()
    store = _object_store(s3, bucket, gate.endpoint)
    try:
        with deploy(tmp_path, database_url, **store) as deployment:
            _result_survives_the_store_going_down(deployment, gate, s3, bucket)
    finally:
        gate.close()


def _result_survives_the_store_going_down(
    deployment: Deployment, gate: StoreGate, s3: S3Server, bucket: str
) -> None:
    slug, key = deployment.new_runner("agent")
    channel = RawChannel(deployment.server, slug, key)
    deployment.channels.append(channel)
    job_uuid = deployment.submit("bench.noop")
    channel.claim()
    assert channel.ask({"event": "running"})["event"] == "ack"
    completed = {
        "event": "completed",
        "job": job_uuid,
        "results": [{"exit_code": 0, "stdout": BIG_STDOUT}],
    }

    gate.close()
    channel.send(completed)
    code, reason = channel.wait_closed()
    assert code == 1011 and "resend the result" in reason, (code, reason)
    assert deployment.status(job_uuid) == "running"  # nothing recorded without the output
    with deployment.http() as http:
        health = http.get("/v0/server/health")
        assert health.status_code == 200  # the server itself still answers
    server_log = deployment.server.log.read_text()
    assert f"blob store s3://{bucket}/{PREFIX} unavailable" in server_log

    gate.open()
    again = RawChannel(deployment.server, slug, key)
    deployment.channels.append(again)
    assert again.ask(completed)["event"] == "ack"
    assert _output_key(s3, bucket, job_uuid)
    done = deployment.wait_status(job_uuid, "processed")
    with deployment.admin() as client:
        report = client.get_report(deployment.project, done.report)
    assert report.results, report
    assert output_json(deployment.job(job_uuid))["results"][0]["stdout"] == BIG_STDOUT

    gate.close()  # reading the output back needs the store: a clear 503, not a 500
    with deployment.http() as http:
        answer = http.get(f"/v0/projects/{deployment.project}/jobs/{job_uuid}")
    assert answer.status_code == 503, answer.text
    assert answer.json()["message"] == "the blob store is unavailable; try again later"
    assert answer.headers["Retry-After"] == "30"
    gate.open()
