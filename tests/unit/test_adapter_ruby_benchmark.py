"""ruby_benchmark: reports of Ruby's benchmark library, as Bencher reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrunner.adapters import AdapterError, Measurement, Settings, parse

SAMPLES = Path(__file__).parents[1] / "adapter_samples" / "ruby_benchmark"


def latency(label: str, seconds: float) -> Measurement:
    return Measurement(label, "latency", seconds * 1e9)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "bm.txt",
            [latency("each:", 0.41825), latency("map!:", 0.251125), latency("inject sum:", 1.1425)],
        ),
        # The rehearsal has no caption: only the second report is read.
        ("bmbm.txt", [latency("to_s", 0.030625), latency("inspect", 0.044875)]),
        (
            "totals.txt",
            [
                # while: is in both reports: a report keeps the second, in the place of the first.
                latency("while:", 1.87525),
                latency("until:", 1.50625),
                latency(">total:", 3.51875),
                latency(">avg:", 1.759375),
                latency("slow:", 1104.0625),  # "(1104.062500)": no blank after "("
            ],
        ),
        # The unlabelled row ends the report: "after" is not read (as in Bencher).
        ("unlabelled.txt", [latency("first", 0.1005)]),
    ],
)
def test_samples(name: str, expected: list[Measurement]) -> None:
    text = (SAMPLES / name).read_text(encoding="utf-8")
    assert parse("ruby_benchmark", text) == expected
    assert parse("ruby_benchmark", text.replace("\n", "\r\n")) == expected
    assert parse("ruby", text) == expected
    assert parse("magic", text) == expected


CAPTION = "      user     system      total        real\n"


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("a  1.0  0.0  1.0 (  2.5)\n", [latency("a", 2.5)]),
        ("a\t1.0\t0.0\t1.0\t(\t2.5)  \n", [latency("a", 2.5)]),
        ("two words 1.0 0.0 1.0 ( 2.5)\n", [latency("two words", 2.5)]),
        ("fib 20  1.0 0.0 1.0 ( 2.5)\n", [latency("fib 20", 2.5)]),
        ("a 1,000.0 0.0 1,000.0 ( 1,000.5)\n", [latency("a", 1000.5)]),
        ("a 1.0 0.0 1.0 ( 2.5)\nb 1.0 0.0 1.0 ( x)\nc 1.0 0.0 1.0 ( 3.5)\n", [latency("a", 2.5)]),
    ],
)
def test_rows(rows: str, expected: list[Measurement]) -> None:
    assert parse("ruby_benchmark", CAPTION + rows) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff\xfe garbage \x01",
        "a  1.0  0.0  1.0 (  2.5)\n",  # no caption
        "user system total real\na  1.0  0.0  1.0 (  2.5)\n",  # a caption starts with blanks
        CAPTION + "\na  1.0  0.0  1.0 (  2.5)\n",  # a blank line ends the report
        CAPTION + "a  1.0  0.0  1.0 (  2.5)x\n",
        CAPTION + "a  1.0  0.0  1.0    2.5\n",
        CAPTION + "a  1.0  0.0  (  2.5)\n",
        CAPTION + "a  -1.0  0.0  1.0 (  2.5)\n",
        CAPTION + "a  1.0  0.0  1.0 (  2.5e3)\n",
        CAPTION + "a  1.0  0.0  1.0 (  1.2.3)\n",
        CAPTION + "   1.0  0.0  1.0 (  2.5)\n",  # no label
        CAPTION + "a" + " " * 10_000_000 + "1.0 (  2.5)\n",
        CAPTION + "a 1 " * 2_500_000 + "\n",
        (CAPTION + "a 1 2 3 (4\n") * 200_000,
    ],
)
def test_no_report_found(text: str) -> None:
    with pytest.raises(AdapterError, match="ruby_benchmark: no report found"):
        parse("ruby_benchmark", text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (CAPTION + "a 1.0 0.0 1.0 ( " + "9" * 400 + ")\n", "must be finite"),
        (CAPTION + "a 1.0 0.0 1.0 ( " + "9" * 305 + ")\n", "is too large"),
        (CAPTION + "a\x00b 1.0 0.0 1.0 ( 2.5)\n", "NUL character"),
        (CAPTION + "w" * 1100 + " 1.0 0.0 1.0 ( 2.5)\n", "1-1024 characters"),
    ],
)
def test_unreadable_output_says_why(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("ruby_benchmark", text)


@pytest.mark.parametrize("average", ["mean", "median"])
def test_no_average_is_read_as_bencher_reads_none(average: str) -> None:
    with pytest.raises(AdapterError, match=f"settings.average '{average}' cannot be read"):
        parse("ruby_benchmark", CAPTION + "a 1.0 0.0 1.0 ( 2.5)\n", Settings(average=average))  # type: ignore[arg-type]
