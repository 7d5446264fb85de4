"""The runner's own share of pickup: ``job`` message received -> the job's process running.

One real server (SQLite; PostgreSQL with ``--engine postgresql``) and one real runner process
(``benchrunner runner up``, process executor). Jobs are submitted one at a time to the idle
runner; each job is a tiny static C program whose first instruction reads CLOCK_REALTIME and
which appends that time and its ``BENCHRUNNER_JOB`` to a file. The runner, started with
``BENCHRUNNER_PICKUP_TRACE`` (see ``benchrunner/runner/pickup_trace.py``), records when its
channel received each ``job`` message and when the spawn call returned. Per job:

    share   = job's first clock read - job message received   (the figure)
    spawned = spawn call returned    - job message received
    before  = job message received   - the client's clock just before its submit call
              (the server's part of pickup, with the HTTP call and the channel's frame)
    steps   = the runner's time stamps in between (``pickup_trace.step``), each step named by
              the stamp that ends it, its p50 in µs; a runner without them prints none. The
              last, ``first``, is negative under ``--realtime``: the job's process, which
              inherits the priority, runs before the spawn call returns

p50/p90 over ``--jobs`` jobs (after ``--warmup``), per run; medians of the per-run figures
over ``--runs`` runs. ``--runner-src LABEL=DIR`` (repeatable) runs the runner from another
source tree (``DIR`` holds the ``benchrunner`` package, e.g. a ``git archive`` of an older
commit's ``src``) so old and new code run side by side, alternating within each run.

``--pg-delay-ms`` (PostgreSQL; repeatable values) puts a network round trip between the server
and its database: each value is a round trip in milliseconds through ``delay_proxy`` (half of
it each way), or ``direct`` for no proxy; the server restarts on each before its jobs, and
the values alternate within each run like the runner sources. ``--server-src`` does for the
server what ``--runner-src`` does for the runner (each with each ``--pg-delay-ms`` value).
*before* is then the figure: pickup with the database that far away.

    .venv/bin/python -m benchmarks.runner_pickup [--jobs 300] [--runs 3] [--realtime]
        [--runner-src before=/tmp/before/src --runner-src after=src]
        [--engine postgresql [--pg-delay-ms direct 0 1]]
        [--server-src before=/tmp/before/src --server-src after=src]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from http.client import HTTPConnection
from pathlib import Path

import sqlalchemy as sa
from tests.databases import fresh_database
from tests.harness import Deployment, deploy, wait_until

from benchmarks.delay_proxy import proxy_process

CLOCK_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const char *job = getenv("BENCHRUNNER_JOB");
    char line[128];
    int n = snprintf(line, sizeof line, "%s %lld\n", job ? job : "-",
                     (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, n) != n) return 1;
    return close(fd);
}
"""

TEMPLATE = """
[templates."bench.first_instruction"]
description = "Append the job's first CLOCK_REALTIME reading to a file"
command = ["{binary}", "{{out}}"]
timeout = 30

[templates."bench.first_instruction".args.out]
type = "string"
"""


