"""An update encoded once for many sessions (our server shares the rendering and the
bytes of a change among monitors alike) still reaches each session with its own
monitor id, its own columns and the rows its own condition selects: the notifications
of one change, session by session, equal the real ovsdb-server's.

Rules kept here:
- Sessions that differ only in their monitor id, in their columns, in their condition
  or in the protocol version (update2, update3) watch one table; each change (an
  insert, a modify, a delete) is compared notification by notification, with the row
  UUIDs and transaction ids (which differ between servers) replaced by names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from procs import ServerProcess
from pyovsdb.jsonrpc.client import Client

pytestmark = pytest.mark.interop

SCHEMA = {"name": "S", "version": "1.0.0", "tables": {"T": {"columns": {
    "k": {"type": "integer"}, "v": {"type": "string"}}, "isRoot": True}}}
ZERO = "00000000-0000-0000-0000-000000000000"
# (method, monitor id, request for T)
SESSIONS: list[tuple[str, Any, dict[str, Any]]] = [
    ("monitor_cond_since", ["monid", "S"], {"columns": ["k", "v"]}),
    ("monitor_cond_since", ["monid", "S"], {"columns": ["k", "v"]}),
    ("monitor_cond_since", "other", {"columns": ["k", "v"]}),
    ("monitor_cond_since", ["monid", "S"], {"columns": ["v"]}),
    ("monitor_cond_since", ["monid", "S"], {"columns": ["k", "v"], "where": [["k", "<", 5]]}),
    ("monitor_cond", ["monid", "S"], {"columns": ["k", "v"]}),
    ("monitor_cond", 7, {"columns": ["k", "v"], "where": [["k", ">=", 5]]}),
]
CHANGES: list[dict[str, Any]] = [
    {"op": "insert", "table": "T", "row": {"k": 1, "v": "a"}},
    {"op": "insert", "table": "T", "row": {"k": 9, "v": "b"}},
    {"op": "update", "table": "T", "where": [], "row": {"v": "c"}},
    {"op": "update", "table": "T", "where": [["k", "==", 9]], "row": {"k": 2}},
    {"op": "delete", "table": "T", "where": [["k", "==", 1]]},
]


def _run(srv: ServerProcess) -> list[list[Any]]:
    names: dict[str, str] = {}

    def named(value: Any) -> Any:
        if isinstance(value, dict):
            return {names.setdefault(k, f"row{len(names)}") if len(k) == 36 else k: named(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [named(v) for v in value]
        return value

    clients = [Client(srv.unix, timeout=30) for _ in SESSIONS]
    writer = Client(srv.unix, timeout=30)
    try:
        for c, (method, mon_id, req) in zip(clients, SESSIONS, strict=True):
            params: list[Any] = ["S", mon_id, {"T": [req]}]
            if method == "monitor_cond_since":
                params.append(ZERO)
            c.call(method, params)
        out = []
        for op in CHANGES:
            writer.call("transact", ["S", op])
            step = []
            for c in clients:
                # what the session got for this change (nothing, for a row its condition
                # never selects): the notifications before the reply to an echo
                reply = c.wait(c.send("echo", []))
                assert reply.get("error") is None
                got = [named(n) for n in c.notes]
                c.notes.clear()
                for n in got:
                    if n["method"] == "update3":
                        n["params"][1] = "txn"  # (transaction ids differ)
                step.append(got)
            out.append(step)
        return out
    finally:
        for c in [*clients, writer]:
            c.close()


def test_each_session_gets_its_own_update(
        server_pair: Callable[[str], dict[str, ServerProcess]], tmp_path: Path) -> None:
    schema = tmp_path / "s.ovsschema"
    schema.write_text(json.dumps(SCHEMA))
    results = {kind: _run(srv) for kind, srv in server_pair(str(schema)).items()}
    assert results["ours"] == results["real"]
    # not vacuous: every session saw updates, with its own monitor id
    for i, (_, mon_id, _) in enumerate(SESSIONS):
        seen = [n for step in results["ours"] for n in step[i]]
        assert seen and all(n["params"][0] == mon_id for n in seen), (i, seen)
