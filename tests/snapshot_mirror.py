"""A stand-in for snapshot.debian.org, which the test machine cannot reach: an HTTP server on a
loopback address of its own that answers ``/archive/debian/<timestamp>/<path>`` with Debian's
current archive's ``<path>`` (``http://deb.debian.org/debian``), streamed through.

It serves today's packages under any timestamp: a build through it reads the snapshot's URL as a
reader's build does, but its packages are not the snapshot's. Every path it was asked for is
kept (``SnapshotMirror.served``), by timestamp.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from tests.http_serving import serving

ARCHIVE = "http://deb.debian.org/debian"
"""Where the stand-in's files come from: the archive deploy/images/build.sh reads by default."""

SNAPSHOT_PATH = re.compile(r"/archive/debian/(\d{8}T\d{6}Z)/(.*)")
PASSED_ON = ("Content-Type", "Content-Length", "Last-Modified", "ETag")


@dataclass
class SnapshotMirror:
    """The running stand-in: its address and what it served, as (timestamp, path) pairs."""

    host: str
    port: int
    served: list[tuple[str, str]] = field(default_factory=list)


def _handler(mirror: SnapshotMirror, upstream: httpx.Client) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            found = SNAPSHOT_PATH.fullmatch(self.path.split("?")[0])
            if found is None:
                self.send_error(404, "not a path of snapshot.debian.org's archive/debian")
                return
            timestamp, path = found.groups()
            method = "GET" if body else "HEAD"
            with upstream.stream(method, f"{ARCHIVE}/{path}") as answer:
                mirror.served.append((timestamp, path))
                self.send_response(answer.status_code)
                for name in PASSED_ON:
                    if name in answer.headers:
                        self.send_header(name, answer.headers[name])
                if "Content-Length" not in answer.headers:
                    # Without a length the body ends when the connection does.
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if body:
                    for chunk in answer.iter_raw():
                        self.wfile.write(chunk)

        def log_message(self, format: str, *args: object) -> None:
            pass  # what it served is in ``mirror.served``

    return Handler


@contextlib.contextmanager
def snapshot_mirror(host: str, port: int = 80) -> Iterator[SnapshotMirror]:
    """The stand-in, serving on ``host``:``port`` until the block ends."""
    mirror = SnapshotMirror(host, port)
    # Identity: the bytes passed on are the file's, as its Content-Length counts them.
    headers = {"Accept-Encoding": "identity"}
    with httpx.Client(timeout=httpx.Timeout(60, connect=30), headers=headers) as upstream:
        server = ThreadingHTTPServer((host, port), _handler(mirror, upstream))
        with serving(server, "snapshot-mirror"):
            yield mirror
