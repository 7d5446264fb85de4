"""Image references as Bencher's CLI writes them in ``job.image``."""

from __future__ import annotations

import re

import pytest

from benchrunner.core.image_refs import ImageRef, ImageRefError, host_of_url, parse_image_ref

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (DIGEST, ImageRef(None, None, None, DIGEST)),
        ("bench", ImageRef(None, "bench", "latest", None)),
        ("bench:v1", ImageRef(None, "bench", "v1", None)),
        (f"bench@{DIGEST}", ImageRef(None, "bench", None, DIGEST)),
        (f"bench:v1@{DIGEST}", ImageRef(None, "bench", "v1", DIGEST)),
        ("localhost/bench:v1", ImageRef("localhost", "bench", "v1", None)),
        ("127.0.0.1:8080/bench", ImageRef("127.0.0.1:8080", "bench", "latest", None)),
        ("Bench.Example.ORG/bench:1.0", ImageRef("bench.example.org", "bench", "1.0", None)),
        (f"[::1]:8080/my-project@{DIGEST}", ImageRef("[::1]:8080", "my-project", None, DIGEST)),
    ],
)
def test_a_reference_reads_as_its_parts(text: str, expected: ImageRef) -> None:
    assert parse_image_ref(text) == expected


def test_the_reference_looked_up_is_the_digest_else_the_tag() -> None:
    assert parse_image_ref(f"bench:v1@{DIGEST}").reference == DIGEST
    assert parse_image_ref("bench:v1").reference == "v1"
    assert parse_image_ref("bench").reference == "latest"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "1-1024 characters"),
        ("b" * 1025, "1-1024 characters"),
        ("acme/bench:v1", "must be one name"),
        ("ghcr.io/acme/bench:v1", "must be one name"),
        ("Bench:v1", "not a repository name"),
        ("bench:-v1", "not a valid tag"),
        ("bench@sha256:abc", "is not sha256:"),
        ("bench@md5:" + "a" * 32, "is not sha256:"),
        ("bad_host:x/bench", "not a host[:port]"),
    ],
)
def test_a_malformed_reference_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ImageRefError, match=re.escape(message)):
        parse_image_ref(text)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:8080", "127.0.0.1:8080"),
        ("http://Bench.example.org:80/", "bench.example.org"),
        ("https://bench.example.org:443/base", "bench.example.org"),
        ("https://bench.example.org:8443", "bench.example.org:8443"),
    ],
)
def test_a_server_url_compares_as_a_reference_host(url: str, host: str) -> None:
    assert host_of_url(url) == host