@dataclass
class Figures:
    share_p50: float
    share_p90: float
    spawned_p50: float
    spawned_p90: float
    before_p50: float
    before_p90: float
    jobs: int
    steps: dict[str, float]
    """Each step's p50 in µs, from the stamp before it (the first: from the message's receipt;
    the last, ``first``: from the spawn call's return to the job's first instruction)."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def compile_clock(tmp: Path) -> Path:
    source = tmp / "clock.c"
    source.write_text(CLOCK_C)
    binary = tmp / "clock"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("needs a C compiler (cc) for the job program")
    static = subprocess.run(
        [compiler, "-O2", "-static", "-o", str(binary), str(source)], capture_output=True
    )
    if static.returncode != 0:  # no static libc: a dynamic binary (ld.so adds ~0.3 ms)
        subprocess.run([compiler, "-O2", "-o", str(binary), str(source)], check=True)
    return binary


def run_variant(
    deployment: Deployment,
    tmp: Path,
    label: str,
    source: Path | None,
    templates: Path,
    jobs: int,
    warmup: int,
    attempt: int,
    realtime: bool,
) -> Figures:
    work = tmp / f"{label}-{attempt}"
    work.mkdir()
    trace, clocks = work / "trace", work / "clocks"
    env = {"BENCHRUNNER_PICKUP_TRACE": str(trace)}
    if source is not None:
        env["PYTHONPATH"] = str(source.resolve())
    runner = deployment.runner_process(f"{label}-{attempt}", templates=templates)
    server = deployment.server
    http = HTTPConnection("127.0.0.1", server.port)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    payload = json.dumps(
        {
            "project": deployment.project,
            "spec": deployment.spec,
            "template": "bench.first_instruction",
            "args": {"out": str(clocks)},
        }
    )
    submits: dict[str, int] = {}
    runner.start(**env)
    try:
        with server.client() as client:
            if realtime:
                wait_until(lambda: client.health().waiting_runners == 1, timeout=30)
                assert runner.proc is not None
                make_realtime(runner.proc.pid)
            for index in range(warmup + jobs):
                wait_until(lambda: client.health().waiting_runners == 1, interval=0.002)
                submitted = time.time_ns()
                http.request("POST", "/v0/run", payload, headers)
                response = http.getresponse()
                if response.status >= 300:
                    raise SystemExit(f"submit refused: {response.status} {response.read()!r}")
                submits[json.loads(response.read())["job"]] = submitted
                wait_until(partial(_more_than, clocks, index), timeout=30, interval=0.002)
            wait_until(lambda: _lines(trace) >= warmup + jobs, timeout=30, interval=0.01)
    finally:
        runner.kill(signal.SIGTERM)
    received: dict[str, tuple[int, int]] = {}
    stamps: dict[str, list[tuple[str, int]]] = {}
    for line in trace.read_text().splitlines():
        job, got_text, spawned_text, *steps = line.split()
        received[job] = (int(got_text), int(spawned_text))
        stamps[job] = [(label, int(ns)) for label, _, ns in (s.partition("=") for s in steps)]
    shares: list[float] = []
    spawns: list[float] = []
    befores: list[float] = []
    step_times: dict[str, list[float]] = {}
    for line in clocks.read_text().splitlines()[warmup:]:
        job, ran = line.split()
        got, spawned = received[job]
        shares.append((int(ran) - got) / 1e6)
        spawns.append((spawned - got) / 1e6)
        befores.append((got - submits[job]) / 1e6)
        if stamps[job]:
            way = sorted([("received", got), *stamps[job], ("spawned", spawned)], key=_at)
            way.append(("first", int(ran)))
            for (_, start), (label, end) in itertools.pairwise(way):
                step_times.setdefault(label, []).append((end - start) / 1e3)
    return Figures(
        percentile(shares, 0.5),
        percentile(shares, 0.9),
        percentile(spawns, 0.5),
        percentile(spawns, 0.9),
        percentile(befores, 0.5),
        percentile(befores, 0.9),
        len(shares),
        {label: percentile(times, 0.5) for label, times in step_times.items()},
    )


def _at(stamp: tuple[str, int]) -> int:
    return stamp[1]


def database_urls(url: str, delays: list[str], stack: ExitStack) -> dict[str, str]:
    """The server's database URL for each ``--pg-delay-ms`` value (``direct``: ``url``)."""
    urls: dict[str, str] = {}
    for delay in delays:
        if delay == "direct":
            urls["direct"] = url
            continue
        port = stack.enter_context(proxy_process(float(delay)))
        proxied = sa.make_url(url).set(port=port).render_as_string(hide_password=False)
        urls[f"+{delay} ms"] = proxied
    return urls


@dataclass(frozen=True)
class ServerSetup:
    """What the server runs with in one variant: its database URL and its source tree."""

    label: str
    url: str
    source: Path | None


def server_setups(
    urls: dict[str, str], sources: list[tuple[str, Path | None]]
) -> list[ServerSetup]:
    """Every server source with every database URL (the installed package when no source)."""
    setups = []
    for (source_label, source), (where, url) in itertools.product(
        sources or [("", None)], urls.items()
    ):
        label = " ".join(part for part in (source_label, where) if part)
        setups.append(ServerSetup(label, url, source))
    return setups


def restart_on(deployment: Deployment, setup: ServerSetup) -> None:
    """Restart the server as ``setup`` says (the same database, or a proxy to it)."""
    server = deployment.server
    server.kill(signal.SIGTERM)
    server.db = setup.url
    server.env.pop("PYTHONPATH", None)
    if setup.source is not None:
        server.env["PYTHONPATH"] = str(setup.source.resolve())
    server.start()


