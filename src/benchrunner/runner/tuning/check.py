"""One line of ``benchrunner runner preflight``: a thing that perturbs measurements, what it is on
this host, what it should be, and the command that fixes it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    """As a benchmark host wants it."""
    WARN = "warn"
    """Adds some noise; worth fixing, not disqualifying."""
    BAD = "bad"
    """Results taken like this are not trustworthy: the host is not fit."""
    UNKNOWN = "unknown"
    """Could not be read (absent file, no permission): nothing is claimed either way."""


@dataclass(frozen=True)
class Check:
    name: str
    what: str
    actual: str
    expected: str
    fix: str
    status: Status

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status.value}


def unreadable(name: str, what: str, expected: str, fix: str, why: str) -> Check:
    return Check(name, what, f"cannot read: {why}", expected, fix, Status.UNKNOWN)
