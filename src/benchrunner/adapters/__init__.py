"""Harness output -> Bencher Metric Format measurements. Pure functions, one module a harness."""

from __future__ import annotations

from collections.abc import Callable

from benchrunner.adapters.base import AdapterError, Measurement
from benchrunner.adapters.json_bmf import parse_bmf

__all__ = ["ADAPTERS", "AdapterError", "Measurement", "parse"]


def _magic(text: str) -> list[Measurement]:
    """Detect the format. Only BMF so far; other harnesses come with their adapters."""
    return parse_bmf(text)


ADAPTERS: dict[str, Callable[[str], list[Measurement]]] = {
    "json": parse_bmf,
    "magic": _magic,
}


def parse(adapter: str, text: str) -> list[Measurement]:
    """Parse one iteration's output. Raises AdapterError with a message a user can act on."""
    try:
        run = ADAPTERS[adapter]
    except KeyError:
        raise AdapterError(f"unknown adapter {adapter!r} (supported: {sorted(ADAPTERS)})") from None
    return run(text)