def make_realtime(pid: int) -> None:
    """SCHED_FIFO for every thread of ``pid``; threads and processes it starts inherit it."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setscheduler(int(task.name), os.SCHED_FIFO, os.sched_param(1))


def _more_than(path: Path, count: int) -> bool:
    return _lines(path) > count


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="run each runner (its threads, so its jobs too) under SCHED_FIFO priority 1, so "
        "that other load on a shared machine does not queue it: the runner's own costs",
    )
    parser.add_argument(
        "--runner-src",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="run the runner from this source tree (default: the installed package)",
    )
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument(
        "--pg-delay-ms",
        nargs="+",
        default=[],
        metavar="MS",
        help="PostgreSQL: round trips to the database to measure at, in ms through "
        "benchmarks.delay_proxy, or 'direct' (default: direct)",
    )
    parser.add_argument(
        "--server-src",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="run the server from this source tree too, restarting it between variants",
    )
    options = parser.parse_args()
    server_sources: list[tuple[str, Path | None]] = [
        (label, Path(directory))
        for label, _, directory in (item.partition("=") for item in options.server_src)
    ]
    if options.pg_delay_ms and options.engine != "postgresql":
        parser.error("--pg-delay-ms needs --engine postgresql")
    for delay in options.pg_delay_ms:
        if delay != "direct":
            float(delay)
    variants: list[tuple[str, Path | None]] = []
    for item in options.runner_src:
        label, _, directory = item.partition("=")
        variants.append((label, Path(directory)))
    if not variants:
        variants.append(("", None))
    with (
        tempfile.TemporaryDirectory() as tmp_name,
        fresh_database(options.engine, Path(tmp_name)) as url,
        ExitStack() as proxies,
        deploy(Path(tmp_name), url, heartbeat_timeout=60.0) as deployment,
    ):
        urls = database_urls(url, options.pg_delay_ms, proxies) or {"": url}
        setups = server_setups(urls, server_sources)
        names = {
            (label, setup.label): " ".join(part for part in (label, setup.label) if part)
            or "installed"
            for label, _ in variants
            for setup in setups
        }
        results: dict[str, list[Figures]] = {name: [] for name in names.values()}
        tmp = Path(tmp_name)
        binary = compile_clock(tmp)
        # The server must know the template too: add it and restart the server.
        with deployment.server.templates.open("a") as templates:
            templates.write(TEMPLATE.format(binary=binary))
        deployment.server.kill(signal.SIGTERM)
        deployment.server.start()
        with deployment.server.client() as client:
            wait_until(lambda: client.health() is not None, timeout=30)
        for attempt in range(options.runs):
            for setup, (label, source) in itertools.product(setups, variants):
                if len(setups) > 1:
                    restart_on(deployment, setup)
                name = names[label, setup.label]
                figures = run_variant(
                    deployment,
                    tmp,
                    re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
                    source,
                    deployment.server.templates,
                    options.jobs,
                    options.warmup,
                    attempt,
                    options.realtime,
                )
                results[name].append(figures)
                print(
                    f"run {attempt + 1} {name:>10}: share p50 {figures.share_p50:.3f} "
                    f"p90 {figures.share_p90:.3f}  spawn returned p50 {figures.spawned_p50:.3f} "
                    f"p90 {figures.spawned_p90:.3f}  before p50 {figures.before_p50:.3f} "
                    f"p90 {figures.before_p90:.3f} ms ({figures.jobs} jobs)",
                    flush=True,
                )
    mode = ", runner under SCHED_FIFO" if options.realtime else ""
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"medians of {options.runs} run(s), {options.engine}, ms, {os.cpu_count()} cores{mode}, "
        f"load {load}:"
    )
    for label, runs in results.items():
        print(
            f"  {label:>10}: share p50 {statistics.median(r.share_p50 for r in runs):.3f} "
            f"p90 {statistics.median(r.share_p90 for r in runs):.3f}  "
            f"spawn returned p50 {statistics.median(r.spawned_p50 for r in runs):.3f} "
            f"p90 {statistics.median(r.spawned_p90 for r in runs):.3f}  "
            f"before p50 {statistics.median(r.before_p50 for r in runs):.3f} "
            f"p90 {statistics.median(r.before_p90 for r in runs):.3f}"
        )
        labels = [label for label in runs[0].steps if all(label in r.steps for r in runs)]
        if labels:
            steps = ", ".join(
                f"{label} {statistics.median(r.steps[label] for r in runs):.0f}" for label in labels
            )
            print(f"  {'':>10}  steps p50 µs: {steps}")


if __name__ == "__main__":
    main()
