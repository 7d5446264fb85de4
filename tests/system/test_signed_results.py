"""Signed results (docs/decisions/signed-results.md), against a real server on both engines: a
runner registered with an Ed25519 public key must sign every terminal message; anything else is
refused with its reason and changes nothing; the accepted signature is kept with the
output and shown on the job.

One server per engine serves the whole module; each test works in a project, spec and runner
names of its own (``tenant``)."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchrunner.client import MAX_PER_PAGE, ApiError
from benchrunner.core.canonical import canonical_json
from benchrunner.core.signatures import key_fingerprint, public_key_text, sign
from benchrunner.protocol import OUR_EXTENSIONS
from tests.harness import Deployment, RawChannel, cli, output_json, wait_until

READY = {"event": "ready", "poll_timeout": 5, "extensions": list(OUR_EXTENSIONS)}


def _result(value: int) -> dict[str, Any]:
    return {"exit_code": 0, "stdout": json.dumps({"noop": {"latency": {"value": value}}})}


def _stored(value: int) -> dict[str, Any]:
    """``_result(value)`` as the job's JSON shows it: every field, absent ones null."""
    return {**_result(value), "stderr": None, "output": None}


def _hash(results: list[dict[str, Any]]) -> str:
    return hashlib.sha256(canonical_json(results)).hexdigest()


def _signed(
    key: Ed25519PrivateKey,
    message: dict[str, Any],
    nonce: str,
    output_hash: str | None = None,
) -> dict[str, Any]:
    output_hash = output_hash or _hash(message.get("results", []))
    signature = sign(key, message["job"], nonce, output_hash)
    return {**message, "nonce": nonce, "output_hash": output_hash, "signature": signature}


def _keyed_channel(deployment: Deployment, key: Ed25519PrivateKey) -> RawChannel:
    """A runner created without a key, then given one by PATCH, as an admin would."""
    slug, token = deployment.new_runner("signer")
    with deployment.admin() as client:
        runner = client.set_runner_public_key(slug, public_key_text(key.public_key()))
    assert runner.public_key == public_key_text(key.public_key())
    channel = RawChannel(deployment.server, slug, token)
    deployment.channels.append(channel)
    return channel


def test_every_unsigned_or_badly_signed_result_is_refused_and_changes_nothing(
    tenant: Deployment,
) -> None:
    key = Ed25519PrivateKey.generate()
    channel = _keyed_channel(tenant, key)
    job_uuid = tenant.submit("bench.noop")
    claimed = channel.ask(READY, timeout=10)
    assert claimed["event"] == "job" and claimed["uuid"] == job_uuid
    nonce = claimed["nonce"]
    assert len(nonce) >= 32
    assert channel.ask({"event": "running"})["event"] == "ack"

    completed = {"event": "completed", "job": job_uuid, "results": [_result(5)]}
    good = _signed(key, completed, nonce)
    stranger = Ed25519PrivateKey.generate()
    refusals: list[tuple[str, dict[str, Any], str]] = [
        ("unsigned", completed, "Missing nonce, output_hash, signature"),
        ("no signature", {**good, "signature": None}, "Missing signature"),
        ("not base64url", {**good, "signature": "a+b/c=="}, "Invalid signature encoding"),
        ("63 bytes", {**good, "signature": good["signature"][:-2]}, "Invalid signature length"),
        ("another key", _signed(stranger, completed, nonce), "Signature verification failed"),
        (
            "fields changed after signing",
            {**good, "nonce": "0" * 32},
            "Signature verification failed",
        ),
        ("another nonce", _signed(key, completed, "0" * 32), "Invalid nonce"),
        (
            "hash of other results",
            _signed(key, completed, nonce, _hash([_result(6)])),
            "Output hash mismatch",
        ),
        (
            "unsigned failed",
            {"event": "failed", "job": job_uuid, "results": [], "error": "boom"},
            "Missing nonce, output_hash, signature",
        ),
        ("unsigned canceled", {"event": "canceled", "job": job_uuid}, "Missing nonce"),
        (
            "failed signed over other results",
            _signed(
                key,
                {"event": "failed", "job": job_uuid, "results": [_result(1)], "error": "x"},
                nonce,
                _hash([]),
            ),
            "Output hash mismatch",
        ),
    ]
    for name, message, reason in refusals:
        # A running job's runner heartbeats between its messages, as a real one does every
        # second: on a loaded machine the refusals may take longer than the heartbeat timeout.
        assert channel.ask({"event": "heartbeat"}) == {"event": "ack", "job": job_uuid}
        sent = {k: v for k, v in message.items() if v is not None}
        reply = channel.ask(sent)
        assert reply["event"] == "error", name
        assert reply["message"].startswith(f"result of job {job_uuid} refused: {reason}"), (
            name,
            reply,
        )
        job = tenant.job(job_uuid)
        assert job.status == "running", name
        assert job.model_dump(mode="json", exclude_unset=True)["signature"] == {
            "signed": False,
            "verified": False,
        }, name
        assert "output" not in job.model_fields_set, name

    assert channel.ask(good) == {"event": "ack", "job": job_uuid}
    job = tenant.wait_status(job_uuid, "processed")
    assert job.model_dump(mode="json", exclude_unset=True)["signature"] == {
        "signed": True,
        "verified": True,
        "output_hash": good["output_hash"],
        "signature": good["signature"],
        "key_fingerprint": key_fingerprint(public_key_text(key.public_key())),
    }
    assert output_json(job)["results"] == [_stored(5)]

    assert channel.ask(good) == {"event": "ack", "job": job_uuid}  # the identical resend
    replay = _signed(key, {**completed, "results": [_result(9)]}, nonce)
    reply = channel.ask(replay)
    assert reply["event"] == "error" and "already has a different result" in reply["message"]
    job = tenant.job(job_uuid)
    assert output_json(job)["results"] == [_stored(5)]
    assert job.signature.signature == good["signature"]


