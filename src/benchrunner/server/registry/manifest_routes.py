"""Manifests by tag or digest, ``tags/list`` and the referrers API under ``/v2/<name>/``."""

from __future__ import annotations

import hashlib
import json
import logging
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response

from benchrunner.server.http.deps import Ctx
from benchrunner.server.registry import manifests
from benchrunner.server.registry.access import authorize
from benchrunner.server.registry.errors import RegistryError
from benchrunner.server.registry.references import (
    check_tag,
    is_digest,
    is_media_type,
    is_tag,
    sha256_hex,
)
from benchrunner.server.store import registry
from benchrunner.server.store.registry import ManifestRow, NewManifest

router = APIRouter(tags=["registry"])
log = logging.getLogger(__name__)
MAX_TAGS_PAGE = 1000


async def _read_manifest(ctx: Ctx, project_id: int, name: str, reference: str) -> ManifestRow:
    if is_digest(reference):
        sha256_hex(reference)
        found = await ctx.db.read(registry.manifest_by_digest, project_id, reference)
    else:
        found = await ctx.db.read(registry.manifest_by_tag, project_id, check_tag(reference))
    if found is None:
        raise RegistryError("MANIFEST_UNKNOWN", f"manifest {reference!r} unknown to {name!r}")
    return found


@router.api_route("/v2/{name}/manifests/{reference}", methods=["GET", "HEAD"])
async def manifest_get(ctx: Ctx, request: Request, name: str, reference: str) -> Response:
    project, caller = await authorize(ctx, request, name, "pull")
    manifest = await _read_manifest(ctx, project.id, name, reference)
    headers = {"Docker-Content-Digest": manifest.digest, "Content-Type": manifest.media_type}
    # The audit trail (docs/decisions/runner-tokens.md): a runner's token names the runner as its
    # subject.
    log.info(
        "registry: %s %s of project %s by %s",
        request.method,
        manifest.digest,
        project.uuid,
        caller.subject,
    )
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(manifest.content))
        return Response(status_code=200, headers=headers)
    return Response(manifest.content, headers=headers, media_type=manifest.media_type)


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RegistryError("SIZE_INVALID", f"manifest exceeds {limit} bytes", status=413)
    parts, seen = [], 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            raise RegistryError("SIZE_INVALID", f"manifest exceeds {limit} bytes", status=413)
        parts.append(chunk)
    return b"".join(parts)


@router.put("/v2/{name}/manifests/{reference}")
async def manifest_put(ctx: Ctx, request: Request, name: str, reference: str) -> Response:
    """Store a manifest whose blobs (or, for an index, manifests) the repository already holds."""
    project, caller = await authorize(ctx, request, name, "push")
    content = await _body(request, manifests.MAX_MANIFEST_BYTES)
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    tag = None
    if is_digest(reference):
        sha256_hex(reference)
        if reference != digest:
            raise RegistryError("DIGEST_INVALID", f"manifest hashes to {digest}, not {reference}")
    else:
        tag = check_tag(reference)
    parsed = manifests.parse(content, request.headers.get("content-type"))
    missing = await ctx.db.read(registry.blobs_missing, project.id, parsed.blobs)
    if missing:
        raise RegistryError("MANIFEST_BLOB_UNKNOWN", f"blob {missing[0]} unknown to {name!r}")
    missing = await ctx.db.read(registry.manifests_missing, project.id, parsed.manifests)
    if missing:
        raise RegistryError("MANIFEST_UNKNOWN", f"manifest {missing[0]} unknown to {name!r}")
    row = NewManifest(
        digest=digest,
        media_type=parsed.media_type,
        artifact_type=parsed.artifact_type,
        subject=parsed.subject,
        annotations=json.dumps(parsed.annotations) if parsed.annotations else None,
        content=content,
    )
    missing = await ctx.db.write(
        registry.manifest_put, project.id, row, tag, ctx.clock.now(), parsed.blobs
    )
    if missing:  # garbage collection removed it since the check above
        raise RegistryError("MANIFEST_BLOB_UNKNOWN", f"blob {missing[0]} unknown to {name!r}")
    log.info(
        "registry: PUT %s (tag %s) to project %s by %s", digest, tag, project.uuid, caller.subject
    )
    headers = {
        "Location": f"/v2/{name}/manifests/{digest}",
        "Docker-Content-Digest": digest,
        "Content-Length": "0",
    }
    if parsed.subject is not None:
        headers["OCI-Subject"] = parsed.subject
    return Response(status_code=201, headers=headers)


