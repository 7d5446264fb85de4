"""Runner releases (docs/decisions/runner-releases.md): which runner updates to which release, wheel
names, and how the runner's updater refuses what it must not install."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from benchrunner.core.releases import needs_update, wheel_version
from benchrunner.protocol import Update
from benchrunner.runner.self_update import (
    RECORD_NAME,
    SelfUpdater,
    UpdateFailed,
    installed_checksum,
    same_origin_url,
)

CHECKSUM = "a" * 64
HOST = "http://127.0.0.1:9"  # nothing listens: a test that reached the network would fail
WHEEL_URL = f"{HOST}/benchrunner-0.2.0-py3-none-any.whl"


@pytest.mark.parametrize(
    ("running", "release", "wanted"),
    [
        ("0.0.1", "0.0.2", True),
        ("0.1.0", "0.1.0", False),
        ("0.2", "0.2.0", False),
        ("0.3.0", "0.2.0", False),  # stable never goes back
        ("0.2.0rc1", "0.2.0", True),
        ("0+unknown", "0.1", True),
        ("not a version", "0.2.0", False),
        (None, "0.2.0", False),
    ],
)
def test_stable_runners_update_only_to_a_newer_version(
    running: str | None, release: str, wanted: bool
) -> None:
    assert (
        needs_update(
            "stable",
            release_version=release,
            release_checksum=CHECKSUM,
            running_version=running,
            running_checksum=None,
        )
        is wanted
    )


@pytest.mark.parametrize(
    ("checksum", "wanted"), [(CHECKSUM, False), ("b" * 64, True), (None, True)]
)
def test_canary_runners_converge_on_the_build_by_checksum(
    checksum: str | None, wanted: bool
) -> None:
    verdict = needs_update(
        "canary",
        release_version="0.0.1",
        release_checksum=CHECKSUM,
        running_version="9.9.9",
        running_checksum=checksum,
    )
    assert verdict is wanted


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("benchrunner-0.2.0-py3-none-any.whl", "0.2.0"),
        ("benchrunner-0.2.0.dev1+g1234-1-py3-none-any.whl", "0.2.0.dev1+g1234"),
        ("benchrunner-0.2.0-py3-none-any.tar.gz", None),
        ("other-0.2.0-py3-none-any.whl", None),
        ("../benchrunner-0.2.0-py3-none-any.whl", None),
        ("benchrunner-0.2.0-py3-none-any.whl/x", None),
    ],
)
def test_only_benchrunner_wheel_names_are_accepted(name: str, version: str | None) -> None:
    assert wheel_version(name) == version


def test_the_wheel_is_fetched_only_from_the_runners_own_server() -> None:
    assert same_origin_url("/v0/x/w.whl", "http://s:8080") == "http://s:8080/v0/x/w.whl"
    assert same_origin_url("http://S:8080/v0/w.whl", "http://s:8080") == "http://S:8080/v0/w.whl"
    for elsewhere in ("http://evil:8080/w.whl", "https://s:8080/w.whl", "//evil/w.whl"):
        with pytest.raises(UpdateFailed, match="not on this runner's server"):
            same_origin_url(elsewhere, "http://s:8080")


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        (Update(version="0.2.0", url="http://evil/w.whl", checksum=CHECKSUM), "not on this"),
        (Update(version="0.2.0", url=f"{HOST}/v0/a.tar.gz", checksum=CHECKSUM), "not name a"),
        (
            Update(version="0.3.0", url=WHEEL_URL, checksum=CHECKSUM),
            "not name a wheel of 0.3.0",
        ),
        (
            Update(version="0.2.0", url=WHEEL_URL, checksum="x"),
            "not a SHA-256",
        ),
    ],
)
def test_an_update_that_cannot_be_right_is_refused_before_any_download(
    update: Update, reason: str, tmp_path: Path
) -> None:
    updater = SelfUpdater("bencher_runner_" + "0" * 64, python=sys.executable, prefix=tmp_path)
    with pytest.raises(UpdateFailed, match=reason):
        updater.install(update, HOST)
    assert not (tmp_path / RECORD_NAME).exists()


def test_a_canary_runner_knows_the_checksum_of_the_release_it_runs(tmp_path: Path) -> None:
    assert installed_checksum("0.2.0", tmp_path) is None
    record = {"version": "0.2.0", "checksum": hashlib.sha256(b"w").hexdigest()}
    (tmp_path / RECORD_NAME).write_text(json.dumps(record))
    assert installed_checksum("0.2.0", tmp_path) == record["checksum"]
    # Installed some other way since: the record describes another version.
    assert installed_checksum("0.3.0", tmp_path) is None
    (tmp_path / RECORD_NAME).write_text("{not json")
    assert installed_checksum("0.2.0", tmp_path) is None
