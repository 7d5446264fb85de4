"""The OCI runtime config of a sandboxed job, from image config, job overrides and spec."""

from __future__ import annotations

from typing import Any

import pytest

from benchrunner.runner.executors.bundle import (
    DEFAULT_PATH,
    BundleError,
    Limits,
    Process,
    process_args,
    process_env,
    resolve_user,
    runtime_config,
    working_dir,
)

IMAGE_ENTRYPOINT = ["/bin/bench"]
IMAGE_CMD = ["--quick"]


@pytest.mark.parametrize(
    ("image_entrypoint", "image_cmd", "entrypoint", "cmd", "expected"),
    [
        (IMAGE_ENTRYPOINT, IMAGE_CMD, None, None, ["/bin/bench", "--quick"]),
        (IMAGE_ENTRYPOINT, IMAGE_CMD, None, ["--full"], ["/bin/bench", "--full"]),
        (IMAGE_ENTRYPOINT, IMAGE_CMD, None, [], ["/bin/bench"]),
        # A new entrypoint drops the image's Cmd, as Docker does.
        (IMAGE_ENTRYPOINT, IMAGE_CMD, ["/bin/sh", "-c"], None, ["/bin/sh", "-c"]),
        (IMAGE_ENTRYPOINT, IMAGE_CMD, ["/bin/sh"], ["-c", "true"], ["/bin/sh", "-c", "true"]),
        ([], ["/bin/sh"], None, None, ["/bin/sh"]),
    ],
)
def test_process_args_follow_docker_override_rules(
    image_entrypoint: list[str],
    image_cmd: list[str],
    entrypoint: list[str] | None,
    cmd: list[str] | None,
    expected: list[str],
) -> None:
    assert process_args(image_entrypoint, image_cmd, entrypoint, cmd) == expected


def test_no_command_at_all_is_refused() -> None:
    with pytest.raises(BundleError, match="no Entrypoint or Cmd"):
        process_args([], [], None, None)


def test_job_env_overrides_image_env_and_path_is_defaulted() -> None:
    env = process_env(["A=image", "B=keep", "EQ=x=y", "junk"], {"A": "job", "C": ""})
    assert env == ["A=job", "B=keep", "EQ=x=y", "C=", f"PATH={DEFAULT_PATH}"]
    assert process_env(["PATH=/opt/bin"], None) == ["PATH=/opt/bin"]


@pytest.mark.parametrize("name", ["", "A=B", "NUL\x00"])
def test_invalid_job_env_names_are_refused(name: str) -> None:
    with pytest.raises(BundleError, match="not a valid"):
        process_env([], {name: "v"})


@pytest.mark.parametrize(
    ("image", "expected"), [("", "/"), ("/work", "/work"), ("rel/dir", "/rel/dir")]
)
def test_working_dir(image: str, expected: str) -> None:
    assert working_dir(image) == expected


PASSWD = "root:x:0:0::/root:/bin/sh\nbench:x:1000:1001::/home/bench:/bin/sh\n"
GROUP = "root:x:0:\nstaff:x:50:\n"


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ("", (0, 0)),
        ("bench", (1000, 1001)),
        ("1000", (1000, 1001)),
        ("4242", (4242, 0)),
        ("bench:staff", (1000, 50)),
        ("bench:77", (1000, 77)),
        ("4242:4343", (4242, 4343)),
    ],
)
def test_image_user_resolves_from_the_image_files(user: str, expected: tuple[int, int]) -> None:
    assert resolve_user(user, PASSWD, GROUP) == expected


@pytest.mark.parametrize(
    ("user", "message"), [("ghost", "'ghost' is not in"), ("bench:ghosts", "'ghosts' is not in")]
)
def test_unknown_image_user_is_refused(user: str, message: str) -> None:
    with pytest.raises(BundleError, match=message):
        resolve_user(user, PASSWD, None)


def config(network: bool = False) -> dict[str, Any]:
    process = Process(args=["/bin/true"], env=["PATH=/bin"], cwd="/work", uid=1000, gid=50)
    limits = Limits(cpus=frozenset({3, 1}), memory=256 << 20, pids=100)
    return runtime_config(process, limits, network=network, cgroups_path="/benchrunner/job")


def test_config_isolates_the_job_and_sets_the_spec_limits() -> None:
    document = config()
    namespaces = {entry["type"] for entry in document["linux"]["namespaces"]}
    assert namespaces == {"pid", "ipc", "uts", "mount", "network"}
    resources = document["linux"]["resources"]
    assert resources["cpu"] == {"cpus": "1,3"}
    assert resources["memory"] == {"limit": 256 << 20, "swap": 256 << 20}
    assert resources["pids"] == {"limit": 100}
    assert document["process"]["user"] == {"uid": 1000, "gid": 50}
    assert document["process"]["cwd"] == "/work"
    assert document["process"]["noNewPrivileges"] is True
    # Root here lacks CAP_SYS_RESOURCE: any rlimit above the current ones would fail the start.
    assert "rlimits" not in document["process"]
    assert "CAP_NET_RAW" not in document["process"]["capabilities"]["bounding"]
    assert document["root"] == {"path": "rootfs", "readonly": False}


def test_network_spec_keeps_the_host_network_namespace() -> None:
    document = config(network=True)
    namespaces = {entry["type"] for entry in document["linux"]["namespaces"]}
    assert "network" not in namespaces
    mounts = {mount["destination"]: mount for mount in document["mounts"]}
    assert mounts["/sys"]["type"] == "none"  # a fresh sysfs needs a network namespace of its own
    assert mounts["/etc/resolv.conf"]["options"] == ["bind", "ro"]
