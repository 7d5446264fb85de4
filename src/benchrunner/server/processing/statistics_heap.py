"""SciPy's statistics, loaded the first time they may be needed (a report judged against
thresholds, calibrations listed, shown or applied, open confirmations moved) and then put out of
the garbage collector's sight with everything else alive at that moment.

A server that needs none of them never pays for SciPy's import, about half a second of CPU
(benchmarks/RESULTS.md, "A server's start"). Once loaded, its 36,000 objects live as long as the
process: left in sight they would make every full collection of a report's processing walk
them (benchmarks/RESULTS.md, "Reports at scale"). Code on the event loop awaits
``statistics_ready`` before the unit that needs them, so that the import runs on a thread;
``statistics_loaded`` inside the unit is then a check and nothing more.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import threading

JUDGMENT_MODULES = ("benchrunner.detection.samples", "benchrunner.detection.boundary")
"""What a judgment imports: SciPy's statistics and special functions."""

_lock = threading.Lock()
_loaded = False


def statistics_loaded() -> None:
    """Import ``JUDGMENT_MODULES`` on the first call, then freeze every object alive
    (``gc.freeze``); later calls return at once. Objects frozen that are freed later are freed
    as ever; only a cycle among them is never collected, once in the life of the process."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        for module in JUDGMENT_MODULES:
            importlib.import_module(module)
        gc.collect()  # the imports' garbage, frozen otherwise for the life of the process
        gc.freeze()
        _loaded = True


async def statistics_ready() -> None:
    """``statistics_loaded`` on a thread, so that the first import does not hold the event loop
    (nor SQLite's writer, where a unit would run inline)."""
    if not _loaded:
        await asyncio.to_thread(statistics_loaded)
