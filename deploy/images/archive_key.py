"""Print a key of the Debian archives' state: what a Debian layer built from them now would hold.

build.sh keeps its Debian layer under a hash of how it is made; without the archives' state in
that hash, a cached layer would be reused for ever, and a security update published since it
was made would never reach an image built on that machine. Each source's ``InRelease`` (or
``Release``) lists the checksums of the suite's package indexes; the lines of the index of the
machine's architecture change exactly when a package of that architecture is added, updated or
removed, and not when the archive only signs its release file again (a new ``Date`` and
``Valid-Until``). The key is a hash of those lines, source by source. Runs on any Python 3.11,
standard library only; honours ``http_proxy`` as apt's own fetches through the host would:

    python3 deploy/images/archive_key.py ARCH 'deb URL SUITE COMPONENT...' ...

Prints 16 hexadecimal digits; exits 1 with one line naming the source when one cannot be read.
"""

from __future__ import annotations

import hashlib
import http.client
import sys
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 30.0
"""Seconds to wait for a release file: a mirror that does not answer fails the key."""

SCHEMES = frozenset({"http", "https", "file"})
"""The mirrors' URL schemes read: apt's own (a local mirror is a ``file:`` URL)."""

COMPRESSIONS = ("", ".gz", ".xz", ".bz2", ".lzma", ".zst")
"""The forms of a package index a release file lists (not its ``.diff/Index``, which holds the
same information again)."""


class ArchiveError(Exception):
    """A source whose state cannot be read, with the reason in one line."""


class _Missing(Exception):
    """A release file the mirror says it does not have."""


def _read(url: str) -> str:
    try:
        # The scheme is one of SCHEMES (checked by the caller), as apt reads them.
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:  # noqa: S310
            return str(answer.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise _Missing from exc
        raise ArchiveError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, FileNotFoundError):  # a file: mirror's, as urllib reports it
            raise _Missing from exc
        raise ArchiveError(f"{url}: {exc.reason}") from exc
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise ArchiveError(f"{url}: {exc!r}") from exc


def release_text(base: str, suite: str) -> tuple[str, str]:
    """The release file of ``suite`` at ``base``, and its URL: ``InRelease``, or ``Release``
    where the mirror has no ``InRelease`` (any other failure is the source's)."""
    try:
        scheme = urllib.parse.urlsplit(base).scheme
    except ValueError as exc:
        raise ArchiveError(f"{base}: {exc}") from exc
    if scheme not in SCHEMES:
        raise ArchiveError(f"{base}: not an http, https or file URL")
    for name in ("InRelease", "Release"):
        url = f"{base.rstrip('/')}/dists/{suite}/{name}"
        try:
            return _read(url), url
        except _Missing:
            continue
    raise ArchiveError(f"{base}/dists/{suite}: neither InRelease nor Release is there")


def index_lines(text: str, components: list[str], architecture: str) -> list[str]:
    """The ``SHA256`` lines of the package indexes of ``components`` for ``architecture``,
    every compression of each (they change together)."""
    wanted = {
        f"{component}/binary-{architecture}/Packages{compression}"
        for component in components
        for compression in COMPRESSIONS
    }
    lines: list[str] = []
    in_sha256 = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_sha256 = line.rstrip() == "SHA256:"
            continue
        if in_sha256:
            fields = line.split()
            if len(fields) == 3 and fields[2] in wanted:
                lines.append(" ".join(fields))
    return sorted(lines)


def source_state(line: str, architecture: str) -> str:
    """What one sources.list line (``deb URL SUITE COMPONENT...``) contributes to the key: its
    index lines alone (build.sh's key of how the layer is made holds the line itself)."""
    fields = line.split()
    if len(fields) < 4 or fields[0] != "deb":
        raise ArchiveError(f"not a 'deb URL SUITE COMPONENT...' line: {line!r}")
    base, suite, components = fields[1], fields[2], fields[3:]
    text, url = release_text(base, suite)
    lines = index_lines(text, components, architecture)
    if not lines:
        raise ArchiveError(f"{url} lists no package index for {architecture} in {components}")
    return "\n".join(lines)


def archive_key(architecture: str, sources: list[str]) -> str:
    """16 hexadecimal digits of a hash of every source's state, in the order given."""
    digest = hashlib.sha256()
    for line in sources:
        digest.update(source_state(line, architecture).encode())
        digest.update(b"\n\n")
    return digest.hexdigest()[:16]


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: archive_key.py ARCH 'deb URL SUITE COMPONENT...' ...", file=sys.stderr)
        return 2
    try:
        print(archive_key(argv[1], argv[2:]))
    except ArchiveError as exc:
        print(f"archive_key.py: cannot read the archive's state: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
