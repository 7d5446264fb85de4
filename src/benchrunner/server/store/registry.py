"""The registry's rows: which blobs a project holds, its manifests, and its tags.

Units of work take a Connection (run them with ``Database.read``/``write``). A blob's bytes are in
the blob store; a row in ``oci_blob`` is what lets a project read them, so one project can never
fetch another's layer by guessing its digest.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from benchrunner.server.store.tables import oci_blob, oci_manifest, oci_tag


def blob_size(conn: Connection, project_id: int, digest: str) -> int | None:
    """The size of a blob this project holds, or None."""
    return conn.execute(
        sa.select(oci_blob.c.size).where(
            oci_blob.c.project_id == project_id, oci_blob.c.digest == digest
        )
    ).scalar()


def _insert_unless_present(conn: Connection, statement: sa.Insert) -> bool:
    """Run an insert that may race an identical one from another request (two clients pushing
    the same layer); False when a unique constraint says the row is already there. The savepoint
    keeps the outer transaction usable after the conflict on every engine."""
    try:
        with conn.begin_nested():
            conn.execute(statement)
    except sa.exc.IntegrityError:
        return False
    return True


def blob_link(conn: Connection, project_id: int, digest: str, size: int, now: dt.datetime) -> None:
    """Let the project read the blob (idempotent)."""
    if blob_size(conn, project_id, digest) is None:
        _insert_unless_present(
            conn,
            oci_blob.insert().values(project_id=project_id, digest=digest, size=size, created=now),
        )


def blob_unlink(conn: Connection, project_id: int, digest: str) -> bool:
    """Remove the project's link to the blob; False if it had none."""
    result = conn.execute(
        oci_blob.delete().where(oci_blob.c.project_id == project_id, oci_blob.c.digest == digest)
    )
    return result.rowcount > 0


def blobs_missing(conn: Connection, project_id: int, digests: Collection[str]) -> list[str]:
    """The digests among ``digests`` this project does not hold, in the order given."""
    if not digests:
        return []
    held = set(
        conn.execute(
            sa.select(oci_blob.c.digest).where(
                oci_blob.c.project_id == project_id, oci_blob.c.digest.in_(list(digests))
            )
        ).scalars()
    )
    return [d for d in digests if d not in held]


@dataclass(frozen=True)
class ManifestRow:
    id: int
    digest: str
    media_type: str
    artifact_type: str | None
    subject: str | None
    annotations: str | None
    content: bytes


def _manifest(row: Any) -> ManifestRow:
    return ManifestRow(
        row.id,
        row.digest,
        row.media_type,
        row.artifact_type,
        row.subject,
        row.annotations,
        bytes(row.content),
    )


@dataclass(frozen=True)
class NewManifest:
    digest: str
    media_type: str
    artifact_type: str | None
    subject: str | None
    annotations: str | None
    content: bytes


def manifests_missing(conn: Connection, project_id: int, digests: Collection[str]) -> list[str]:
    if not digests:
        return []
    held = set(
        conn.execute(
            sa.select(oci_manifest.c.digest).where(
                oci_manifest.c.project_id == project_id,
                oci_manifest.c.digest.in_(list(digests)),
            )
        ).scalars()
    )
    return [d for d in digests if d not in held]


def manifest_put(
    conn: Connection,
    project_id: int,
    manifest: NewManifest,
    tag: str | None,
    now: dt.datetime,
    blobs: Collection[str] = (),
) -> list[str]:
    """Store the manifest (a no-op if the project has it) and point ``tag`` at it, provided the
    project holds every one of ``blobs``; else store nothing and return those it lacks.

    The blobs' rows stay share-locked until the manifest is committed, so garbage collection
    (which locks a row before it judges it, ``blob_links_collect``) either sees this manifest
    or removes the row first and this finds it missing."""
    if blobs:
        held = set(
            conn.execute(
                sa.select(oci_blob.c.digest)
                .where(oci_blob.c.project_id == project_id, oci_blob.c.digest.in_(list(blobs)))
                .order_by(oci_blob.c.id)  # the order garbage collection locks them in
                .with_for_update(read=True)
            ).scalars()
        )
        missing = [d for d in blobs if d not in held]
        if missing:
            return missing
    by_digest = sa.select(oci_manifest.c.id).where(
        oci_manifest.c.project_id == project_id, oci_manifest.c.digest == manifest.digest
    )
    if conn.execute(by_digest).scalar() is None:
        _insert_unless_present(
            conn,
            oci_manifest.insert().values(
                project_id=project_id,
                digest=manifest.digest,
                media_type=manifest.media_type,
                artifact_type=manifest.artifact_type,
                subject=manifest.subject,
                annotations=manifest.annotations,
                content=manifest.content,
                created=now,
            ),
        )
    if tag is None:
        return []
    manifest_id = conn.execute(by_digest).scalar_one()
    point = (
        oci_tag.update()
        .where(oci_tag.c.project_id == project_id, oci_tag.c.name == tag)
        .values(manifest_id=manifest_id, modified=now)
    )
    if conn.execute(point).rowcount == 0:
        created = _insert_unless_present(
            conn,
            oci_tag.insert().values(
                project_id=project_id, name=tag, manifest_id=manifest_id, modified=now
            ),
        )
        if not created:  # another push created the tag meanwhile: the later push wins
            conn.execute(point)
    return []


