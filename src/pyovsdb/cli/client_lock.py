"""`pyovsdb client lock|steal|unlock [SERVER] LOCK`: ovsdb-client 3.1's lock testing
commands.

Rules kept here:
- The request is sent at once; its reply's result is printed as JSON (`{"locked":true}`,
  `{"locked":false}`, `{}`), and every notification the server sends afterwards as its
  method name on one line and its params as JSON on the next (`locked`, `stolen`,
  `["LOCK"]`). Output is flushed line by line; the command runs until it is killed or
  the server closes the connection (`receive failed (End of file)`).
- `--detach` returns once the first reply is printed, leaving the daemon holding (or
  waiting for) the lock, its standard output still where the command's went; it then
  serves a control socket (`ovsdb-client.PID.ctl` in the run directory, found by
  `ovs-appctl -t ovsdb-client` through `--pidfile`) with the real commands: `lock
  LOCK`, `steal LOCK`, `unlock LOCK` (each sends that request, if none is waiting to be
  sent) and `exit`. `--pidfile[=FILE]`, `--overwrite-pidfile` and `--no-chdir` as for
  every OVS daemon.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .. import __version__
from ..jsonrpc.client import Client, RpcError
from ..jsonrpc.message import NOTIFY, REPLY, classify
from ..server.appctl import UnixctlServer
from ..util import daemon
from . import daemon_main as dm
from .client import FATAL_SIGNALS, Context, fatal, log_fatal_signal

PROGRAM_NAME = "ovsdb-client"


class _Locker:
    """One lock session: requests go out one at a time, as the real tool sends them."""

    def __init__(self, ctx: Context, client: Client, d: daemon.Daemon, stdout: int) -> None:
        self.ctx = ctx
        self.client = client
        self.daemon = d
        self.stdout = stdout
        self.pending: tuple[str, str] | None = None
        self.request_id: int | None = None
        self.done: asyncio.Future[None] | None = None
        self.error: str | None = None
        self.signal: int | None = None

    def request(self, method: str, lock: str) -> None:
        """`lock_req_init`: a request to send, unless one is already waiting."""
        if self.pending is None:
            self.pending = (method, lock)
        self.flush()

    def flush(self) -> None:
        if self.pending is not None:
            method, lock = self.pending
            self.pending = None
            self.request_id = self.client.send(method, [lock])

    def print(self, *lines: str) -> None:
        os.write(1, "".join(f"{line}\n" for line in lines).encode())

    def on_readable(self) -> None:
        try:
            messages = self.client.read()
        except RpcError as e:
            self.finish(str(e))
            return
        for msg in messages:
            kind = classify(msg)
            if kind == REPLY and msg.get("id") == self.request_id:
                self.request_id = None
                self.print(self.ctx.json(msg.get("result")))
                self.complete()
            elif kind == NOTIFY:
                self.print(str(msg.get("method")), self.ctx.json(msg.get("params")))

    def complete(self) -> None:
        """`daemonize_complete`, keeping standard output (`daemon_save_fd`)."""
        self.daemon.complete()
        if self.daemon.detach:
            os.dup2(self.stdout, 1)

    def finish(self, error: str | None = None, signum: int | None = None) -> None:
        self.error = error
        self.signal = signum
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    async def run(self, method: str, lock: str) -> None:
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        unixctl: UnixctlServer | None = None
        if self.daemon.detach:
            path = os.path.join(daemon.rundir(), f"{PROGRAM_NAME}.{os.getpid()}.ctl")
            unixctl = UnixctlServer(path, f"{PROGRAM_NAME} (pyovsdb) {__version__}")
            for name in ("unlock", "steal", "lock"):
                unixctl.register(name, "LOCK", 1, 1, self._command(name))
            unixctl.register("exit", "", 0, 0, self._exit)
            await unixctl.start()
        for signum in FATAL_SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        loop.add_reader(self.client.sock.fileno(), self.on_readable)
        try:
            self.request(method, lock)
            await self.done
        finally:
            loop.remove_reader(self.client.sock.fileno())
            if unixctl is not None:
                unixctl.close()

    def _on_signal(self, signum: int) -> None:
        log_fatal_signal(signum)
        self.finish(None, signum)

    def _command(self, method: str) -> Any:
        def handler(args: list[str]) -> str:
            self.request(method, args[0])
            return ""
        return handler

    def _exit(self, args: list[str]) -> str:
        asyncio.get_running_loop().call_soon(self.finish)
        return ""


def run_lock(ctx: Context, client: Client, method: str, lock: str) -> None:
    parsed = ctx.parsed
    pidfile = None
    if parsed.has("pidfile"):
        pidfile = os.path.join(daemon.rundir(),
                               parsed.get("pidfile") or f"{PROGRAM_NAME}.pid")
    d = daemon.Daemon(detach=parsed.has("detach"), pidfile=pidfile,
                      overwrite_pidfile=parsed.has("overwrite-pidfile"),
                      chdir=not parsed.has("no-chdir"))
    stdout = os.dup(1)  # `daemon_save_fd`
    try:
        try:
            d.start()
        except daemon.Fatal as e:
            fatal(str(e))
        locker = _Locker(ctx, client, d, stdout)
        try:
            asyncio.run(locker.run(method, lock))
        finally:
            d.cleanup()
    finally:
        os.close(stdout)
    # The client is closed by the caller, but for a death by signal.
    if locker.signal is not None:
        client.close()
        dm.die_of(locker.signal)
    if locker.error is not None:
        fatal(locker.error)


def cmd_lock(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    run_lock(ctx, client, "lock", args[0])


def cmd_steal(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    run_lock(ctx, client, "steal", args[0])


def cmd_unlock(ctx: Context, client: Client, database: str | None, args: list[str]) -> None:
    run_lock(ctx, client, "unlock", args[0])
