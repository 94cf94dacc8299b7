"""TCP_NODELAY on every TCP stream, as the real server has it: client sessions accepted
by a member, the Raft connections between members (both directions), and the streams
our own clients open (the `client` command, the IDL, northd).

Without it a server that answers one request with two writes (an update, then the reply
when the transaction commits) waits for the client's delayed ACK before the second:
about 40 ms per transaction, which is what every TCP client of our clusters paid.

The option is read from the processes themselves: the test takes a duplicate of each
socket with `pidfd_getfd` (Linux 5.6+, same user) and asks it.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from procs import NB_SCHEMA, SB_SCHEMA, create_db, require
from pyovsdb.testing import ServerProcess, stop_process
from pyovsdb.testing_cluster import OURS, REAL, Cluster, transact

_SYS_PIDFD_GETFD = 438
_LISTEN, _ESTABLISHED = "0A", "01"


def tcp_nodelay(pid: int) -> dict[tuple[str, str], bool]:
    """{(local, remote): TCP_NODELAY} for each established TCP socket of process `pid`
    (addresses as /proc/net/tcp writes them)."""
    fds: dict[int, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            fds[int(link[len("socket:["):-1])] = int(fd)
    libc = ctypes.CDLL(None, use_errno=True)
    out: dict[tuple[str, str], bool] = {}
    pidfd = os.pidfd_open(pid)
    try:
        for table in ("tcp", "tcp6"):
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    inode = int(fields[9])
                    if fields[3] != _ESTABLISHED or inode not in fds:
                        continue
                    fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, fds[inode], 0)
                    if fd < 0:
                        errno = ctypes.get_errno()
                        raise OSError(errno, f"pidfd_getfd: {os.strerror(errno)}")
                    with socket.socket(fileno=fd) as s:
                        on = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                    out[(fields[1], fields[2])] = bool(on)
    finally:
        os.close(pidfd)
    return out


def _wait_for(cond: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _pid(proc: ServerProcess) -> int:
    assert proc.proc is not None
    return proc.proc.pid


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_every_member_stream_has_nodelay(kind: str,
                                         make_cluster: Callable[..., Cluster]) -> None:
    """A 3-member cluster with Raft over TCP and a monitoring client over TCP on every
    member: every established TCP socket of every member has TCP_NODELAY."""
    c = make_cluster([kind] * 3, raft_tcp=True)
    leader = c.leader()
    monitors = [subprocess.Popen(["ovsdb-client", "monitor", m.tcp, "OVN_Northbound",
                                  "Logical_Switch", "name"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for m in c.members]
    try:
        transact(c.members[leader - 1].tcp, "OVN_Northbound",
                 [{"op": "insert", "table": "Logical_Switch", "row": {"name": "sw0"}}])
        for m in c.members:
            pid = _pid(m.proc)
            # two Raft streams (one each way) with each of the two others, and a client
            _wait_for(lambda pid=pid: len(tcp_nodelay(pid)) >= 5,  # type: ignore[misc]
                      f"the TCP streams of member {m.index}")
            streams = tcp_nodelay(pid)
            assert all(streams.values()), (m.index, streams)
    finally:
        for p in monitors:
            stop_process(p)


def test_our_clients_and_northd_set_nodelay(tmp_path: Path) -> None:
    """Our server's accepted sessions, and the streams our `client` command, IDL and
    northd open, all over TCP."""
    require("ovsdb-client")
    nb = ServerProcess("ours", tmp_path, [create_db("ours", tmp_path / "nb.db", NB_SCHEMA)],
                       name="nb", tcp=True)
    sb = ServerProcess("ours", tmp_path, [create_db("ours", tmp_path / "sb.db", SB_SCHEMA)],
                       name="sb", tcp=True)
    procs: list[subprocess.Popen[bytes]] = []
    with nb, sb:
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "pyovsdb", "northd", f"--ovnnb-db={nb.tcp}",
                 f"--ovnsb-db={sb.tcp}", "--no-chdir", f"--unixctl={tmp_path}/northd.ctl",
                 f"--pidfile={tmp_path}/northd.pid", f"--log-file={tmp_path}/northd.log",
                 "-vconsole:off"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "pyovsdb", "client", "monitor", nb.tcp,
                 "OVN_Northbound", "Logical_Switch"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            # northd holds one stream to each server; the client one more to NB
            _wait_for(lambda: len(tcp_nodelay(procs[0].pid)) >= 2, "northd's streams")
            _wait_for(lambda: len(tcp_nodelay(_pid(nb))) >= 2, "NB's sessions")
            _wait_for(lambda: len(tcp_nodelay(procs[1].pid)) >= 1, "the client's stream")
            for name, pid in (("northd", procs[0].pid), ("client", procs[1].pid),
                              ("nb", _pid(nb)), ("sb", _pid(sb))):
                streams = tcp_nodelay(pid)
                assert streams and all(streams.values()), (name, streams)
        finally:
            for p in procs:
                stop_process(p)
