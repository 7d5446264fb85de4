"""rust_gungraun (alias rust_iai_callgrind): Gungraun's metric lines -> one measurement per
metric under Bencher's Gungraun measure slugs, the new run's value only."""

from __future__ import annotations

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse
from tests.unit.adapter_samples import assert_measurements, sample

SMALL = 'parser_bench::tokenize_group::tokenize small:"a+b"'
LARGE = "parser_bench::tokenize_group::tokenize large:corpus()"
CACHE = ("instructions", "l1-hits", "ll-hits", "ram-hits", "total-read-write", "estimated-cycles")


def metrics(name: str, pairs: list[tuple[str, float]]) -> list[Measurement]:
    return [Measurement(name, slug, value) for slug, value in pairs]


JSON_INSERT = metrics(
    "store_bench::insert_group::insert::small",
    [
        ("instructions", 1200),
        ("estimated-cycles", 1500),
        ("d1-miss-rate", 0.5),
        ("total-bytes", 64),
        ("maximum-blocks", 2),
        ("memcheck-errors", 0),
        ("memcheck-suppressed-contexts", 1),
    ],
)
JSON_INSERT_MANY = metrics(
    "store_bench::insert_group::insert_many",
    [("instructions", 9000), ("total-read-write", 12000), ("bc", 40)],
)

SAMPLES = {
    "first_run.txt": [
        *metrics(SMALL, list(zip(CACHE, [2400, 3100, 2, 6, 3108, 3320], strict=True))),
        *metrics(
            LARGE,
            list(zip(CACHE, [1_250_000, 1_700_000, 40, 12, 1_700_052, 1_700_620], strict=True)),
        ),
    ],
    "delta_inf.txt": metrics(
        SMALL,
        [
            ("instructions", 2450),
            ("l1-hits", 3100),
            ("l2-hits", 0),
            ("ram-hits", 8),
            ("total-read-write", 3108),
            ("estimated-cycles", 3400),
        ],
    ),
    "without_cachesim.txt": [
        Measurement(SMALL, "instructions", 2400),
        Measurement(LARGE, "instructions", 1_250_000),
    ],
    # Callgrind's "Instructions" is replaced by Cachegrind's later one (Bencher keeps the last
    # value of a measure); labels a tool does not report ("Something New", Cachegrind's "Bc")
    # are passed over.
    "tools.txt": metrics(
        "alloc_bench::grow_group::grow_vec cap:1024",
        [
            ("instructions", 5100),
            ("global-bus-events", 17),
            ("d1-miss-rate", 0.25),
            ("total-bytes", 4096),
            ("total-blocks", 3),
            ("at-t-gmax-bytes", 2048),
            ("memcheck-errors", 0),
            ("memcheck-contexts", 0),
            ("memcheck-suppressed-errors", 1),
            ("memcheck-suppressed-contexts", 1),
            ("helgrind-errors", 2),
            ("drd-contexts", 3),
        ],
    ),
    # JSON summaries (one per line, or pretty) are read instead of the console text; a
    # summary of another version and cargo's own JSON are passed over.
    "json_lines.txt": [*JSON_INSERT, *JSON_INSERT_MANY],
    "json_pretty.txt": [*JSON_INSERT_MANY, *JSON_INSERT],
    "ansi.txt": [Measurement("colour_bench::paint_group::paint red:0xff0000", "instructions", 700)],
    "wrapped_name.txt": [
        Measurement(
            "wrap_bench::long_group::bench_with_arguments first:vec![1, 2,\n3, 4]",
            "instructions",
            80,
        )
    ],
}


@pytest.mark.parametrize("name", SAMPLES)
def test_sample(name: str) -> None:
    text = sample("rust_gungraun", name)
    found = parse("rust_gungraun", text)
    assert_measurements(found, SAMPLES[name])
    assert parse("rust_iai_callgrind", text) == found
    assert parse("rust", text) == found
    assert parse("magic", text) == found


