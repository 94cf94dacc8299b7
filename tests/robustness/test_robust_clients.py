"""Clients that misbehave at the socket level: they leave in the middle of a large
monitor reply, never read while updates come (held back), sit idle by the thousand, or close
their sending side. Our server must drop or keep each of them as it should, and go on
serving everyone else.
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from robust_helpers import DB, READ_TIMEOUT, Raw, Watch, memory, running, transact

from procs import ServerProcess
from pyovsdb.jsonrpc.client import Client
from pyovsdb.jsonrpc.connection import CLOSE_GRACE
from pyovsdb.jsonrpc.stream import JsonStream
from robust_counts import COUNTS

BLOB = 16 * 1024  # bytes of data per Blob row


@pytest.fixture
def ours(tmp_path: Path) -> Iterator[ServerProcess]:
    with running("ours", tmp_path, "--max-backlog=262144") as srv:
        yield srv


@pytest.fixture
def watch(ours: ServerProcess) -> Iterator[Watch]:
    w = Watch(ours)
    w.canary()
    yield w
    w.finish()


def _fill_blobs(client: Client, n: int, prefix: str = "b") -> None:
    for start in range(0, n, 50):
        transact(client, *({"op": "insert", "table": "Blob",
                            "row": {"name": f"{prefix}{i}", "data": "z" * BLOB}}
                           for i in range(start, min(n, start + 50))))


def _monitor_request(method: str, mon_id: str) -> bytes:
    reqs = {"Blob": {"columns": ["name", "data"]}}
    params: list[object] = [DB, mon_id, reqs]
    if method == "monitor_cond_since":
        params.append("00000000-0000-0000-0000-000000000000")
    return orjson.dumps({"method": method, "params": params, "id": mon_id})


def _rst(sock: socket.socket) -> None:
    """Close with a reset, as a crashed client does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _wait_for(cond: object, timeout: float = READ_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_disconnect_while_receiving_a_large_monitor_reply(tmp_path: Path) -> None:
    """On a server with the default backlog limit (a 5 MB reply stays queued for the
    client), clients leave part way through reading it, some with a reset."""
    with running("ours", tmp_path / "default") as srv:
        watch = Watch(srv)
        watch.canary()
        try:
            assert watch.client is not None
            _fill_blobs(watch.client, 300)  # about 5 MB of initial rows
            for i, method in enumerate(["monitor", "monitor_cond", "monitor_cond_since"] * 3):
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(READ_TIMEOUT)
                s.connect(srv.sock)
                s.sendall(_monitor_request(method, f"m{i}"))
                got = 0
                while got < 100_000 * (i % 3 + 1):
                    chunk = s.recv(65536)
                    assert chunk, "the server closed the connection of a client that reads"
                    got += len(chunk)
                if i % 2:
                    _rst(s)
                else:
                    s.close()
                COUNTS.bad_inputs += 1
                watch.canary()
            # nothing of those sessions is left behind
            _wait_for(lambda: memory(srv).get("monitors", 0) == 0)
            _wait_for(lambda: memory(srv).get("sessions", 0) <= 1)
            assert memory(srv).get("backlog", 0) == 0
        finally:
            watch.finish()


def test_client_that_never_reads(ours: ServerProcess, watch: Watch) -> None:
    """Updates for a monitor that never reads are held back, merged per row (the real
    server's rule): its output stays small and it is not dropped, a monitor that reads
    gets every update, writers go on, and once the sleeper reads it has every row. A
    reply larger than --max-backlog to a client that does not read still closes that
    connection: the limit stays the last resort for what is not an update."""
    assert watch.client is not None
    sleeper = socket.socket(socket.AF_UNIX)
    sleeper.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sleeper.connect(ours.sock)
    sleeper.sendall(_monitor_request("monitor_cond", "sleepy"))
    COUNTS.bad_inputs += 1
    reader = Client(ours.unix, timeout=READ_TIMEOUT)
    try:
        reader.call("monitor_cond", [DB, "awake", {"Blob": {"columns": ["name"]}}])
        _wait_for(lambda: memory(ours).get("monitors", 0) == 2)
        n = 0
        while n < 400:  # 6 MB of rows, 25 times the backlog limit
            _fill_blobs(watch.client, 10, prefix=f"p{n}-")
            n += 10
            assert memory(ours).get("backlog", 0) < 262144
        assert memory(ours).get("monitors", 0) == 2, "the client that never reads was dropped"
        # the reader saw every insert, the writer was never refused
        names: set[str] = set()
        while len(names) < n:
            note = reader.next_notification()
            for row in note["params"][1].get("Blob", {}).values():
                names.add(row["insert"]["name"])
        assert len(names) == n
        watch.canary()
        # the sleeper wakes up: it gets every row, then the reply to its echo
        sleeper.sendall(b'{"method":"echo","params":["awake"],"id":"e"}')
        stream = JsonStream()
        got: set[str] = set()
        sleeper.settimeout(READ_TIMEOUT)
        echoed = False
        while not echoed:
            data = sleeper.recv(1 << 20)
            assert data, "the sleeper was disconnected"
            for msg in stream.feed(data):
                if msg.get("id") == "e":
                    echoed = True
                elif msg.get("method") == "update2":
                    got |= {r.get("insert", r.get("initial", {})).get("name")
                            for r in msg["params"][1].get("Blob", {}).values()}
        assert {f"p{k}-{i}" for k in range(0, n, 10) for i in range(10)} <= got
        # a reply bigger than the limit, to a client that does not read
        big = socket.socket(socket.AF_UNIX)
        big.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        big.connect(ours.sock)
        big.sendall(_monitor_request("monitor_cond", "big"))
        _wait_for(lambda: "exceeds the limit of 262144, closing connection"
                  in watch.log_tail(20000))
        big.close()
        watch.canary()
    finally:
        reader.close()
        sleeper.close()


def _open_fds(srv: ServerProcess) -> int:
    assert srv.proc is not None
    return len(os.listdir(f"/proc/{srv.proc.pid}/fd"))


def test_bad_client_that_never_reads_is_cut_off(ours: ServerProcess, watch: Watch) -> None:
    """A client asks for a large reply, then sends garbage, and never reads: the server
    closes it (gracefully: what was sent may still be read), and cuts it off when it
    has not read within the grace period, instead of holding its socket forever."""
    assert watch.client is not None
    _fill_blobs(watch.client, 15)  # a reply more than the socket holds, less than the backlog
    before = _open_fds(ours)
    bad = []
    for i in range(3):
        s = socket.socket(socket.AF_UNIX)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(ours.sock)
        s.sendall(_monitor_request("monitor_cond", f"m{i}") + b"garbage")
        bad.append(s)
        COUNTS.bad_inputs += 1
    try:
        _wait_for(lambda: _open_fds(ours) <= before, timeout=CLOSE_GRACE + 5)
        watch.canary()
    finally:
        for s in bad:
            s.close()


def test_thousands_of_idle_connections(ours: ServerProcess, watch: Watch) -> None:
    n = 2000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = n + 200
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the hard limit on open files ({hard}) is below {need}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    idle: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX)
            idle.append(s)
            s.connect(ours.sock)  # blocking: waits while the listen queue is full
            s.settimeout(READ_TIMEOUT)
        _wait_for(lambda: memory(ours).get("sessions", 0) >= n)
        # everyone else is served as usual, and a monitor still gets its updates
        with Client(ours.unix, timeout=READ_TIMEOUT) as c:
            c.call("monitor", [DB, None, {"Txn": {"columns": ["tag"]}}])
            for _ in range(20):
                watch.canary()
            seen = 0
            while seen < 20:
                c.next_notification()
                seen += 1
        # a few of the idle ones wake up and work
        for s in idle[::400]:
            s.sendall(b'{"method":"echo","params":["awake"],"id":1}')
            assert b"awake" in s.recv(4096)
    finally:
        for s in idle:
            s.close()
        if soft < need:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    _wait_for(lambda: memory(ours).get("sessions", 0) <= 1)


