"""``--password-file FILE``: a password read from a file (never from the command line, where
other users could read it in the process list), its rules a usage error."""

from __future__ import annotations

from pathlib import Path

import typer

from benchrunner.core.passwords import PasswordRejected, read_password_file


def read_password(path: Path) -> str:
    try:
        return read_password_file(path)
    except PasswordRejected as exc:
        raise typer.BadParameter(f"{path}: {exc}", param_hint="--password-file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"{path}: {exc}", param_hint="--password-file") from None
