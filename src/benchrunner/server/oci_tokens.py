"""Short-lived OCI pull tokens for runners (seed 000): JWT, ``aud`` oci, ``sub`` runner UUID,
pull-only on one project, generated at claim and never stored."""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from pathlib import Path

import jwt

OCI_AUDIENCE = "oci"
ALGORITHM = "HS256"


def load_or_create_secret(data_dir: Path, configured: str | None) -> str:
    if configured:
        return configured
    path = data_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_hex(32)
    path.touch(mode=0o600)
    path.write_text(secret)
    return secret


def runner_pull_token(
    secret: str,
    *,
    issuer: str,
    runner_uuid: uuid.UUID,
    project_uuid: uuid.UUID,
    ttl: dt.timedelta,
    now: dt.datetime,
) -> str:
    claims = {
        "iss": issuer,
        "sub": str(runner_uuid),
        "aud": OCI_AUDIENCE,
        "iat": int(now.timestamp()),
        "exp": int((now + ttl).timestamp()),
        "access": [{"type": "repository", "name": str(project_uuid), "actions": ["pull"]}],
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)
