from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Deployment, deploy


@pytest.fixture
def deployment(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url) as deployment:
        yield deployment


@pytest.fixture(params=["channel", "per-job"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each runner transport in turn: the conformance scenarios hold on both."""
    return str(request.param)


@pytest.fixture
def each_transport(deployment: Deployment, transport: str) -> Deployment:
    """``deployment`` whose runner processes use ``transport``."""
    deployment.transport = transport
    return deployment
