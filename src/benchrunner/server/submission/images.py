"""An image job's image and spec: which registry, project and digest ``job.image`` names,
and the spec it runs on when the body names none (the fallback spec)."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.engine import Connection

from benchrunner.core.image_refs import ImageRef, ImageRefError, host_of_url, parse_image_ref
from benchrunner.server.http.errors import bad_request
from benchrunner.server.store import registry, runners
from benchrunner.server.store.accounts import ProjectRow


def checked_image_ref(field: str, text: str) -> ImageRef:
    """``text`` (a digest or a tag, in any registry form) parsed; 400 naming ``field``."""
    try:
        return parse_image_ref(text)
    except ImageRefError as exc:
        raise bad_request(f"{field} {text!r}: {exc}") from None


def check_registry_host(ref: ImageRef, reached: str | None, base_url: str) -> None:
    """400 unless the reference names no registry or this server: by its public URL, or by
    the host the request ``reached`` it under (what a CLI on the same network writes)."""
    if ref.host is None:
        return
    ours = {host_of_url(base_url)}
    if reached is not None:
        ours.add(host_of_url(reached))
    if _loopback_as_one(ref.host) not in {_loopback_as_one(host) for host in ours}:
        raise bad_request(
            f"image registry {ref.host!r} is not this server ({', '.join(sorted(ours))}): "
            "push the image to this server's registry and name it here"
        )


_LOOPBACK = re.compile(r"(?:localhost|127\.0\.0\.1|\[::1\])(:[0-9]+)?")


def _loopback_as_one(host: str) -> str:
    """``localhost:8080``, ``127.0.0.1:8080`` and ``[::1]:8080`` all name this machine."""
    match = _LOOPBACK.fullmatch(host)
    return host if match is None else f"loopback{match.group(1) or ''}"


def image_project(ref: ImageRef | None) -> str | None:
    """The project an image names (its repository), for a run that names no project."""
    return None if ref is None else ref.repository


def image_digest(conn: Connection, project: ProjectRow, ref: ImageRef) -> str:
    """The manifest digest ``ref`` names in ``project``'s registry: its digest, or what its
    tag points at now (a tag moves; the job keeps the digest it was submitted with). 400 when
    the image names another project's repository or is not in the registry."""
    if ref.repository is not None and ref.repository not in (project.slug, str(project.uuid)):
        raise bad_request(
            f"image repository {ref.repository!r} is not project {project.slug!r}: an image "
            "job runs in the project whose registry holds its image"
        )
    if ref.digest is not None:
        if not registry.manifest_exists(conn, project.id, ref.digest):
            raise bad_request(
                f"image {ref.digest} is not in project {project.slug!r}'s registry: "
                "push it first (benchrunner image push)"
            )
        return ref.digest
    assert ref.tag is not None
    found = registry.manifest_by_tag(conn, project.id, ref.tag)
    if found is None:
        raise bad_request(
            f"tag {ref.tag!r} is not in project {project.slug!r}'s registry: push it first "
            "(benchrunner image push)"
        )
    return found.digest


def job_spec(conn: Connection, ref: str | None) -> Any:
    """The named spec, or the fallback spec when none is named; 400 when there is none."""
    if ref is None:
        found = runners.spec_fallback(conn)
        if found is None:
            raise bad_request(
                "spec is required for runner execution (image was given): no fallback spec "
                'is marked (an admin marks one with PATCH /v0/specs/{spec} {"fallback": true})'
            )
        return found
    spec = runners.spec_get(conn, ref)
    if spec is None or spec.archived is not None:
        raise bad_request(f"spec {ref!r} not found (or archived)")
    return spec
