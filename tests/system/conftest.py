from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Deployment, deploy


@pytest.fixture
def deployment(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url) as deployment:
        yield deployment
