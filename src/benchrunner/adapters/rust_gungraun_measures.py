"""Gungraun's metric labels per Valgrind tool, and the measure slug Bencher files each under.

A label a tool's block does not list here is passed over (Bencher's ``Unknown`` measure, which
it drops). Memcheck, Helgrind and DRD print the same labels; the slug says which tool it was.
"""

from __future__ import annotations

CACHE: dict[str, str] = {
    "Instructions": "instructions",
    "L1 Hits": "l1-hits",
    "L2 Hits": "l2-hits",
    "LL Hits": "ll-hits",
    "RAM Hits": "ram-hits",
    "Total read+write": "total-read-write",
    "Estimated Cycles": "estimated-cycles",
    "Dr": "dr",
    "Dw": "dw",
    "I1mr": "i1mr",
    "D1mr": "d1mr",
    "D1mw": "d1mw",
    "ILmr": "ilmr",
    "DLmr": "dlmr",
    "DLmw": "dlmw",
    "I1 Miss Rate": "i1-miss-rate",
    "LLi Miss Rate": "lli-miss-rate",
    "D1 Miss Rate": "d1-miss-rate",
    "LLd Miss Rate": "lld-miss-rate",
    "LL Miss Rate": "ll-miss-rate",
    "L1 Hit Rate": "l1-hit-rate",
    "LL Hit Rate": "ll-hit-rate",
    "RAM Hit Rate": "ram-hit-rate",
}
"""What Callgrind and Cachegrind both report."""

CALLGRIND: dict[str, str] = {
    **CACHE,
    "SysCount": "sys-count",
    "SysTime": "sys-time",
    "SysCpuTime": "sys-cpu-time",
    "Ge": "global-bus-events",
    "Bc": "bc",
    "Bcm": "bcm",
    "Bi": "bi",
    "Bim": "bim",
    "ILdmr": "ildmr",
    "DLdmr": "dldmr",
    "DLdmw": "dldmw",
    "AcCost1": "accost1",
    "AcCost2": "accost2",
    "SpLoss1": "sploss1",
    "SpLoss2": "sploss2",
}

DHAT: dict[str, str] = {
    "Total units": "total-units",
    "Total events": "total-events",
    "Total bytes": "total-bytes",
    "Total blocks": "total-blocks",
    "At t-gmax bytes": "at-t-gmax-bytes",
    "At t-gmax blocks": "at-t-gmax-blocks",
    "At t-end bytes": "at-t-end-bytes",
    "At t-end blocks": "at-t-end-blocks",
    "Reads bytes": "reads-bytes",
    "Writes bytes": "writes-bytes",
    "Total lifetimes": "total-lifetimes",
    "Maximum bytes": "maximum-bytes",
    "Maximum blocks": "maximum-blocks",
}


def _error_tool(prefix: str) -> dict[str, str]:
    return {
        "Errors": f"{prefix}-errors",
        "Contexts": f"{prefix}-contexts",
        "Suppressed Errors": f"{prefix}-suppressed-errors",
        "Suppressed Contexts": f"{prefix}-suppressed-contexts",
    }


TOOLS: tuple[tuple[str, dict[str, str]], ...] = (
    ("CALLGRIND", CALLGRIND),
    ("CACHEGRIND", CACHE),
    ("DHAT", DHAT),
    ("MEMCHECK", _error_tool("memcheck")),
    ("HELGRIND", _error_tool("helgrind")),
    ("DRD", _error_tool("drd")),
)
"""Tool banner name -> labels, in the order Bencher tries them. A block without a banner is
Callgrind's (the default tool, whose banner Gungraun prints only when other tools ran)."""


# Gungraun's JSON summary (version 6) names metrics by its Rust enum variants.
CACHE_EVENTS: dict[str, str] = {
    "Ir": "instructions",
    "Dr": "dr",
    "Dw": "dw",
    "I1mr": "i1mr",
    "D1mr": "d1mr",
    "D1mw": "d1mw",
    "ILmr": "ilmr",
    "DLmr": "dlmr",
    "DLmw": "dlmw",
    "I1MissRate": "i1-miss-rate",
    "LLiMissRate": "lli-miss-rate",
    "D1MissRate": "d1-miss-rate",
    "LLdMissRate": "lld-miss-rate",
    "LLMissRate": "ll-miss-rate",
    "L1hits": "l1-hits",
    "LLhits": "ll-hits",
    "RamHits": "ram-hits",
    "L1HitRate": "l1-hit-rate",
    "LLHitRate": "ll-hit-rate",
    "RamHitRate": "ram-hit-rate",
    "TotalRW": "total-read-write",
    "EstimatedCycles": "estimated-cycles",
    "Bc": "bc",
    "Bcm": "bcm",
    "Bi": "bi",
    "Bim": "bim",
}
"""Cachegrind's metrics in the JSON summary (Callgrind reports these and more)."""

CALLGRIND_EVENTS: dict[str, str] = {
    **CACHE_EVENTS,
    "SysCount": "sys-count",
    "SysTime": "sys-time",
    "SysCpuTime": "sys-cpu-time",
    "Ge": "global-bus-events",
    "ILdmr": "ildmr",
    "DLdmr": "dldmr",
    "DLdmw": "dldmw",
    "AcCost1": "accost1",
    "AcCost2": "accost2",
    "SpLoss1": "sploss1",
    "SpLoss2": "sploss2",
}

DHAT_EVENTS: dict[str, str] = {
    "TotalUnits": "total-units",
    "TotalEvents": "total-events",
    "TotalBytes": "total-bytes",
    "TotalBlocks": "total-blocks",
    "AtTGmaxBytes": "at-t-gmax-bytes",
    "AtTGmaxBlocks": "at-t-gmax-blocks",
    "AtTEndBytes": "at-t-end-bytes",
    "AtTEndBlocks": "at-t-end-blocks",
    "ReadsBytes": "reads-bytes",
    "WritesBytes": "writes-bytes",
    "TotalLifetimes": "total-lifetimes",
    "MaximumBytes": "maximum-bytes",
    "MaximumBlocks": "maximum-blocks",
}


def _error_events(prefix: str) -> dict[str, str]:
    return {
        "Errors": f"{prefix}-errors",
        "Contexts": f"{prefix}-contexts",
        "SuppressedErrors": f"{prefix}-suppressed-errors",
        "SuppressedContexts": f"{prefix}-suppressed-contexts",
    }


SUMMARY_KINDS: dict[str, dict[str, dict[str, str]]] = {
    "Callgrind": {"": CALLGRIND_EVENTS},
    "Cachegrind": {"": CACHE_EVENTS},
    "Dhat": {"": DHAT_EVENTS},
    "ErrorTool": {
        "Memcheck": _error_events("memcheck"),
        "Helgrind": _error_events("helgrind"),
        "DRD": _error_events("drd"),
    },
}
"""Summary kind -> (profile tool, or "" for any) -> metric name -> slug. An error tool's
metrics are filed under the tool that reported them; other tools report none."""
