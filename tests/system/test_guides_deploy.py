"""The deployment guide's blocks (docs/how-to/deploy.md) run as written, as test_guides.py runs
the other guides' blocks, with the same needs. A module of their own: they build the container
images and boot a Debian machine with systemd as PID 1, minutes that run beside the other
guides' blocks this way instead of after them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.system import test_guides as guide_blocks
from tests.system.test_webhooks import receiving

pytestmark = pytest.mark.engine_independent


@pytest.fixture(scope="module")
def deploy_guides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[guide_blocks.Guides]:
    with receiving() as receiver:
        tmp = tmp_path_factory.mktemp("deploy-guide")
        with guide_blocks.guides_server(tmp, receiver) as found:
            yield found


@pytest.mark.parametrize("block", list(guide_blocks.shell_blocks(guide_blocks.SEPARATE_GUIDES)))
def test_runnable_deploy_guide_block(
    deploy_guides: guide_blocks.Guides, tmp_path: Path, block: guide_blocks.Block
) -> None:
    guide_blocks.run_and_check(deploy_guides, tmp_path, block)
