"""Reading an untrusted path inside a root: a container's root filesystem, or a job's working
directory, where nothing outside may be reached by any path, symlink or hard link."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from benchrunner.runner.confined import ConfinedPathError, Confinement, read_file

CONTAINER, DIRECTORY = Confinement.CONTAINER, Confinement.DIRECTORY


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    (path / "data" / "dir").mkdir(parents=True)
    (path / "data" / "real").write_text("inside")
    (path / "data" / "dir" / "deep").write_text("deeper")
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file beside the root that no path may reach."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret").write_text("host data")
    return path / "secret"


def read(root: Path, path: str, confinement: Confinement, limit: int = 100) -> bytes | None:
    return read_file(root, path, limit, confinement=confinement)


def refused(root: Path, path: str, confinement: Confinement) -> str:
    with pytest.raises(ConfinedPathError) as error:
        read(root, path, confinement)
    return str(error.value)


# ---------------------------------------------------------------- both confinements


@pytest.mark.parametrize("confinement", [CONTAINER, DIRECTORY])
def test_files_inside_are_read_through_relative_symlinks(
    root: Path, confinement: Confinement
) -> None:
    (root / "data" / "link").symlink_to("real")
    (root / "data" / "up").symlink_to("../data/dir")
    assert read(root, "data/real", confinement) == b"inside"
    assert read(root, "data/real", confinement, limit=3) == b"ins"
    assert read(root, "./data//link", confinement) == b"inside"
    assert read(root, "data/up/deep", confinement) == b"deeper"
    assert read(root, "data/dir/../real", confinement) == b"inside"
    assert read(root, "data/missing", confinement) is None
    assert read(root, "missing/dir/file", confinement) is None


@pytest.mark.parametrize("confinement", [CONTAINER, DIRECTORY])
def test_climbing_out_is_refused(root: Path, outside: Path, confinement: Confinement) -> None:
    (root / "data" / "escape").symlink_to("../../outside/secret")
    (root / "data" / "escape-dir").symlink_to("../../outside")
    assert "leaves the root" in refused(root, "../outside/secret", confinement)
    assert "leaves the root" in refused(root, "data/../../outside/secret", confinement)
    assert "leaves the root" in refused(root, "data/escape", confinement)
    assert "leaves the root" in refused(root, "data/escape-dir/secret", confinement)


@pytest.mark.parametrize("confinement", [CONTAINER, DIRECTORY])
def test_anything_but_a_regular_file_is_refused(root: Path, confinement: Confinement) -> None:
    os.mkfifo(root / "data" / "pipe")  # opened, it would block a reader forever
    (root / "data" / "loop").symlink_to("loop")
    assert refused(root, "data/pipe", confinement) == "not a regular file"
    assert refused(root, "data/dir", confinement) == "not a regular file"
    assert refused(root, "data/dir/..", confinement) == "a directory, not a regular file"
    assert refused(root, "", confinement) == "not a valid path"
    assert refused(root, "data/\x00real", confinement) == "not a valid path"
    assert refused(root, "data/real/under", confinement) == "'real' on its path is not a directory"
    assert "too many symlinks" in refused(root, "data/loop", confinement)


# ---------------------------------------------------------------- a container's root


def test_in_a_container_absolute_paths_and_symlinks_start_at_its_root(
    root: Path, outside: Path
) -> None:
    (root / "data" / "absolute").symlink_to("/data/real")
    (root / "data" / "host").symlink_to(outside)
    assert read(root, "/data/real", CONTAINER) == b"inside"
    assert read(root, "/data/absolute", CONTAINER) == b"inside"
    assert read(root, "/data/host", CONTAINER) is None  # that path does not exist in the root


def test_in_a_container_a_host_path_names_the_containers_file_never_the_hosts(
    root: Path, outside: Path
) -> None:
    """An image job's ``--file /x`` or symlink to ``/x`` means the container's ``/x``: with the
    host's path mirrored inside the root, the root's copy is read; climbing above the root
    after an absolute target is refused like any other climb."""
    mirrored = root / outside.relative_to("/")
    mirrored.parent.mkdir(parents=True)
    mirrored.write_text("container's copy")
    (root / "data" / "host").symlink_to(outside)
    (root / "data" / "climb").symlink_to(f"/../..{outside}")
    assert read(root, str(outside), CONTAINER) == b"container's copy"
    assert read(root, "/data/host", CONTAINER) == b"container's copy"
    assert read(root, f"/data/..{outside}", CONTAINER) == b"container's copy"
    assert "leaves the root" in refused(root, "/data/climb", CONTAINER)
    assert "leaves the root" in refused(root, f"/..{outside}", CONTAINER)


def test_in_a_container_hard_links_are_its_own_files(root: Path) -> None:
    os.link(root / "data" / "real", root / "data" / "twin")
    assert read(root, "/data/twin", CONTAINER) == b"inside"


# ---------------------------------------------------------------- a job's working directory


def test_in_a_job_directory_absolute_paths_are_refused(root: Path, outside: Path) -> None:
    message = refused(root, str(outside), DIRECTORY)
    assert message == "an absolute path, outside the root"
    assert refused(root, "/proc/self/environ", DIRECTORY) == message
    assert refused(root / "data", str(root / "data" / "real"), DIRECTORY) == message


def test_in_a_job_directory_symlinks_to_absolute_paths_are_refused(
    root: Path, outside: Path
) -> None:
    (root / "environ").symlink_to("/proc/self/environ")
    (root / "secret").symlink_to(outside)
    (root / "inside").symlink_to(root / "data" / "real")  # even one that points inside
    (root / "host").symlink_to(outside.parent)
    for name in ("environ", "secret", "inside"):
        assert refused(root, name, DIRECTORY) == "a symlink to an absolute path, outside the root"
    assert "symlink 'host' on its path points to an absolute path" in refused(
        root, "host/secret", DIRECTORY
    )


def test_in_a_job_directory_a_hard_link_to_a_file_from_elsewhere_is_refused(
    root: Path, outside: Path
) -> None:
    os.link(outside, root / "secret")
    assert refused(root, "secret", DIRECTORY) == (
        "a file with 2 hard links: it may be a file from outside the root"
    )
    assert read(root, "secret", CONTAINER) == b"host data"  # where only the job's files are


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root to mount"
)
def test_in_a_job_directory_a_file_of_another_filesystem_is_refused(root: Path) -> None:
    mountpoint = root / "mnt"
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)], check=True)
    try:
        (mountpoint / "file").write_text("x")
        assert refused(root, "mnt/file", DIRECTORY) == "on another filesystem than the root"
        assert read(root, "mnt/file", CONTAINER) == b"x"
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


def test_in_a_job_directory_a_swap_to_a_symlink_while_reading_never_leaks(
    root: Path, outside: Path
) -> None:
    # A job process still running beside the reader keeps turning a file, and a directory on
    # the path, into symlinks to the secret and back: every read gives the job's own data,
    # "not found" or a refusal, never the secret.
    (root / "file").write_text("job data")
    (root / "dir").mkdir()
    (root / "dir" / "secret").write_text("job data")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            (root / ".link").symlink_to(outside)
            (root / ".link").replace(root / "file")
            (root / ".new").write_text("job data")
            (root / ".new").replace(root / "file")
            (root / "dir").rename(root / ".dir")
            (root / "dir").symlink_to(outside.parent)
            (root / "dir").unlink()
            (root / ".dir").rename(root / "dir")

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    outcomes: set[bytes | str | None] = set()
    try:
        for _ in range(2000):
            for path in ("file", "dir/secret"):
                try:
                    outcomes.add(read(root, path, DIRECTORY))
                except ConfinedPathError:
                    outcomes.add("refused")
    finally:
        stop.set()
        thread.join(5)
    assert b"host data" not in outcomes
    assert b"job data" in outcomes
