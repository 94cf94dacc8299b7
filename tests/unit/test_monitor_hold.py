"""The changes a monitor holds while its client does not read (`Monitor.hold`), merged
per row and rendered once: a replica built from that one update must equal one built
from every transaction's own update, and the database, for every sequence of changes
to a row (insert, modifications that bring it into or out of a condition, change
monitored or unwatched columns, or undo an earlier one, delete, insert again with the
same uuid), in the three wire versions.

Rules kept here:
- The replicas are strict: an insert of a row they hold, or a modify or delete of one
  they lack, fails the test (a client would be out of step).
- The merged update says no more than the net change: at most one row update per row,
  none for a row inserted and deleted, or changed and changed back.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from unit_helpers import U, new_db, schema

from pyovsdb.ovsdb.changeset import Changeset
from pyovsdb.ovsdb.transaction import Committed, execute
from pyovsdb.server.monitor import V1, V2, V3, Monitor, parse_monitor_requests

ROW, OTHER = U(1), U(2)
REQUESTS = {
    V1: {"A": {"columns": ["i", "si"]}},
    V2: {"A": [{"columns": ["i", "s", "si", "m"]}]},
    V3: {"A": [{"columns": ["s", "m"], "where": [["i", ">", 0]]}]},
}


def _where(uuid: str) -> list[Any]:
    return [["_uuid", "==", ["uuid", uuid]]]


# Each step is one transaction on ROW: (name, needs the row to exist, its operations).
STEPS: dict[str, tuple[bool, list[Any]]] = {
    "insert-in": (False, [{"op": "insert", "table": "A", "uuid": ROW, "row": {
        "i": 1, "s": "a", "si": ["set", [1]], "m": ["map", [["k", 1]]]}}]),
    "insert-out": (False, [{"op": "insert", "table": "A", "uuid": ROW, "row": {"i": 0}}]),
    "enter": (True, [{"op": "update", "table": "A", "where": _where(ROW), "row": {"i": 2}},
                     {"op": "mutate", "table": "A", "where": _where(ROW),
                      "mutations": [["si", "insert", ["set", [5]]]]}]),
    "leave": (True, [{"op": "update", "table": "A", "where": _where(ROW), "row": {"i": -1}}]),
    "change": (True, [{"op": "update", "table": "A", "where": _where(ROW), "row": {"s": "b"}},
                      {"op": "mutate", "table": "A", "where": _where(ROW),
                       "mutations": [["m", "insert", ["map", [["n", 2]]]],
                                     ["si", "delete", ["set", [1]]]]}]),
    "undo": (True, [{"op": "update", "table": "A", "where": _where(ROW), "row": {
        "s": "a", "si": ["set", [1]], "m": ["map", [["k", 1]]]}}]),
    "unwatched": (True, [{"op": "update", "table": "A", "where": _where(ROW),
                          "row": {"r": 2.5}}]),
    "delete": (True, [{"op": "delete", "table": "A", "where": _where(ROW)}]),
}
SETUP = [{"op": "insert", "table": "A", "uuid": OTHER, "row": {"i": 3, "s": "other"}}]


def sequences() -> list[tuple[bool, tuple[str, ...]]]:
    """Every valid sequence of one to three steps, from a row that exists or not."""
    out = []
    for exists in (False, True):
        for n in (1, 2, 3):
            for seq in itertools.product(STEPS, repeat=n):
                alive, ok = exists, True
                for name in seq:
                    needs, ops = STEPS[name]
                    ok = ok and needs == alive
                    alive = ops[0]["op"] != "delete" and (alive or ops[0]["op"] == "insert")
                if ok:
                    out.append((exists, seq))
    return out


class Replica:
    """One monitor's view of table A, built strictly from its updates."""

    def __init__(self, mon: Monitor) -> None:
        self.version = mon.version
        self.codecs = {c: codec for kind in mon.tables["A"].by_kind for c, codec in kind}
        self.rows: dict[str, dict[str, Any]] = {}

    def apply(self, updates: dict[str, Any] | None) -> None:
        for uuid, ru in (updates or {}).get("A", {}).items():
            if self.version == V1:
                if "new" not in ru:
                    assert uuid in self.rows, f"delete of a missing row: {ru}"
                    del self.rows[uuid]
                else:
                    assert ("old" in ru) == (uuid in self.rows), f"out of step: {ru}"
                    self.rows[uuid] = {c: self.codecs[c].from_json(v)
                                       for c, v in ru["new"].items()}
                continue
            ((kind, body),) = ru.items()
            if kind == "delete":
                assert uuid in self.rows, "delete of a missing row"
                del self.rows[uuid]
            elif kind in ("insert", "initial"):
                assert uuid not in self.rows, "insert of a row held already"
                row = {c: codec.default for c, codec in self.codecs.items() if c != "_version"}
                row.update({c: self.codecs[c].from_json(v) for c, v in body.items()})
                self.rows[uuid] = row
            else:
                assert uuid in self.rows, "modify of a missing row"
                row = self.rows[uuid]
                for c, v in body.items():
                    codec = self.codecs[c]
                    row[c] = codec.apply_diff(row[c], codec.diff_from_json(v))


