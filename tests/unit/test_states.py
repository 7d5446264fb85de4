from __future__ import annotations

import itertools

import pytest

from benchrunner.core.states import TERMINAL, TRANSITIONS, JobStatus, sources_of

S = JobStatus
ALLOWED = {
    (S.PENDING, S.CLAIMED),
    (S.PENDING, S.CANCELED),
    (S.CLAIMED, S.PENDING),
    (S.CLAIMED, S.RUNNING),
    (S.CLAIMED, S.FAILED),
    (S.CLAIMED, S.CANCELED),
    (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.CANCELED),
    (S.COMPLETED, S.PROCESSED),
    (S.FAILED, S.COMPLETED),
}


@pytest.mark.parametrize(("source", "target"), list(itertools.product(S, S)))
def test_every_pair_follows_the_published_table(source: JobStatus, target: JobStatus) -> None:
    assert ((source, target) in TRANSITIONS) == ((source, target) in ALLOWED)


def test_terminal_states_have_no_way_out() -> None:
    assert {src for src, _ in TRANSITIONS} & TERMINAL == set()


def test_database_integers_and_wire_names() -> None:
    assert [int(s) for s in S] == [0, 1, 2, 3, 4, 5, 6]
    assert [s.wire for s in S] == [
        "pending",
        "claimed",
        "running",
        "completed",
        "failed",
        "canceled",
        "processed",
    ]
    assert JobStatus.from_wire("running") is S.RUNNING
    with pytest.raises(ValueError, match="unknown job status"):
        JobStatus.from_wire("done")


def test_sources_are_the_compare_and_set_filter() -> None:
    assert sources_of(S.COMPLETED) == {S.RUNNING, S.FAILED}
    assert sources_of(S.CANCELED) == {S.PENDING, S.CLAIMED, S.RUNNING}
    assert sources_of(S.PENDING) == {S.CLAIMED}
