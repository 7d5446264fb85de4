"""OCI image references as Bencher's CLI sends them in ``job.image``.

Accepted forms (``[host[:port]/]repository[:tag][@digest]``, or a bare digest):

| form                                   | repository | tag      | digest |
|----------------------------------------|------------|----------|--------|
| ``sha256:<64 hex>``                    | -          | -        | set    |
| ``bench``                              | bench      | latest   | -      |
| ``bench:v1``                           | bench      | v1       | -      |
| ``bench@sha256:<hex>``                 | bench      | -        | set    |
| ``bench:v1@sha256:<hex>``              | bench      | (v1)     | set    |
| ``host:8080/bench:v1``                 | bench      | v1       | -      |

A repository is one path component (a project slug or UUID, as this server's registry names
them). The first component is a host when it contains ``.`` or ``:`` or is ``localhost``, as
Docker reads references; whether that host is this server is the caller's question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_TAG = "latest"
MAX_REFERENCE = 1024

_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
_REPOSITORY = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
_HOST = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?")


class ImageRefError(ValueError):
    """The text is not an image reference this server can resolve; the message says why."""


@dataclass(frozen=True)
class ImageRef:
    host: str | None
    """``host[:port]`` as written, lowercased; None when the reference names no registry."""
    repository: str | None
    """None for a bare digest."""
    tag: str | None
    digest: str | None

    @property
    def reference(self) -> str:
        """What to look up in the repository: the digest when given, else the tag."""
        return self.digest or self.tag or DEFAULT_TAG


def _is_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def parse_image_ref(text: str) -> ImageRef:
    """The parts of ``text``; ImageRefError naming what is wrong."""
    if not text or len(text) > MAX_REFERENCE:
        raise ImageRefError(f"must be 1-{MAX_REFERENCE} characters")
    if _DIGEST.fullmatch(text):
        return ImageRef(None, None, None, text)
    rest, _, digest = text.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        raise ImageRefError(f"digest {digest!r} is not sha256: followed by 64 lowercase hex")
    host: str | None = None
    components = rest.split("/")
    if len(components) > 1 and _is_host(components[0]):
        host = components.pop(0)
        if not _HOST.fullmatch(host):
            raise ImageRefError(f"registry host {host!r} is not a host[:port]")
        host = host.lower()
    if len(components) != 1:
        raise ImageRefError(
            f"repository {'/'.join(components)!r} must be one name (a project slug or UUID)"
        )
    repository, colon, tag = components[0].partition(":")
    if not _REPOSITORY.fullmatch(repository):
        raise ImageRefError(
            f"repository {repository!r} is not a repository name (lowercase letters, digits, "
            "'.', '_', '-')"
        )
    if colon and not _TAG.fullmatch(tag):
        raise ImageRefError(f"tag {tag!r} is not a valid tag")
    return ImageRef(host, repository, tag or (None if digest else DEFAULT_TAG), digest or None)


def host_of_url(url: str) -> str:
    """``host[:port]`` of an ``http(s)://`` URL, lowercased, with the scheme's default port
    dropped, so that it compares with an ``ImageRef.host``."""
    scheme, _, rest = url.partition("://")
    authority = rest.split("/", 1)[0].lower()
    default = {"http": ":80", "https": ":443"}.get(scheme.lower())
    if default and authority.endswith(default):
        authority = authority[: -len(default)]
    return authority
