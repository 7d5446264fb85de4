"""``benchrunner admin backup`` and ``restore``: a backup taken while the server runs, restored
into a new database and data directory as on a new machine, serves every report, job output and
image again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.databases import fresh_database
from tests.harness import ServerProcess, cli, deploy, output_json
from tests.oci_layout import OCI_MANIFEST, sha256_digest
from tests.registry_support import push_image, registry_token, v2
from tests.stored_outputs import output_blob

BIG_STDOUT = '{"ret": {"latency": {"value": 3}}}' + " " * 100_000  # past a row: a blob


def test_a_restored_backup_has_every_report_output_and_image(
    tmp_path: Path, database_url: str
) -> None:
    layer = os.urandom(200_000)
    backup = tmp_path / "backup"
    (tmp_path / "old").mkdir()
    with deploy(tmp_path / "old", database_url) as deployment:
        server = deployment.server
        channel = deployment.channel("raw")
        job_uuid = deployment.submit("bench.noop")
        channel.claim()
        channel.ask({"event": "running"})
        result = {"exit_code": 0, "stdout": BIG_STDOUT}
        assert (
            channel.ask({"event": "completed", "job": job_uuid, "results": [result]})["event"]
            == "ack"
        )
        report = deployment.wait_status(job_uuid, "processed").report
        assert output_blob(server.data_dir, job_uuid) is not None
        token = registry_token(server, server.token, "repository:bench:pull,push")
        with v2(server, token) as client:
            manifest_digest = push_image(client, "bench", "v1", layer)
        made = cli(
            *("admin", "backup", "--out", str(backup)),
            *("--db", database_url, "--data-dir", str(server.data_dir)),
        )
        assert "backed up the database and 3 blobs" in made.stderr + made.stdout
        templates, admin_token = server.templates, server.token

    engine = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    new_data = tmp_path / "new" / "data"
    with fresh_database(engine, tmp_path / "new") as new_url:
        restored = cli(
            *("admin", "restore", "--from", str(backup)),
            *("--db", new_url, "--data-dir", str(new_data)),
        )
        assert "checked 3 blobs" in restored.stderr + restored.stdout
        again = ServerProcess(new_data, templates, new_url, token=admin_token).start()
        try:
            assert "blob store is not the one" not in again.log.read_text()  # named by restore
            with again.client() as client:
                job = client.get_job("bench", job_uuid)
                assert output_json(job)["results"][0]["stdout"] == BIG_STDOUT
                assert client.get_report("bench", report).results
            token = registry_token(again, admin_token, "repository:bench:pull")
            with v2(again, token) as client:
                found = client.get("/bench/manifests/v1", headers={"Accept": OCI_MANIFEST})
                assert found.status_code == 200
                assert sha256_digest(found.content) == manifest_digest
                pulled = client.get(f"/bench/blobs/{sha256_digest(layer)}")
                assert pulled.status_code == 200 and pulled.content == layer
        finally:
            again.kill(signal.SIGTERM)

        refused = cli(
            *("admin", "restore", "--from", str(backup)),
            *("--db", new_url, "--data-dir", str(new_data)),
            check=False,
        )
        assert refused.returncode != 0  # never over a database in use
