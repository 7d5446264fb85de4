"""The OCI runtime command line (``runc``, or ``crun`` where the host's cgroup layout suits it).

Both share the verbs used here: ``run --bundle B ID`` in the foreground (the runtime stays the
parent of the container and exits with its status), ``kill ID SIG``, ``delete --force ID`` and
``list``. A runner keeps its containers under its own ``--root`` state directory, so ``list``
shows only its own and never another tool's.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

KNOWN_RUNTIMES = ("runc", "crun")
_COMMAND_TIMEOUT = 30.0


class OciRuntimeError(Exception):
    """The runtime binary is missing or a management command failed."""


class OciRuntime:
    def __init__(self, name: str, state_root: Path) -> None:
        """Raises OciRuntimeError if ``name`` is not a known runtime found on PATH."""
        if name not in KNOWN_RUNTIMES:
            raise OciRuntimeError(
                f"unknown OCI runtime {name!r} (known: {', '.join(KNOWN_RUNTIMES)})"
            )
        binary = shutil.which(name)
        if binary is None:
            raise OciRuntimeError(f"OCI runtime {name!r} is not installed (not on PATH)")
        self.name = name
        self.binary = binary
        self.state_root = state_root
        state_root.mkdir(parents=True, exist_ok=True, mode=0o700)

    @property
    def command(self) -> tuple[str, ...]:
        """The command line before the verb: the binary and this runner's state directory."""
        return (self.binary, "--root", str(self.state_root))

    def run_argv(self, bundle: Path, container: str) -> list[str]:
        return [*self.command, "run", "--bundle", str(bundle), container]

    def kill(self, container: str, signal_name: str) -> bool:
        """Signal the container's init (its PID namespace dies with it). False if the
        container is not running (any more)."""
        return self._call("kill", container, signal_name) is not None

    def delete(self, container: str) -> None:
        """Remove the container whatever its state (killing what is left); no error if absent."""
        self._call("delete", "--force", container)

    def containers(self) -> list[str]:
        """Ids of the containers under this runner's state directory."""
        output = self._call("list", "--format", "json")
        if not output:
            return []
        try:
            return [entry["id"] for entry in json.loads(output) or []]
        except (ValueError, TypeError, KeyError):
            return []

    def _call(self, *args: str) -> str | None:
        argv = [*self.command, *args]
        try:
            result = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_COMMAND_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("%s %s failed: %s", self.name, args[0], exc)
            return None
        if result.returncode != 0:
            log.debug("%s %s: %s", self.name, " ".join(args), result.stderr.strip())
            return None
        return result.stdout
