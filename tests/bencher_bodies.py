"""The bodies Bencher's CLI sends to ``POST /v0/run`` (tests/bencher_cli_bodies), filled in for
one deployment."""

from __future__ import annotations

import datetime as dt
import json
import string
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.harness import Deployment

BODIES = Path(__file__).parent / "bencher_cli_bodies"


def bencher_body(path: Path, deployment: Deployment) -> dict[str, Any]:
    """The body in ``path`` with its ``$`` names filled in for ``deployment``."""
    now = dt.datetime.now(dt.UTC)
    values = {
        "project": deployment.project,
        "registry": urlsplit(deployment.server.url).netloc,
        "spec": deployment.spec,
        "start": (now - dt.timedelta(seconds=2)).isoformat(),
        "end": now.isoformat(),
        "key": str(uuid.uuid4()),
    }
    body: dict[str, Any] = json.loads(string.Template(path.read_text()).substitute(values))
    return body
