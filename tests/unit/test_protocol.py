from __future__ import annotations

import datetime as dt
import uuid

import pytest
from pydantic import ValidationError

from benchrunner.protocol import (
    MAX_LOG_CHUNK,
    MAX_NESTING,
    Ack,
    Cancel,
    Canceled,
    Completed,
    Error,
    Failed,
    Heartbeat,
    IterationResult,
    JobAssigned,
    JsonJobConfig,
    JsonSpec,
    Log,
    NoJob,
    Ready,
    RunnerMessage,
    RunnerMetadata,
    Running,
    ServerMessage,
    encode,
    explain_invalid,
    parse_runner_message,
    parse_server_message,
    runner_message,
    server_message,
)

JOB = uuid.UUID("53b72390-a1b7-420b-821e-0a2477dc8fbb")  # fixed: test ids must not vary


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


SUM = "ab" * 32


@pytest.mark.parametrize(
    ("text", "channel", "checksum"),
    [
        # ours: top level
        (f'{{"event":"ready","update_channel":"canary","checksum":"{SUM}"}}', "canary", SUM),
        # Bencher's runner: nested in ``runner`` beside os, arch and version
        (
            '{"event":"ready","poll_timeout":5,"runner":{"os":"linux","arch":"x86_64",'
            f'"version":"0.6.12","channel":"canary","checksum":"{SUM}"}}}}',
            "canary",
            SUM,
        ),
        # both: the top level wins
        (
            '{"event":"ready","update_channel":"stable","checksum":"cd",'
            f'"runner":{{"channel":"canary","checksum":"{SUM}"}}}}',
            "stable",
            "cd",
        ),
        # Bencher's runner without them (null or absent): neither is named
        ('{"event":"ready","runner":{"os":"linux","channel":null,"checksum":null}}', None, None),
        ('{"event":"ready","poll_timeout":5}', None, None),
    ],
    ids=["ours", "bencher", "both", "bencher-null", "none"],
)
def test_ready_release_channel_and_checksum_inline_or_nested(
    text: str, channel: str | None, checksum: str | None
) -> None:
    ready = parse_runner_message(text)
    assert isinstance(ready, Ready)
    assert ready.release_channel() == channel
    assert ready.running_checksum() == checksum


def test_ready_nested_metadata_keeps_os_arch_version_apart_from_the_release() -> None:
    ready = parse_runner_message(
        '{"event":"ready","runner":{"os":"linux","arch":"aarch64","version":"0.6.12",'
        f'"channel":"canary","checksum":"{SUM}"}}}}'
    )
    assert isinstance(ready, Ready)
    assert ready.metadata() == RunnerMetadata(os="linux", arch="aarch64", version="0.6.12")


@pytest.mark.parametrize("field", ["channel", "checksum"])
def test_ready_nested_release_fields_are_text(field: str) -> None:
    with pytest.raises(ValidationError):
        parse_runner_message(f'{{"event":"ready","runner":{{"{field}":7}}}}')


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


# ---------------------------------------------------------------- strict wire validation


@pytest.mark.parametrize(
    "text",
    [
        '{"event":"ready","poll_timeout":true}',
        '{"event":"ready","poll_timeout":"30"}',
        '{"event":"ready","poll_timeout":5.0}',
        '{"event":"ready","os":7}',
        '{"event":"running","job":1}',
        f'{{"event":"completed","job":"{JOB}","results":[{{"exit_code":"0"}}]}}',
        f'{{"event":"completed","job":"{JOB}","results":[{{"exit_code":0.0}}]}}',
        f'{{"event":"completed","job":"{JOB}","results":[{{"stdout":1}}]}}',
        f'{{"event":"completed","job":"{JOB}","results":{{}}}}',
        f'{{"event":"failed","job":"{JOB}","error":false}}',
    ],
)
def test_runner_messages_are_not_coerced(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_runner_message(text)


def _every_runner_message() -> list[RunnerMessage]:
    job = uuid.uuid4()
    results = [
        IterationResult(exit_code=0, stdout="{}", stderr="", output={"out.json": "{}"}),
        IterationResult(exit_code=None, stderr="killed"),
    ]
    return [
        Ready(poll_timeout=30, os="linux", arch="x86_64", version="0.1.0"),
        Ready(runner=RunnerMetadata(os="linux")),
        Ready(poll_timeout=30, extensions=["log"]),
        Running(job=job),
        Running(),
        Heartbeat(),
        Log(job=job, stream="stderr", offset=65536, data="é ✓\n"),
        Completed(job=job, results=results),
        Failed(job=job, results=results, error="boom"),
        Canceled(job=job),
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"event":"log","job":"%s","stream":"stdin","offset":0,"data":"x"}', "stream"),
        ('{"event":"log","job":"%s","stream":"stdout","offset":-1,"data":"x"}', "offset"),
        ('{"event":"log","job":"%s","stream":"stdout","offset":"0","data":"x"}', "offset"),
        ('{"event":"log","job":"%s","stream":"stdout","offset":0,"data":""}', "data"),
        ('{"event":"log","job":"%s","stream":"stdout","offset":0,"data":"%s"}', "data"),
        ('{"event":"ready","extensions":"log"}', "extensions"),
    ],
)
def test_invalid_log_and_extensions_are_refused(text: str, why: str) -> None:
    if text.count("%s") == 2:
        text = text % (uuid.uuid4(), "x" * (MAX_LOG_CHUNK + 1))
    elif "%s" in text:
        text = text % uuid.uuid4()
    with pytest.raises(ValidationError) as info:
        parse_runner_message(text)
    assert why in str(info.value)


