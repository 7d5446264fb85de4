"""A claimed job as the server sends it, for runner tests that start from a ``job`` message."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from benchrunner.protocol import JsonClaimedJob


def claimed_job(config: dict[str, Any]) -> JsonClaimedJob:
    now = dt.datetime.now(dt.UTC)
    return JsonClaimedJob.model_validate(
        {
            "uuid": str(uuid.uuid4()),
            "spec": {
                "uuid": str(uuid.uuid4()),
                "name": "local",
                "slug": "local",
                "architecture": "x86_64",
                "cpu": 1,
                "memory": 1,
                "disk": 1,
                "created": now,
                "modified": now,
            },
            "config": config,
            "oci_token": "token",
            "timeout": config["timeout"],
            "created": now,
            "nonce": "nonce",
        }
    )
