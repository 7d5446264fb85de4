"""The arithmetic of benchmarks/queue_compare: quantiles, medians over repeats, /proc parsing.

Only the pure helpers; the benchmark's figures are never asserted.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from benchmarks.clock_job import CLOCK_SCRIPT
from benchmarks.cpu_time import (
    TICKS_PER_SECOND,
    auxiliary,
    backend_of,
    process_cpu_seconds,
    stat_ticks,
)
from benchmarks.queue_compare_benchrunner import clock_of
from benchmarks.queue_figures import Figures, medians, percentile, table
from benchmarks.server_env import caps_for

from tests.harness import TEST_TEMPLATES


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([5.0], 0.5, 5.0),
        ([3.0, 1.0, 2.0], 0.5, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 0.0, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 1.0, 4.0),
        (list(map(float, range(1, 101))), 0.9, 90.0),  # nearest rank of 99 * 0.9 = 89.1
    ],
)
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == expected


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 0.5)


def figures(throughput: float, server_cpu: float | None, system: str = "benchrunner") -> Figures:
    return Figures(system, "postgresql", 2, 5000, throughput, 10.0, 20.0, server_cpu, 3.0, 1.0)


def test_medians_take_each_figure_apart_and_skip_missing_ones() -> None:
    result = medians([figures(10.0, 4.0), figures(30.0, None), figures(20.0, 2.0)])
    assert result.throughput == 20.0
    assert result.server_cpu == 3.0  # median of 4 and 2; the missing figure is left out
    assert (result.system, result.workers, result.jobs) == ("benchrunner", 2, 5000)


def test_medians_refuse_different_configurations() -> None:
    with pytest.raises(ValueError, match="different"):
        medians([figures(1.0, 1.0), figures(1.0, None, system="procrastinate")])


def test_table_has_a_ratio_row_when_both_systems_ran() -> None:
    ours = figures(50.0, 6.0)
    theirs = figures(200.0, None, system="procrastinate")
    lines = table([ours, theirs]).splitlines()
    ratio = lines[-1]
    assert ratio.startswith("| ratio benchrunner/procrastinate | postgresql | 2 | 0.25x |")
    assert "server+PostgreSQL 3.00x" in ratio  # (6 + 3) / 3
    assert len(table([ours]).splitlines()) == 3  # header, rule, one row: nothing to compare


def test_stat_ticks_counts_fields_after_a_command_name_with_spaces_and_parentheses() -> None:
    fields = " ".join(str(n) for n in range(3, 53)).replace("3", "S", 1)
    # utime is field 14 and stime field 15: here their values are 14 and 15.
    assert stat_ticks(f"1234 (a) b (c)) {fields}") == 14 + 15


def test_this_process_has_used_some_cpu() -> None:
    assert process_cpu_seconds(os.getpid()) > 0
    assert TICKS_PER_SECOND > 0


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (b"postgres: 15/main: postgres bench_db 127.0.0.1(5432) idle", True),
        (b"postgres: postgres bench_db [local] SELECT", True),
        (b"postgres: 15/main: postgres bench_db_other 127.0.0.1(5432) idle", False),
        (b"postgres: 15/main: walwriter ", False),
        (b"python3\x00-m\x00bench_db", False),
        (b"", False),
    ],
)
def test_backend_of_matches_the_database_word(title: bytes, expected: bool) -> None:
    assert backend_of(title, "bench_db") is expected


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (b"postgres: 15/main: walwriter \x00", True),
        (b"postgres: 15/main: checkpointer ", True),
        (b"postgres: background writer", True),
        (b"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql/15/main", True),
        (b"postgres: 15/main: postgres bench [local] idle", False),
        (b"postgres: 15/main: postgres bench 127.0.0.1(5000) idle", False),
        (b"python3\x00-m\x00benchrunner", False),
        (b"", False),
    ],
)
def test_auxiliary_is_the_cluster_own_processes_only(title: bytes, expected: bool) -> None:
    assert auxiliary(title) is expected


def test_caps_are_on_and_fit_the_run() -> None:
    caps = caps_for(5000)
    assert set(caps) == {
        "BENCHRUNNER_MAX_QUEUED_JOBS",
        "BENCHRUNNER_MAX_PENDING_PER_ORGANIZATION",
    }
    assert all(int(value) > 5000 for value in caps.values())


def test_a_clock_file_is_read_only_once_whole(tmp_path: Path) -> None:
    clock = tmp_path / "0.json"
    assert clock_of(clock) is None
    clock.write_text('{"clock": {"started_ns": {"value": 17')
    assert clock_of(clock) is None
    clock.write_text('{"clock": {"started_ns": {"value": 17}}}\n')
    assert clock_of(clock) == 17


def test_both_systems_run_the_same_whole_job() -> None:
    templates = tomllib.loads(TEST_TEMPLATES)["templates"]
    assert templates["bench.clock_file"]["command"] == ["sh", "-c", CLOCK_SCRIPT, "sh", "{file}"]
