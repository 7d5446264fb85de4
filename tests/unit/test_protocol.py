from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from benchrunner.protocol import (
    Completed,
    Heartbeat,
    Ready,
    encode,
    runner_message,
    server_message,
)


def test_heartbeat_is_at_most_50_bytes() -> None:
    assert encode(Heartbeat()) == '{"event":"heartbeat"}'
    assert len(encode(Heartbeat()).encode()) <= 50


def test_ready_metadata_inline_or_nested() -> None:
    inline = runner_message.validate_json('{"event":"ready","os":"linux","arch":"x86_64"}')
    nested = runner_message.validate_json(
        '{"event":"ready","runner":{"os":"linux","arch":"x86_64","version":"1"}}'
    )
    assert isinstance(inline, Ready) and isinstance(nested, Ready)
    assert inline.metadata().os == nested.metadata().os == "linux"
    assert nested.metadata().version == "1"


@pytest.mark.parametrize("poll", [0, 901, -1])
def test_poll_timeout_bounds(poll: int) -> None:
    with pytest.raises(ValidationError):
        runner_message.validate_json(f'{{"event":"ready","poll_timeout":{poll}}}')


@pytest.mark.parametrize(
    "text",
    ['{"event":"nope"}', '{"event":"completed"}', '{"event":"failed","job":"x"}', "[]"],
)
def test_invalid_messages_do_not_validate(text: str) -> None:
    with pytest.raises(ValidationError):
        runner_message.validate_json(text)


def test_terminal_round_trip() -> None:
    job = uuid.uuid4()
    message = Completed(job=job, results=[])
    assert runner_message.validate_json(encode(message)) == message
    assert server_message.validate_json(f'{{"event":"ack","job":"{job}"}}').event == "ack"
