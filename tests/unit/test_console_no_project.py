"""The console's page of projects, and a section's project chooser, when the viewer sees no
project: a signed-in user is told how to make one, with the commands; an anonymous visitor is
sent to log in."""

from __future__ import annotations

from types import SimpleNamespace

from benchrunner.server.console.templating import environment


def render(signed_in: bool) -> str:
    return environment.get_template("_no_project.html").render(
        viewer=SimpleNamespace(signed_in=signed_in)
    )


def test_a_signed_in_user_without_a_project_gets_the_commands_to_make_one() -> None:
    shown = render(signed_in=True)
    assert 'class="empty-next"' in shown
    for command in ("benchrunner org create ORG", "benchrunner project create ORG NAME",
                    "benchrunner run --project NAME --results FILE"):  # fmt: skip
        assert f"<code>{command}</code>" in shown
    assert "/console/login" not in shown


def test_an_anonymous_visitor_is_sent_to_log_in() -> None:
    shown = render(signed_in=False)
    assert '<a href="/console/login">Log in</a>' in shown
    assert "benchrunner project create" not in shown


def test_both_empty_pages_show_it() -> None:
    for page in ("projects.html", "choose_project.html"):
        source = environment.loader.get_source(environment, page)[0]  # type: ignore[union-attr]
        assert '{% include "_no_project.html" %}' in source, page
