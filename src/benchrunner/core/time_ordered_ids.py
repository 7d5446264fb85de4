"""UUIDs whose leading bits are their creation time (version 7), for rows written
by the thousand: a report's metrics.

A random UUID (version 4) lands anywhere in the unique index on ``uuid``, so each of a report's
3,000 metrics goes into a leaf of its own among millions, read from the file when not cached.
Those of one moment share their leading 48 bits (milliseconds since the Unix epoch) and go into
a few neighbouring leaves. The remaining 74 bits are random: as unique as a version 4's 122 bits
among the few that share a millisecond.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Callable

_VERSION = 0x7 << 76
_VARIANT = 0x2 << 62
_RANDOM = (1 << 74) - 1
"""The random bits: 12 after the version, 62 after the variant."""


def uuid7(now: dt.datetime, random_bytes: Callable[[int], bytes] = os.urandom) -> uuid.UUID:
    """A version 7 UUID of the time ``now`` (aware), its other bits from ``random_bytes``."""
    millis = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    bits = int.from_bytes(random_bytes(10), "big") & _RANDOM
    high, low = bits >> 62, bits & ((1 << 62) - 1)
    return uuid.UUID(int=(millis << 80) | _VERSION | (high << 64) | _VARIANT | low)
