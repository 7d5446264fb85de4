"""``benchrunner runner keygen`` and ``runner set-key``: the key pair of a runner that signs its
results (docs/decisions/signed-results.md). The private key stays on the runner's machine (``runner
up --signing-key``); the server keeps only the public key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchrunner.cli import output
from benchrunner.cli.config import resolve
from benchrunner.cli.options import Host, Json, Ref, Token
from benchrunner.core.signatures import key_fingerprint, private_key_pem, public_key_text

PUBLIC_SUFFIX = ".pub"


def write_key_pair(private_path: Path) -> str:
    """Write a new Ed25519 private key to ``private_path`` (PEM, mode 0600, never over an
    existing file) and its public key to ``private_path.pub``; returns the public key
    (base64url). Raises OSError (FileExistsError if either file exists)."""
    key = Ed25519PrivateKey.generate()
    public = public_key_text(key.public_key())
    public_path = private_path.with_name(private_path.name + PUBLIC_SUFFIX)
    if public_path.exists():
        raise FileExistsError(f"{public_path} exists already; not overwriting it")
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as private_file:
        private_file.write(private_key_pem(key))
        private_file.flush()
        os.fsync(private_file.fileno())
    public_path.write_text(public + "\n")
    return public


def keygen(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Private key file to create (mode 0600, never overwritten); "
            "the public key is written beside it as FILE.pub.",
        ),
    ],
) -> None:
    """Create a key pair for signed results: print the public key (base64url) to register
    with ``runner create --public-key`` or ``runner set-key``."""
    public = write_key_pair(out)
    output.out().print(public, soft_wrap=True, markup=False)
    output.note(f"private key: {out} (mode 0600); fingerprint {key_fingerprint(public)}")
    output.note(
        "register the public key: benchrunner runner set-key <runner> --public-key "
        f"{public}; then: benchrunner runner up --signing-key {out} ..."
    )


def set_key(
    ref: Ref,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            show_default=False,
            help="Ed25519 public key, base64url (as `runner keygen` prints it).",
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the key: results need no signature.")
    ] = False,
    host: Host = None,
    token: Token = None,
    as_json: Json = False,
) -> None:
    """Register runner REF's public key: from then on it must sign every result (admin). The
    runner's channel is closed, so it reconnects under the new rule."""
    if (public_key is None) == (not clear):
        raise ValueError("give exactly one of --public-key KEY or --clear")
    with resolve(host, token).client() as client:
        runner = client.set_runner_public_key(ref, public_key)
    if as_json:
        output.print_json(runner)
        return
    key = runner.public_key
    output.note(f"runner {runner.slug}: " + (f"signing key {key}" if key else "no signing key"))
