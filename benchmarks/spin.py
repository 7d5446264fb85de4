"""A synthetic CPU-bound benchmark for the noise measurements, and how the runner runs it.

``spin WORK SLOWDOWN`` runs ``WORK * (1 + SLOWDOWN)`` rounds of a xorshift64 step (a chain of
dependent integer operations: the core's speed alone, no memory, no system call), timed by
itself with CLOCK_MONOTONIC around the loop, and prints the time in Bencher Metric Format, as
a user's harness would report it: ``{"spin": {"latency": {"value": NS}, "cpu-time": ...}}``;
``cpu-time`` is the process's CPU time over the same loop (CLOCK_PROCESS_CPUTIME_ID), which
leaves out the time the benchmark waited for its core. ``SLOWDOWN`` is the
injected change (0.01: one percent more work). It is a static binary, so the same file runs
directly, under the process executor (template ``spin``) and inside a busybox image.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from benchrunner import adapters
from benchrunner.core.templates import TemplateRegistry
from benchrunner.protocol import IterationResult

SPIN_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long elapsed(struct timespec a, struct timespec b) {
    return (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;  /* arguments after these two (a commit's name) are ignored */
    double rounds = strtod(argv[1], NULL) * (1.0 + strtod(argv[2], NULL));
    uint64_t n = (uint64_t)(rounds + 0.5), x = 88172645463325252ULL;
    struct timespec start, end, cpu_start, cpu_end;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
    volatile uint64_t sink = x;  /* keeps the loop */
    (void)sink;
    printf("{\"spin\": {\"latency\": {\"value\": %lld}, \"cpu-time\": {\"value\": %lld}}}\n",
           elapsed(start, end), elapsed(cpu_start, cpu_end));
    return 0;
}
"""

TEMPLATE = "spin"


def compile_spin(directory: Path) -> Path:
    """The static ``spin`` binary, built in ``directory`` with the system's C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("a C compiler (cc or gcc) is needed to build the benchmark program")
    source, binary = directory / "spin.c", directory / "spin"
    source.write_text(SPIN_C)
    command = [compiler, "-O2", "-static", "-o", str(binary), str(source)]
    subprocess.run(command, check=True, capture_output=True)
    return binary


def spin_templates(binary: Path) -> TemplateRegistry:
    """The runner's templates file with the one template ``spin`` (args ``work``, ``slowdown``)."""
    return TemplateRegistry.parse(
        {
            "templates": {
                TEMPLATE: {
                    "command": [str(binary), "{work}", "{slowdown}"],
                    "args": {"work": {"type": "int"}, "slowdown": {"type": "float"}},
                }
            }
        }
    )


WALL = "latency"
CPU = "cpu-time"


def reported_ns(stdout: str) -> dict[str, float]:
    """The times the benchmark reported by measure, read by the product's own adapter."""
    return {m.measure: m.value for m in adapters.parse("json", stdout)}


def iteration_ns(result: IterationResult) -> dict[str, float]:
    if result.exit_code != 0:
        raise RuntimeError(f"spin exited with {result.exit_code}: {result.stderr}")
    return reported_ns(result.stdout or "")
