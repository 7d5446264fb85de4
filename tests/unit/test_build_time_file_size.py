"""Bencher's ``build_time``/``file_size`` job flags: what the runner's results carry (and leave
out when unset) and the ``build-time``/``file-size`` metrics the server adds from them."""

from __future__ import annotations

import json

from benchrunner.protocol import IterationResult, JsonJobOutput, results_hash
from benchrunner.server.processing.results import measure_output
from benchrunner.server.store.reports import MetricValue

BMF = json.dumps({"parse": {"latency": {"value": 7.0}}})


def test_unset_flags_leave_results_and_their_hash_as_before() -> None:
    plain = IterationResult(exit_code=0, stdout="x")
    assert plain.model_dump(mode="json") == {
        "exit_code": 0,
        "stdout": "x",
        "stderr": None,
        "output": None,
    }
    # The canonical JSON of a plain result list, as signed before these fields existed.
    assert results_hash([plain]) == results_hash(
        [IterationResult.model_validate({"exit_code": 0, "stdout": "x"})]
    )
    measured = IterationResult(exit_code=0, build_time={"make": 1.5}, file_sizes={"a.out": 9})
    dumped = measured.model_dump(mode="json")
    assert (dumped["build_time"], dumped["file_sizes"]) == ({"make": 1.5}, {"a.out": 9})
    assert IterationResult.model_validate(dumped) == measured
    assert results_hash([measured]) != results_hash([IterationResult(exit_code=0)])


def test_build_time_and_file_size_become_metrics_next_to_the_parsed_ones() -> None:
    output = JsonJobOutput(
        results=[
            IterationResult(
                exit_code=0,
                stdout=BMF,
                build_time={"./build.sh --release": 86.98765},
                file_sizes={"target/release/app": 4096, "app.wasm": 12},
            ),
            # Nothing printed: a build timed and sized only, not an adapter error.
            IterationResult(exit_code=0, stdout=" \n", build_time={"./build.sh --release": 3.0}),
        ]
    )
    values, error = measure_output("json", output)
    assert error is None
    assert values == [
        MetricValue(0, "parse", "latency", 7.0, None, None),
        MetricValue(0, "./build.sh --release", "build-time", 86.99, None, None),
        MetricValue(0, "app", "file-size", 4096.0, None, None),
        MetricValue(0, "app.wasm", "file-size", 12.0, None, None),
        MetricValue(1, "./build.sh --release", "build-time", 3.0, None, None),
    ]


def test_output_that_does_not_parse_is_still_an_error_with_the_flags() -> None:
    output = JsonJobOutput(
        results=[IterationResult(exit_code=0, stdout="not json", build_time={"make": 1.0})]
    )
    values, error = measure_output("json", output)
    assert values == [] and error is not None and "not valid JSON" in error
