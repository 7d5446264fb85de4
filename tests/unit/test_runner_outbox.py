"""Which reply refuses the result in flight."""

from __future__ import annotations

import uuid

import pytest

from benchrunner.protocol import Completed, Error, encode, parse_server_message
from benchrunner.runner.outbox import refuses

JOB = uuid.UUID(int=1)
OTHER = uuid.UUID(int=2)


@pytest.mark.parametrize(
    ("error", "refuses_the_result"),
    [
        (Error(message="x", reply_to="completed", job=JOB), True),
        (Error(message="x", reply_to="completed"), True),  # unreadable, but a completed
        (Error(message="x", reply_to="completed", job=OTHER), False),
        (Error(message="x", reply_to="failed", job=JOB), False),
        (Error(message=f"log: job {JOB} is not in flight here", reply_to="log", job=JOB), False),
        (Error(message="x", reply_to="heartbeat"), False),
        # from a server that predates ``reply_to``: a log's refusal by its text, else the result's
        (Error(message=f"log: job {JOB} is no longer in flight"), False),
        (Error(message=f"result of job {JOB} refused: Invalid nonce"), True),
    ],
)
def test_an_error_refuses_the_result_in_flight_only_when_it_answers_it(
    error: Error, refuses_the_result: bool
) -> None:
    assert refuses(error, Completed(job=JOB, results=[])) is refuses_the_result
    assert parse_server_message(encode(error)) == error  # what goes on the wire, read back
