"""A minimal read-only OCI registry on loopback, for the pull client's own tests: serves blobs
and manifests by digest to one Bearer token, records every request so a test can tell a cached
pull from a download, and can be made slow (``chunk_delay``) or hostile (``tamper``), which the
server's real ``/v2/`` cannot. End-to-end tests use the real ``/v2/``."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.oci_layout import Layout

REPOSITORY = "0f3c5a52-3c7f-4f55-9d0e-5a2b7d7a1c11"
TOKEN = "test-pull-token"
_SLOW_CHUNK = 64 * 1024


@dataclass
class LocalRegistry:
    """``tamper`` replaces what is served for a digest; ``chunk_delay`` > 0 serves bodies
    slowly, 64 KiB at a time, so a test can act while a download is under way."""

    url: str
    blobs: dict[str, bytes] = field(default_factory=dict)
    tamper: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    chunk_delay: float = 0.0

    def serve(self, layout: Layout) -> None:
        self.blobs.update(layout.blobs)


@contextmanager
def local_registry() -> Iterator[LocalRegistry]:
    state = LocalRegistry(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}')
                return
            prefix, _, digest = self.path.rpartition("/")
            if prefix not in (f"/v2/{REPOSITORY}/manifests", f"/v2/{REPOSITORY}/blobs"):
                self._answer(404, b"{}")
                return
            body = state.tamper.get(digest, state.blobs.get(digest))
            if body is None:
                self._answer(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
            else:
                self._answer(200, body)

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not state.chunk_delay:
                self.wfile.write(body)
                return
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for start in range(0, len(body), _SLOW_CHUNK):
                    self.wfile.write(body[start : start + _SLOW_CHUNK])
                    self.wfile.flush()
                    time.sleep(state.chunk_delay)  # the scenario: a slow registry

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
