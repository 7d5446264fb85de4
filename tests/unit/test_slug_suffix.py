"""A suffixed slug is still a slug, however long the slug it extends."""

from __future__ import annotations

import pytest

from benchrunner.core import slugs
from benchrunner.server.submission.projects import anonymous_slug


@pytest.mark.parametrize(
    "wanted",
    ["a", "my-app", "x" * 64, "a" * 54 + "-b" + "c" * 8, "a" * 55 + "-" + "b" * 8],
)
def test_suffixed_slugs_stay_slugs(wanted: str) -> None:
    random = slugs.with_suffix(wanted)
    derived = anonymous_slug("key", wanted)
    for suffixed in (random, derived):
        assert slugs.is_slug(suffixed), suffixed
        assert len(suffixed) <= slugs.MAX_SLUG
        assert suffixed.startswith(wanted[:8]) and suffixed != wanted


def test_the_derived_suffix_depends_on_the_slug_and_the_key() -> None:
    assert anonymous_slug("key", "my-app") == anonymous_slug("key", "my-app")
    assert anonymous_slug("key", "my-app") != anonymous_slug("other key", "my-app")
    assert (
        anonymous_slug("key", "my-app").removesuffix(anonymous_slug("key", "my-app")[-9:])
        == "my-app"
    )
