"""A test's own HTTP server (``http.server``) answering from a thread until the block ends:
the webhook receiver, the snapshot.debian.org stand-in."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer


@contextlib.contextmanager
def serving(server: ThreadingHTTPServer, name: str) -> Iterator[ThreadingHTTPServer]:
    """``server`` answering on a daemon thread called ``name``; shut down and closed after."""
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