def test_signed_failed_and_canceled_results_are_accepted_and_a_failure_keeps_its_signature(
    tenant: Deployment,
) -> None:
    key = Ed25519PrivateKey.generate()
    channel = _keyed_channel(tenant, key)
    failing = tenant.submit("bench.noop")
    nonce = channel.ask(READY)["nonce"]
    assert channel.ask({"event": "running"})["event"] == "ack"
    failed = _signed(
        key,
        {"event": "failed", "job": failing, "results": [{"exit_code": 3}], "error": "exit 3"},
        nonce,
    )
    assert channel.ask(failed) == {"event": "ack", "job": failing}
    job = tenant.job(failing)
    assert job.status == "failed"
    assert job.signature.signed and job.signature.verified
    assert job.signature.output_hash == _hash([{"exit_code": 3}])
    assert channel.ask(failed) == {"event": "ack", "job": failing}  # the identical resend

    canceled = tenant.submit("bench.noop")
    nonce = channel.ask(READY)["nonce"]
    assert channel.ask({"event": "running"})["event"] == "ack"
    with tenant.admin() as client:
        client.cancel_job(tenant.project, canceled)
    assert channel.ask({"event": "heartbeat"}) == {"event": "cancel", "job": canceled}
    message = {"event": "canceled", "job": canceled}
    assert channel.ask(_signed(key, message, nonce)) == {"event": "ack", "job": canceled}
    assert tenant.status(canceled) == "canceled"


def _run_signed(
    channel: RawChannel, deployment: Deployment, key: Ed25519PrivateKey
) -> tuple[str, Any]:
    """A job claimed and running on ``channel``; its UUID, and a signer with its nonce."""
    job_uuid = deployment.submit("bench.noop")
    claimed = channel.ask(READY)
    assert claimed["uuid"] == job_uuid
    assert channel.ask({"event": "running"})["event"] == "ack"
    nonce = claimed["nonce"]
    return job_uuid, lambda message: _signed(key, message, nonce)


def _refused_as_replay(channel: RawChannel, message: dict[str, Any], recorded: str) -> None:
    reply = channel.ask(message)
    assert reply["event"] == "error", message
    assert reply["message"].startswith("Job already submitted"), reply
    assert f"already has a different result ({recorded})" in reply["message"], reply