def i_of(db: Any) -> Any:
    row = db.tables["A"].rows.get(ROW)
    return None if row is None else row.get("i")


def _monitor(version: int) -> Monitor:
    tables = parse_monitor_requests(schema(), REQUESTS[version], version)
    return Monitor(f"m{version}", "T", version, tables, None)


def _commit(db: Any, ops: list[Any]) -> Changeset:
    out = execute(db, ops, now=0.0)
    assert isinstance(out, Committed), out
    db.apply(out.changeset)
    return out.changeset


@pytest.mark.parametrize("version", [V1, V2, V3])
def test_held_changes_merge_per_row(version: int) -> None:
    checked = 0
    for exists, seq in sequences():
        db = new_db()
        _commit(db, SETUP + (STEPS["insert-in"][1] if exists else []))
        live, held = _monitor(version), _monitor(version)
        seen_live, seen_held = Replica(live), Replica(held)
        seen_live.apply(live.initial(db))
        seen_held.apply(held.initial(db))
        start = {u: dict(r) for u, r in seen_held.rows.items()}
        i0 = i_of(db)
        held.held = {}
        for name in seq:
            cs = _commit(db, STEPS[name][1])
            seen_live.apply(live.updates(cs, {}))
            held.hold(cs)
        merged = held.take_held(False)
        assert held.held is None
        if not exists and ROW not in db.tables["A"].rows:  # inserted, deleted: forgotten
            assert merged is None or ROW not in merged.tables.get("A", {}), seq
        update = held.updates(merged, {}) if merged is not None else None
        seen_held.apply(update)
        what = f"v{version} from {'a' if exists else 'no'} row, {' then '.join(seq)}"
        assert seen_held.rows == seen_live.rows, what
        # ... and both are the database seen through the monitor
        mt = held.tables["A"]
        want = {r.uuid: {c: r.get(c) for c in mt.columns if c != "_version"}
                for r in db.tables["A"].rows.values() if mt.matches(r)}
        assert {u: {c: v for c, v in row.items() if c != "_version"}
                for u, row in seen_held.rows.items()} == want, what
        # The merged update is the net change: one row update at most, for ROW only,
        # and none if the client's view of it is what it was (absent, or the same).
        rows = (update or {}).get("A", {})
        assert set(rows) <= {ROW}, what
        if start.get(ROW) == seen_held.rows.get(ROW):
            # (an empty modify says that a column the condition reads changed)
            assert not rows or (rows[ROW] == {"modify": {}} and i_of(db) != i0), \
                f"{what}: an update that changes nothing"
        checked += 1
    assert checked > 100


def test_holding_goes_on_and_skips_unwatched_tables() -> None:
    """A monitor holds only its tables' changes; `take_held(True)` starts afresh."""
    db = new_db()
    mon = _monitor(V2)
    mon.held = {}
    mon.hold(_commit(db, [{"op": "insert", "table": "B", "row": {"name": "x"}}]))
    assert mon.take_held(True) is None
    assert mon.held == {}
    mon.hold(_commit(db, STEPS["insert-in"][1]))
    merged = mon.take_held(True)
    assert merged is not None and set(merged.tables) == {"A"}
    assert mon.held == {}
