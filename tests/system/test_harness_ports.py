"""The test harness never talks to another test's server: a server whose port was taken
between ``free_port`` choosing it and the server listening (by a server of a test on another
worker) starts on another port, and the harness checks the replica that answers is its own."""

from __future__ import annotations

from pathlib import Path

from tests.harness import ServerProcess, deploy


def test_a_first_start_on_a_taken_port_moves_to_a_free_one(tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    with deploy(tmp_path / "first", f"sqlite:///{tmp_path / 'first.db'}") as first:
        taken = first.server.port
        second = ServerProcess(
            tmp_path / "second", first.server.templates, f"sqlite:///{tmp_path / 'second.db'}"
        )
        second.port = taken
        try:
            second.start()
            assert second.port != taken and second.starts == 2
            with second.client() as client:
                assert client.health().replica == second.identity
                assert client.create_organization("other", "team").name == "other"
            with first.server.client() as client:
                assert client.health().replica == first.server.identity
                assert [o.name for o in client.list_organizations()] == ["acme"]
        finally:
            second.kill()
