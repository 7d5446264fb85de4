"""benchmarks/profile_shares: py-spy's raw stacks read and given to the first part that names
them. Only the arithmetic; no profile's figures are asserted."""

from __future__ import annotations

from pathlib import Path

from benchmarks.profile_shares import (
    EVENT_LOOP,
    IDLE,
    OTHER,
    RUNNER_PARTS,
    SERVER_PARTS,
    Part,
    part_of,
    shares,
)

LOOP = "Runner.run (asyncio/runners.py:118)"
SESSION = "RunnerSession._handle_text (benchrunner/server/channel/runner_session.py:215)"
WAITING = "_worker (concurrent/futures/thread.py:81)"


def test_a_stack_goes_to_the_first_part_that_names_any_of_its_frames() -> None:
    parts = (Part("a", ("x.py",)), Part("b", ("y.py",)))
    assert part_of(["f (y.py:1)", "g (x.py:2)"], parts) == "a"
    assert part_of(["f (y.py:1)"], parts) == "b"
    assert part_of(["f (z.py:1)"], parts) == OTHER


def test_a_caret_marker_names_only_the_innermost_frame() -> None:
    parts = (Part("loop", ("^Runner.run (",)),)
    assert part_of([LOOP], parts) == "loop"
    assert part_of([LOOP, "f (z.py:1)"], parts) == OTHER


def test_server_parts_tell_a_completed_from_the_session_around_it() -> None:
    terminal = "ChannelSession._terminal (benchrunner/server/channel/runner_session.py:300)"
    completed = [LOOP, SESSION, terminal]
    assert part_of(completed, SERVER_PARTS).startswith("`completed`")
    assert part_of([LOOP, SESSION], SERVER_PARTS).startswith("the channel's other work")
    assert part_of([LOOP], SERVER_PARTS) == EVENT_LOOP
    assert part_of(["Thread.run (threading.py:982)", WAITING], SERVER_PARTS) == IDLE


def test_shares_sum_the_counts_of_every_file(tmp_path: Path) -> None:
    first, second = tmp_path / "r1.txt", tmp_path / "r2.txt"
    first.write_text(f"{LOOP} 3\n{LOOP};f (z.py:1) 2\nnot a stack line\n")
    second.write_text(f"{LOOP} 4\n")
    per_part, unnamed = shares([first, second], SERVER_PARTS)
    assert per_part[EVENT_LOOP] == 7
    assert per_part[OTHER] == 2
    assert unnamed == {"f (z.py:1)": 2}


def test_a_database_thread_is_placed_by_its_statement_or_counted_as_unplaced() -> None:
    thread = ["Thread.run (threading.py:982)", "_HeldConnections.run (benchrunner/x.py:165)"]
    in_flight = "job_list_in_flight_for_runner (benchrunner/server/store/jobs.py:90)"
    psycopg = "BaseCursor._send_query_prepared (psycopg/_cursor_base.py:602)"
    assert part_of([*thread, in_flight, psycopg], SERVER_PARTS).startswith("`ready`")
    assert part_of([psycopg], SERVER_PARTS).startswith("database work py-spy could not place")


def test_a_runner_thread_blocked_on_its_queue_is_waiting_and_one_moving_cores_is_not() -> None:
    agent = "Agent._loop (benchrunner/runner/agent.py:262)"
    waiting = [agent, "Agent._next_event (benchrunner/runner/agent.py:362)"]
    moving = [
        "CorePlan.job_affinity (benchrunner/runner/cores.py:79)",
        "_set_thread_affinity (benchrunner/runner/cores.py:108)",
    ]
    assert part_of(waiting, RUNNER_PARTS) == IDLE
    assert part_of(moving, RUNNER_PARTS).startswith("threads moved between cores")
