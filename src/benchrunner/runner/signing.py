"""The runner's side of signed results (seed 002): with ``--signing-key``, every terminal
message carries the claimed job's nonce, the hash of its results and an Ed25519 signature."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from benchrunner.core.signatures import key_fingerprint, load_private_key, public_key_text, sign
from benchrunner.protocol import TerminalMessage, result_output_hash

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
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ValueError(f"cannot read signing key {path}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"signing key {path} is not a regular file")
            if info.st_mode & 0o077:
                raise ValueError(
                    f"signing key {path} is open to other users (mode "
                    f"{stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
                )
            pem = os.read(fd, MAX_KEY_FILE_BYTES)
        finally:
            os.close(fd)
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
        return message.model_copy(
            update={"nonce": nonce, "output_hash": output_hash, "signature": signature}
        )