@router.delete("/v2/{name}/manifests/{reference}")
async def manifest_delete(ctx: Ctx, request: Request, name: str, reference: str) -> Response:
    """By digest: the manifest and its tags go. By tag: only the tag goes."""
    project, _ = await authorize(ctx, request, name, "delete")
    if is_digest(reference):
        sha256_hex(reference)
        deleted = await ctx.db.write(registry.manifest_delete, project.id, reference)
    else:
        deleted = await ctx.db.write(registry.tag_delete, project.id, check_tag(reference))
    if not deleted:
        raise RegistryError("MANIFEST_UNKNOWN", f"manifest {reference!r} unknown to {name!r}")
    return Response(status_code=202, headers={"Content-Length": "0"})


def _page_size(raw: str | None) -> int | None:
    """``n`` of a tag list, at most MAX_TAGS_PAGE (a larger one gets a page and a Link)."""
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit():
        raise RegistryError("UNSUPPORTED", "n must be a non-negative integer", status=400)
    digits = raw.lstrip("0")
    return MAX_TAGS_PAGE if len(digits) > 9 else min(int(digits or "0"), MAX_TAGS_PAGE)


@router.get("/v2/{name}/tags/list")
async def tags_list(ctx: Ctx, request: Request, name: str) -> Response:
    project, _ = await authorize(ctx, request, name, "pull")
    last = request.query_params.get("last") or None
    if last is not None and not is_tag(last):
        raise RegistryError("UNSUPPORTED", "last must be a tag", status=400)
    n = _page_size(request.query_params.get("n"))
    tags = [] if n == 0 else await ctx.db.read(registry.tags_list, project.id, last, n)
    headers = {}
    if n and len(tags) == n:
        query = urlencode({"n": n, "last": tags[-1]})
        headers["Link"] = f'</v2/{name}/tags/list?{query}>; rel="next"'
    return Response(
        json.dumps({"name": name, "tags": tags}),
        media_type="application/json",
        headers=headers,
    )


@router.get("/v2/{name}/referrers/{digest}")
async def referrers(ctx: Ctx, request: Request, name: str, digest: str) -> Response:
    """An image index of the manifests whose ``subject`` is ``digest`` (empty if none)."""
    project, _ = await authorize(ctx, request, name, "pull")
    sha256_hex(digest)
    artifact_type = request.query_params.get("artifactType") or None
    if artifact_type is not None and not is_media_type(artifact_type):
        raise RegistryError("UNSUPPORTED", "artifactType must be a media type", status=400)
    rows = await ctx.db.read(registry.referrers, project.id, digest, artifact_type)
    index = {
        "schemaVersion": 2,
        "mediaType": manifests.OCI_INDEX,
        "manifests": [
            manifests.referrer_descriptor(
                row.digest, row.media_type, len(row.content), row.artifact_type, row.annotations
            )
            for row in rows
        ],
    }
    headers = {"OCI-Filters-Applied": "artifactType"} if artifact_type else {}
    return Response(json.dumps(index), media_type=manifests.OCI_INDEX, headers=headers)


# Registered after every other /v2/ route (this module's router is included last).
@router.api_route(
    "/v2/{rest:path}",
    methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    include_in_schema=False,
)
async def unknown(rest: str) -> Response:
    """A path no registry route matches, most often a name with a slash (``org/project``)."""
    raise RegistryError(
        "NAME_UNKNOWN",
        f"no registry endpoint at /v2/{rest}: a repository is a project slug or UUID, "
        "without slashes",
    )
