"""Self-update (docs/decisions/runner-releases.md), end to end: an admin publishes a wheel of this
project with ``benchrunner admin release publish``; a real runner process, installed from an
older wheel in an environment of its own, is offered it instead of a job, downloads it from its
server with its own key, checks it, installs it, re-executes itself and takes jobs as the new
version. A download that does not match the announced checksum, or a runner started with
``--no-update``, keeps the running version.

The wheels are built from the source tree once per module (``tests.wheels``), the environments
are copies of one made once: nothing is fetched from anywhere.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import Deployment, RunnerProcess, cli, deploy, wait_until
from tests.wheels import build_wheel, installed_version, pip_install, runner_venv

pytestmark = pytest.mark.system


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    """SQLite only: what is tested here is the runner's; the release table and its offers run on
    both engines in ``test_releases``."""
    with deploy(tmp_path, f"sqlite:///{tmp_path / 'benchrunner.db'}") as deployment:
        yield deployment


OLD, NEW, OTHER = "0.0.1", "0.0.2", "0.0.3"


@dataclass(frozen=True)
class Wheels:
    old: Path
    new: Path
    other: Path
    venv: Path
    """An environment with the old wheel installed: copied, never used itself."""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wheels]:
    root = tmp_path_factory.mktemp("wheels")
    built = [build_wheel(version, root) for version in (OLD, NEW, OTHER)]
    python = runner_venv(root / "venv")
    pip_install(python, built[0])
    assert installed_version(python) == OLD
    yield Wheels(built[0], built[1], built[2], venv=root / "venv")


def copy_venv(wheels: Wheels, target: Path) -> Path:
    shutil.copytree(wheels.venv, target, symlinks=True)
    return target / "bin" / "python"


def publish(deployment: Deployment, tmp: Path, wheel: Path, channel: str) -> dict[str, str]:
    done = cli(
        "admin",
        "release",
        "publish",
        str(wheel),
        "--channel",
        channel,
        "--json",
        env=deployment.cli_env(tmp),
    )
    release: dict[str, str] = json.loads(done.stdout)
    assert release["checksum"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    return release


def start_runner(
    deployment: Deployment, tmp: Path, python: Path, name: str, *args: str
) -> RunnerProcess:
    slug, key = deployment.new_runner(name)
    runner = RunnerProcess(
        deployment.server,
        slug,
        key,
        tmp / f"spool-{slug}",
        deployment.server.templates,
        # The environment's own benchrunner, never the source tree's.
        extra_env={"PYTHONPATH": ""},
        extra_args=list(args),
        python=str(python),
        cwd=tmp,
    )
    deployment.runners.append(runner)
    return runner.start()


def reported_version(deployment: Deployment, runner: str) -> str | None:
    with deployment.admin() as client:
        version = client.get_runner(runner).version
    return None if version is None else str(version)


def run_one_job(deployment: Deployment) -> None:
    job = deployment.submit()
    deployment.wait_status(job, "processed", timeout=60)


def test_runner_installs_the_release_restarts_as_it_and_takes_jobs(
    deployment: Deployment, wheels: Wheels, tmp_path: Path
) -> None:
    python = copy_venv(wheels, tmp_path / "venv")
    publish(deployment, tmp_path, wheels.new, "stable")
    runner = start_runner(deployment, tmp_path, python, "updating")
    assert runner.proc is not None
    pid = runner.proc.pid

    wait_until(
        lambda: reported_version(deployment, runner.slug) == NEW,
        timeout=180,
        message=f"the runner to report {NEW} ({runner.log})",
    )
    assert runner.proc.poll() is None, runner.output()
    assert runner.proc.pid == pid  # re-executed in place: same process, same spool
    assert installed_version(python) == NEW
    run_one_job(deployment)
    log = runner.output()
    assert f"updating from version {OLD} to {NEW}" in log
    assert f"installed version {NEW}; restarting" in log
    assert log.count("restarting") == 1  # the new version is not offered itself again
    starts = [line.split(" starting: ", 1)[1] for line in log.splitlines() if " starting: " in line]
    assert len(starts) == 2 and starts[1] == starts[0]  # the same cores after the restart
    assert runner.key not in log


def test_a_download_that_does_not_match_its_checksum_is_not_installed(
    deployment: Deployment, wheels: Wheels, tmp_path: Path
) -> None:
    python = copy_venv(wheels, tmp_path / "venv")
    release = publish(deployment, tmp_path, wheels.new, "stable")
    # The stored wheel goes bad after publishing: the server still announces the checksum it
    # was published with, and serves other bytes.
    stored = deployment.server.data_dir / "blobs" / "runner-releases" / f"{release['checksum']}.whl"
    stored.write_bytes(wheels.other.read_bytes())
    runner = start_runner(deployment, tmp_path, python, "mismatch")

    wait_until(
        lambda: "self-update to 0.0.2 failed" in runner.output(),
        timeout=120,
        message=f"the failed update in the runner's log ({runner.log})",
    )
    run_one_job(deployment)  # on the version it runs
    log = runner.output()
    assert f"keeping version {OLD}: checksum mismatch" in log
    assert f"the server announced {release['checksum']}" in log
    assert reported_version(deployment, runner.slug) == OLD
    assert installed_version(python) == OLD
    assert runner.proc is not None and runner.proc.poll() is None


def test_a_release_that_does_not_install_leaves_the_running_version(
    deployment: Deployment, wheels: Wheels, tmp_path: Path
) -> None:
    python = copy_venv(wheels, tmp_path / "venv")
    # Its checksum is right, but pip refuses it: it asks for a Python that does not exist yet.
    unusable = build_wheel("0.0.4", tmp_path, requires_python=">=4")
    publish(deployment, tmp_path, unusable, "stable")
    runner = start_runner(deployment, tmp_path, python, "stuck")

    wait_until(
        lambda: "self-update to 0.0.4 failed" in runner.output(),
        timeout=120,
        message=f"the failed install in the runner's log ({runner.log})",
    )
    run_one_job(deployment)  # on the version it runs
    log = runner.output()
    assert f"keeping version {OLD}: pip install exited 1" in log
    assert "requires a different Python" in log
    assert log.count("self-update to 0.0.4 failed") == 1  # not offered the same one again
    assert reported_version(deployment, runner.slug) == OLD
    assert installed_version(python) == OLD
    assert runner.proc is not None and runner.proc.poll() is None


def test_a_runner_started_with_no_update_is_never_offered_one(
    deployment: Deployment, wheels: Wheels, tmp_path: Path
) -> None:
    python = copy_venv(wheels, tmp_path / "venv")
    publish(deployment, tmp_path, wheels.new, "stable")
    publish(deployment, tmp_path, wheels.other, "canary")
    runner = start_runner(deployment, tmp_path, python, "pinned", "--no-update")

    run_one_job(deployment)
    run_one_job(deployment)
    assert reported_version(deployment, runner.slug) == OLD
    assert installed_version(python) == OLD
    log = runner.output()
    assert "updating" not in log and "offer" not in log
