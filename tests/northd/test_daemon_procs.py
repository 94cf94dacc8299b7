"""Processes of the daemon tests: our northd as a subprocess between NB and SB servers.

Not tests themselves (pytest finds none here): the daemon and failover tests share
them. Every process is started in the test's temp dir and stopped by its pid, also on
failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from procs import NB_SCHEMA, SB_SCHEMA, ServerProcess, create_db, require, run, stop_process


def poll(what: str, check: Callable[[], bool], timeout: float = 20.0,
         logs: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{logs()}")
        time.sleep(0.05)


class NorthdProc:
    """`python -m pyovsdb northd` with its files in `workdir` (named `name.*`)."""

    def __init__(self, workdir: Path, nb: str, sb: str, *, name: str = "northd",
                 extra: list[str] | None = None, env: dict[str, str] | None = None,
                 files: bool = True, command: list[str] | None = None) -> None:
        self.workdir = workdir
        self.command = command or [sys.executable, "-m", "pyovsdb", "northd"]
        self.name = name
        self.ctl = str(workdir / f"{name}.ctl")
        self.pidfile = str(workdir / f"{name}.pid")
        self.logfile = str(workdir / f"{name}.log")
        self.args = [f"--ovnnb-db={nb}", f"--ovnsb-db={sb}", "-vconsole:off", "--no-chdir",
                     f"--log-file={self.logfile}"]
        if files:
            self.args += [f"--unixctl={self.ctl}", f"--pidfile={self.pidfile}"]
        self.args += extra or []
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = workdir / f"{name}.stderr"

    def start(self) -> NorthdProc:
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen([*self.command, *self.args], cwd=self.workdir,
                                         env=self.env, stdout=subprocess.DEVNULL,
                                         stderr=err)
        try:
            poll(f"{self.name} to log its version", lambda: self._alive()
                 and "OVN internal version" in self.log(), logs=self.logs)
        except BaseException:
            self.stop()
            raise
        return self

    def _alive(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited\n{self.logs()}")
        return True

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log(self) -> str:
        return Path(self.logfile).read_text() if os.path.exists(self.logfile) else ""

    def logs(self) -> str:
        err = self.stderr.read_text() if self.stderr.exists() else ""
        return f"--- {self.name} log\n{self.log()}\n--- stderr\n{err}"

    def diagnose(self) -> str:
        """The logs, and what the daemon says of itself if it still answers: for a poll
        that times out (a standby that stopped following, say)."""
        out = [self.logs()]
        for cmd in (("status",), ("nb-connection-status",), ("sb-connection-status",),
                    ("inc-engine/show-stats",), ("coverage/show",)):
            try:
                res = self.appctl(*cmd, check=False)
                out.append(f"--- {' '.join(cmd)}\n{res.stdout}{res.stderr}")
            except Exception as e:  # (a daemon that does not answer: say so)
                out.append(f"--- {' '.join(cmd)}: {e}")
        return "\n".join(out)

    def appctl(self, *args: str, check: bool = True, target: str | None = None
               ) -> subprocess.CompletedProcess[str]:
        return run(["ovn-appctl", "-t", target or self.ctl, *args], check=check,
                   env=self.env)

    def status(self) -> str:
        return self.appctl("status").stdout.strip()

    def stat(self, node: str, stat: str = "recompute") -> int:
        return int(self.appctl("inc-engine/show-stats", node, stat).stdout)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def kill(self) -> None:
        """SIGKILL by pid, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.stop()


class Plane:
    """NB and SB servers (ours or the real ones) in `workdir`, with ctl helpers."""

    def __init__(self, kind: str, workdir: Path, *, sb_extra: list[str] | None = None
                 ) -> None:
        require("ovn-nbctl", "ovn-sbctl", "ovn-appctl")
        if kind == "real":
            require("ovsdb-server", "ovsdb-tool")
        self.kind = kind
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        nb_db = create_db(kind, workdir / "nb.db", NB_SCHEMA)
        sb_db = create_db(kind, workdir / "sb.db", SB_SCHEMA)
        self.nb = ServerProcess(kind, workdir, [nb_db], name="nb")
        self.sb = ServerProcess(kind, workdir, [sb_db], name="sb", extra=sb_extra)
        self.northds: list[NorthdProc] = []

    def start(self) -> Plane:
        self.nb.start()
        try:
            self.sb.start()
        except BaseException:
            self.nb.stop()
            raise
        return self

    def northd(self, name: str = "northd", *, extra: list[str] | None = None,
               env: dict[str, str] | None = None, files: bool = True) -> NorthdProc:
        n = NorthdProc(self.workdir, self.nb.unix, self.sb.unix, name=name, extra=extra,
                       env=env, files=files)
        self.northds.append(n)
        return n.start()

    def stop(self) -> None:
        for n in self.northds:
            n.stop()
        self.sb.stop()
        self.nb.stop()

    def nbctl(self, *args: str, timeout: float = 30) -> str:
        return run(["ovn-nbctl", f"--db={self.nb.unix}", f"--timeout={int(timeout)}", *args],
                   timeout=timeout + 5).stdout

    def sbctl(self, *args: str) -> str:
        return run(["ovn-sbctl", f"--db={self.sb.unix}", "--timeout=30", *args]).stdout

    def sb_names(self, table: str, column: str) -> list[str]:
        out = self.sbctl("--bare", f"--columns={column}", "list", table)
        return sorted(line.strip() for line in out.splitlines() if line.strip())


@contextmanager
def plane(kind: str, workdir: Path, *, sb_extra: list[str] | None = None) -> Iterator[Plane]:
    p = Plane(kind, workdir, sb_extra=sb_extra)
    p.start()
    try:
        yield p
    finally:
        p.stop()
