"""Hosts of the test's own: network namespaces joined to this one by a veth pair.

A process started in a namespace (``ip netns exec``) has its own loopback and one link, to the
test's namespace: it reaches the test's end of the link and nothing else, and the test reaches
it at the namespace's end. Two namespaces cannot reach each other. The addresses are link-local
(169.254.0.0/16), a /30 per namespace, so no packet can leave the machine.

Making them needs root and ``ip`` (iproute2); ``namespaces_available`` says whether it works here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Namespace:
    name: str
    address: str
    """Its end of the link: where the test reaches the processes in it."""
    peer: str
    """The test's end of the link: where its processes reach the test's."""


def _ip(*args: str, netns: str | None = None) -> None:
    prefix = [] if netns is None else ["netns", "exec", netns, "ip"]
    subprocess.run(["ip", *prefix, *args], check=True, capture_output=True, timeout=30)


@functools.cache
def namespaces_available() -> bool:
    """Whether this process can make network namespaces (root, with ``ip``), tried once."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    try:
        with network_namespace("probe", 0):
            return True
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def network_namespace(tag: str, index: int) -> Iterator[Namespace]:
    """A new namespace linked to this one; ``index`` (0 to 63) picks its /30 among this
    process's, and the process id the /24, so parallel test workers do not collide."""
    name = f"br{os.getpid() % 100000}{tag}"[:13]
    outside, inside = f"{name}h", f"{name}n"
    base = f"169.254.{10 + os.getpid() % 240}"
    peer, address = f"{base}.{4 * index + 1}", f"{base}.{4 * index + 2}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        try:
            _ip("link", "set", inside, "netns", name)
            _ip("addr", "add", f"{peer}/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("addr", "add", f"{address}/30", "dev", inside, netns=name)
            _ip("link", "set", inside, "up", netns=name)
            _ip("link", "set", "lo", "up", netns=name)
            yield Namespace(name, address, peer)
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", outside)  # takes its peer with it
    finally:
        _ip("netns", "del", name)
