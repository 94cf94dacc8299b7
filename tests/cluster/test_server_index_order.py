"""On a cluster member, leader or follower, a client monitoring `_Server` hears of the
`index` a transaction moved the Database row to before that transaction's reply, as
on the real ovsdb-server (checked on clusters of both kinds).

Rules kept here:
- The messages are read off the socket in the order the server sent them, by a
  client of our own that interprets nothing but the framing, so no library can
  reorder or merge them.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyovsdb.testing_cluster import OURS, REAL, Cluster

NB = "OVN_Northbound"


class RawClient:
    def __init__(self, remote: str) -> None:
        assert remote.startswith("unix:"), remote
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(remote[len("unix:"):])
        self.buf = ""
        self.decoder = json.JSONDecoder()
        self.next_id = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, method: str, params: list[Any]) -> int:
        self.next_id += 1
        msg = {"method": method, "params": params, "id": self.next_id}
        self.sock.sendall(json.dumps(msg).encode())
        return self.next_id

    def recv(self) -> dict[str, Any]:
        while True:
            text = self.buf.lstrip()
            if text:
                try:
                    msg, end = self.decoder.raw_decode(text)
                except json.JSONDecodeError:
                    pass
                else:
                    self.buf = text[end:]
                    return msg
            data = self.sock.recv(65536)
            assert data, "the server closed the connection"
            self.buf += data.decode()

    def until_reply(self, rid: int) -> list[dict[str, Any]]:
        """Every message up to and including the reply to `rid`, echoes answered."""
        seen = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = self.recv()
            if msg.get("method") == "echo":
                self.sock.sendall(json.dumps(
                    {"result": msg["params"], "error": None, "id": msg["id"]}).encode())
                continue
            seen.append(msg)
            if msg.get("id") == rid and "method" not in msg:
                return seen
        raise AssertionError(f"no reply to {rid}: {seen}")


def _index_updates(msgs: list[dict[str, Any]]) -> list[int]:
    """The `index` values the `_Server` monitor's updates carried, in order."""
    out = []
    for m in msgs:
        if m.get("method") != "update2" or m["params"][0] != "srv":
            continue
        for row in m["params"][1].get("Database", {}).values():
            for change in row.values():
                if "index" in change:
                    out.append(change["index"])
    return out


@pytest.mark.parametrize("kind", [OURS, REAL])
def test_index_update_before_reply(make_cluster: Callable[..., Cluster], kind: str) -> None:
    c = make_cluster([kind] * 3)
    leader = c.leader()
    follower = c.followers(leader)[0]
    for who in (leader, follower):
        cl = RawClient(c.members[who - 1].unix)
        try:
            rid = cl.send("monitor_cond", ["_Server", "srv", {"Database": [{
                "where": [["name", "==", NB]], "columns": ["name", "index"]}]}])
            first = cl.until_reply(rid)[-1]
            (row,) = first["result"]["Database"].values()
            before = row["initial"]["index"]
            for n in range(3):
                rid = cl.send("transact", [NB, {
                    "op": "insert", "table": "Logical_Switch",
                    "row": {"name": f"m{who}-{n}"}}])
                msgs = cl.until_reply(rid)
                assert "error" not in msgs[-1]["result"][0], msgs[-1]
                indexes = _index_updates(msgs[:-1])
                # The entry of this transaction is applied here before the reply, and
                # the client has heard of it by then.
                assert indexes and indexes[-1] > before, (kind, who == leader, msgs)
                # Whatever came after the reply (a barrier request flushes it) must
                # not be this transaction's index: the next round's check stays sharp.
                later = _index_updates(cl.until_reply(cl.send("list_dbs", [])))
                before = max([indexes[-1], *later])
        finally:
            cl.close()
