"""rust_iai: Iai's five Cachegrind counts per benchmark, under Bencher's Iai measure slugs."""

from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.adapter_samples import assert_measurements, sample

SLUGS = ("instructions", "l1-accesses", "l2-accesses", "ram-accesses", "estimated-cycles")


def counts(name: str, *values: float) -> list[Measurement]:
    return [Measurement(name, slug, value) for slug, value in zip(SLUGS, values, strict=True)]


SAMPLES = {
    "two.txt": [
        *counts("iai_parse_short", 2100, 2800, 4, 3, 2925),
        *counts("iai_parse_long", 31_000_000, 42_000_000, 10, 5, 42_000_225),
    ],
    "change.txt": [
        *counts("iai_parse_short", 2150, 2790, 4, 3, 2935),
        *counts("iai_parse_long", 30_000_000, 42_000_000, 12, 5, 42_000_235),
    ],
}

BLOCK = (
    "{name}\n  Instructions: {i}\n  L1 Accesses: 2\n  L2 Accesses: 3\n"
    "  RAM Accesses: 4\n  Estimated Cycles: 5\n"
)


@pytest.mark.parametrize("name", SAMPLES)
def test_sample(name: str) -> None:
    text = sample("rust_iai", name)
    found = parse("rust_iai", text)
    assert_measurements(found, SAMPLES[name])
    assert parse("rust", text) == found
    assert parse("magic", text) == found


def test_thousands_separators_and_a_repeated_benchmark() -> None:
    text = BLOCK.format(name="b", i="1,000") + BLOCK.format(name="b", i="7")
    assert_measurements(parse("rust_iai", text), counts("b", 7, 2, 3, 4, 5))


@pytest.mark.parametrize(
    "text",
    [
        # Four counts only, counts out of order, a signed count, a malformed change.
        "b\n  Instructions: 1\n  L1 Accesses: 2\n  L2 Accesses: 3\n  RAM Accesses: 4\n",
        "b\n  L1 Accesses: 2\n  Instructions: 1\n  L2 Accesses: 3\n  RAM Accesses: 4\n"
        "  Estimated Cycles: 5\n",
        BLOCK.format(name="b", i="-1"),
        BLOCK.format(name="b", i="1 (+1.2.3%)"),
        BLOCK.format(name="b", i="1 (up 3%)"),
        BLOCK.format(name="b", i="1 extra"),
        BLOCK.format(name="b", i=str(2**64)),
        # An empty line is not a name.
        BLOCK.format(name="", i="1"),
    ],
)
def test_blocks_bencher_passes_over(text: str) -> None:
    with pytest.raises(AdapterError, match=r"^rust_iai: no benchmark found"):
        parse("rust_iai", text)


@pytest.mark.parametrize("average", ["mean", "median"])
def test_an_average_cannot_be_read(average: str) -> None:
    with pytest.raises(AdapterError, match=f"^rust_iai: .*settings.average '{average}'"):
        parse("rust_iai", BLOCK.format(name="b", i="1"), Settings(average=average))  # type: ignore[arg-type]


def test_a_name_too_long_is_an_error() -> None:
    with pytest.raises(AdapterError, match=r"^rust_iai: benchmark name must be 1-1024"):
        parse("rust_iai", BLOCK.format(name="n" * 1025, i="1"))


def test_a_count_of_thousands_of_digits_is_no_result() -> None:
    """Bencher reads counts as u64s: more digits than Python converts (4,300) make no result,
    not a ValueError escaping the adapter (``magic`` catches only AdapterError)."""
    text = BLOCK.format(name="b", i="1" * 5000)
    with pytest.raises(AdapterError, match=r"^rust_iai: no benchmark found"):
        parse("rust_iai", text)
    with pytest.raises(AdapterError, match=r"^rust: no harness found benchmark results"):
        parse("rust", text)