@pytest.mark.parametrize("message", _every_runner_message(), ids=lambda m: m.event)
def test_what_our_runner_sends_validates_strictly(message: RunnerMessage) -> None:
    assert parse_runner_message(encode(message)) == message


def _every_server_message() -> list[ServerMessage]:
    job = uuid.uuid4()
    now = dt.datetime.now(dt.UTC)
    spec = JsonSpec(
        uuid=uuid.uuid4(),
        name="small",
        slug="small",
        architecture="x86_64",
        cpu=2,
        memory=1 << 30,
        disk=1 << 30,
        network=True,
        created=now,
        modified=now,
    )
    image = JsonJobConfig(
        timeout=60,
        iter=3,
        registry="http://127.0.0.1:8080",
        project=uuid.uuid4(),
        digest="sha256:" + "a" * 64,
        entrypoint=["/bin/sh"],
        cmd=["-c", "true"],
        env={"A": "1"},
        file_paths=["out.json"],
    )
    template = JsonJobConfig(
        timeout=60, template="bench.sleep", args={"ms": 20, "f": 1.5, "b": True, "s": "x"}
    )
    assigned: list[ServerMessage] = [
        JobAssigned(
            uuid=job,
            spec=spec,
            config=config,
            oci_token="eyJ.x.y",
            timeout=60,
            created=now,
            nonce="n",
        )
        for config in (image, template)
    ]
    return [*assigned, Ack(), Ack(job=job), NoJob(), Cancel(job=job), Error(message="no")]


@pytest.mark.parametrize("message", _every_server_message(), ids=lambda m: m.event)
def test_what_the_server_sends_validates_strictly(message: ServerMessage) -> None:
    assert parse_server_message(encode(message)) == message


# ---------------------------------------------------------------- hostile input


def _nested(depth: int) -> str:
    return '{"event":"heartbeat","x":' + "[" * depth + "]" * depth + "}"


def test_nesting_up_to_the_limit_parses() -> None:
    inner = MAX_NESTING - 1  # the message object itself is the first level
    assert parse_runner_message(_nested(inner)) == Heartbeat()
    objects = '{"event":"heartbeat","x":' + '{"a":' * (inner - 1) + "1" + "}" * inner
    assert parse_runner_message(objects) == Heartbeat()


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_an_error_not_a_recursion(depth: int) -> None:
    for text in (_nested(depth), "[" * depth + "]" * depth, '{"a":' * depth):
        with pytest.raises(ValidationError) as info:
            parse_runner_message(text)
        assert (
            explain_invalid(info.value)
            == f"invalid message: nested deeper than {MAX_NESTING} levels"
        )


@pytest.mark.parametrize(
    ("data", "explained"),
    [
        ("not json", "invalid message: not valid JSON"),
        (b'{"event":"heartbeat\xff"}', "invalid message: not valid JSON"),
        ("[1]", "invalid message: not a JSON object"),
        ("null", "invalid message: not a JSON object"),
        ('{"no":"event"}', "invalid message: missing 'event'"),
        ('{"event":"dance"}', "invalid message: unknown event 'dance'"),
        ('{"event":"ready","poll_timeout":true}', "invalid 'ready' message: poll_timeout:"),
        ('{"event":"completed"}', "invalid 'completed' message: job: Field required"),
    ],
)
def test_invalid_messages_are_explained(data: str | bytes, explained: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_runner_message(data)
    assert explain_invalid(info.value).startswith(explained)


def test_an_error_answering_a_message_names_its_event_and_job() -> None:
    job = uuid.UUID(int=1)
    error = Error(message="refused")
    assert error.answering(Heartbeat()) == Error(message="refused", reply_to="heartbeat")
    log = Log(job=job, stream="stdout", offset=0, data="x")
    assert encode(error.answering(log)) == (
        f'{{"event":"error","message":"refused","reply_to":"log","job":"{job}"}}'
    )
