"""Short-lived OCI pull tokens for runners (docs/decisions/runner-tokens.md): JWT, ``aud`` oci,
``sub`` runner UUID, pull-only on one project, generated at claim and never stored (``PullTokens``
keeps a runner's latest in memory, to hand it out again while it is nearly new)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

import jwt

OCI_AUDIENCE = "oci"
ALGORITHM = "HS256"


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


REUSE_FRACTION = 0.1
"""A runner's latest token is handed out again while no more than this part of its life is
gone: every job still gets a token valid for at least 90 % of the TTL (to the second)."""
PRUNE_AT = 1024
"""Runners remembered before those whose token can no longer be reused are forgotten."""


class _Issued(NamedTuple):
    project: uuid.UUID
    at: dt.datetime
    token: str


@dataclass
class PullTokens:
    """The pull tokens of the jobs a server hands out. Signing one is about 0.1 ms, and a runner
    working through a queue takes one per job, almost always for the same project: its latest
    token is given again while it is nearly new (at most one signing per runner and tenth of
    the TTL, a minute at the default)."""

    secret: str = field(repr=False)
    issuer: str
    ttl: dt.timedelta
    _latest: dict[uuid.UUID, _Issued] = field(default_factory=dict, init=False, repr=False)

    def _reusable(self, issued: _Issued, now: dt.datetime) -> bool:
        return issued.at <= now < issued.at + self.ttl * REUSE_FRACTION

    def for_job(self, runner_uuid: uuid.UUID, project_uuid: uuid.UUID, now: dt.datetime) -> str:
        """A token for ``runner_uuid`` to pull ``project_uuid``'s images, valid from ``now``
        for at least ``REUSE_FRACTION`` less than the TTL."""
        latest = self._latest.get(runner_uuid)
        if latest is not None and latest.project == project_uuid and self._reusable(latest, now):
            return latest.token
        token = runner_pull_token(
            self.secret,
            issuer=self.issuer,
            runner_uuid=runner_uuid,
            project_uuid=project_uuid,
            ttl=self.ttl,
            now=now,
        )
        if len(self._latest) >= PRUNE_AT:
            self._latest = {
                runner: kept for runner, kept in self._latest.items() if self._reusable(kept, now)
            }
        self._latest[runner_uuid] = _Issued(project_uuid, now, token)
        return token
