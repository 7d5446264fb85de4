"""``ClockAlarm``: a timer on the runner's clock, armed again and again on one thread (each
job's timeout). Driven by a test clock: no real time passes for a deadline."""

from __future__ import annotations

import threading
from collections.abc import Callable

from benchrunner.runner.clock_timer import ClockAlarm
from tests.harness import wait_until
from tests.thread_clock import ManualThreadClock


class Calls:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.called = threading.Event()

    def of(self, name: str) -> Callable[[], None]:
        def expire() -> None:
            self.names.append(name)
            self.called.set()

        return expire


def alarm_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "test-alarm"]


def test_an_armed_alarm_goes_off_at_its_deadline_on_the_clock() -> None:
    clock = ManualThreadClock(start=1000.0)
    alarm = ClockAlarm(clock, name="test-alarm")
    calls = Calls()
    try:
        alarm.arm(1030.0, calls.of("first"))
        wait_until(lambda: clock.waiting() == [1030.0], message="the alarm's wait")
        clock.advance(29.0)
        wait_until(lambda: clock.waiting() == [1030.0], message="the alarm waiting on")
        assert calls.names == []
        clock.advance(1.0)
        assert calls.called.wait(10)
        assert calls.names == ["first"]
    finally:
        alarm.close()


def test_a_disarmed_alarm_stays_silent_and_its_thread_serves_the_next_arming() -> None:
    clock = ManualThreadClock(start=1000.0)
    alarm = ClockAlarm(clock, name="test-alarm")
    calls = Calls()
    try:
        alarm.arm(1030.0, calls.of("first"))
        wait_until(lambda: clock.waiting() == [1030.0], message="the alarm's wait")
        alarm.disarm()
        # A later deadline: the thread is not woken, it looks again at its earlier one.
        alarm.arm(1040.0, calls.of("second"))
        clock.advance(30.0)
        wait_until(lambda: clock.waiting() == [1040.0], message="the alarm's next wait")
        assert calls.names == []
        # An earlier deadline than the one waited for wakes the thread.
        alarm.arm(1035.0, calls.of("third"))
        wait_until(lambda: clock.waiting() == [1035.0], message="the earlier deadline's wait")
        clock.advance(5.0)
        assert calls.called.wait(10)
        assert calls.names == ["third"]
        assert len(alarm_threads()) == 1
    finally:
        alarm.close()
    wait_until(lambda: not alarm_threads(), message="the alarm's thread ended")


def test_no_thread_before_the_first_arming_and_none_after_close() -> None:
    clock = ManualThreadClock(start=1000.0)
    alarm = ClockAlarm(clock, name="test-alarm")
    assert alarm_threads() == []
    alarm.close()
    alarm.arm(1001.0, Calls().of("never"))
    assert alarm_threads() == []
