"""The runner's side of signed results (docs/decisions/signed-results.md): with ``--signing-key``,
every terminal message carries the claimed job's nonce, the hash of its results and an Ed25519
signature."""

from __future__ import annotations

from pathlib import Path

from benchrunner.core.signatures import key_fingerprint, load_private_key, public_key_text, sign
from benchrunner.protocol import TerminalMessage, result_output_hash
from benchrunner.runner.secret_file import read_owner_only

MAX_KEY_FILE_BYTES = 16384


class ResultSigner:
    def __init__(self, pem: bytes) -> None:
        """Raises ValueError if ``pem`` is not an unencrypted Ed25519 private key."""
        self._key = load_private_key(pem)
        self.public_key = public_key_text(self._key.public_key())
        self.fingerprint = key_fingerprint(self.public_key)

    @classmethod
    def from_file(cls, path: Path) -> ResultSigner:
        """The key in ``path``, a regular file no one but its owner may read or write.
        Raises ValueError with the reason."""
        pem = read_owner_only(path, "signing key", MAX_KEY_FILE_BYTES)
        try:
            return cls(pem)
        except ValueError as exc:
            raise ValueError(f"signing key {path}: {exc}") from None

    def sign(self, message: TerminalMessage, nonce: str | None) -> TerminalMessage:
        """``message`` with ``nonce``, ``output_hash`` and ``signature`` set. The runner
        announces the ``nonce`` extension, so a job claimed without one has the empty nonce."""
        nonce = nonce or ""
        output_hash = result_output_hash(message)
        signature = sign(self._key, str(message.job), nonce, output_hash)
        update = {"nonce": nonce, "output_hash": output_hash, "signature": signature}
        signed = message.model_copy(update=update)
        signed._received_hash = output_hash  # as the server will have received it
        return signed
