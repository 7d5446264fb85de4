"""SciPy's statistics, loaded by the first judgment and then put out of the garbage collector's
sight with everything else alive at that moment.

A server that never judges a report (no thresholds) never pays for SciPy's import, about half a
second of CPU at start-up. Once loaded, its 36,000 objects live as long as the process: left
in sight they would make every full collection of a report's processing walk them
(benchmarks/RESULTS.md, "Reports at scale").
"""

from __future__ import annotations

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
