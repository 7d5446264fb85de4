"""Stop requests escalate: held before the agent exists, passed on after, the third exits."""

from __future__ import annotations

import pytest

from benchrunner.runner.signals import EXIT_FORCED, ForcedExit, StopRequests


def test_requests_before_the_agent_are_held_and_handed_on() -> None:
    taken: list[int] = []
    stops = StopRequests()
    stops()
    stops()
    stops.forward_to(lambda: taken.append(1))
    assert taken == [1, 1]


def test_the_third_request_exits_at_once_and_later_ones_are_ignored() -> None:
    taken: list[int] = []
    stops = StopRequests()
    stops.forward_to(lambda: taken.append(1))
    stops()
    stops()
    with pytest.raises(ForcedExit) as raised:
        stops()
    assert raised.value.code == EXIT_FORCED
    assert isinstance(raised.value, SystemExit)  # nothing on the way catches it
    stops()  # the process is leaving: a restore under way is not cut short
    assert taken == [1, 1]


def test_the_third_request_exits_even_before_the_agent_exists() -> None:
    stops = StopRequests()
    stops()
    stops()
    with pytest.raises(ForcedExit):
        stops()
