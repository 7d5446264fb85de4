"""The registry's rows on a real database: idempotent links, tags that move, races that lose."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from benchrunner.core.clock import utcnow
from benchrunner.core.tiers import Plan
from benchrunner.server.store import accounts, registry
from benchrunner.server.store.engine import Database
from benchrunner.server.store.registry import NewManifest
from benchrunner.server.store.tables import oci_tag

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def _project(conn: Connection) -> int:
    org = accounts.organization_create(conn, "o", Plan.TEAM, utcnow(), leader_id=None)
    return accounts.project_create(conn, org.id, "p", "public", utcnow()).id


def _manifest(digest: str) -> NewManifest:
    return NewManifest(digest, "application/vnd.oci.image.manifest.v1+json", None, D1, None, b"{}")


def test_links_and_manifests_are_idempotent_and_tags_move(migrated_db: Database) -> None:
    def unit(conn: Connection) -> None:
        project = _project(conn)
        registry.blob_link(conn, project, D1, 5, utcnow())
        registry.blob_link(conn, project, D1, 5, utcnow())
        assert registry.blobs_missing(conn, project, [D1, D2]) == [D2]
        registry.manifest_put(conn, project, _manifest(D1), "v1", utcnow())
        registry.manifest_put(conn, project, _manifest(D1), "v1", utcnow())
        registry.manifest_put(conn, project, _manifest(D2), "v1", utcnow())
        moved = registry.manifest_by_tag(conn, project, "v1")
        assert moved is not None and moved.digest == D2
        assert registry.tags_list(conn, project, None, None) == ["v1"]
        assert [m.digest for m in registry.referrers(conn, project, D1, None)] == [D1, D2]
        assert registry.manifest_delete(conn, project, D2)
        assert registry.tags_list(conn, project, None, None) == []

    migrated_db.write_sync(unit)


def test_a_tag_created_by_a_racing_push_is_overwritten_not_an_error(migrated_db: Database) -> None:
    def unit(conn: Connection) -> None:
        project = _project(conn)
        registry.manifest_put(conn, project, _manifest(D1), None, utcnow())
        registry.manifest_put(conn, project, _manifest(D2), "v1", utcnow())
        other = registry.manifest_by_digest(conn, project, D1)
        assert other is not None
        # what the other push leaves behind between our UPDATE and our INSERT
        assert not registry._insert_unless_present(
            conn,
            oci_tag.insert().values(
                project_id=project, name="v1", manifest_id=other.id, modified=utcnow()
            ),
        )
        tagged = registry.manifest_by_tag(conn, project, "v1")
        assert tagged is not None and tagged.digest == D2

    migrated_db.write_sync(unit)
