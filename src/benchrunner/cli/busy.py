"""Submitting when the server may be busy: ``--retry-on-busy`` waits out a 429 and tries again.

Each submission carries an idempotency key (a new UUID per command), so a retry after a refusal
or a lost answer can never create a second job: the server answers a repeat with the first
submission's report.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Annotated

import typer

from benchrunner.api.reports import RunAnswer
from benchrunner.api.run import RunBody
from benchrunner.cli import output
from benchrunner.client import ApiError, BenchrunnerClient

MIN_WAIT = 1.0
MAX_WAIT = 60.0
"""Bounds of one wait, whatever ``Retry-After`` says (or when it says nothing)."""
MAX_TOTAL_WAIT = 3600.0
"""After this long waiting in all, the refusal is the answer."""

RetryOnBusy = Annotated[
    bool,
    typer.Option(
        "--retry-on-busy",
        help="When the server's queue is full (429), wait as long as it asks (1-60 s) and "
        "submit again, for up to an hour.",
    ),
]


def submit_run(
    client: BenchrunnerClient,
    body: RunBody,
    *,
    retry_on_busy: bool,
    sleep: Callable[[float], None] = time.sleep,
) -> RunAnswer:
    """``POST /v0/run`` with a fresh idempotency key; with ``retry_on_busy``, a 429 is waited
    out (printing a line per wait) and the same submission sent again. Raises the last
    ``ApiError`` otherwise."""
    key = str(uuid.uuid4())
    waited = 0.0
    while True:
        try:
            return client.run(body, idempotency_key=key)
        except ApiError as exc:
            if not retry_on_busy or exc.status != 429 or waited >= MAX_TOTAL_WAIT:
                raise
            delay = min(max(exc.retry_after or MIN_WAIT, MIN_WAIT), MAX_WAIT)
            output.note(f"server busy: {exc.message}; waiting {delay:g} s before submitting again")
            sleep(delay)
            waited += delay
