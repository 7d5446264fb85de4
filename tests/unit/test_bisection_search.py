"""A bisection's decisions, table-driven: what an interval says, and where it looks next."""

from __future__ import annotations

import pytest

from benchrunner.server.bisection.search import (
    Ambiguous,
    FirstBad,
    Known,
    Move,
    Probe,
    Wait,
    check_verdict,
    level_verdict,
    next_move,
)


@pytest.mark.parametrize(
    ("lower", "upper", "margin", "expected"),
    [
        (1.04, 1.07, 0.02, "different"),
        (0.90, 0.95, 0.02, "different"),
        (0.99, 1.01, 0.02, "same"),
        (0.98, 1.02, 0.02, "same"),
        (0.97, 1.01, 0.02, "unknown"),
        (1.01, 1.05, 0.02, "unknown"),
        (0.90, 1.10, 0.02, "unknown"),
    ],
)
def test_bad_against_good(lower: float, upper: float, margin: float, expected: str) -> None:
    assert check_verdict(lower, upper, margin) == expected


@pytest.mark.parametrize(
    ("lower", "upper", "bad_ratio", "expected"),
    [
        (1.04, 1.07, 1.06, "different"),  # bad's level
        (0.99, 1.02, 1.06, "same"),  # good's level
        (1.01, 1.05, 1.06, "unknown"),  # across the midpoint 1.03
        (0.93, 0.95, 0.94, "different"),  # a change to faster
        (0.98, 1.01, 0.94, "same"),
        (0.95, 0.99, 0.94, "unknown"),
    ],
)
def test_a_version_against_good(
    lower: float, upper: float, bad_ratio: float, expected: str
) -> None:
    assert level_verdict(lower, upper, bad_ratio) == expected


SIXTEEN = 16  # positions 0 .. 15, bad the last
CASES: list[tuple[str, int, dict[int, Known], int, Move]] = [
    ("the first probe halves the range", SIXTEEN, {15: "different"}, 1, Probe((7,))),
    ("one probe at a time on one runner", SIXTEEN, {15: "different", 7: "pending"}, 1, Wait()),
    ("three runners split it in four", SIXTEEN, {15: "different"}, 3, Probe((3, 7, 11))),
    ("a good probe moves the lower bound", SIXTEEN, {15: "different", 7: "same"}, 1, Probe((11,))),
    ("a bad probe moves the upper bound", SIXTEEN, {15: "different", 7: "different"}, 1,
     Probe((3,))),
    ("a skipped probe: its neighbour", SIXTEEN, {15: "different", 7: "skipped"}, 1, Probe((6,))),
    ("skipped on both sides: the next nearest", SIXTEEN,
     {15: "different", 6: "skipped", 7: "skipped"}, 1, Probe((8,))),
    ("a runner free while one probes", SIXTEEN, {15: "different", 7: "pending"}, 2, Probe((3,))),
    ("adjacent good and bad: found", SIXTEEN, {15: "different", 9: "same", 10: "different"}, 1,
     FirstBad(10)),
    ("the first candidate bad: good is its parent", SIXTEEN, {15: "different", 0: "different"},
     1, FirstBad(0)),
    ("only skipped between: ambiguous", SIXTEEN,
     {15: "different", 8: "same", 9: "skipped", 10: "different"}, 1, Ambiguous((9, 10))),
    ("a single candidate is bad itself", 1, {0: "different"}, 1, FirstBad(0)),
    ("a probe outside the range still holds its runner", SIXTEEN,
     {15: "different", 7: "different", 11: "pending"}, 1, Wait()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("count", "known", "slots", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_next_move(count: int, known: dict[int, Known], slots: int, expected: Move) -> None:
    assert next_move(count, known, slots) == expected


def test_a_search_of_sixty_four_takes_six_probes() -> None:
    first_bad = 41
    known: dict[int, Known] = {63: "different"}
    probes = 0
    while True:
        move = next_move(64, known, 1)
        if isinstance(move, FirstBad):
            break
        assert isinstance(move, Probe)
        for p in move.positions:
            known[p] = "different" if p >= first_bad else "same"
            probes += 1
    assert move == FirstBad(first_bad)
    assert probes == 6
