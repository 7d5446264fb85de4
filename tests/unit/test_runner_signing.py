"""The runner's signing key: written by ``runner keygen``, read by ``runner up --signing-key``,
and the signed result as it is spooled and sent."""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchrunner.cli.runner_signing_cmds import write_key_pair
from benchrunner.core.signatures import key_fingerprint, public_key, verify
from benchrunner.protocol import Canceled, Completed, IterationResult, result_output_hash
from benchrunner.runner.signing import ResultSigner
from benchrunner.runner.spool import Spool


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(
    tmp_path: Path,
) -> None:
    private = tmp_path / "runner.pem"
    public = write_key_pair(private)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert (tmp_path / "runner.pem.pub").read_text() == public + "\n"
    signer = ResultSigner.from_file(private)
    assert signer.public_key == public
    assert signer.fingerprint == key_fingerprint(public)
    with pytest.raises(FileExistsError):
        write_key_pair(private)
    (tmp_path / "runner.pem.pub").unlink()
    with pytest.raises(FileExistsError):
        write_key_pair(private)
    assert ResultSigner.from_file(private).public_key == public  # untouched


@pytest.mark.parametrize(
    ("mode", "content", "reason"),
    [
        (0o644, None, "open to other users"),
        (0o600, b"bencher_runner_" + b"0" * 64, "not an unencrypted PEM private key"),
    ],
)
def test_an_unusable_key_file_is_refused_with_the_reason(
    tmp_path: Path, mode: int, content: bytes | None, reason: str
) -> None:
    path = tmp_path / "key.pem"
    write_key_pair(path)
    if content is not None:
        path.write_bytes(content)
    path.chmod(mode)
    with pytest.raises(ValueError, match=reason):
        ResultSigner.from_file(path)
    with pytest.raises(ValueError, match="cannot read signing key"):
        ResultSigner.from_file(tmp_path / "missing.pem")


def test_a_signed_result_survives_the_spool_and_verifies(tmp_path: Path) -> None:
    write_key_pair(tmp_path / "key.pem")
    signer = ResultSigner.from_file(tmp_path / "key.pem")
    job = uuid.uuid4()
    message = Completed(
        event="completed", job=job, results=[IterationResult(exit_code=0, stdout="ok ✓")]
    )
    signed = signer.sign(message, "nonce-1")
    assert signed.nonce == "nonce-1"
    assert signed.output_hash == result_output_hash(message)
    spool = Spool(tmp_path / "spool")
    spool.write(signed)
    (resent,) = spool.pending()
    assert resent == signed
    assert resent.signature is not None and resent.output_hash is not None
    verify(public_key(signer.public_key), str(job), "nonce-1", resent.output_hash, resent.signature)


def test_another_key_does_not_verify_a_canceled_signature(tmp_path: Path) -> None:
    write_key_pair(tmp_path / "key.pem")
    signed = ResultSigner.from_file(tmp_path / "key.pem").sign(Canceled(job=uuid.uuid4()), "n")
    other = Ed25519PrivateKey.generate().public_key()
    assert signed.signature is not None and signed.output_hash is not None
    with pytest.raises(ValueError, match="Signature verification failed"):
        verify(other, str(signed.job), "n", signed.output_hash, signed.signature)
