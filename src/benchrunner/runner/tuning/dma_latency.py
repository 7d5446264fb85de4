"""C-states held: while ``/dev/cpu_dma_latency`` is open with a 0 written to it, the kernel keeps
every core out of deep idle states (whose wake-up latency shows in short benchmarks). Closing
it, which the kernel does for a dead process too, gives them back: nothing to restore."""

from __future__ import annotations

import os
import struct

from benchrunner.runner.tuning.hostfs import HostFs

DEVICE = "dev/cpu_dma_latency"


class DmaLatencyHold:
    def __init__(self, fs: HostFs) -> None:
        self._fs = fs
        self._fd: int | None = None

    def hold(self) -> None:
        """Raises OSError if the device cannot be opened or written."""
        fd = os.open(self._fs.path(DEVICE), os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, struct.pack("i", 0))
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
