"""Fuzz target: the transaction engine (`pyovsdb.ovsdb.transaction.execute`) on the
every-type schema of the unit tests.

The input is a sequence of decisions (`Choices`) that builds a few transactions of
operations, most of them valid, some subtly wrong (a wrong type, a missing member, a
dangling reference, an index or size violation) and some garbage. Each is executed
against a database built by the ones before. Properties checked:
- `execute` returns an outcome; only a well-formed one: one result per operation, and
  on failure exactly one error object (after the failing operation's results, with
  `null` for the rest, or appended after the last result when the commit checks fail).
- A failed or blocked transaction leaves the database exactly as it was.
- A committed changeset written as an OVS log record (`Changeset.to_record`, framed by
  `storage.log`) and read back (`Changeset.from_record`) onto a replica rebuilds the
  same database: the replica is what a restart would load.
- After each commit the database keeps its invariants: strong references point to
  existing rows, weak references too (dangling ones are removed), rows of the non-root
  table are referenced, indexes are unique, and results are valid wire JSON. (A row
  that names its own UUID in a reference to another table is let through, as the real
  server does.)

Run it: `python tests/fuzz/fuzz_txn.py [libFuzzer options] [corpus dirs]`
(docs/fuzzing.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from fuzzing import Choices, instrumented, run

with instrumented():
    from pyovsdb.jsonrpc.stream import dumps
    from pyovsdb.ovsdb.changeset import Changeset
    from pyovsdb.ovsdb.database import Database
    from pyovsdb.ovsdb.schema import DatabaseSchema
    from pyovsdb.ovsdb.transaction import Blocked, Committed, Failed, execute
    from pyovsdb.storage.log import frame, parse_records

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "unit" / "schemas" / \
    "every_type.ovsschema"
SCHEMA_JSON: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
SCHEMA = DatabaseSchema.from_json(SCHEMA_JSON)
TABLES = sorted(SCHEMA_JSON["tables"])

INTS = [0, 1, -1, 2, 3, 4, 5, 7, 10, 11, 100, 2**62, 2**63 - 1, -(2**63)]
REALS = [0.0, 0.5, 1.0, 1.5, 2.5, -3.25, 1e300, -1e300, 1e-300]
STRINGS = ["", "a", "b", "ab", "abcd", "abcde", "red", "green", "only", "k1", "k2", "x",
           "é", "\u2028", 'q"\\', "long" * 20]
GARBAGE: list[Any] = [None, {}, [], "x", 1, 1.5, True, ["set"], ["set", [1, "a"]],
                      ["map", [[1]]], ["map", [["a", 1], ["a", 2]]], ["uuid", "zz"],
                      ["named-uuid", "nobody"], ["set", [["uuid", "zz"]]], {"a": 1},
                      ["uuid", "00000000-0000-0000-0000-000000000001"]]
MUTATORS = ["+=", "-=", "*=", "/=", "%=", "insert", "delete"]
FUNCTIONS = ["==", "!=", "<", "<=", ">", ">=", "includes", "excludes"]


def _type(col: dict[str, Any]) -> dict[str, Any]:
    t = col["type"]
    if isinstance(t, str):
        t = {"key": t}
    key = t["key"] if isinstance(t["key"], dict) else {"type": t["key"]}
    value = t.get("value")
    if value is not None and not isinstance(value, dict):
        value = {"type": value}
    mx = t.get("max", 1)
    return {"key": key, "value": value, "min": t.get("min", 1),
            "max": 1 << 30 if mx == "unlimited" else mx}


COLUMNS = {t: {c: _type(spec) for c, spec in SCHEMA_JSON["tables"][t]["columns"].items()}
           for t in TABLES}


class Gen:
    """Builds operations from choices, knowing the rows that exist and the names
    defined so far in the transaction."""

    def __init__(self, ch: Choices, db: Database) -> None:
        self.ch = ch
        self.db = db
        self.names: list[tuple[str, str]] = []  # (uuid-name, table)

    def uuid(self, table: str | None) -> Any:
        ch = self.ch
        if table is not None and table in self.db.tables:
            names = [n for n, t in self.names if t == table]
            rows = list(self.db.tables[table].rows)
            k = ch.below(4)
            if k <= 1 and names:
                return ["named-uuid", ch.pick(names)]
            if k <= 2 and rows:
                return ["uuid", ch.pick(rows)]
        return ["uuid", f"00000000-0000-0000-0000-{ch.below(16):012x}"]

    def atom(self, base: dict[str, Any]) -> Any:
        ch = self.ch
        if "enum" in base and not ch.chance(4):
            enum = base["enum"]
            return ch.pick(enum[1]) if isinstance(enum, list) else enum
        kind = base["type"]
        if kind == "integer":
            return ch.pick(INTS)
        if kind == "real":
            return ch.pick(REALS)
        if kind == "boolean":
            return ch.chance(2)
        if kind == "string":
            return ch.pick(STRINGS)
        return self.uuid(base.get("refTable"))

    def datum(self, t: dict[str, Any]) -> Any:
        ch = self.ch
        if ch.chance(48):
            return ch.pick(GARBAGE)
        low = 0 if ch.chance(16) else t["min"]
        n = low + ch.below(max(min(t["max"], 4) - low, 0) + 1)
        if t["value"] is not None:
            pairs = {orjson.dumps(k): [k, self.atom(t["value"])]
                     for k in (self.atom(t["key"]) for _ in range(n))}
            return ["map", list(pairs.values()) if not ch.chance(16) else
                    [*pairs.values(), *pairs.values()]]
        if t["min"] == 1 and t["max"] == 1 and not ch.chance(4):
            return self.atom(t["key"])
        if n == 1 and ch.chance(2):
            return self.atom(t["key"])
        atoms = {orjson.dumps(a): a for a in (self.atom(t["key"]) for _ in range(n))}
        return ["set", list(atoms.values()) if not ch.chance(16) else
                [*atoms.values(), *atoms.values()]]

    def table(self) -> str:
        return self.ch.pick(TABLES) if not self.ch.chance(80) else "Nope"

    def column(self, table: str) -> str:
        cols = list(COLUMNS.get(table, {})) or ["x"]
        k = self.ch.below(60)
        if k == 0:
            return "nope"
        if k == 1:
            return "_uuid"
        if k == 2:
            return "_version"
        return self.ch.pick(cols)

    def value_for(self, table: str, column: str) -> Any:
        t = COLUMNS.get(table, {}).get(column)
        if t is None:
            return ["uuid", "00000000-0000-0000-0000-000000000000"] if column == "_uuid" \
                else self.ch.pick(GARBAGE)
        return self.datum(t)

    def row(self, table: str) -> dict[str, Any]:
        return {(c := self.column(table)): self.value_for(table, c)
                for _ in range(self.ch.below(5))}

    def where(self, table: str) -> list[Any]:
        ch = self.ch
        out: list[Any] = []
        for _ in range(ch.below(3)):
            if ch.chance(20):
                out.append(ch.pick([True, False, [], ["x"], 1]))
                continue
            c = self.column(table)
            if c == "_uuid" and not ch.chance(3):
                out.append(["_uuid", "==", self.uuid(table)])
            else:
                out.append([c, ch.pick(FUNCTIONS), self.value_for(table, c)])
        return out

    def op_write(self) -> Any:
        """An insert, update or mutate that is usually valid, so that transactions often
        commit and later ones work on real rows."""
        ch = self.ch
        table = ch.pick(TABLES)
        cols = COLUMNS[table]
        # constrained columns whose default value breaks the constraint always get one
        row = {c: self.datum(cols[c]) for c in cols
               if ch.chance(3) or (len(cols[c]["key"]) > 1 and "refTable" not in cols[c]["key"])}
        rows = list(self.db.tables[table].rows)
        if rows and not ch.chance(3):
            where = [["_uuid", "==", ["uuid", ch.pick(rows)]]]
            if ch.chance(2):
                c = ch.pick(list(cols))
                return {"op": "mutate", "table": table, "where": where, "mutations": [
                    [c, ch.pick(MUTATORS), self.datum(cols[c]) if not ch.chance(3)
                     else self.atom(cols[c]["key"])]]}
            return {"op": "update", "table": table, "where": where,
                    "row": {c: v for c, v in row.items() if c != "imm"}}
        name = f"n{len(self.names)}"
        self.names.append((name, table))
        return {"op": "insert", "table": table, "row": row, "uuid-name": name}

    def op(self) -> Any:
        ch = self.ch
        kind = ch.below(24)
        table = self.table()
        if kind <= 3:
            op: dict[str, Any] = {"op": "insert", "table": table, "row": self.row(table)}
            if not ch.chance(3):
                name = f"n{len(self.names)}"
                op["uuid-name"] = name
                self.names.append((name, table))
            if ch.chance(8):
                op["uuid"] = f"00000000-0000-0000-0000-{ch.below(16):012x}"
            return op
        if kind == 4:
            return {"op": "select", "table": table, "where": self.where(table),
                    "columns": [self.column(table) for _ in range(ch.below(3))]}
        if kind <= 6:
            return {"op": "update", "table": table, "where": self.where(table),
                    "row": self.row(table)}
        if kind == 7:
            muts = []
            for _ in range(ch.below(3) + 1):
                c = self.column(table)
                t = COLUMNS.get(table, {}).get(c)
                arg = self.datum(t) if t is not None and not ch.chance(3) else \
                    self.atom(t["key"]) if t is not None else ch.pick(GARBAGE)
                muts.append([c, ch.pick(MUTATORS), arg])
            return {"op": "mutate", "table": table, "where": self.where(table),
                    "mutations": muts}
        if kind <= 9:
            return {"op": "delete", "table": table, "where": self.where(table)}
        if kind == 10:
            cols = [self.column(table) for _ in range(ch.below(2) + 1)]
            op = {"op": "wait", "table": table, "where": self.where(table), "columns": cols,
                  "until": ch.pick(["==", "!="]),
                  "rows": [{c: self.value_for(table, c) for c in cols}
                           for _ in range(ch.below(2))]}
            if not ch.chance(4):
                op["timeout"] = 0
            return op
        if kind <= 20:
            return self.op_write()
        if kind == 21:
            return ch.pick([{"op": "commit", "durable": ch.chance(2)}, {"op": "abort"},
                            {"op": "comment", "comment": ch.pick(STRINGS)},
                            {"op": "assert", "lock": "L"}])
        g = ch.pick(GARBAGE)
        return ch.pick([g, {"op": g}, {"op": "insert", "table": table, "row": g},
                        {"op": "select", "table": table, "where": g},
                        {"op": "insert", "table": table, "row": {}, "extra": 1}])


# -- checks -------------------------------------------------------------------------------


def contents(db: Database) -> dict[str, dict[str, Any]]:
    """Every row's persistent columns, as the wire shows them (read with `select`)."""
    ops = [{"op": "select", "table": t, "where": [],
            "columns": ["_uuid", *(c for c, spec in SCHEMA_JSON["tables"][t]["columns"]
                                   .items() if not spec.get("ephemeral"))]}
           for t in TABLES]
    out = execute(db, ops)
    assert isinstance(out, Committed) and not out.changeset, out
    return {t: {r["_uuid"][1]: r for r in res["rows"]} for t, res in zip(TABLES, out.results,
                                                                          strict=True)}


