"""A stored duet output -> its verdict, as processing computes it (inline and in a spawned
parser process, as the server's pool runs it)."""

from __future__ import annotations

import json
import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor

import pytest

from benchrunner.core.duet_order import order_text, run_sequence
from benchrunner.protocol import (
    Completed,
    IterationResult,
    JsonDuet,
    JsonJobOutput,
    encode,
    parse_runner_message,
)
from benchrunner.server.processing.outputs import encode_output
from benchrunner.server.processing.processor import measure_job

DUET = JsonDuet.model_validate(
    {"baseline": {"args": {}}, "contender": {"args": {}}, "seed": 1, "resamples": 1000}
)


def _output(contender: float, rounds: int = 5) -> bytes:
    results = [
        IterationResult(
            exit_code=0,
            stdout=json.dumps(
                {"b": {"latency": {"value": 100 if side == "baseline" else contender + r}}}
            ),
            side=side,
            round=r,
        )
        for r, side in run_sequence(DUET.seed, rounds)
    ]
    return encode_output(JsonJobOutput(results=results))


def test_a_duet_output_gives_a_verdict_and_no_absolute_metric() -> None:
    values, error, _noise, verdict = measure_job(DUET, "json", None, "max", _output(110))
    assert values == [] and error is None and verdict is not None
    assert verdict.sequence == order_text(run_sequence(DUET.seed, 5))
    assert (verdict.seed, verdict.rounds, verdict.resamples) == (1, 5, 1000)
    (found,) = verdict.estimates
    assert found.ratio == pytest.approx(1.12)  # the median of 1.10 ... 1.14
    assert 1.1 <= found.lower < found.ratio < found.upper <= 1.14
    assert found.limit is None  # judged where it is stored, against each result's own margin


def test_the_verdict_is_the_same_from_a_parser_process() -> None:
    raw = _output(110)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(measure_job, DUET, "json", None, None, raw).result() == measure_job(
            DUET, "json", None, None, raw
        )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            encode_output(JsonJobOutput(results=[IterationResult(exit_code=0, stdout="{}")])),
            "no iterations tagged with a side",
        ),
        (
            encode_output(
                JsonJobOutput(
                    results=[IterationResult(exit_code=0, stdout="nope", side="baseline", round=0)]
                )
            ),
            "adapter json could not read iteration 0 stdout: not valid JSON",
        ),
    ],
)
def test_an_unusable_duet_output_says_why(raw: bytes, message: str) -> None:
    values, error, _noise, verdict = measure_job(DUET, "json", None, None, raw)
    assert values == [] and verdict is None
    assert error is not None and message in error


def test_duet_tags_travel_on_the_channel_and_plain_results_keep_their_shape() -> None:
    tagged = IterationResult(exit_code=0, stdout="x", side="contender", round=3)
    message = Completed(job=uuid.uuid4(), results=[tagged, IterationResult(exit_code=0)])
    parsed = parse_runner_message(encode(message))
    assert isinstance(parsed, Completed)
    assert parsed.results == message.results
    assert IterationResult(exit_code=0).model_dump() == {
        "exit_code": 0,
        "stdout": None,
        "stderr": None,
        "output": None,
    }
    assert tagged.model_dump()["side"] == "contender" and tagged.model_dump()["round"] == 3
