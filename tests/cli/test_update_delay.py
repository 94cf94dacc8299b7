"""`pyovsdb server --update-delay-ms=N`: a session's monitor updates leave no sooner
than N ms after its previous ones, merged per row meanwhile, and at once after an idle
gap (seed 004's delayed wake applied to the server's output).

Rules kept here:
- A burst of transactions, one at a time, reaches a monitoring client as a few merged
  updates, not one per transaction, and the replica it builds from them (update,
  update2 with a condition, update3) equals the server's rows, also across a condition
  change in the middle of a window. The same burst without the option gives one update
  per transaction that changed a row (so the count checked can fail); pipelined, the
  transactions read in one pass give one update (without the option too).
- The first update after a quiet spell leaves at once; the next one not before the
  window has passed. The delay is large (600 ms) next to what the machine adds, so the
  timing checks have a wide margin either way.
- A client that writes during its window still gets the update of its own transaction
  before the reply.
- A value that is not milliseconds from 0 to 60000 is refused with one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from procs import ServerProcess, create_db
from pyovsdb.jsonrpc.client import Client

SCHEMA = {"name": "S", "version": "1.0.0", "tables": {"T": {"columns": {
    "k": {"type": "integer"}, "v": {"type": "integer"},
    "tags": {"type": {"key": "string", "min": 0, "max": "unlimited"}}}, "isRoot": True}}}
DELAY_MS = 600
ZERO = "00000000-0000-0000-0000-000000000000"


def start(tmp_path: Path, delay_ms: int) -> ServerProcess:
    schema = tmp_path / "s.ovsschema"
    schema.write_text(json.dumps(SCHEMA))
    db = create_db("ours", tmp_path / f"s{delay_ms}.db", str(schema))
    d = tmp_path / f"srv{delay_ms}"
    d.mkdir()
    extra = [f"--update-delay-ms={delay_ms}"] if delay_ms else []
    return ServerProcess("ours", d, [db], name="s", extra=extra).start()


class Replica:
    """Rows of T as one monitor's updates build them ({uuid: {column: value}})."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.rows: dict[str, dict[str, Any]] = {}
        self.updates = 0

    def initial(self, result: Any) -> None:
        self.apply(result[2] if self.method == "monitor_cond_since" else result, count=False)

    def apply(self, tables: dict[str, Any], count: bool = True) -> None:
        self.updates += count
        for uuid, ch in tables.get("T", {}).items():
            if self.method == "monitor":
                if ch.get("new") is None:
                    self.rows.pop(uuid, None)
                else:
                    self.rows[uuid] = dict(ch["new"])
                continue
            (kind, row), = ch.items()
            if kind == "delete":
                self.rows.pop(uuid, None)
            elif kind in ("insert", "initial"):
                self.rows[uuid] = dict(row)
            else:  # modify: a diff
                cur = self.rows[uuid]
                for col, value in row.items():
                    if col == "tags":
                        old = set(_elems(cur.get("tags", ["set", []])))
                        cur["tags"] = ["set", sorted(old ^ set(_elems(value)))]
                    else:
                        cur[col] = value

    def normalized(self) -> dict[str, tuple[int, int, list[str]]]:
        return {u: (r.get("k", 0), r.get("v", 0), sorted(_elems(r.get("tags", ["set", []]))))
                for u, r in self.rows.items()}


def _elems(value: Any) -> list[str]:
    if isinstance(value, list) and value and value[0] == "set":
        return list(value[1])
    return [value]


def server_rows(c: Client, where: list[Any]) -> dict[str, tuple[int, int, list[str]]]:
    res = c.call("transact", ["S", {"op": "select", "table": "T", "where": where}])
    return {r["_uuid"][1]: (r["k"], r["v"], sorted(_elems(r["tags"])))
            for r in res[0]["rows"]}


def monitor(c: Client, method: str, mon_id: str, where: list[Any] | None) -> Replica:
    cols = ["k", "v", "tags"]
    req: dict[str, Any] = {"columns": cols}
    if where is not None:
        req["where"] = where
    params: list[Any] = ["S", mon_id, {"T": [req] if method != "monitor" else req}]
    if method == "monitor_cond_since":
        params.append(ZERO)
    rep = Replica(method)
    rep.initial(c.call(method, params))
    return rep