def _uuids(value: Any) -> list[str]:
    if isinstance(value, list) and len(value) == 2 and value[0] == "uuid":
        return [value[1]]
    if isinstance(value, list) and len(value) == 2 and value[0] in ("set", "map"):
        return [u for x in value[1] for y in (x if value[0] == "map" else [x])
                for u in _uuids(y)]
    return []


def check_invariants(rows: dict[str, dict[str, Any]]) -> None:
    referenced: set[str] = set()
    for table in TABLES:
        for uuid, row in rows[table].items():
            for c, t in COLUMNS[table].items():
                if c not in row:
                    continue
                value = row[c]
                targets: list[tuple[dict[str, Any], list[str]]] = []
                if t["value"] is None:
                    targets.append((t["key"], _uuids(value)))
                elif isinstance(value, list) and value[0] == "map":
                    targets.append((t["key"], [u for k, _ in value[1] for u in _uuids(k)]))
                    targets.append((t["value"], [u for _, v in value[1] for u in _uuids(v)]))
                for base, uuids in targets:
                    ref = base.get("refTable")
                    if ref is None:
                        continue
                    for u in uuids:
                        # A row may name itself in a reference to another table: the
                        # real server does not check such a self-reference (nor do we).
                        assert u in rows[ref] or u == uuid, (
                            f"{table} {uuid} {c} -> missing {ref} {u}")
                        if base.get("refType", "strong") == "strong" and u != uuid:
                            referenced.add(u)
    for table in TABLES:
        spec = SCHEMA_JSON["tables"][table]
        if spec.get("isRoot") is False:
            for uuid in rows[table]:
                assert uuid in referenced, f"unreferenced {table} row {uuid} survived"
        for index in spec.get("indexes", []):
            keys = [orjson.dumps([r.get(c) for c in index], option=orjson.OPT_SORT_KEYS)
                    for r in rows[table].values()]
            assert len(keys) == len(set(keys)), f"index {index} of {table} not unique"


