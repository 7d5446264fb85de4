"""A real S3 server for the tests: moto's standalone server, started on a free loopback port.

It speaks the S3 protocol over HTTP like any S3-compatible store; the server under test talks to
it through boto3 with the standard ``AWS_*`` variables (``S3Server.env``). ``StoreGate`` sits
between the two as a plain TCP relay that a test can close and open again: the store is then
down as a client sees it (connections refused), while moto keeps its objects.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import botocore.config

from tests.harness import free_port, wait_until

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "benchrunner-test",
    "AWS_SECRET_ACCESS_KEY": "benchrunner-test-secret",
    "AWS_REGION": "us-east-1",
}


@dataclass
class S3Server:
    endpoint: str

    def client(self, endpoint: str | None = None) -> S3Client:
        config = botocore.config.Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "max_attempts": 2},
            connect_timeout=2,
            read_timeout=20,
        )
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint or self.endpoint,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_REGION"],
            config=config,
        )

    def new_bucket(self) -> str:
        name = f"bench-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        """The environment of a server process that stores its blobs here."""
        return {"AWS_ENDPOINT_URL": endpoint or self.endpoint, **CREDENTIALS}


@contextlib.contextmanager
def s3_server(log_dir: Path) -> Iterator[S3Server]:
    port = free_port()
    log = (log_dir / "moto.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **CREDENTIALS},
    )
    server = S3Server(f"http://127.0.0.1:{port}")
    try:

        def answers() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"moto exited {proc.returncode}: {log_dir / 'moto.log'}")
            with contextlib.suppress(Exception):
                server.client().list_buckets()
                return True
            return False

        wait_until(answers, timeout=60, interval=0.2, message="moto's S3 server")
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@dataclass
class StoreGate:
    """A TCP relay to ``target`` (host, port) on its own port of ``host`` (loopback unless
    given); ``close`` refuses new connections and cuts the open ones, ``open`` listens again on
    the same port."""

    target: tuple[str, int]
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    _listener: socket.socket | None = None
    _open: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread in accept()
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open.extend([client, upstream])
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _relay(self, one: socket.socket, other: socket.socket) -> None:
        peers = {one: other, other: one}
        try:
            while True:
                ready, _, _ = select.select(list(peers), [], [], 1.0)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for sock in (one, other):
                with contextlib.suppress(OSError):
                    sock.close()
