"""Real processes for system tests: a server, runner agents, and raw channel connections.

Everything is started as the user would start it (``python -m benchrunner ...``) on a free
loopback port with its own data directory; waits are conditions with deadlines.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from benchrunner.api.jobs import Job
from benchrunner.client import BenchrunnerClient
from benchrunner.protocol import EXTENSIONS_HEADER, OUR_EXTENSIONS
from benchrunner.server.admin.bootstrap import bootstrap_admin
from tests.databases import with_schema

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]

HEARTBEAT_TIMEOUT = 10.0
"""The servers' default in tests: ten of the runner's 1 s heartbeats, so a loaded machine that
delays a few of them fails no job."""
SHORT_HEARTBEAT_TIMEOUT = 2.0
"""For the tests of the heartbeat timeout itself, which set it explicitly."""
PROCESS_START_TIMEOUT = 120.0
"""Seconds a new server or runner process may take to start working: importing it took over
30 s at a load average of 20 on two cores. A wait that includes a process's start allows it."""

TEST_TEMPLATES = (
    (Path(__file__).with_name("issue_templates.toml")).read_text()
    + """
[templates."bench.noop"]
command = ["python3", "-c", "print('{\\"noop\\": {\\"latency\\": {\\"value\\": 0}}}')"]
timeout = 30

[templates."bench.timed"]
description = "Sleep ms milliseconds and report the wall time it took (ns) as a latency metric"
command = ["python3", "-c", 'import json,sys,time; t=time.perf_counter_ns(); time.sleep(int(sys.argv[1])/1000); print(json.dumps({"timed": {"latency": {"value": time.perf_counter_ns()-t}}}))', "{ms}"]
timeout = 60

[templates."bench.timed".args.ms]
type = "int"
min = 0
max = 1000

[templates."bench.gitwork"]
description = "Run the CPU-bound loop whose length a commit's work.txt in a git repository gives (the CPU time it took, ns, as a latency metric: on a loaded machine far steadier than wall time); a work.txt of 'fail' fails the job"
command = ["python3", "-c", 'import json,subprocess,sys,time; w=subprocess.run(["git","-C",sys.argv[1],"show",sys.argv[2]+":work.txt"],capture_output=True,text=True,check=True).stdout.strip(); w=="fail" and sys.exit(3); n=int(w); t=time.process_time_ns(); x=sum(i*i for i in range(n)); print(json.dumps({"work": {"latency": {"value": time.process_time_ns()-t}}}))', "{repo}", "{commit}"]
timeout = 600

[templates."bench.gitwork".args.repo]
type = "string"

[templates."bench.gitwork".args.commit]
type = "string"

[templates."bench.clock"]
description = "Print the wall clock at the job's start (nanoseconds since the epoch) as a metric: a no-op whose start can be read back from its output"
command = ["date", "+{\\"clock\\": {\\"started_ns\\": {\\"value\\": %s%N}}}"]
timeout = 30

[templates."bench.clock_file"]
description = "bench.clock that also writes its output to a file, so that a job's start can be watched for without asking the server or the database"
command = ["sh", "-c", "date '+{\\"clock\\": {\\"started_ns\\": {\\"value\\": %s%N}}}' > \\"$1\\" && read -r line < \\"$1\\" && echo \\"$line\\"", "sh", "{file}"]
timeout = 30

[templates."bench.clock_file".args.file]
type = "string"

[templates."bench.long"]
description = "Run for the given seconds, printing a line to stderr each second (a live log, heartbeats), then one metric"
command = ["python3", "-c", "import sys,time; [print('second', i, file=sys.stderr, flush=True) or time.sleep(1) for i in range(int(sys.argv[1]))]; print('{\\"long\\": {\\"latency\\": {\\"value\\": 1}}}')", "{seconds}"]
timeout = 900

[templates."bench.long".args.seconds]
type = "int"
min = 1
max = 600

[templates."bench.family"]
description = "Write the pids of a shell-less process family to a file, then sleep"
command = ["python3", "-c", "import os,subprocess,sys,time; child=subprocess.Popen([sys.executable,'-c','import time; time.sleep(600)']); open(sys.argv[1],'w').write(f'{os.getpid()} {child.pid}'); time.sleep(600)", "{pidfile}"]
timeout = 600

[templates."bench.family".args.pidfile]
type = "string"

[templates."bench.stage"]
description = "Write the pid to a start file, sleep, then create an end file: shows that the job was running at a given moment"
command = ["python3", "-c", "import os,sys,time; open(sys.argv[1],'w').write(str(os.getpid())); time.sleep(int(sys.argv[3])/1000); open(sys.argv[2],'w').close(); print('{\\"stage\\": {\\"latency\\": {\\"value\\": 1}}}')", "{started}", "{finished}", "{ms}"]
timeout = 600

[templates."bench.stage".args.started]
type = "string"

[templates."bench.stage".args.finished]
type = "string"

[templates."bench.stage".args.ms]
type = "int"
min = 0
max = 600000

[templates."bench.stubborn"]
description = "Ignore SIGTERM, then write the pid to a start file and sleep: only SIGKILL ends it"
command = ["python3", "-c", "import os,signal,sys,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open(sys.argv[1],'w').write(str(os.getpid())); time.sleep(600)", "{started}"]
timeout = 600

[templates."bench.stubborn".args.started]
type = "string"

[templates."bench.held"]
description = "A no-op with an hour's hard timeout: for a job a raw channel holds while a test sends it more than a loaded machine handles within a usual timeout"
command = ["python3", "-c", "print('{\\"held\\": {\\"latency\\": {\\"value\\": 0}}}')"]
timeout = 3600

[templates."bench.chatty"]
command = ["python3", "-c", "print('x' * 200000)"]
timeout = 30

[templates."bench.tally"]
description = "Wait for the gate file (if one is named), sleep, then append this job's tag to a shared file: counts executions per job"
command = ["python3", "-c", "import os,sys,time\\nfile, tag, ms, gate = sys.argv[1:5]\\nwhile gate and not os.path.exists(gate): time.sleep(0.01)\\ntime.sleep(int(ms)/1000)\\nopen(file, 'a').write(tag + chr(10))\\nprint('{\\"tally\\": {\\"latency\\": {\\"value\\": 1}}}')", "{file}", "{tag}", "{ms}", "{gate}"]
timeout = 60

[templates."bench.tally".args.ms]
type = "int"
min = 0
max = 10000
default = 0

[templates."bench.tally".args.file]
type = "string"

[templates."bench.tally".args.tag]
type = "string"

[templates."bench.tally".args.gate]
type = "string"
default = ""

[templates."bench.ticker"]
description = "Print a numbered line with the text to the stream every ms milliseconds, flushed, until the gate file exists (the first line whatever it finds: a job started late still shows one); then a JSON result to stdout (which ticks on stderr leave parseable)"
command = ["python3", "-c", "import itertools,os,sys,time; out=getattr(sys, sys.argv[4]); [print(f'tick {n} {sys.argv[3]}', file=out, flush=True) or time.sleep(int(sys.argv[2])/1000) for n in itertools.takewhile(lambda n: n == 0 or not os.path.exists(sys.argv[1]), itertools.count())]; print('{\\"ticker\\": {\\"latency\\": {\\"value\\": 1}}}')", "{gate}", "{ms}", "{text}", "{stream}"]
timeout = 600

[templates."bench.ticker".args.gate]
type = "string"

[templates."bench.ticker".args.ms]
type = "int"
min = 1
max = 10000

[templates."bench.ticker".args.text]
type = "string"
default = ""

[templates."bench.ticker".args.stream]
type = "choice"
choices = ["stdout", "stderr"]
default = "stdout"

[templates."bench.gated_tail"]
description = "Wait for the gate file, then write size bytes and a line end to stdout, and the first two bytes of a three-byte UTF-8 character: the live log's decoder holds those until the job has ended"
command = ["python3", "-c", "import os,sys,time; [time.sleep(0.01) for _ in iter(lambda: os.path.exists(sys.argv[1]), True)]; sys.stdout.buffer.write(b'x' * int(sys.argv[2]) + b'\\\\n\\\\xe2\\\\x82')", "{gate}", "{size}"]
timeout = 120

[templates."bench.gated_tail".args.gate]
type = "string"

[templates."bench.gated_tail".args.size]
type = "int"
min = 0
max = 1000000

[templates."bench.garbage"]
command = ["python3", "-c", "print('this is not json')"]
timeout = 30

[templates."bench.nul"]
command = ["python3", "-c", "import sys; sys.stdout.write(chr(0) + 'not json')"]
timeout = 30

[templates."bench.not_utf8"]
command = ["python3", "-c", "import sys; sys.stdout.buffer.write(bytes([123, 34, 97, 255, 34, 58, 32, 49, 125]))"]
timeout = 30

[templates."bench.personality"]
description = "Print the job's personality flags (ASLR off shows as 0x0040000)"
command = ["python3", "-c", "print('{\\"personality\\": {\\"flags\\": {\\"value\\": %d}}}' % int(open('/proc/self/personality').read(), 16))"]
timeout = 30

[templates."bench.environ"]
description = "Print the job's environment as JSON"
command = ["python3", "-c", "import json,os; print(json.dumps(dict(os.environ)))"]
timeout = 30

[templates."bench.links"]
description = "Write result.json, then link a file from outside and /proc/self/environ into the working directory"
command = ["python3", "-c", "import os,sys; open('result.json','w').write('{}'); os.symlink('/proc/self/environ','environ'); os.symlink(sys.argv[1],'linked'); os.link(sys.argv[1],'hard')", "{secret}"]
timeout = 30

[templates."bench.links".args.secret]
type = "string"
"""
)


