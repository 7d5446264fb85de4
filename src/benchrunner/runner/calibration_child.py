"""The noise guard's rounds in a process of their own, for job cores in a cpuset partition
(``runner up --tune``): the partition keeps the runner's threads off those cores, so the runner
starts this process, moves it into the partition, and only then lets it time its rounds.

Run as a script with ``python -I -S``: the standard library alone, so that it starts in a few
milliseconds. It reads one line from standard input (the runner sends it once the process is
in the partition; end of input instead: exit 1 at once), runs one warm-up round and ``argv[1]``
timed rounds, and prints each round's time in nanoseconds on one line.
"""

from __future__ import annotations

import hashlib
import sys
import time

ROUND_BYTES = 64 << 10
_BLOCK = bytes(range(256)) * 256  # 64 KiB


def fixed_work() -> bytes:
    """SHA-256 over 64 KiB: C code that releases the GIL and depends on the core's speed
    alone, not on memory or I/O."""
    digest = hashlib.sha256()
    for _ in range(ROUND_BYTES // len(_BLOCK)):
        digest.update(_BLOCK)
    return digest.digest()


def timed_rounds(rounds: int) -> list[int]:
    fixed_work()  # warm-up: caches, frequency ramp
    times = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fixed_work()
        times.append(time.perf_counter_ns() - start)
    return times


def main(argv: list[str]) -> int:
    rounds = int(argv[1])
    if not sys.stdin.readline():
        return 1
    print(" ".join(str(t) for t in timed_rounds(rounds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
