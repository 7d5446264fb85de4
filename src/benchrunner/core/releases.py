"""What server, runner and CLI agree on about runner releases (docs/decisions/runner-releases.md).

A release is a wheel of benchrunner on an update channel, as Bencher's runner has them:
``stable`` runners converge on the newest stable release by version (they update when theirs is
older), ``canary`` runners on the newest canary build by content (they update when the checksum
of what they run differs, whatever its version).
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from packaging.version import InvalidVersion, Version

UpdateChannel = Literal["stable", "canary"]
CHANNELS: tuple[UpdateChannel, ...] = ("stable", "canary")
MAX_WHEEL_BYTES = 256 * 1024 * 1024

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# name-version[-build]-python-abi-platform.whl (PEP 427), for the distribution benchrunner only
_WHEEL = re.compile(
    r"benchrunner-(?P<version>[A-Za-z0-9_.!+]{1,64})(?:-[0-9][A-Za-z0-9_.]*)?"
    r"-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl"
)


def is_sha256_hex(value: str) -> bool:
    """64 lowercase hexadecimal digits."""
    return _SHA256_HEX.fullmatch(value) is not None


def sha256_file_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel_version(filename: str) -> str | None:
    """The version in a benchrunner wheel's file name (``_`` stands for ``-`` there), or None
    when ``filename`` is not one: no directory part, nothing but the PEP 427 characters."""
    found = _WHEEL.fullmatch(filename)
    return None if found is None else found["version"].replace("_", "-")


def parse_version(text: str | None) -> Version | None:
    if text is None:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def same_version(a: str, b: str) -> bool:
    """Equal as PEP 440 versions (``0.2.0`` is ``0.2``), or as text when either is not one."""
    va, vb = parse_version(a), parse_version(b)
    return a == b if va is None or vb is None else va == vb


def needs_update(
    channel: UpdateChannel,
    *,
    release_version: str,
    release_checksum: str,
    running_version: str | None,
    running_checksum: str | None,
) -> bool:
    """Whether a runner of ``channel`` running ``running_version`` (the wheel it was installed
    from hashing to ``running_checksum``, when it knows it) should update to the release.

    Stable: only to a newer version; a version that is not PEP 440 is never judged older.
    Canary: to any other build."""
    if channel == "canary":
        return running_checksum != release_checksum
    running, release = parse_version(running_version), parse_version(release_version)
    return running is not None and release is not None and running < release