def output_json(job: Job) -> dict[str, Any]:
    """A finished job's output as the server sent it (the test expects it to have one)."""
    assert job.output is not None, f"job {job.uuid} ({job.status}) has no output"
    return job.output.model_dump(mode="json")


def process_gone(pid: int) -> bool:
    """The process has exited: reaped, or a zombie that its parent has not reaped yet (which
    still answers ``kill(pid, 0)``). ``/proc/PID/stat`` can vanish between its open and its
    read (``ESRCH``) when the process is reaped in that instant: gone too."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_until(
    predicate: Callable[[], T | bool | None],
    *,
    timeout: float = 20.0,
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last  # type: ignore[no-any-return]
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {message} (last: {last!r})")


def wait_progressing(
    predicate: Callable[[], T | bool | None],
    progress: Callable[[], object],
    *,
    stall: float,
    interval: float = 0.5,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy, for as long as ``progress()``
    keeps changing: fail once it stayed the same for ``stall`` seconds. For a condition that a
    loaded machine reaches late but surely, as long as the work towards it goes on."""
    last_progress = progress()
    deadline = time.monotonic() + stall
    last: Any = None
    while True:
        last = predicate()
        if last:
            return last  # type: ignore[no-any-return]
        now = progress()
        if now != last_progress:
            last_progress, deadline = now, time.monotonic() + stall
        elif time.monotonic() >= deadline:
            raise AssertionError(
                f"no progress for {stall} s waiting for {message} "
                f"(progress: {now!r}, last: {last!r})"
            )
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "benchrunner", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"benchrunner {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


