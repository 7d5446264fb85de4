from __future__ import annotations

import json

import pytest

from benchrunner.adapters import AdapterError, Average, Measurement, Settings, parse
from tests.unit.approx_measurements import assert_measurements, sample

TEXT = sample("shell_hyperfine", "two_commands.json")
GZIP = "gzip -k -f corpus.txt"
ZSTD = "zstd -q -f corpus.txt"


@pytest.mark.parametrize(
    ("average", "expected"),
    [
        # mean 250 ms +- stddev 12.5 ms; a single run has stddev null: no lower/upper
        (
            None,
            [
                Measurement(GZIP, "latency", 250e6, 237.5e6, 262.5e6),
                Measurement(ZSTD, "latency", 62.5e6),
            ],
        ),
        (
            "mean",
            [
                Measurement(GZIP, "latency", 250e6, 237.5e6, 262.5e6),
                Measurement(ZSTD, "latency", 62.5e6),
            ],
        ),
        # median 247.5 ms between min 230 ms and max 280 ms
        (
            "median",
            [
                Measurement(GZIP, "latency", 247.5e6, 230e6, 280e6),
                Measurement(ZSTD, "latency", 62.5e6, 62.5e6, 62.5e6),
            ],
        ),
    ],
)
def test_export_gives_latency_per_command(
    average: Average | None, expected: list[Measurement]
) -> None:
    assert_measurements(parse("shell_hyperfine", TEXT, Settings(average=average)), expected)


def test_language_and_magic_read_it_alike() -> None:
    named = parse("shell_hyperfine", TEXT)
    assert parse("shell", TEXT) == named
    assert parse("magic", TEXT) == named


def _export(**changes: object) -> str:
    document = json.loads(TEXT)
    document["results"][1].update(changes)
    for key, value in changes.items():
        if value is KeyError:
            del document["results"][1][key]
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "shell_hyperfine: not valid JSON"),
        ("Benchmark 1: sleep 0.1", "shell_hyperfine: not valid JSON"),
        ("[]", "shell_hyperfine: the document must be a JSON object"),
        ("{}", "shell_hyperfine: results is missing"),
        ('{"results": {}}', "shell_hyperfine: results must be a JSON array"),
        ('{"results": []}', "shell_hyperfine: results is empty"),
        ('{"results": [null]}', r"shell_hyperfine: results\[0\] must be a JSON object"),
        (_export(command=KeyError), r"results\[1\]\.command is missing"),
        (_export(command=["zstd"]), r"results\[1\]\.command must be a string, got \['zstd'\]"),
        (_export(mean=KeyError), r"results\[1\]\.mean is missing"),
        (_export(median="0.1"), r"results\[1\]\.median must be a number, got '0.1'"),
        (_export(min=None), r"results\[1\]\.min must be a number, got None"),
        (_export(max=KeyError), r"results\[1\]\.max is missing"),
        (_export(user=KeyError), r"results\[1\]\.user is missing"),
        (_export(system=False), r"results\[1\]\.system must be a number, got False"),
        (_export(exit_codes=KeyError), r"results\[1\]\.exit_codes is missing"),
        (_export(exit_codes=0), r"results\[1\]\.exit_codes must be a JSON array"),
        (
            _export(exit_codes=[0, "1"]),
            r"results\[1\]\.exit_codes\[1\] must be an integer or null, got '1'",
        ),
        (_export(stddev="0.1"), r"results\[1\]\.stddev must be a number, got '0.1'"),
        (_export(mean=float("nan")), r"results\[1\]\.mean must be finite"),
        (_export(mean=10**400), r"results\[1\]\.mean is too large for a float"),
        (_export(mean=1e300), r"results\[1\]\.mean: 1e\+300 s is too large"),
        (_export(mean=1e299, stddev=1e299), r"results\[1\]: .* is too large"),
        (_export(command=""), "benchmark name must be 1-1024 characters"),
        (_export(command="a\x00"), "has a NUL character"),
        (_export(command="a\ud800"), "has a lone surrogate"),
        ("[" * 100_000 + "]" * 100_000, "shell_hyperfine: not valid JSON: nested too deeply"),
    ],
)
def test_unreadable_export_says_what(text: str, message: str) -> None:
    with pytest.raises(AdapterError, match=message):
        parse("shell_hyperfine", text)


@pytest.mark.parametrize("average", ["mean", "median"])
def test_stddev_may_be_null_or_absent_but_not_anything_else(average: Average) -> None:
    for stddev in (None, KeyError):
        [_, zstd] = parse("shell_hyperfine", _export(stddev=stddev), Settings(average=average))
        assert zstd.value == pytest.approx(62.5e6)
    with pytest.raises(AdapterError, match=r"results\[1\]\.stddev must be a number"):
        parse("shell_hyperfine", _export(stddev="x"), Settings(average=average))


def test_binary_garbage_is_refused() -> None:
    garbage = bytes(range(256)).decode("latin-1") * 40_000  # 10 MB
    with pytest.raises(AdapterError, match="shell_hyperfine: not valid JSON"):
        parse("shell_hyperfine", garbage)


def test_a_huge_export_is_read_whole() -> None:
    entry = json.loads(TEXT)["results"][0]
    times = ", ".join(["0.2512345678901234"] * 500_000)
    entry_text = json.dumps({**entry, "times": []}).replace('"times": []', f'"times": [{times}]')
    text = f'{{"results": [{entry_text}]}}'
    assert len(text) > 10_000_000
    assert_measurements(
        parse("shell_hyperfine", text), [Measurement(GZIP, "latency", 250e6, 237.5e6, 262.5e6)]
    )