HEADER = "m::g::f id:1\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Windows line endings; blank lines inside a block; no newline after the last line.
        (
            "m::g::f id:1\r\n  Instructions:  5|N/A  (*)\r\n\r\n  L1 Hits:  6|N/A (**)",
            [("instructions", 5), ("l1-hits", 6)],
        ),
        # Changes as Gungraun prints them: signs, infinities of any width, "No change".
        (
            HEADER + "  Instructions:  5|4  (+25.0000%) [+1.25000x]\n"
            "  L1 Hits:  0|9  (-100.000%) [---inf---]\n"
            "  RAM Hits:  9|0  (+++inf+++) [+++inf+++]\n"
            "  LL Hits:  1|1  (No change)\n"
            "  Estimated Cycles:  2|3 (-33.3333%) [-1.50000x]\n",
            [
                ("instructions", 5),
                ("l1-hits", 0),
                ("ram-hits", 9),
                ("ll-hits", 1),
                ("estimated-cycles", 2),
            ],
        ),
        # A banner for Callgrind is optional; a metric line ends a block when it is not one.
        (
            HEADER + "  ======= CALLGRIND =======\n  Instructions:  5|N/A  (*)\n"
            "  Instructions:  6|N/A  (*) trailing\n",
            [("instructions", 5)],
        ),
    ],
)
def test_line_shapes(text: str, expected: list[tuple[str, float]]) -> None:
    assert_measurements(parse("rust_gungraun", text), metrics("m::g::f id:1", expected))


@pytest.mark.parametrize(
    "text",
    [
        # A header needs two "::"-separated parts free of blanks before the rest.
        "m::g f\n  Instructions:  5|N/A  (*)\n",
        "m g::h::f\n  Instructions:  5|N/A  (*)\n",
        "m::g::\n  Instructions:  5|N/A  (*)\n",
        # Metric lines Bencher does not read.
        HEADER + "  Instructions:  5\n",
        HEADER + "  Instructions:  5|N/A\n",
        HEADER + "  Instructions:  5|4  (+25%)\n",
        HEADER + "  Instructions:  5|4  (+25%) [1.25x]\n",
        HEADER + "  Instructions:  1.2.3|N/A  (*)\n",
        HEADER + "Instructions:  5|N/A  (*)\n",
        # A banner without metrics, or a tool's banner over another tool's labels.
        HEADER + "  ======= DHAT =======\n\nunrelated\n",
        HEADER + "  ======= DHAT =======\n  Instructions:  5|N/A  (*)\n",
        # A header with no metrics at all.
        HEADER + "  Gungraun result: Ok.\n",
    ],
)
def test_output_without_a_result(text: str) -> None:
    with pytest.raises(AdapterError, match=r"^rust_gungraun: no benchmark found"):
        parse("rust_gungraun", text)


@pytest.mark.parametrize("average", ["mean", "median"])
def test_an_average_cannot_be_read(average: str) -> None:
    text = sample("rust_gungraun", "first_run.txt")
    with pytest.raises(AdapterError, match=f"^rust_gungraun: .*settings.average '{average}'"):
        parse("rust_gungraun", text, Settings(average=average))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + "  Instructions:  1" + "0" * 400 + "|N/A  (*)\n", "must be finite"),
        ("m::g::" + "n" * 1025 + "\n  Instructions:  5|N/A  (*)\n", "benchmark name must be"),
    ],
)
def test_unreadable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=f"^rust_gungraun: .*{message}"):
        parse("rust_gungraun", text)


def _summary(metrics: str) -> str:
    return (
        '{"version":"6","module_path":"m::g::f","id":"a","profiles":[{"tool":"Callgrind",'
        '"summaries":{"total":{"summary":{"Callgrind":{' + metrics + "}}}}}]}\n"
    )


def test_a_json_summary_bencher_cannot_read_is_passed_over() -> None:
    unknown = _summary('"Xyz":{"metrics":{"Left":{"Int":1}}}')
    negative = _summary('"Ir":{"metrics":{"Left":{"Int":-1}}}')
    good = _summary('"Ir":{"metrics":{"Both":[{"Int":7},{"Int":9}]}}')
    assert parse("rust_gungraun", unknown + negative + good) == [
        Measurement("m::g::f::a", "instructions", 7)
    ]
    with pytest.raises(AdapterError, match=r"^rust_gungraun: no benchmark found"):
        parse("rust_gungraun", unknown + negative)


def test_a_json_summary_with_nan_says_why() -> None:
    with pytest.raises(AdapterError, match=r"^rust_gungraun: 'm::g::f::a' Ir must be finite"):
        parse("rust_gungraun", _summary('"Ir":{"metrics":{"Left":{"Float":NaN}}}'))
