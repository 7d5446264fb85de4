"""A bisection's decisions, pure: what a duet's interval says, and where to look next.

Positions count the candidates, oldest first: the good version is position -1, the bad one
the last position. A bisection first asks whether bad measures differently from good at all
(``check_verdict``: its interval against ``1 ± margin``); then each candidate is placed on the
good or the bad side (``level_verdict``: its interval against the midpoint between 1 and bad's
ratio), and ``next_move`` narrows the range between the newest known-good and the oldest
known-bad position as ``git bisect`` does, skipping what could not be measured.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["same", "different", "unknown"]
Known = Literal["pending", "same", "different", "skipped"]
"""A position's state for the search: a duet under way, a verdict, or nothing to learn from
it (no image, a failed job, a verdict still unknown once the budget was spent)."""


def check_verdict(lower: float, upper: float, margin: float) -> Verdict:
    """Bad against good: ``different`` when the interval of the ratio lies wholly beyond
    ``1 ± margin``, ``same`` when it lies wholly within, else ``unknown`` (more rounds)."""
    if lower > 1 + margin or upper < 1 - margin:
        return "different"
    if lower >= 1 - margin and upper <= 1 + margin:
        return "same"
    return "unknown"


def level_verdict(lower: float, upper: float, bad_ratio: float) -> Verdict:
    """A version against good, once bad measured ``bad_ratio`` against good: ``different``
    (it measures as bad does) when its interval lies wholly on bad's side of the midpoint
    between 1 and ``bad_ratio``, ``same`` when wholly on good's side, else ``unknown``."""
    mid = (1 + bad_ratio) / 2
    toward_bad, toward_good = (
        (lower > mid, upper < mid) if bad_ratio > 1 else (upper < mid, lower > mid)
    )
    if toward_bad:
        return "different"
    if toward_good:
        return "same"
    return "unknown"


@dataclass(frozen=True)
class Probe:
    """Start a duet at each of these positions."""

    positions: tuple[int, ...]


@dataclass(frozen=True)
class Wait:
    """Nothing to start: duets under way, or no runner free for another."""


@dataclass(frozen=True)
class FirstBad:
    """``position`` is the first bad one: the one before it (-1: good) measured as good."""

    position: int


@dataclass(frozen=True)
class Ambiguous:
    """The first bad version is one of ``positions`` (oldest first): those before the last
    could not be measured."""

    positions: tuple[int, ...]


Move = Probe | Wait | FirstBad | Ambiguous


def bounds(count: int, known: Mapping[int, Known]) -> tuple[int, int]:
    """The newest position known good below the oldest known bad, and that oldest bad one
    (the last position, bad itself, when no candidate measured as bad)."""
    high = min((p for p, s in known.items() if s == "different"), default=count - 1)
    low = max((p for p, s in known.items() if s == "same" and p < high), default=-1)
    return low, high


def next_move(count: int, known: Mapping[int, Known], slots: int) -> Move:
    """Where to look next among ``count`` candidates (the last one bad), given what is known of
    some positions, with ``slots`` runners to run duets at once. New probes split the largest
    gaps between the bounds and the probes under way, each at the untested position nearest
    a gap's middle: one runner gives a binary search, more give several points at once."""
    low, high = bounds(count, known)
    inside = range(low + 1, high)
    untested = [p for p in inside if p not in known]
    under_way = [p for p in inside if known.get(p) == "pending"]
    if not untested and not under_way:
        if low == high - 1:
            return FirstBad(high)
        return Ambiguous(tuple(range(low + 1, high + 1)))
    free = slots - sum(1 for s in known.values() if s == "pending")
    marks = sorted({low, high, *under_way})
    chosen: list[int] = []
    while free > 0 and untested:
        gaps = list(itertools.pairwise(marks))
        widest = max(gaps, key=lambda g: sum(1 for p in untested if g[0] < p < g[1]))
        a, b = widest
        between = [p for p in untested if a < p < b]
        if not between:
            break
        middle = (a + b) / 2
        pick = min(between, key=lambda p: (abs(p - middle), p))
        chosen.append(pick)
        untested.remove(pick)
        marks = sorted([*marks, pick])
        free -= 1
    return Probe(tuple(sorted(chosen))) if chosen else Wait()
