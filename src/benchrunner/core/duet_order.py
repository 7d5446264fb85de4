"""The order of a duet job's runs: ``rounds`` rounds, each running the baseline (A) and the
contender (B) once, which of them first drawn per round from a seeded generator.

Interleaving with a random order per round (A B, B A, B A, A B, ...) spreads drift over time
(the machine warming up, a neighbour starting) evenly over both sides, and a fixed
alternation cannot line up with a periodic disturbance. The seed is recorded in the job's
config, so the order is reproducible; the runner also tags every result with its side and round.
"""

from __future__ import annotations

import random
from typing import Literal

Side = Literal["baseline", "contender"]
BASELINE: Side = "baseline"
CONTENDER: Side = "contender"
LETTER: dict[Side, str] = {BASELINE: "A", CONTENDER: "B"}


def round_orders(seed: int, rounds: int) -> list[tuple[Side, Side]]:
    """Each round's two sides in the order they run."""
    draw = random.Random(seed)
    return [
        (BASELINE, CONTENDER) if draw.random() < 0.5 else (CONTENDER, BASELINE)
        for _ in range(rounds)
    ]


def run_sequence(seed: int, rounds: int) -> list[tuple[int, Side]]:
    """Every run in order as (round, side): iteration ``i`` of the job is entry ``i``."""
    return [
        (index, side) for index, order in enumerate(round_orders(seed, rounds)) for side in order
    ]


def order_text(sequence: list[tuple[int, Side]]) -> str:
    """``"AB BA ..."``: the runs as letters, one group per round (A = baseline)."""
    groups: dict[int, str] = {}
    for index, side in sequence:
        groups[index] = groups.get(index, "") + LETTER[side]
    return " ".join(groups[index] for index in sorted(groups))