def drain(c: Client, replicas: dict[str, Replica], quiet: float) -> None:
    """Apply every update that comes until none has come for `quiet` seconds."""
    c.timeout = quiet
    queued = list(c.notes)  # (those that came while `c` waited for a reply)
    c.notes.clear()
    while True:
        if queued:
            msgs, queued = queued, []
        else:
            try:
                msgs = c.read()
            except Exception:  # the timeout: nothing more came
                return
        for m in msgs:
            if m.get("method") in ("update", "update2", "update3"):
                mon_id = m["params"][0]
                replicas[mon_id].apply(m["params"][-1])


def burst(srv: ServerProcess, n: int, in_flight: int = 32) -> int:
    """`n` transactions, `in_flight` at a time, each inserting or changing rows of T;
    returns how many changed a row (a mutate may match none)."""
    changed = 0
    with Client(srv.unix) as w:
        pending: list[int] = []

        def done(msg_id: int) -> int:
            (result,) = w.wait(msg_id)["result"]
            return 1 if result.get("count", 1) else 0

        for i in range(n):
            if i % 3 == 0:
                op = {"op": "insert", "table": "T", "row": {"k": i % 40, "v": i,
                                                              "tags": ["set", [f"t{i % 7}"]]}}
            else:
                op = {"op": "mutate", "table": "T", "where": [["k", "==", i % 40]],
                      "mutations": [["v", "+=", 1], ["tags", "insert", ["set", [f"u{i % 5}"]]]]}
            pending.append(w.send("transact", ["S", op]))
            if len(pending) >= in_flight:
                changed += done(pending.pop(0))
        for p in pending:
            changed += done(p)
    return changed


