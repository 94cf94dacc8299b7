"""Helpers for the robustness and crash-safety tests: servers on the test schema, raw
connections that send arbitrary bytes, a bystander client that keeps committing, and the
checks every test ends with.

Rules kept here:
- Every server is a `ServerProcess` started in the test's own directory and stopped by
  its pid in a `finally`, whatever happened.
- `Watch` is how a test asks "is our server still well?": the process is alive (a death
  is counted as a crash), a bystander transaction commits, and the log holds no
  traceback or internal error (counted too). Both counts must stay 0.
- `Raw.exchange` sends bytes followed by a ping (an `echo` with a unique id) and reads
  until the ping's reply or the end of the connection, so each outcome is known without
  waiting for a timeout: "answered" (the connection is still open) or "closed", with
  every message received before.
- Transactions sent as bad input tag their rows "bad-..."; no such row may ever exist.
"""

from __future__ import annotations

import codecs
import itertools
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from procs import ServerProcess, create_db, require, run
from pyovsdb.jsonrpc.client import Client
from pyovsdb.jsonrpc.stream import JsonStream
from robust_counts import COUNTS

HERE = Path(__file__).resolve().parent
SCHEMA = str(HERE / "robust.ovsschema")
DB = "R"
READ_TIMEOUT = 10.0
_ids = itertools.count(1)

# Log lines that mean our server hit a bug rather than a bad client: a traceback, our
# own "internal error" report, asyncio's report of an exception in a callback, or an
# emergency. (ERR lines about a torn file tail after a kill are expected.)
_PROBLEMS = ("Traceback", "internal error", "|asyncio|ERR|", "|EMER|")


def start_server(kind: str, workdir: Path, *extra: str, name: str = "r",
                 db_file: str | None = None) -> ServerProcess:
    """A server of `kind` ("ours" or "real") on `db_file` (created empty if missing)."""
    if kind == "real":
        require("ovsdb-server", "ovsdb-tool")
    workdir.mkdir(parents=True, exist_ok=True)
    db = db_file or str(workdir / f"{name}.db")
    if not os.path.exists(db):
        create_db(kind, Path(db), SCHEMA)
    srv = ServerProcess(kind, workdir, [db], name=name, extra=list(extra))
    return srv.start()


@contextmanager
def running(kind: str, workdir: Path, *extra: str, name: str = "r",
            db_file: str | None = None) -> Iterator[ServerProcess]:
    srv = start_server(kind, workdir, *extra, name=name, db_file=db_file)
    try:
        yield srv
    finally:
        srv.stop()


def transact(client: Client, *ops: dict[str, Any]) -> list[Any]:
    return client.call("transact", [DB, *ops])  # type: ignore[no-any-return]


def select(client: Client, table: str, columns: list[str],
           where: list[Any] | None = None) -> list[dict[str, Any]]:
    res = transact(client, {"op": "select", "table": table, "where": where or [],
                            "columns": columns})
    assert "error" not in res[0], res
    return res[0]["rows"]  # type: ignore[no-any-return]


def unixctl(srv: ServerProcess, command: str, *args: str) -> str:
    """Run a control command on `srv` over its unixctl socket (JSON-RPC, like
    ovs-appctl), without needing ovs-appctl."""
    with Client(f"unix:{srv.ctl}", timeout=READ_TIMEOUT) as c:
        return c.call(command, list(args))  # type: ignore[no-any-return]


def memory(srv: ServerProcess) -> dict[str, int]:
    """`memory/show` as a dict (keys that are 0 may be missing)."""
    text = unixctl(srv, "memory/show")
    return {k: int(v) for k, v in (item.split(":") for item in text.split())}


def real_tool_check(db_file: str, *queries: Any) -> list[Any]:
    """The real ovsdb-tool must read `db_file` whole (show-log) and answer `queries`
    (one `ovsdb-tool query` each); returns their parsed results."""
    require("ovsdb-tool")
    p = run(["ovsdb-tool", "show-log", db_file], check=False)
    assert p.returncode == 0, f"ovsdb-tool show-log failed:\n{p.stdout[-2000:]}\n{p.stderr}"
    out = []
    for q in queries:
        p = run(["ovsdb-tool", "query", db_file, orjson.dumps(q).decode()], check=False)
        assert p.returncode == 0, f"ovsdb-tool query failed: {p.stderr}"
        out.append(orjson.loads(p.stdout))
    return out


@dataclass
class Outcome:
    msgs: list[Any] = field(default_factory=list)
    closed: bool = False

    def replies(self) -> list[Any]:
        return [m for m in self.msgs if isinstance(m, dict) and m.get("method") is None]

    def reply(self, msg_id: Any) -> dict[str, Any]:
        for m in self.replies():
            if m.get("id") == msg_id:
                return m
        raise AssertionError(f"no reply with id {msg_id!r} in {self.msgs!r}")

    @property
    def kind(self) -> str:
        return "closed" if self.closed else "answered"


