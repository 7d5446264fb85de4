"""``uuid7``: version 7, RFC 9562's variant, the time's milliseconds in the leading 48 bits, the
rest from the random bytes given, and ordered by time."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from benchrunner.core.time_ordered_ids import uuid7

T0 = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _bytes(value: int) -> bytes:
    return value.to_bytes(10, "big")


@pytest.mark.parametrize(
    ("now", "random", "expected"),
    [
        (T0, 0, uuid.UUID(int=(int(T0.timestamp() * 1000) << 80) | (0x7 << 76) | (0x2 << 62))),
        (
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
            (1 << 80) - 1,
            uuid.UUID("00000000-0000-7fff-bfff-ffffffffffff"),
        ),
        (
            dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=dt.UTC),
            0,
            uuid.UUID("00000000-0001-7000-8000-000000000000"),
        ),
    ],
)
def test_bits(now: dt.datetime, random: int, expected: uuid.UUID) -> None:
    found = uuid7(now, lambda n: _bytes(random))
    assert found == expected
    assert found.version == 7
    assert found.variant == uuid.RFC_4122


def test_ordered_by_time_and_unique() -> None:
    later = T0 + dt.timedelta(milliseconds=1)
    earlier_ids = [uuid7(T0) for _ in range(1000)]
    assert len(set(earlier_ids)) == 1000
    assert max(earlier_ids).hex < uuid7(later, lambda n: _bytes(0)).hex