def test_any_other_result_for_a_finished_job_is_refused_as_a_replay(
    tenant: Deployment,
) -> None:
    """Every result is signed and valid: only what is on record decides."""
    key = Ed25519PrivateKey.generate()
    channel = _keyed_channel(tenant, key)

    completed_job, sign = _run_signed(channel, tenant, key)
    completed = sign({"event": "completed", "job": completed_job, "results": [_result(5)]})
    assert channel.ask(completed) == {"event": "ack", "job": completed_job}
    _refused_as_replay(channel, sign({"event": "canceled", "job": completed_job}), "completed")
    failed = {"event": "failed", "job": completed_job, "results": [_result(5)], "error": "x"}
    _refused_as_replay(channel, sign(failed), "completed")
    assert channel.ask(completed) == {"event": "ack", "job": completed_job}
    job = tenant.wait_status(completed_job, "processed")
    assert output_json(job)["error"] is None

    failed_job, sign = _run_signed(channel, tenant, key)
    failed = {"event": "failed", "job": failed_job, "results": [], "error": "exit 3"}
    assert channel.ask(sign(failed)) == {"event": "ack", "job": failed_job}
    _refused_as_replay(channel, sign({**failed, "error": "exit 4"}), "failed")
    _refused_as_replay(channel, sign({**failed, "results": [_result(1)]}), "failed")
    done = {"event": "completed", "job": failed_job, "results": [_result(1)]}
    _refused_as_replay(channel, sign(done), "failed")
    _refused_as_replay(channel, sign({"event": "canceled", "job": failed_job}), "failed")
    assert channel.ask(sign(failed)) == {"event": "ack", "job": failed_job}
    job = tenant.job(failed_job)
    assert (job.status, output_json(job)["error"]) == ("failed", "exit 3")

    quitter, sign = _run_signed(channel, tenant, key)
    canceled = sign({"event": "canceled", "job": quitter})
    assert channel.ask(canceled) == {"event": "ack", "job": quitter}
    _refused_as_replay(
        channel, sign({"event": "completed", "job": quitter, "results": []}), "canceled"
    )
    assert channel.ask(canceled) == {"event": "ack", "job": quitter}
    assert tenant.status(quitter) == "canceled"

    # Canceled by a user: nothing of the runner's is on record; a result that crossed the
    # cancel is acknowledged and changes nothing.
    crossed, sign = _run_signed(channel, tenant, key)
    with tenant.admin() as client:
        client.cancel_job(tenant.project, crossed)
    late = sign({"event": "completed", "job": crossed, "results": [_result(2)]})
    assert channel.ask(late) == {"event": "ack", "job": crossed}
    job = tenant.job(crossed)
    assert job.status == "canceled" and "output" not in job.model_fields_set


def test_a_signed_result_with_a_field_the_server_does_not_know_is_accepted(
    tenant: Deployment,
) -> None:
    """The hash is checked against the results as received, not as the server re-reads them."""
    key = Ed25519PrivateKey.generate()
    channel = _keyed_channel(tenant, key)
    job_uuid, sign = _run_signed(channel, tenant, key)
    result = {**_result(4), "vm": {"boot_ms": 12.5, "kernel": "6.1"}}
    completed = sign({"event": "completed", "job": job_uuid, "results": [result]})
    assert completed["output_hash"] == _hash([result])
    assert channel.ask(completed) == {"event": "ack", "job": job_uuid}
    job = tenant.wait_status(job_uuid, "processed")
    assert output_json(job)["results"] == [_stored(4)]  # the unknown field is not kept
    assert job.signature.verified and job.signature.output_hash == _hash([result])
    assert channel.ask(completed) == {"event": "ack", "job": job_uuid}  # the identical resend
    without = sign({"event": "completed", "job": job_uuid, "results": [_result(4)]})
    _refused_as_replay(channel, without, "completed")  # signed over other results


@pytest.mark.engine_independent
def test_setting_a_key_closes_the_runners_channel_so_it_reconnects_under_the_rule(
    tenant: Deployment,
) -> None:
    channel = tenant.channel("reconnects")
    assert channel.ask({"event": "heartbeat"})["event"] == "ack"
    with tenant.admin() as client:
        client.set_runner_public_key(
            channel.runner, public_key_text(Ed25519PrivateKey.generate().public_key())
        )
    assert channel.wait_closed() == (1008, "runner signing key changed")


