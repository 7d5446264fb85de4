"""The time source. Injected wherever tests need to control time."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