class _PortTaken(Exception):
    """The server could not listen: another process holds its port."""


@dataclass
class ServerProcess:
    data_dir: Path
    templates: Path
    db: str
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT
    job_timeout_grace: float = 1.0
    sweep_interval: float = 0.5
    claim_poll_interval: float = 5.0
    name: str = "server"
    request_body_max_bytes: int = 16 * 1024 * 1024
    max_connections: int | None = None
    """None: the server's default (half of ``ulimit -n``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Further environment variables of the server process."""
    port: int = field(default_factory=free_port)
    options: dict[str, str] = field(default_factory=dict)
    """Further flags of ``benchrunner server``, by name without the dashes."""
    start_timeout: float = PROCESS_START_TIMEOUT
    """Seconds ``start`` waits for the server to answer."""
    proc: subprocess.Popen[bytes] | None = None
    token: str = ""
    starts: int = 0
    identity: str = ""
    """The replica name of the process last started, which its health check answers with."""
    host: str = "127.0.0.1"
    """The address it listens on, and tests reach it at."""
    netns: str | None = None
    """The network namespace it runs in (``ip netns exec``); None: the test's own."""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir / f"{self.name}-{self.starts}.log"

    def log_lines(self) -> list[dict[str, Any]]:
        """Its log, a JSON object a line (``server/logs/server_log.py``)."""
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def log_since(self, offset: int) -> str:
        """Its log from byte ``offset`` on (``log.stat().st_size`` when a test began): what it
        wrote during that test, on a server the module's tests share one after another."""
        with self.log.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def start(self) -> ServerProcess:
        """Start the server and wait until it answers. A first start whose port another process
        took since ``free_port`` chose it (another test's server, on another worker) moves to a
        new port; a restart keeps its port, which its runners reconnect to."""
        if not self.token:
            with_schema(self.db)
            self.token = bootstrap_admin(self.db, "admin@test.dev")
        moves_left = 2 if self.starts == 0 else 0
        while True:
            self._launch()
            try:
                wait_until(
                    self._healthy,
                    timeout=self.start_timeout,
                    message=f"server on {self.url} ({self.log})",
                )
                return self
            except _PortTaken:
                if not moves_left:
                    log = self.log.read_text()
                    raise AssertionError(f"port {self.port} is taken:\n{log}") from None
                moves_left -= 1
                self.port = free_port()
            except AssertionError:
                self.kill()  # a server that never answered is not left running after the test
                raise

    def _launch(self) -> None:
        self.starts += 1
        self.identity = self.options.get("replica-name") or f"{self.name}-{os.urandom(6).hex()}"
        in_netns = [] if self.netns is None else ["ip", "netns", "exec", self.netns]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    *in_netns,
                    sys.executable,
                    "-m",
                    "benchrunner",
                    "server",
                    "--host",
                    self.host,
                    "--port",
                    str(self.port),
                    "--db",
                    self.db,
                    "--data-dir",
                    str(self.data_dir),
                    "--templates",
                    str(self.templates),
                    "--heartbeat-timeout",
                    str(self.heartbeat_timeout),
                    "--job-timeout-grace",
                    str(self.job_timeout_grace),
                    "--sweep-interval",
                    str(self.sweep_interval),
                    "--claim-poll-interval",
                    str(self.claim_poll_interval),
                    "--request-body-max-bytes",
                    str(self.request_body_max_bytes),
                    *(
                        []
                        if self.max_connections is None
                        else ["--max-connections", str(self.max_connections)]
                    ),
                    *(
                        part
                        for k, v in {"replica-name": self.identity, **self.options}.items()
                        for part in (f"--{k}", v)
                    ),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env},
            )

    def _healthy(self) -> bool:
        """Whether this server answers: the one that answers on its port has its replica name
        (a test talking to another test's server would see tokens and jobs it does not know)."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            log = self.log.read_text()
            if "address already in use" in log:
                raise _PortTaken
            raise AssertionError(f"server exited {self.proc.returncode}:\n{log}")
        try:
            with BenchrunnerClient(self.url, None, timeout=2) as client:
                return bool(client.health().replica == self.identity)
        except Exception:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # never leave a server behind, whatever the test says next
                self.proc.wait(timeout=30)
                raise AssertionError(
                    f"server did not exit within 30 s of signal {sig}:\n{self.log.read_text()}"
                ) from None

    def client(self, token: str | None = "admin") -> BenchrunnerClient:
        return BenchrunnerClient(self.url, self.token if token == "admin" else token)

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"


@dataclass
class RunnerProcess:
    server: ServerProcess
    slug: str
    key: str
    spool: Path
    templates: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    drain_grace: float = 5.0
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    servers: list[ServerProcess] = field(default_factory=list)
    """Server replicas to connect to in turn; empty: just ``server``."""
    python: str = sys.executable
    """The interpreter, and so the environment, the runner runs in."""
    cwd: Path | None = None
    transport: str = "channel"

    @property
    def log(self) -> Path:
        return self.spool.parent / f"runner-{self.slug}-{self.starts}.log"

    @property
    def hosts(self) -> str:
        return ",".join(s.url for s in self.servers or [self.server])

    @property
    def key_file(self) -> Path:
        """The runner key as docs/how-to/deploy.md tells operators to pass it: a 0600 file, never argv."""
        path = self.spool.parent / f"runner-{self.slug}.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(self.key + "\n")
        return path

    @property
    def temp_dir(self) -> Path:
        """The runner's ``TMPDIR``, where it makes its jobs' working directories: in the test's
        own directory, since a runner killed with SIGKILL (as every deployment's end does)
        cannot remove the one it made ahead for its next job."""
        return self.spool.parent / f"tmp-{self.slug}"

    def start(self, **env: str) -> RunnerProcess:
        """Start the runner; ``env`` adds to (and may replace) its environment."""
        self.starts += 1
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        # A key given in the environment (a test of that path) replaces the key file.
        key_args = [] if "BENCHRUNNER_RUNNER_KEY" in env else ["--key-file", str(self.key_file)]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "benchrunner",
                    "runner",
                    "up",
                    "--host",
                    self.hosts,
                    "--runner",
                    self.slug,
                    *key_args,
                    "--templates",
                    str(self.templates),
                    "--spool",
                    str(self.spool),
                    "--poll-timeout",
                    "5",
                    "--drain-grace",
                    str(self.drain_grace),
                    "--transport",
                    self.transport,
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "TMPDIR": str(self.temp_dir), **self.extra_env, **env},
                cwd=self.cwd,
            )
        return self

    def kill(self, sig: int = signal.SIGKILL) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class RawChannel:
    """A hand-driven runner connection, for protocol tests the real agent would never send."""

    def __init__(
        self,
        server: ServerProcess,
        runner: str,
        token: str,
        extensions: Sequence[str] = OUR_EXTENSIONS,
        **kwargs: Any,
    ) -> None:
        """``extensions`` are announced in the handshake, as our runner does; none: the
        connection is Bencher's runner's, which announces nothing."""
        self.runner = runner
        headers = {"Authorization": f"Bearer {token}"}
        if extensions:
            headers[EXTENSIONS_HEADER] = ", ".join(extensions)
        self.ws: ClientConnection = connect(
            f"{server.ws_url}/v0/runners/{runner}/channel",
            additional_headers=headers,
            open_timeout=10,
            legacy=True,
            **kwargs,
        )

    def send(self, message: dict[str, Any] | str) -> None:
        self.ws.send(message if isinstance(message, str) else json.dumps(message))

    def recv(self, timeout: float = 10) -> dict[str, Any]:
        return json.loads(self.ws.recv(timeout=timeout))  # type: ignore[no-any-return]

    def ask(self, message: dict[str, Any] | str, timeout: float = 10) -> dict[str, Any]:
        self.send(message)
        return self.recv(timeout)

    def claim(self, poll_timeout: int = 5) -> dict[str, Any]:
        reply = self.ask({"event": "ready", "poll_timeout": poll_timeout}, timeout=poll_timeout + 5)
        assert reply["event"] == "job", reply
        return reply

    def wait_closed(self, timeout: float = 30) -> tuple[int | None, str]:
        """Read until the server closes; return the close code and reason."""
        deadline = time.monotonic() + timeout
        with contextlib.suppress(ConnectionClosed):
            while time.monotonic() < deadline:
                with contextlib.suppress(TimeoutError):
                    self.ws.recv(timeout=max(0.01, deadline - time.monotonic()))
        close = self.ws.protocol.close_rcvd
        return (close.code, close.reason) if close else (None, "")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


@dataclass
class Deployment:
    """A server with an organization, project, spec and runner credentials ready to use."""

    server: ServerProcess
    tmp: Path
    org: str = "acme"
    project: str = "bench"
    spec: str = "small"
    runners: list[RunnerProcess] = field(default_factory=list)
    channels: list[RawChannel] = field(default_factory=list)
    replicas: list[ServerProcess] = field(default_factory=list)
    """Further server processes on the same database and data directory (PostgreSQL)."""
    transport: str = "channel"
    """How the runner processes it starts talk to the server (``runner up --transport``)."""
    names: str = ""
    """What the names of the runners it creates start with: a test's own prefix on a server
    other tests share (``tenant`` in tests/system/conftest.py)."""

    def end_connections(self) -> None:
        """Close the raw channels it opened and kill the runner processes it started."""
        for channel in self.channels:
            channel.close()
        for runner in self.runners:
            if runner.proc is not None and runner.proc.poll() is None:
                runner.kill(signal.SIGKILL)

    def admin(self) -> BenchrunnerClient:
        return self.server.client()

    def http(self) -> httpx.Client:
        """Plain HTTP as the admin, answers unchecked: for what the typed client refuses to
        send or read."""
        server = self.server
        headers = {"Authorization": f"Bearer {server.token}"}
        return httpx.Client(base_url=server.url, headers=headers, timeout=30)

    def add_replica(self, name: str) -> ServerProcess:
        """Start another server on this deployment's database, sharing its data directory
        (and so its blob store), as replicas behind a load balancer would."""
        first = self.server
        replica = ServerProcess(
            first.data_dir,
            first.templates,
            first.db,
            heartbeat_timeout=first.heartbeat_timeout,
            job_timeout_grace=first.job_timeout_grace,
            request_body_max_bytes=first.request_body_max_bytes,
            sweep_interval=first.sweep_interval,
            claim_poll_interval=first.claim_poll_interval,
            env=first.env,
            options={**first.options, "replica-name": name},
            name=name,
            token=first.token,
        )
        self.replicas.append(replica)
        return replica.start()

    def new_runner(self, name: str, specs: list[str] | None = None) -> tuple[str, str]:
        """A runner of ``specs`` (the deployment's spec), named ``name`` after the ``names``
        prefix."""
        with self.admin() as client:
            created = client.create_runner(
                f"{self.names}{name}", specs if specs is not None else [self.spec]
            )
        return created.slug, created.token

    def runner_process(
        self,
        name: str,
        templates: Path | None = None,
        servers: list[ServerProcess] | None = None,
        specs: list[str] | None = None,
        **env: str,
    ) -> RunnerProcess:
        slug, key = self.new_runner(name, specs)
        runner = RunnerProcess(
            self.server,
            slug,
            key,
            self.tmp / f"spool-{slug}",
            templates or self.server.templates,
            extra_env=env,
            servers=servers or [],
            transport=self.transport,
        )
        self.runners.append(runner)
        return runner

    def channel(
        self, name: str, specs: list[str] | None = None, server: ServerProcess | None = None
    ) -> RawChannel:
        slug, key = self.new_runner(name, specs)
        channel = RawChannel(server or self.server, slug, key)
        self.channels.append(channel)
        return channel

    def submit(
        self,
        template: str = "bench.sleep",
        args: dict[str, Any] | None = None,
        *,
        project: str | None = None,
        client: BenchrunnerClient | None = None,
        **job: Any,
    ) -> str:
        """Submit a job; through ``client`` (the admin's) if given, else a client of its own."""
        body: dict[str, Any] = {
            "project": project or self.project,
            "spec": self.spec,
            "template": template,
            "args": args or {},
            "settings": {"adapter": "json"},
        }
        if job:
            body["job"] = job
        if client is not None:
            return str(client.run(body).job)
        with self.admin() as own:
            return str(own.run(body).job)

    def cli_env(self, tmp: Path) -> dict[str, str]:
        """The environment of a ``benchrunner`` command against this deployment as admin,
        reading no config file."""
        return {
            "BENCHRUNNER_HOST": self.server.url,
            "BENCHRUNNER_TOKEN": self.server.token,
            "BENCHRUNNER_PROJECT": self.project,
            "BENCHRUNNER_CONFIG": str(tmp / "no-config.toml"),
            "COLUMNS": "400",  # a usage error's message on one line of its box
        }

    def job(self, job_uuid: str, project: str | None = None) -> Job:
        with self.admin() as client:
            return client.get_job(project or self.project, job_uuid)

    def status(self, job_uuid: str, project: str | None = None) -> str:
        return str(self.job(job_uuid, project).status)

    def wait_status(
        self, job_uuid: str, *statuses: str, timeout: float = 30, project: str | None = None
    ) -> Job:
        def reached() -> Job | None:
            job = self.job(job_uuid, project)
            return job if job.status in statuses else None

        return wait_until(
            reached,
            timeout=timeout,
            interval=0.1,
            message=f"job {job_uuid} to become {'/'.join(statuses)}",
        )


@contextlib.contextmanager
def deploy(tmp: Path, db: str, **server_options: Any) -> Iterator[Deployment]:
    """A server on database ``db`` (a fresh one: see ``tests.databases``) with an
    organization, project and spec; its templates are the tests' and the option
    ``extra_templates`` (TOML), if given."""
    templates = tmp / "templates.toml"
    templates.write_text(TEST_TEMPLATES + str(server_options.pop("extra_templates", "")))
    server = ServerProcess(tmp / "data", templates, db, **server_options)
    server.data_dir.mkdir(parents=True, exist_ok=True)
    server.start()
    deployment = Deployment(server, tmp)
    with server.client() as client:
        client.create_organization("acme", "team")
        client.create_project("acme", "bench", "public")
        client.create_spec(
            name="small", architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30, network=False
        )
    try:
        yield deployment
    finally:
        deployment.end_connections()
        for replica in deployment.replicas:
            replica.kill(signal.SIGTERM)
        server.kill(signal.SIGTERM)
