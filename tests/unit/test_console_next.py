"""Where a console sign-in may send the browser next: console paths of this server only."""

from __future__ import annotations

import pytest

from benchrunner.server.console.pages.login import safe_next


@pytest.mark.parametrize(
    ("asked", "sent_to"),
    [
        (None, "/console"),
        ("", "/console"),
        ("/console", "/console"),
        ("/console/projects", "/console/projects"),
        ("/console/projects/p/jobs?status=running", "/console/projects/p/jobs?status=running"),
        ("https://evil.example/console", "/console"),
        ("//evil.example/console", "/console"),
        ("/\\evil.example", "/console"),
        ("/console\\@evil.example", "/console"),
        ("javascript:alert(1)", "/console"),
        ("/v0/projects", "/console"),
        ("/consoleevil", "/console"),
        ("/console/login", "/console"),
        ("/console/logout", "/console"),
    ],
)
def test_safe_next(asked: str | None, sent_to: str) -> None:
    assert safe_next(asked) == sent_to