def manifest_by_digest(conn: Connection, project_id: int, digest: str) -> ManifestRow | None:
    row = conn.execute(
        sa.select(oci_manifest).where(
            oci_manifest.c.project_id == project_id, oci_manifest.c.digest == digest
        )
    ).first()
    return _manifest(row) if row else None


def manifest_exists(conn: Connection, project_id: int, digest: str) -> bool:
    return not manifests_missing(conn, project_id, [digest])


def manifest_by_tag(conn: Connection, project_id: int, tag: str) -> ManifestRow | None:
    row = conn.execute(
        sa.select(oci_manifest)
        .join(oci_tag, oci_tag.c.manifest_id == oci_manifest.c.id)
        .where(oci_tag.c.project_id == project_id, oci_tag.c.name == tag)
    ).first()
    return _manifest(row) if row else None


def manifest_delete(conn: Connection, project_id: int, digest: str) -> bool:
    """Delete the manifest and every tag pointing at it; False if the project had none."""
    manifest_id = conn.execute(
        sa.select(oci_manifest.c.id).where(
            oci_manifest.c.project_id == project_id, oci_manifest.c.digest == digest
        )
    ).scalar()
    if manifest_id is None:
        return False
    conn.execute(oci_tag.delete().where(oci_tag.c.manifest_id == manifest_id))
    conn.execute(oci_manifest.delete().where(oci_manifest.c.id == manifest_id))
    return True


def tag_delete(conn: Connection, project_id: int, tag: str) -> bool:
    result = conn.execute(
        oci_tag.delete().where(oci_tag.c.project_id == project_id, oci_tag.c.name == tag)
    )
    return result.rowcount > 0


def tags_list(conn: Connection, project_id: int, last: str | None, n: int | None) -> list[str]:
    """Tag names in lexical order, those after ``last`` only, at most ``n``."""
    query = sa.select(oci_tag.c.name).where(oci_tag.c.project_id == project_id)
    if last is not None:
        query = query.where(oci_tag.c.name > last)
    query = query.order_by(oci_tag.c.name)
    if n is not None:
        query = query.limit(n)
    return list(conn.execute(query).scalars())


def referrers(
    conn: Connection, project_id: int, subject: str, artifact_type: str | None
) -> list[ManifestRow]:
    """Manifests whose ``subject`` is ``subject``, oldest first, of one artifact type if given."""
    query = sa.select(oci_manifest).where(
        oci_manifest.c.project_id == project_id, oci_manifest.c.subject == subject
    )
    if artifact_type is not None:
        query = query.where(oci_manifest.c.artifact_type == artifact_type)
    return [_manifest(r) for r in conn.execute(query.order_by(oci_manifest.c.id))]


# ------------------------------------------------------------ garbage collection


def projects_with_blobs_before(conn: Connection, cutoff: dt.datetime) -> list[int]:
    """Projects holding a blob linked before ``cutoff``: where garbage collection looks."""
    query = sa.select(oci_blob.c.project_id).where(oci_blob.c.created < cutoff).distinct()
    return list(conn.execute(query).scalars())


def blob_links_collect(
    conn: Connection,
    project_id: int,
    cutoff: dt.datetime,
    referenced_by: Callable[[bytes, str], Iterable[str]],
) -> list[str]:
    """Unlink the project's blobs linked before ``cutoff`` that none of its manifests
    references (``referenced_by(content, media_type)`` names a manifest's blobs); the digests
    unlinked.

    The candidate rows are locked before the manifests are read, so a manifest being stored
    over them (``manifest_put``) is either committed and seen here, or waits and then finds
    its blob gone."""
    candidates = conn.execute(
        sa.select(oci_blob.c.id, oci_blob.c.digest)
        .where(oci_blob.c.project_id == project_id, oci_blob.c.created < cutoff)
        .order_by(oci_blob.c.id)
        .with_for_update()
    ).all()
    if not candidates:
        return []
    referenced: set[str] = set()
    manifests = sa.select(oci_manifest.c.content, oci_manifest.c.media_type).where(
        oci_manifest.c.project_id == project_id
    )
    for content, media_type in conn.execute(manifests):
        referenced.update(referenced_by(bytes(content), media_type))
    unreferenced = [(row.id, row.digest) for row in candidates if row.digest not in referenced]
    if unreferenced:
        conn.execute(oci_blob.delete().where(oci_blob.c.id.in_([i for i, _ in unreferenced])))
    return [digest for _, digest in unreferenced]


def blobs_linked(conn: Connection) -> set[str]:
    """Every digest some project holds."""
    return set(conn.execute(sa.select(oci_blob.c.digest).distinct()).scalars())


def blob_linked(conn: Connection, digest: str) -> bool:
    """Whether any project holds the blob."""
    query = sa.select(oci_blob.c.id).where(oci_blob.c.digest == digest).limit(1)
    return conn.execute(query).first() is not None
