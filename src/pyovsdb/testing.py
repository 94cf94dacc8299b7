"""Running database servers, ours or the real ovsdb-server, for tests and benchmarks.

Rules kept here:
- Every process is started in the foreground as our child, in a directory the caller
  owns, on a unix socket (and a loopback TCP port when asked), with explicit pidfile,
  control socket and log file.
- It is stopped by its pid (SIGTERM, then SIGKILL) whatever happened, and nothing else is
  ever signalled.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .util.unixsock import connect_unix

SCHEMAS = Path(__file__).resolve().parent / "schemas"
NB_SCHEMA = str(SCHEMAS / "ovn-nb.ovsschema")
SB_SCHEMA = str(SCHEMAS / "ovn-sb.ovsschema")
VSWITCH_SCHEMA = str(SCHEMAS / "vswitch.ovsschema")


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid` (its threads included), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(cmd: list[str], *, check: bool = True, timeout: float = 60,
        input: str | None = None, env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                       env=env, cwd=cwd)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} exited {p.returncode}\nstdout: {p.stdout}\n"
                             f"stderr: {p.stderr}")
    return p


def stop_process(p: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL if it has not gone within 10 s; always reaped."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


class ServerProcess:
    """An ovsdb server (ours or the real one) serving database files from `workdir`."""

    def __init__(self, kind: str, workdir: Path, dbs: list[str], *, name: str = "db",
                 tcp: bool = False, extra: list[str] | None = None) -> None:
        self.kind = kind
        self.workdir = workdir
        self.name = name
        self.sock = str(workdir / f"{name}.sock")
        self.ctl = str(workdir / f"{name}.ctl")
        self.pidfile = str(workdir / f"{name}.pid")
        self.logfile = str(workdir / f"{name}.log")
        self.port = free_port() if tcp else None
        self.dbs = dbs
        self.extra = extra or []
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def unix(self) -> str:
        return f"unix:{self.sock}"

    @property
    def tcp(self) -> str:
        assert self.port is not None
        return f"tcp:127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        if self.kind == "ours":
            base = [sys.executable, "-m", "pyovsdb", "server"]
        else:
            base = ["ovsdb-server"]
        args = [f"--remote=punix:{self.sock}", f"--unixctl={self.ctl}",
                f"--pidfile={self.pidfile}", f"--log-file={self.logfile}", "-vconsole:off",
                "--no-chdir"]
        if self.port is not None:
            args.append(f"--remote=ptcp:{self.port}:127.0.0.1")
        return base + args + self.extra + self.dbs

    def start(self, timeout: float = 30) -> ServerProcess:
        for p in (self.sock, self.pidfile, self.ctl):
            if os.path.exists(p):
                os.unlink(p)
        self.proc = subprocess.Popen(self.command(), cwd=self.workdir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                log = Path(self.logfile).read_text() if os.path.exists(self.logfile) else ""
                raise AssertionError(f"{self.kind} server exited during startup: {err}\n{log}")
            # The control socket comes last (after the database sockets), so wait for it
            # too: tests drive the server through it right away.
            if (os.path.exists(self.pidfile) and os.path.exists(self.ctl)
                    and self._connectable()):
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"{self.kind} server did not start in {timeout} s")
            time.sleep(0.02)

    def _connectable(self) -> bool:
        try:
            connect_unix(self.sock).close()
            return True
        except OSError:
            return False

    def stop(self) -> None:
        p = self.proc
        if p is None:
            return
        stop_process(p)
        if p.stderr is not None:
            p.stderr.close()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, as in a crash."""
        p = self.proc
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        self.stop()

    def appctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["ovs-appctl", "-t", self.ctl, *args], check=check)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def create_db(kind: str, path: Path, schema: str) -> str:
    if kind == "ours":
        run([sys.executable, "-m", "pyovsdb", "tool", "create", str(path), schema])
    else:
        run(["ovsdb-tool", "create", str(path), schema])
    return str(path)


def compile_bytecode() -> None:
    """The package's modules compiled to bytecode, as an installed package has them
    (pip compiles them when it installs): a benchmark then starts our daemons as a
    deployment does, not compiling every module at each start where the environment
    keeps Python from writing bytecode (PYTHONDONTWRITEBYTECODE)."""
    import compileall

    compileall.compile_dir(os.path.dirname(os.path.abspath(__file__)), quiet=1)


# A metric sample as Prometheus's parser reads it: (name, sorted label pairs) -> value.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def metrics_port(logfile: str, timeout: float = 10) -> int:
    """The port of a `--metrics=ptcp:0:127.0.0.1` endpoint, from its log line."""
    pattern = re.compile(r"\|metrics\|INFO\|listening on http://127\.0\.0\.1:(\d+)/metrics")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = pattern.search(Path(logfile).read_text() if os.path.exists(logfile) else "")
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise AssertionError(f"no metrics endpoint in {logfile}")


def scrape_metrics(port: int, openmetrics: bool) -> Samples:
    """Every sample of a metrics endpoint, read by the parsers of Prometheus's own client
    library (a test dependency): OpenMetrics, or the classic text format."""
    import urllib.request

    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as parse_openmetrics,
    )
    from prometheus_client.parser import text_string_to_metric_families as parse_text

    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if openmetrics:
        req.add_header("Accept", "application/openmetrics-text; version=1.0.0,"
                                 "text/plain;version=0.0.4;q=0.5")
    with urllib.request.urlopen(req, timeout=10) as resp:
        ctype = resp.headers["Content-Type"]
        text = resp.read().decode()
    assert ctype.startswith("application/openmetrics-text" if openmetrics else "text/plain")
    families = parse_openmetrics(text) if openmetrics else parse_text(text)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families for s in family.samples}


def sample(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def wait_until(pred: Callable[[], bool], timeout: float = 20, interval: float = 0.05) -> bool:
    """Poll `pred` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True