def check_results(ops: list[Any], results: list[Any], failed: bool) -> None:
    assert isinstance(results, list)
    assert orjson.loads(dumps(results)) == results
    errors = [i for i, r in enumerate(results) if isinstance(r, dict) and "error" in r]
    if not failed:
        assert len(results) == len(ops) and not errors, results
        return
    assert len(errors) == 1, results
    (i,) = errors
    if i == len(ops):  # found by the commit checks
        assert all(r is not None for r in results[:i]), results
    else:
        assert len(results) == len(ops) and all(r is None for r in results[i + 1:]), results


def check(data: bytes, records: list[Any] | None = None) -> dict[str, dict[str, Any]]:
    """Run the input's transactions with every check; returns the final contents, and
    appends each committed transaction's record to `records` if given."""
    ch = Choices(data)
    db = Database(SCHEMA)
    replica = Database(SCHEMA)
    for n in range(1 + ch.below(5)):
        gen = Gen(ch, db)
        ops = [gen.op() for _ in range(1 + ch.below(5))]
        before = contents(db)
        outcome = execute(db, ops, now=1000.0 * n)
        if isinstance(outcome, Blocked):
            assert contents(db) == before
            continue
        if isinstance(outcome, Failed):
            check_results(ops, outcome.results, failed=True)
            assert contents(db) == before, "a failed transaction changed the database"
            continue
        assert isinstance(outcome, Committed), outcome
        check_results(ops, outcome.results, failed=False)
        cs = outcome.changeset
        cs.date = 1
        record = cs.to_record(SCHEMA)
        db.apply(cs)
        # what a restart would read: the framed record, parsed, applied to the replica
        (read,) = parse_records(frame(record)).records
        if records is not None and any(not k.startswith("_") for k in read):
            records.append(read)  # as the storage writes it: only real changes
        replayed = Changeset.from_record(SCHEMA, read,
                                         lambda t: replica.tables[t].rows,
                                         versions=replica.new_version)
        replica.apply(replayed)
        now = contents(db)
        assert contents(replica) == now, "the record does not rebuild the database"
        check_invariants(now)
    return contents(db)


def TestOneInput(data: bytes) -> None:
    check(data)


if __name__ == "__main__":
    run(TestOneInput)
