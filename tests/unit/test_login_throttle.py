"""The console's sign-in throttle, step by step on a clock the test moves."""

from __future__ import annotations

import pytest

from benchrunner.server.console.throttle import LoginThrottle

KEYS = ("email:a@x", "ip:10.0.0.1")


def test_the_limit_holds_for_the_window_then_lifts() -> None:
    throttle = LoginThrottle(max_failures=3, window=60)
    for t in (0.0, 10.0, 20.0):
        assert throttle.retry_after(KEYS, t) == 0
        throttle.failed(KEYS, t)
    assert throttle.retry_after(KEYS, 20.0) == pytest.approx(40.0)
    assert throttle.retry_after(KEYS, 59.0) == pytest.approx(1.0)
    assert throttle.retry_after(KEYS, 60.0) == 0  # the first failure left the window


@pytest.mark.parametrize(
    ("other", "blocked"),
    [
        (("email:a@x", "ip:10.0.0.2"), True),  # same email, another address
        (("email:b@x", "ip:10.0.0.1"), True),  # same address, another email
        (("email:b@x", "ip:10.0.0.2"), False),
    ],
)
def test_either_key_blocks(other: tuple[str, str], blocked: bool) -> None:
    throttle = LoginThrottle(max_failures=2, window=60)
    throttle.failed(KEYS, 0.0)
    throttle.failed(KEYS, 1.0)
    assert (throttle.retry_after(other, 2.0) > 0) is blocked


def test_success_clears_the_email_but_not_the_address() -> None:
    throttle = LoginThrottle(max_failures=2, window=60)
    throttle.failed(KEYS, 0.0)
    throttle.failed(KEYS, 1.0)
    throttle.succeeded("email:a@x")
    assert throttle.retry_after(("email:a@x",), 2.0) == 0
    assert throttle.retry_after(("ip:10.0.0.1",), 2.0) > 0


def test_memory_is_bounded_oldest_first() -> None:
    throttle = LoginThrottle(max_failures=1, window=60, max_keys=2)
    throttle.failed(("k1",), 0.0)
    throttle.failed(("k2",), 1.0)
    throttle.failed(("k3",), 2.0)
    assert throttle.retry_after(("k1",), 3.0) == 0
    assert throttle.retry_after(("k2",), 3.0) > 0
    assert throttle.retry_after(("k3",), 3.0) > 0