@pytest.mark.engine_independent
def test_a_malformed_public_key_is_refused_on_create_and_update(tenant: Deployment) -> None:
    slug, _token = tenant.new_runner("plain")
    short = public_key_text(Ed25519PrivateKey.generate().public_key())[:-4]
    with tenant.admin() as client:
        for bad, reason in [("not/base64", "encoding"), (short, "length")]:
            with pytest.raises(ApiError) as created:
                client.create_runner(f"{tenant.names}bad", public_key=bad)
            assert created.value.status == 400
            assert f"Invalid public key {reason}" in created.value.message
            with pytest.raises(ApiError) as patched:
                client.set_runner_public_key(slug, bad)
            assert patched.value.status == 400
            assert f"Invalid public key {reason}" in patched.value.message
        assert client.get_runner(slug).public_key is None
        listed = client.list_runners(per_page=MAX_PER_PAGE)
        assert listed.total is not None and listed.total <= MAX_PER_PAGE  # one page: all
        assert [r.slug for r in listed if r.slug.startswith(tenant.names)] == [slug]
        key = public_key_text(Ed25519PrivateKey.generate().public_key())
        assert client.set_runner_public_key(slug, key + "=").public_key == key  # unpadded
        assert client.set_runner_public_key(slug, None).public_key is None


@pytest.mark.engine_independent
def test_a_runner_started_with_its_signing_key_signs_a_job_end_to_end(
    tenant: Deployment, tmp_path: Path
) -> None:
    key_file = tmp_path / "keys" / "runner.pem"
    key_file.parent.mkdir()
    env = tenant.cli_env(tmp_path)
    made = cli("runner", "keygen", "--out", str(key_file), env=env)
    public = (key_file.parent / "runner.pem.pub").read_text().strip()
    assert public in made.stdout
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = cli("runner", "keygen", "--out", str(key_file), env=env, check=False)
    assert again.returncode == 1 and "exists" in again.stderr + again.stdout

    runner = tenant.runner_process("signed")
    runner.extra_args = ["--signing-key", str(key_file)]
    cli("runner", "set-key", runner.slug, "--public-key", public, env=env)
    assert public in cli("runner", "show", runner.slug, env=env).stdout
    runner.start()
    job_uuid = tenant.submit("bench.sleep", {"ms": 10}, iter=2)
    job = tenant.wait_status(job_uuid, "processed", timeout=60)
    signature = job.signature
    assert signature.signed and signature.verified
    assert signature.key_fingerprint == key_fingerprint(public)
    # The hash is the results' as the server stored them, computed here independently.
    stored = [{k: v for k, v in r.items() if v is not None} for r in output_json(job)["results"]]
    assert signature.output_hash == _hash(stored)
    assert len(stored) == 2
    assert "signing results with key " + key_fingerprint(public) in runner.output()
    shown = cli("job", "show", job_uuid, env=env).stdout
    assert f"verified ({key_fingerprint(public)})" in shown


@pytest.mark.engine_independent
def test_a_keyed_runner_without_its_signing_key_gets_no_result_accepted(
    tenant: Deployment,
) -> None:
    key = Ed25519PrivateKey.generate()
    runner = tenant.runner_process("forgetful")
    with tenant.admin() as client:
        client.set_runner_public_key(runner.slug, public_key_text(key.public_key()))
    runner.start()
    job_uuid = tenant.submit("bench.sleep", {"ms": 10})
    refused = f"server refused the result of job {job_uuid}: result of job {job_uuid} refused"

    def logged() -> bool:
        return refused in runner.output()

    wait_until(logged, timeout=60, interval=0.2, message="the refusal in the runner's log")
    job = tenant.job(job_uuid)
    assert job.status in ("running", "failed")  # never completed: it times out instead
    assert job.model_dump(mode="json", exclude_unset=True)["signature"] == {
        "signed": False,
        "verified": False,
    }
