"""Files kept to be written over: a file made and a file freed per record or result cost the
job thread more than writing it (benchmarks/RESULTS.md, ``job_files``). The in-flight records
(``inflight.py``) and the spool (``spool.py``) each keep a few.

A spare is named ``<prefix><pid>-<n>``, so that two live processes of one PID namespace keeping
spares in one directory never pick the same name. Spares are temporaries: a start removes them
with any write cut short."""

from __future__ import annotations

import os
import threading
from itertools import count
from pathlib import Path

KEPT = 4


class SpareFiles:
    """At most ``kept`` spare files in ``directory``, named ``prefix`` and this process's own
    numbers. Thread-safe."""

    def __init__(self, directory: Path, prefix: str, kept: int = KEPT) -> None:
        self._directory = directory
        self._prefix = f"{prefix}{os.getpid()}-"
        self._kept = kept
        self._lock = threading.Lock()
        self._spares: list[Path] = []
        self._numbers = count()

    def take(self) -> Path | None:
        """A spare to write over (no longer kept), or None."""
        with self._lock:
            return self._spares.pop() if self._spares else None

    def keep(self, path: Path) -> None:
        """Keep the file ``path`` for a later write, under a spare's name, or remove it when
        enough are kept. Raises OSError (FileNotFoundError: there is no ``path``)."""
        with self._lock:
            if len(self._spares) >= self._kept:
                spare = None
            elif path.name.startswith(self._prefix):
                self._spares.append(path)
                return
            else:
                spare = self._directory / f"{self._prefix}{next(self._numbers)}"
        if spare is None:
            path.unlink()
            return
        path.rename(spare)
        with self._lock:
            self._spares.append(spare)

    def forget(self) -> None:
        """Keep none of the spares kept so far (their files are the caller's to remove)."""
        with self._lock:
            self._spares.clear()
