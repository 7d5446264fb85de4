"""Runner releases (docs/decisions/runner-releases.md) at the API and on the channel: what
publishing refuses, which ready runners are offered ``update`` (and which never are), and who may
download a wheel. The installing runner itself is in ``test_self_update.py``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchrunner.protocol import OUR_EXTENSIONS, UPDATE_EXTENSION
from tests.harness import Deployment, RawChannel
from tests.wheels import build_wheel

pytestmark = pytest.mark.system

NEW = "0.0.2"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield build_wheel(NEW, tmp_path_factory.mktemp("wheel"))


def post_release(
    http: httpx.Client, wheel: Path, *, channel: str = "stable", **fields: str
) -> httpx.Response:
    data = wheel.read_bytes()
    form = {"channel": channel, "version": NEW, "checksum": hashlib.sha256(data).hexdigest()}
    return http.post(
        "/v0/server/releases",
        data={**form, **fields},
        files={"wheel": (wheel.name, data)},
    )


def ready(channel: RawChannel, **fields: Any) -> dict[str, Any]:
    message = {"event": "ready", "poll_timeout": 1, "os": "linux", "version": "0.0.1", **fields}
    return channel.ask(message, timeout=15)


@pytest.mark.engine_independent
def test_publishing_checks_the_wheel_against_what_it_claims(
    deployment: Deployment, wheel: Path
) -> None:
    with deployment.http() as http:
        wrong = post_release(http, wheel, checksum="0" * 64)
        assert wrong.status_code == 400
        assert "SHA-256 is" in wrong.json()["message"]
        assert post_release(http, wheel, version="0.0.9").status_code == 400
        assert post_release(http, wheel, channel="nightly").status_code == 400
        renamed = http.post(
            "/v0/server/releases",
            data={"channel": "stable", "version": NEW, "checksum": "0" * 64},
            files={"wheel": ("../evil.whl", wheel.read_bytes())},
        )
        assert renamed.status_code == 400
        assert http.get("/v0/server/releases").json() == []

        published = post_release(http, wheel)
        assert published.status_code == 201, published.text
        release = published.json()
        assert release["version"] == NEW and release["channel"] == "stable"
        assert release["size"] == wheel.stat().st_size
        assert post_release(http, wheel).status_code == 409  # the channel has that version
        assert post_release(http, wheel, channel="canary").status_code == 201
        listed = http.get("/v0/server/releases", params={"channel": "stable"}).json()
        assert [r["uuid"] for r in listed] == [release["uuid"]]
    anonymous = httpx.post(f"{deployment.server.url}/v0/server/releases", data={})
    assert anonymous.status_code == 401


def test_update_goes_only_to_linux_runners_that_announce_it_and_need_it(
    deployment: Deployment, wheel: Path
) -> None:
    with deployment.http() as http:
        release = post_release(http, wheel).json()
    checksum = release["checksum"]

    slug, key = deployment.new_runner("old")
    channel = RawChannel(deployment.server, slug, key)
    deployment.channels.append(channel)
    offered = ready(channel)
    assert offered["event"] == "update", offered
    assert offered["version"] == NEW and offered["checksum"] == checksum
    url = offered["url"]
    assert url.startswith(deployment.server.url + "/") and url.endswith(f"/{wheel.name}")
    assert ready(channel)["event"] == "no_job"  # answered with ready: it could not install
    channel.close()

    got = httpx.get(url, headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 200 and hashlib.sha256(got.content).hexdigest() == checksum
    assert httpx.get(url).status_code == 401
    _, other_key = deployment.new_runner("other")
    assert httpx.get(url, headers={"Authorization": f"Bearer {other_key}"}).status_code == 401
    renamed = url.rsplit("/", 1)[0] + "/benchrunner-0.0.3-py3-none-any.whl"
    assert httpx.get(renamed, headers={"Authorization": f"Bearer {key}"}).status_code == 404

    never: list[tuple[dict[str, Any], Sequence[str]]] = [
        ({"extensions": [e for e in OUR_EXTENSIONS if e != UPDATE_EXTENSION]}, OUR_EXTENSIONS),
        ({}, ()),  # Bencher's runner: no extensions; our releases are not for its binary
        ({"os": "macos"}, OUR_EXTENSIONS),
        ({"version": NEW}, OUR_EXTENSIONS),
        ({"version": "1.0"}, OUR_EXTENSIONS),
        ({"version": "not a version"}, OUR_EXTENSIONS),
        ({"update_channel": "canary"}, OUR_EXTENSIONS),  # no canary release yet
        ({"update_channel": "nightly"}, OUR_EXTENSIONS),  # no such channel here
    ]
    for fields, extensions in never:
        slug, key = deployment.new_runner(f"never-{len(deployment.channels)}")
        channel = RawChannel(deployment.server, slug, key, extensions=extensions)
        deployment.channels.append(channel)
        assert ready(channel, **fields)["event"] == "no_job", fields

    with deployment.http() as http:
        assert post_release(http, wheel, channel="canary").status_code == 201
    slug, key = deployment.new_runner("canary")
    channel = RawChannel(deployment.server, slug, key)
    deployment.channels.append(channel)
    # A canary runner converges on the build by its checksum, whatever the versions say.
    assert ready(channel, update_channel="canary", checksum=checksum, version="9")["event"] == (
        "no_job"
    )
    channel.close()
    channel = RawChannel(deployment.server, slug, key)
    deployment.channels.append(channel)
    offered = ready(channel, update_channel="canary", checksum="f" * 64, version="9")
    assert offered["event"] == "update" and offered["checksum"] == checksum
