"""benchmarks/bisect_accuracy: each trial's commits and table, the scoring of a bisection's
answer and the summary per (commits, step). Only the arithmetic; no measured figure."""

from __future__ import annotations

import random
import shlex
import subprocess
import tomllib
from pathlib import Path

from benchmarks.bisect_accuracy import (
    TEMPLATE,
    Case,
    Trial,
    answer,
    bisect_template,
    make_case,
    outcome,
    summarize,
    table,
    table_rows,
    write_table,
)


def test_a_case_has_good_and_the_candidates_with_a_culprit_among_them() -> None:
    for count in (1, 16, 64):
        case = make_case(count, random.Random(count))
        assert len(case.commits) == count + 1 == len(set(case.commits))
        assert case.candidates == list(case.commits[1:]) and case.bad == case.commits[-1]
        assert 1 <= case.culprit <= count
        assert all(len(c) == 40 and int(c, 16) >= 0 for c in case.commits)


def test_the_culprits_position_is_random_and_the_seed_repeats_it() -> None:
    first = [make_case(16, rng).culprit for rng in [random.Random(7)] for _ in range(50)]
    again = [make_case(16, rng).culprit for rng in [random.Random(7)] for _ in range(50)]
    assert first == again
    assert len(set(first)) > 5 and min(first) >= 1 and max(first) <= 16


def test_the_table_slows_the_culprit_and_every_commit_after_it() -> None:
    case = Case(("g", "a", "b", "c"), culprit=2)
    assert table_rows(case, 1000, 0.05) == {
        "g": "1000 0.0\n",
        "a": "1000 0.0\n",
        "b": "1000 0.05\n",
        "c": "1000 0.05\n",
    }


def test_the_template_runs_spin_with_the_commits_line_of_the_table(tmp_path: Path) -> None:
    """The template's command, run as the process executor would with a stand-in for spin
    that echoes its arguments."""
    case = Case(("g", "a", "b"), culprit=2)
    tables = write_table(tmp_path / "t", case, 300, 0.02)
    echo = tmp_path / "echo-spin"
    echo.write_text('#!/bin/sh\necho "$@"\n')
    echo.chmod(0o755)
    parsed = tomllib.loads(bisect_template(echo))["templates"][TEMPLATE]
    assert set(parsed["args"]) == {"table", "commit"}
    for commit, expected in (("a", "300 0.0"), ("b", "300 0.02")):
        command = [
            part.replace("{table}", str(tables)).replace("{commit}", commit)
            for part in parsed["command"]
        ]
        ran = subprocess.run(command, capture_output=True, text=True, check=True)
        assert ran.stdout.strip() == expected, shlex.join(command)


def test_an_answer_is_right_wrong_or_undecided() -> None:
    case = Case(("g", "a", "b", "c"), culprit=2)
    assert outcome(case, "b") == "right"
    assert outcome(case, "a") == "wrong" and outcome(case, "c") == "wrong"
    assert outcome(case, None) == "undecided"


def test_the_summary_counts_and_takes_medians_per_commits_and_step() -> None:
    trials = [
        Trial(16, 0.05, "right", 8, 100.0),
        Trial(64, 0.05, "undecided", 40, 900.0),
        Trial(16, 0.05, "right", 10, 120.0),
        Trial(16, 0.05, "wrong", 30, 500.0),
        Trial(16, 0.02, "right", 12, 200.0),
    ]
    first, second, third = summarize(trials)
    assert (first.commits, first.step, first.trials) == (16, 0.05, 3)
    assert (first.right, first.wrong, first.undecided) == (2, 1, 0)
    assert first.share_right == 2 / 3
    assert (first.median_jobs, first.median_seconds) == (10, 120.0)
    assert (second.commits, second.undecided, second.share_right) == (64, 1, 0.0)
    assert (third.step, third.median_jobs) == (0.02, 12)
    lines = table([first])
    assert lines[2] == "| 16 | 5 % | 3 | 2 / 1 / 0 | 0.67 | 10 | 120 |"


def test_an_ended_bisection_gives_its_culprit_or_why_it_named_none() -> None:
    named = {"culprit": {"commit": "b", "parent": "a", "ratio": 1.05}}
    assert answer(named) == ("b", "")
    none = {"culprit": None, "reason": "the job budget was spent"}
    assert answer(none) == (None, "the job budget was spent")
    assert answer(None) == (None, "no result")