def test_client_that_closes_its_sending_side(ours: ServerProcess, watch: Watch) -> None:
    """A request followed by shutdown(SHUT_WR): it is still answered (as by the real
    server, which reads to the end of input before closing)."""
    with Raw(ours.sock) as r:
        r.send(orjson.dumps({"method": "transact", "params": [DB, {
            "op": "insert", "table": "Txn", "row": {"tag": "half-closed"}}], "id": 1}))
        r.sock.shutdown(socket.SHUT_WR)
        r.read_until(lambda ms: False)
        assert [m["id"] for m in r.msgs] == [1] and "uuid" in r.msgs[0]["result"][0]
    watch.acked.append("half-closed")


def test_many_clients_connect_and_leave_while_others_commit(ours: ServerProcess,
                                                           watch: Watch) -> None:
    """Churn: threads connect, start a transaction or a monitor, and vanish, while the
    bystander keeps committing."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn(k: int) -> None:
        i = 0
        try:
            while not stop.is_set():
                s = socket.socket(socket.AF_UNIX)
                s.connect(ours.sock)
                msg = _monitor_request("monitor_cond", f"c{k}-{i}") if i % 2 else \
                    orjson.dumps({"method": "transact", "params": [DB, {
                        "op": "insert", "table": "Txn", "row": {"tag": f"churn-{k}-{i}"}}],
                        "id": i})
                s.sendall(msg[:len(msg) // (1 + i % 3)])
                if i % 4 == 0:
                    _rst(s)
                else:
                    s.close()
                i += 1
                COUNTS.bad_inputs += 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(100):
            watch.canary()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors
    # transactions that arrived whole are whole
    assert watch.client is not None
    rows = transact(watch.client, {"op": "select", "table": "Txn", "where": [],
                                   "columns": ["tag"]})[0]["rows"]
    assert all(r["tag"] for r in rows)


@pytest.mark.interop
def test_half_close_matches_real_server(tmp_path: Path) -> None:
    """The reference for the test above: the real server answers, then closes."""
    with running("real", tmp_path / "real") as real, Raw(real.sock) as r:
        r.send(orjson.dumps({"method": "transact", "params": [DB, {
            "op": "insert", "table": "Txn", "row": {"tag": "half-closed"}}], "id": 1}))
        r.sock.shutdown(socket.SHUT_WR)
        r.read_until(lambda ms: False)
        COUNTS.bad_inputs_real += 1
        assert r.closed and [m["id"] for m in r.msgs] == [1]
