"""Untrusted paths resolved inside one directory tree, never through the host's own resolution.

Two parts of the runner take paths from outside: the image unpacker (a layer's entries, written
into a root filesystem) and the executors (a job's ``file_paths``, read back after an iteration).
Both resolve them here, one component at a time from a descriptor of the root (``*at`` calls,
``O_NOFOLLOW``), so neither ``..``, nor a symlink, nor a process still changing the tree while it
is read can lead outside it:

- ``..`` climbs, never above the root;
- a symlink is followed inside the root: a relative target from its own directory; an absolute
  target from the root itself where the root is a container's (``Confinement.CONTAINER``: what
  it means inside the container), and refused where the root is a job's working directory
  (``Confinement.DIRECTORY``: there ``/`` is the host's root);
- the file itself is opened with ``O_NOFOLLOW | O_NONBLOCK`` and judged by ``fstat`` on the
  opened descriptor (no window between check and use): a regular file only, and in a job's
  working directory one with a single link on the directory's own filesystem, because a hard
  link is how a job would bring in a file it may read from elsewhere (``/proc`` files cannot be
  linked at all: another filesystem).
"""

from __future__ import annotations

import enum
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

MAX_SYMLINK_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Confinement(enum.Enum):
    CONTAINER = "container"
    """The root is a container's root filesystem: ``/`` and absolute symlinks mean its root."""
    DIRECTORY = "directory"
    """The root is a job's working directory on the host: absolute paths and absolute symlink
    targets are refused, and so are files with several hard links or on another filesystem."""


class ConfinedPathError(Exception):
    """The path is refused or cannot be resolved; ``str()`` says why (without the path)."""


class MissingPathError(ConfinedPathError):
    """A component of the path does not exist."""


def path_parts(path: str) -> tuple[str, ...]:
    """The components of ``path``, empty and ``.`` ones dropped (a leading ``/`` too)."""
    return tuple(part for part in path.split("/") if part not in ("", "."))


def open_directory(
    root_fd: int,
    parts: Sequence[str],
    *,
    create: bool = False,
    absolute_links: bool = True,
    root_name: str = "the root",
) -> int:
    """A new descriptor of the directory ``parts`` under the root ``root_fd``, following
    symlinks only inside the root (an absolute target restarts at the root if
    ``absolute_links``, else is refused) and creating missing directories (mode 0755) if
    ``create``. The caller closes it. ``root_name`` is what error messages call the root.

    Raises MissingPathError for a missing component (``create`` false), ConfinedPathError for a
    path that leaves the root, a component that is not a directory or a symlink loop.
    """
    stack = [os.dup(root_fd)]
    pending = list(reversed(parts))
    hops = 0
    try:
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if "\x00" in part:
                raise ConfinedPathError("a NUL byte in the path")
            if part == "..":
                if len(stack) == 1:
                    raise ConfinedPathError(f"'..' on its path leaves {root_name}")
                os.close(stack.pop())
                continue
            current = stack[-1]
            try:
                info = os.lstat(part, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    raise MissingPathError(f"{part!r} does not exist") from None
                os.mkdir(part, 0o755, dir_fd=current)
                info = os.lstat(part, dir_fd=current)
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise ConfinedPathError("too many symlinks on its path")
                try:
                    target = os.readlink(part, dir_fd=current)
                except OSError as exc:
                    # Removed or replaced since the lstat: a race, refused like the one below.
                    raise ConfinedPathError(
                        f"{part!r} changed while it was resolved: {exc}"
                    ) from None
                if target.startswith("/"):
                    if not absolute_links:
                        raise ConfinedPathError(
                            f"symlink {part!r} on its path points to an absolute path, "
                            f"outside {root_name}"
                        )
                    while len(stack) > 1:
                        os.close(stack.pop())
                pending.extend(reversed(target.split("/")))
                continue
            if not stat.S_ISDIR(info.st_mode):
                raise ConfinedPathError(f"{part!r} on its path is not a directory")
            try:
                stack.append(os.open(part, DIR_FLAGS, dir_fd=current))
            except OSError as exc:
                # Replaced by a symlink or a file since the lstat: a race, refused.
                raise ConfinedPathError(f"{part!r} changed while it was resolved: {exc}") from None
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def read_file(
    root: Path,
    path: str,
    limit: int,
    *,
    confinement: Confinement,
    root_name: str = "the root",
) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` inside ``root`` (relative to it;
    absolute only for ``Confinement.CONTAINER``), or None if it does not exist. ``root_name``
    is what error messages call the root.

    Raises ConfinedPathError if the path is refused (see the module docstring) or names
    something else than a regular file, OSError if the root itself cannot be opened.
    """
    fd = _open_file(root, path, confinement, root_name)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def file_size(
    root: Path, path: str, *, confinement: Confinement, root_name: str = "the root"
) -> int | None:
    """The size in bytes of the regular file ``path`` inside ``root``, found and refused as
    by ``read_file`` (None: it does not exist)."""
    fd = _open_file(root, path, confinement, root_name)
    if fd is None:
        return None
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _open_file(root: Path, path: str, confinement: Confinement, root_name: str) -> int | None:
    """A descriptor of the regular file ``path`` (see ``read_file``); the caller closes it."""
    directory = confinement is Confinement.DIRECTORY
    if not path or "\x00" in path:
        raise ConfinedPathError("not a valid path")
    if directory and path.startswith("/"):
        raise ConfinedPathError(f"an absolute path, outside {root_name}")
    parts = path_parts(path)
    root_fd = os.open(root, DIR_FLAGS)

    def walk(parts: Sequence[str]) -> int:
        return open_directory(root_fd, parts, absolute_links=not directory, root_name=root_name)

    try:
        single_link_on = os.fstat(root_fd).st_dev if directory else None
        for _ in range(MAX_SYMLINK_HOPS):
            if not parts or parts[-1] == "..":
                os.close(walk(parts))
                raise ConfinedPathError("a directory, not a regular file")
            try:
                parent = walk(parts[:-1])
            except MissingPathError:
                return None
            try:
                target = _symlink_target(parent, parts[-1])
                if target is None:
                    return _open_regular(parent, parts[-1], single_link_on, root_name)
            finally:
                os.close(parent)
            if target.startswith("/"):
                if directory:
                    raise ConfinedPathError(f"a symlink to an absolute path, outside {root_name}")
                parts = path_parts(target)
            else:
                parts = (*parts[:-1], *target.split("/"))
        raise ConfinedPathError("too many symlinks")
    finally:
        os.close(root_fd)


def _symlink_target(parent: int, name: str) -> str | None:
    """The target if ``name`` is a symlink; None if it is anything else or absent."""
    try:
        return os.readlink(name, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # not a symlink
            return None
        raise ConfinedPathError(f"cannot be resolved: {exc.strerror}") from None


def _open_regular(parent: int, name: str, single_link_on: int | None, root_name: str) -> int | None:
    """``single_link_on``: the device the file must be on, with a single link (a job's working
    directory); None: any regular file."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a symlink since it was looked at: a race
            raise ConfinedPathError("changed while it was read") from None
        raise ConfinedPathError(f"cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfinedPathError("not a regular file")
        if single_link_on is not None:
            if info.st_dev != single_link_on:
                raise ConfinedPathError(f"on another filesystem than {root_name}")
            if info.st_nlink > 1:
                raise ConfinedPathError(
                    f"a file with {info.st_nlink} hard links: it may be a file from outside "
                    f"{root_name}"
                )
    except BaseException:
        os.close(fd)
        raise
    return fd
