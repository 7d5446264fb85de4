"""CPU lists and masks in the kernel's spellings."""

from __future__ import annotations

import pytest

from benchrunner.runner.tuning.cpulist import (
    format_cpulist,
    format_cpumask,
    parse_cpulist,
    parse_cpumask,
)


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("", set()),
        ("0", {0}),
        ("0-3", {0, 1, 2, 3}),
        ("0-2,5", {0, 1, 2, 5}),
        ("1,3,5-6", {1, 3, 5, 6}),
        ("0-1,3-4,8", {0, 1, 3, 4, 8}),
    ],
)
def test_cpulist_round_trip(text: str, cores: set[int]) -> None:
    assert parse_cpulist(text) == cores
    assert format_cpulist(cores) == text


@pytest.mark.parametrize("text", ["3-1", "a", "1-", "-1"])
def test_a_bad_cpulist_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


@pytest.mark.parametrize(
    ("mask", "cores"),
    [
        ("0", set()),
        ("3", {0, 1}),
        ("f", {0, 1, 2, 3}),
        ("a", {1, 3}),
        ("1,00000000", {32}),
        ("ffffffff,ffffffff", set(range(64))),
    ],
)
def test_cpumask_round_trip(mask: str, cores: set[int]) -> None:
    assert parse_cpumask(mask) == cores
    assert format_cpumask(cores) == mask
