"""The reference pages generated from the code (docs/reference/: CLI, settings, adapters, HTTP
API) are what the code says now: regenerate them with ``make docs-reference``."""

from __future__ import annotations

import difflib
import re

import pytest

from benchrunner.server.config import ServerSettings
from tests import docs_reference
from tests.harness import REPO

pytestmark = pytest.mark.engine_independent


def test_committed_reference_pages_are_what_the_code_says() -> None:
    stale = []
    for path, text in docs_reference.pages().items():
        committed = path.read_text() if path.exists() else ""
        if committed != text:
            diff = difflib.unified_diff(
                committed.splitlines(), text.splitlines(), str(path), "generated", lineterm=""
            )
            stale.append("\n".join(list(diff)[:40]))
    assert not stale, "run `make docs-reference`:\n" + "\n\n".join(stale)


def test_every_configuration_detail_names_a_real_setting() -> None:
    """The hand-written details of the server's settings name only settings that exist."""
    page = (REPO / "docs" / "reference" / "configuration.md").read_text()
    details = page.split("### The settings in more detail", 1)[1].split("## Runner", 1)[0]
    known = {
        docs_reference.env_name(name, field) for name, field in ServerSettings.model_fields.items()
    }
    named = set(re.findall(r"`(BENCHRUNNER_[A-Z_]+)`", details))
    assert named, "the details table names no setting: the page changed shape"
    assert named <= known, f"settings that do not exist: {sorted(named - known)}"
    assert known <= named, f"settings without a detail row: {sorted(known - named)}"