class Raw:
    """A unix-socket connection for arbitrary bytes."""

    def __init__(self, path: str, timeout: float = READ_TIMEOUT) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.timeout = timeout
        self.stream = JsonStream()
        # The real server echoes invalid UTF-8 back; read it as U+FFFD.
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.msgs: list[Any] = []
        self.closed = False

    def send(self, data: bytes) -> bool:
        """False if the server had already closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def read_until(self, done: Callable[[list[Any]], bool],
                   timeout: float | None = None) -> None:
        """Read until `done(msgs)` or the end of the connection; fail on timeout."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while not done(self.msgs) and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out; received so far: {self.msgs!r}"[:2000])
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except ConnectionResetError:
                data = b""
            except TimeoutError:
                continue
            if not data:
                self.closed = True
                break
            self.msgs += self.stream.feed(self.utf8.decode(data).encode())

    def exchange(self, data: bytes, timeout: float | None = None) -> Outcome:
        """Send `data`, then a ping; read until the ping's reply or the end."""
        ping = f"ping-{next(_ids)}"
        start = len(self.msgs)
        self.send(data)
        self.send(orjson.dumps({"method": "echo", "params": [], "id": ping}))
        self.read_until(lambda ms: any(isinstance(m, dict) and m.get("id") == ping
                                       for m in ms), timeout)
        msgs = [m for m in self.msgs[start:] if not (isinstance(m, dict)
                                                     and m.get("id") == ping)]
        return Outcome(msgs, self.closed)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exchange(srv: ServerProcess, data: bytes, timeout: float | None = None) -> Outcome:
    """`data` on a fresh connection (see `Raw.exchange`)."""
    with Raw(srv.sock) as r:
        return r.exchange(data, timeout)


class Watch:
    """Keeps an eye on one of our servers while a test abuses it."""

    def __init__(self, srv: ServerProcess) -> None:
        self.srv = srv
        self.client: Client | None = None
        self.acked: list[str] = []  # tags of bystander transactions that committed
        self._log_seen = 0

    def alive(self) -> None:
        p = self.srv.proc
        if p is None or p.poll() is not None:
            COUNTS.server_crashes += 1
            pytest.fail(f"our server died (status {p.returncode if p else '?'}):\n"
                        f"{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return Path(self.srv.logfile).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def log_problems(self) -> list[str]:
        try:
            text = Path(self.srv.logfile).read_text(errors="replace")
        except OSError:
            return []
        new = text[self._log_seen:]
        self._log_seen = len(text)
        return [line for line in new.splitlines() if any(p in line for p in _PROBLEMS)]

    def check_log(self) -> None:
        problems = self.log_problems()
        if problems:
            COUNTS.internal_errors += len(problems)
            pytest.fail("our server logged internal errors:\n" + "\n".join(problems[:20])
                        + "\n" + self.log_tail())

    def canary(self) -> None:
        """The server is alive and commits a transaction for a client that behaves."""
        self.alive()
        if self.client is None:
            self.client = Client(self.srv.unix, timeout=READ_TIMEOUT)
        tag = f"canary-{len(self.acked)}"
        res = transact(self.client, {"op": "insert", "table": "Txn",
                                     "row": {"tag": tag, "of": 1, "client": -1}})
        assert "uuid" in res[0], res
        self.acked.append(tag)
        COUNTS.canary_txns += 1

    def no_bad_rows(self) -> None:
        """No row of a bad (refused) transaction ever got in."""
        assert self.client is not None
        tags = [r["tag"] for r in select(self.client, "Txn", ["tag"])]
        bad = [t for t in tags if t.startswith("bad-")]
        assert not bad, f"rows of refused transactions were committed: {bad}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def finish(self, verify_file: bool = True) -> None:
        """End of a test: everything checked above, then the committed transactions
        survive a restart and the file reads with the real tool."""
        self.canary()
        self.no_bad_rows()
        self.check_log()
        self.close()
        if not verify_file:
            return
        self.srv.stop()
        self.srv.start()
        try:
            with Client(self.srv.unix, timeout=READ_TIMEOUT) as c:
                tags = {r["tag"] for r in select(c, "Txn", ["tag"])}
            lost = [t for t in self.acked if t not in tags]
            assert not lost, f"committed transactions lost across a restart: {lost}"
            self.check_log()
        finally:
            self.srv.stop()
        if os.environ.get("PYOVSDB_REQUIRE_INTEROP") == "1" or _have("ovsdb-tool"):
            (rows,) = real_tool_check(self.srv.dbs[0], [DB, {
                "op": "select", "table": "Txn", "where": [], "columns": ["tag"]}])
            assert {r["tag"] for r in rows[0]["rows"]} >= set(self.acked)


def _have(binary: str) -> bool:
    import shutil

    return shutil.which(binary) is not None


def bad_insert(tag: str) -> dict[str, Any]:
    """A valid insert that must not be committed because something else in its
    transaction (or message) is bad."""
    return {"op": "insert", "table": "Txn", "row": {"tag": f"bad-{tag}"}}
