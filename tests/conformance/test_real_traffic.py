"""The capture tooling: the recording proxy in front of a real ovsdb-server, and the
turning of a recording into a replayable case (placeholders by birth, scrubbing)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from conformance_harness import Framer
from real_traffic import Births, Scrubber, recording_to_steps, unresolved_uuid
from recorder import Recorder

from procs import NB_SCHEMA, ServerProcess, create_db, require

X = "3f1c0a52-7d9e-4c1b-9f0e-2a6b8c4d5e6f"
Y = "9b2d4e6f-1a3c-4e5f-8a7b-6c5d4e3f2a1b"
OWN = "aaaaaaaa-0000-0000-0000-000000000001"


def _talk(path: str, msgs: list[dict[str, Any]], n_replies: int) -> list[Any]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(5)
    framer = Framer()
    got: list[Any] = []
    try:
        for m in msgs:
            s.sendall(json.dumps(m).encode())
        while len(got) < n_replies:
            data = s.recv(65536)
            assert data, "the proxy closed the connection"
            got += framer.feed(data)
    finally:
        s.close()
    return got


@pytest.mark.interop
def test_recorder_passes_everything_and_records_both_ways(tmp_path: Path) -> None:
    require("ovsdb-server", "ovsdb-tool")
    db = create_db("real", tmp_path / "nb.db", NB_SCHEMA)
    with ServerProcess("real", tmp_path, [db], name="nb") as srv:
        rec = Recorder(str(tmp_path / "rec.sock"), srv.sock).start()
        try:
            ins = {"method": "transact", "id": 7, "params": [
                "OVN_Northbound", {"op": "insert", "table": "Logical_Switch",
                                   "row": {"name": "sw0"}}]}
            echo = {"method": "echo", "id": "e", "params": ["x"]}
            got = _talk(str(tmp_path / "rec.sock"), [ins, echo], 2)
            deadline = time.monotonic() + 5
            while not any(e.dir == "close" for e in rec.snapshot()):
                assert time.monotonic() < deadline, "the close was not recorded"
                time.sleep(0.02)
        finally:
            rec.stop()
    events = rec.snapshot()
    # What the client got is what was recorded from the server, in order.
    assert [e.msg for e in events if e.dir == "s2c"] == got
    assert [e.msg for e in events if e.dir == "c2s"] == [ins, echo]
    assert got[0]["id"] == 7 and got[0]["result"][0]["uuid"][0] == "uuid"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].dir == "close" and events[-1].msg == "client"
    assert {e.conn for e in events} == {1}


def _ev(conn: int, d: str, msg: Any) -> dict[str, Any]:
    return {"conn": conn, "dir": d, "msg": msg}


def _insert_reply(rid: int, u: str) -> dict[str, Any]:
    return {"id": rid, "result": [{"uuid": ["uuid", u]}], "error": None}


def test_server_uuids_become_placeholders_by_birth() -> None:
    upd = {"method": "update3", "id": None,
           "params": ["m", "00000000-0000-0000-0000-000000000000",
                      {"T": {Y: {"insert": {}}, X: {"insert": {}}}}]}
    events = [
        _ev(1, "c2s", {"method": "transact", "id": 1, "params": ["D", {"op": "insert"},
                                                                 {"op": "insert"}]}),
        _ev(2, "s2c", upd),  # another client hears of both rows first, in hash order
        _ev(1, "s2c", _insert_reply(1, X) | {"result": [{"uuid": ["uuid", X]},
                                                        {"uuid": ["uuid", Y]}]}),
        _ev(1, "c2s", {"method": "echo", "id": "e", "params": []}),
        _ev(1, "s2c", {"method": "echo", "id": "p", "params": []}),
        _ev(1, "c2s", {"id": "p", "result": [], "error": None}),
        _ev(2, "c2s", {"method": "transact", "id": 1, "params": [
            "D", {"op": "update", "where": [["_uuid", "==", ["uuid", Y]]]},
            {"op": "insert", "uuid": OWN, "row": {"r": ["uuid", X]}}]}),
        _ev(2, "close", "client"),
    ]
    steps, counts, seen = recording_to_steps(events, Scrubber({}, "", []))
    assert [s["conn"] for s in steps] == ["c1", "c2", "c2"]
    req = steps[1]["request"]
    # Named by birth (insert order in the reply), not by first sight in the update.
    assert req["params"][1]["where"] == [["_uuid", "==", ["uuid", "<u2>"]]]
    assert req["params"][2] == {"op": "insert", "uuid": OWN, "row": {"r": ["uuid", "<u1>"]}}
    assert steps[2] == {"conn": "c2", "close": True}
    assert steps[0]["recorded_reply"] == ["uuid", "uuid"]
    assert counts["left out"] == 2 and counts["placeholders"] == 2
    assert seen == {"c1": ["<u1>", "<u2>"], "c2": ["<u1>", "<u2>"]}

    # At replay another server's UUIDs born at the same place take the names.
    b = Births({OWN})
    other_x, other_y = "11111111-2222-4333-8444-555555555555", \
        "66666666-7777-4888-9999-aaaaaaaaaaaa"
    b.step([({"method": "transact"}, {"id": 1, "result": [{"uuid": ["uuid", other_x]},
                                                          {"uuid": ["uuid", other_y]}]})],
           [])
    missing: list[str] = []
    assert b.resolve(req, missing)["params"][1]["where"][0][2] == ["uuid", other_y]
    assert b.resolve(["<u3>"], missing) == [unresolved_uuid("<u3>")] and missing == ["<u3>"]


def test_scrubbed_paths_host_and_pids() -> None:
    scrub = Scrubber({"/x/run": "@RUNDIR@", "/x/run/deeper": "@DEEP@"}, "box7", [4242])
    v = {"comment": "ovs-vsctl --db=unix:/x/run/deeper/db.sock on box7 (pid 4242)",
         "n": 4242, "k": "box70 42420"}
    assert scrub(v) == {"comment": "ovs-vsctl --db=unix:@DEEP@/db.sock on @HOST@ "
                                   "(pid @PID1@)", "n": 4242, "k": "box70 42420"}


def test_a_cut_closes_right_after_what_the_connection_last_heard() -> None:
    mon = {"method": "monitor_cond", "id": 1, "params": ["D", "m", {"T": {}}]}
    ins = {"method": "transact", "id": 1, "params": ["D", {"op": "insert"}]}
    events = [
        _ev(1, "c2s", mon), _ev(1, "s2c", {"id": 1, "result": {}, "error": None}),
        _ev(2, "c2s", ins),
        _ev(2, "s2c", _insert_reply(1, X)),
        # The proxy cut connection 1 after the insert: its update was lost in the cut.
        _ev(1, "close", "proxy"),
    ]
    steps, _, seen = recording_to_steps(events, Scrubber({}, "", []))
    assert steps == [{"conn": "c1", "request": mon, "recorded_reply": []},
                     {"conn": "c1", "close": True},
                     {"conn": "c2", "request": ins, "recorded_reply": ["uuid"]}]
    assert seen == {"c1": [], "c2": ["<u1>"]}