@pytest.mark.parametrize(("delay_ms", "in_flight"), [(DELAY_MS // 6, 1), (0, 1), (0, 32)])
def test_a_burst_arrives_merged_and_whole(tmp_path: Path, delay_ms: int,
                                          in_flight: int) -> None:
    srv = start(tmp_path, delay_ms)
    try:
        with Client(srv.unix) as c:
            where = [["k", "<", 20]]
            reps = {"m1": monitor(c, "monitor", "m1", None),
                    "m2": monitor(c, "monitor_cond", "m2", where),
                    "m3": monitor(c, "monitor_cond_since", "m3", None)}
            # (few enough that what the client does not read yet fits its socket's
            # buffer: else the server holds it back as for any client that does not
            # read, and merges it whatever the option)
            changed = burst(srv, 60, in_flight)
            # A condition change in the middle of what the window holds: what was held
            # under the old condition is judged by it.
            changed += burst(srv, 30, in_flight)
            where = [["k", ">=", 10]]
            c.call("monitor_cond_change", ["m2", "m2", {"T": [{"where": where}]}])
            changed += burst(srv, 30, in_flight)
            drain(c, reps, quiet=3 * max(delay_ms, 100) / 1000)
            everything = server_rows(c, [])
            assert reps["m1"].normalized() == everything
            assert reps["m3"].normalized() == everything
            assert reps["m2"].normalized() == server_rows(c, where)
            counts = [r.updates for r in reps.values()]
            if delay_ms:
                # one per window at most, and the burst lasts far fewer windows
                assert reps["m3"].updates < changed // 4, (counts, changed)
            elif in_flight == 1:
                # one per transaction that changed a row
                assert reps["m3"].updates == reps["m1"].updates == changed, (counts, changed)
            else:
                # the transactions read in one pass are sent as one update (as the real
                # server merges what a pass of its loop commits)
                assert reps["m3"].updates < changed // 2, (counts, changed)
    finally:
        srv.stop()


def test_a_condition_change_inside_a_window(tmp_path: Path) -> None:
    """Rows changed while held, outside the old condition and inside the new one: the
    client gets them whole, once (not a diff on top of the rows the new condition
    brings, nor a diff of rows it never had)."""
    srv = start(tmp_path, DELAY_MS)
    try:
        with Client(srv.unix) as c, Client(srv.unix) as w:
            for k in range(6):
                w.call("transact", ["S", {"op": "insert", "table": "T",
                                          "row": {"k": k, "tags": ["set", ["a"]]}}])
            old_where = [["k", "<", 3]]
            reps = {"m": monitor(c, "monitor_cond", "m", old_where)}
            w.call("transact", ["S", {"op": "mutate", "table": "T", "where": [["k", "==", 0]],
                                      "mutations": [["v", "+=", 1]]}])
            assert _wait_update(c, 5, "update2") is not None  # the window is open now
            w.call("transact", ["S", {"op": "mutate", "table": "T", "where": [],
                                      "mutations": [["tags", "insert", ["set", ["b"]]]]}])
            new_where = [["k", ">=", 2]]
            c.call("monitor_cond_change", ["m", "m", {"T": [{"where": new_where}]}])
            drain(c, reps, quiet=DELAY_MS / 1000 * 2)
            assert reps["m"].normalized() == server_rows(c, new_where)
    finally:
        srv.stop()


def _wait_update(c: Client, timeout: float, method: str = "update3") -> float | None:
    """Seconds until the next update notification, None if none in `timeout`."""
    t0 = time.monotonic()
    c.timeout = timeout
    while time.monotonic() - t0 < timeout:
        try:
            msgs = c.read()
        except Exception:
            return None
        if any(m.get("method") == method for m in msgs):
            return time.monotonic() - t0
        c.timeout = max(0.01, timeout - (time.monotonic() - t0))
    return None


def test_at_once_after_a_gap_then_not_before_the_window(tmp_path: Path) -> None:
    srv = start(tmp_path, DELAY_MS)
    try:
        with Client(srv.unix) as c, Client(srv.unix) as w:
            monitor(c, "monitor_cond_since", "m", None)
            time.sleep(DELAY_MS / 1000 * 1.5)  # a quiet spell
            for _ in range(2):
                w.call("transact", ["S", {"op": "insert", "table": "T", "row": {"k": 1}}])
                first = _wait_update(c, 5)
                assert first is not None and first < DELAY_MS / 1000 / 2, first
                # at once: the next change waits out the window opened by that update
                w.call("transact", ["S", {"op": "insert", "table": "T", "row": {"k": 2}}])
                second = _wait_update(c, 5)
                assert second is not None and second > DELAY_MS / 1000 * 0.6, second
                time.sleep(DELAY_MS / 1000 * 2.5)  # two windows: the second one empty
    finally:
        srv.stop()


def test_one_batch_different_commits_per_monitor(tmp_path: Path) -> None:
    """Two transactions read in one pass, each concerning another session's monitor:
    each session gets its own row, not the other's merged commits (monitors share a
    batch's merged changeset only when they got the same commits)."""
    srv = start(tmp_path, 0)
    try:
        with Client(srv.unix) as x, Client(srv.unix) as y, Client(srv.unix) as w:
            reps = {"x": monitor(x, "monitor_cond_since", "x", [["k", "==", 1]]),
                    "y": monitor(y, "monitor_cond_since", "y", [["k", "==", 9]])}
            msgs = [{"id": f"w{k}", "method": "transact", "params": ["S", {
                "op": "insert", "table": "T", "row": {"k": k}}]} for k in (1, 9)]
            w.sock.sendall(b"".join(json.dumps(m).encode() for m in msgs))  # (one write)
            for m in msgs:
                assert w.wait(m["id"])["error"] is None
            drain(x, {"x": reps["x"]}, quiet=0.5)
            drain(y, {"y": reps["y"]}, quiet=0.5)
            assert [r[0] for r in reps["x"].normalized().values()] == [1]
            assert [r[0] for r in reps["y"].normalized().values()] == [9]
    finally:
        srv.stop()


def test_own_transaction_update_before_its_reply(tmp_path: Path) -> None:
    srv = start(tmp_path, DELAY_MS)
    try:
        with Client(srv.unix) as c, Client(srv.unix) as w:
            monitor(c, "monitor_cond_since", "m", None)
            w.call("transact", ["S", {"op": "insert", "table": "T", "row": {"k": 1}}])
            assert _wait_update(c, 5) is not None  # the window is open now
            w.call("transact", ["S", {"op": "insert", "table": "T", "row": {"k": 2}}])
            t0 = time.monotonic()
            msg_id = c.send("transact", ["S", {"op": "insert", "table": "T",
                                                "row": {"k": 3}}])
            seen: list[Any] = []
            c.timeout = 5
            while not any(m.get("id") == msg_id for m in seen):
                seen += c.read()
            assert time.monotonic() - t0 < DELAY_MS / 1000 / 2  # the reply is not held
            kinds = [m.get("method") or "reply" for m in seen]
            assert kinds == ["update3", "reply"], kinds
            (rows,) = seen[0]["params"][2].values()
            assert sorted(r["insert"]["k"] for r in rows.values()) == [2, 3]
    finally:
        srv.stop()


@pytest.mark.parametrize("value", ["-1", "x", "60001"])
def test_bad_values_are_refused(tmp_path: Path, value: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pyovsdb", "server",
                           f"--update-delay-ms={value}", "--no-chdir",
                           f"--remote=punix:{tmp_path}/x.sock", str(tmp_path / "none.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "--update-delay-ms takes milliseconds from 0 to 60000" in proc.stderr
