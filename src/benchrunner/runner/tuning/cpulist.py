"""CPU lists as the kernel writes them (``0-3,6``) and CPU masks (``f``, ``ff,ffffffff``)."""

from __future__ import annotations

from collections.abc import Iterable


def parse_cpulist(text: str) -> frozenset[int]:
    """``"0-2,5"`` -> {0, 1, 2, 5}; blank -> empty. Raises ValueError on anything else."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, dash, last = part.partition("-")
        low = int(first)
        high = int(last) if dash else low
        if low < 0 or high < low:
            raise ValueError(f"bad CPU range {part!r}")
        cores.update(range(low, high + 1))
    return frozenset(cores)


def format_cpulist(cores: Iterable[int]) -> str:
    """{0, 1, 2, 5} -> ``"0-2,5"``, the kernel's own spelling."""
    ordered = sorted(set(cores))
    parts: list[str] = []
    start = previous = None
    for core in ordered:
        if previous is not None and core == previous + 1:
            previous = core
            continue
        if start is not None:
            parts.append(f"{start}-{previous}" if previous != start else str(start))
        start = previous = core
    if start is not None:
        parts.append(f"{start}-{previous}" if previous != start else str(start))
    return ",".join(parts)


def parse_cpumask(text: str) -> frozenset[int]:
    """A hex mask as in ``smp_affinity`` (comma-separated 32-bit words) -> the cores it has."""
    value = int(text.strip().replace(",", "") or "0", 16)
    return frozenset(bit for bit in range(value.bit_length()) if value >> bit & 1)


def format_cpumask(cores: Iterable[int]) -> str:
    """{0, 1} -> ``"3"``; past 32 cores in comma-separated 32-bit words, as the kernel
    parses them (``"1,00000000"`` for core 32)."""
    value = 0
    for core in cores:
        value |= 1 << core
    digits = f"{value:x}"
    words: list[str] = []
    while len(digits) > 8:
        words.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join([digits, *words])
