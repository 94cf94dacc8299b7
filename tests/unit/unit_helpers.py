"""Shared helpers for the core unit tests.

Expected values in these tests are what the real ovsdb-server 3.1 replies (see the facts
document the suite was written from). Rows are inserted with explicit `"uuid"` members
(an OVS extension) wherever possible, so that results and error messages are
deterministic; `U(n)` builds such uuids.

Table-driven tests use `Case`: optional setup transactions that must commit, then the
operations under test and the exact expected result array. `run_case` also checks that a
failed transaction leaves the database exactly as it was.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pyovsdb.ovsdb.database import Database
from pyovsdb.ovsdb.schema import DatabaseSchema
from pyovsdb.ovsdb.transaction import Blocked, Committed, Failed, execute
from pyovsdb.storage.schemafile import load_schema

HERE = Path(__file__).resolve().parent
SCHEMA_PATH = HERE / "schemas" / "every_type.ovsschema"
REPO = HERE.parent.parent
OVN_NB_PATH = REPO / "src" / "pyovsdb" / "schemas" / "ovn-nb.ovsschema"


def U(n: int) -> str:
    """A deterministic uuid string: U(1) == "00000000-0000-0000-0000-000000000001"."""
    return f"00000000-0000-0000-0000-{n:012x}"


def UU(n: int) -> list[str]:
    """The JSON form of U(n)."""
    return ["uuid", U(n)]


ZERO = "00000000-0000-0000-0000-000000000000"


def schema_json() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


@functools.cache
def schema() -> DatabaseSchema:
    """The every-type schema: A, B, C, W, WS, I2, I3 are root tables, N is not."""
    return load_schema(str(SCHEMA_PATH))


@functools.cache
def schema_no_root() -> DatabaseSchema:
    """The same schema with no table declaring isRoot true (N keeps isRoot false): every
    table is then a root table and nothing is ever garbage collected."""
    js = schema_json()
    for t in js["tables"].values():
        if t.get("isRoot") is True:
            del t["isRoot"]
    return DatabaseSchema.from_json(js)


@functools.cache
def ovn_nb_schema() -> DatabaseSchema:
    """The real OVN Northbound schema shipped with the package."""
    return load_schema(str(OVN_NB_PATH))


def schema_named(name: str) -> DatabaseSchema:
    return {"T": schema, "T0": schema_no_root, "NB": ovn_nb_schema}[name]()


def new_db(s: DatabaseSchema | None = None) -> Database:
    return Database(s if s is not None else schema())


# ---------------------------------------------------------------------------------------
# Matchers for values that are random or whose order is unspecified.


class _Any:
    def __eq__(self, other: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()

_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


class _AnyUuid:
    """Equals ["uuid", <lowercase uuid string>]."""

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, list)
            and len(other) == 2
            and other[0] == "uuid"
            and isinstance(other[1], str)
            and _UUID_RE.match(other[1]) is not None
        )

    def __repr__(self) -> str:
        return "ANY_UUID"


ANY_UUID = _AnyUuid()


class Re:
    """Equals a string that fully matches the regular expression."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.rx = re.compile(pattern, re.S)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.rx.fullmatch(other) is not None

    def __repr__(self) -> str:
        return f"Re({self.pattern!r})"


UUID_RX = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


class OneOf:
    """Equals any of the given values."""

    def __init__(self, *options: object) -> None:
        self.options = options

    def __eq__(self, other: object) -> bool:
        return any(other == o for o in self.options)

    def __repr__(self) -> str:
        return f"OneOf{self.options!r}"


INDEX_INSERTED = "was inserted by this transaction."
INDEX_UNMODIFIED = ("existed in the database before this transaction and was not modified by "
                    "the transaction.")
INDEX_MODIFIED_OTHER = ("existed in the database before this transaction, which modified some "
                        "of the row's columns but not any columns in this index.")


def index_before(values: str) -> str:
    return f"had the following index values before the transaction: {values}."


def index_details(table: str, values: str, columns: str, r1: tuple[str, str],
                  r2: tuple[str, str]) -> OneOf:
    """The index uniqueness message, in either order: which row is "First" depends on a
    comparison of all columns, including _version, so it is effectively arbitrary."""
    out = []
    for (u1, d1), (u2, d2) in ((r1, r2), (r2, r1)):
        out.append(
            f'Transaction causes multiple rows in "{table}" table to have identical values '
            f"({values}) for index on {columns}.  First row, with UUID {u1}, {d1}  Second "
            f"row, with UUID {u2}, {d2}"
        )
    return OneOf(*out)


# ---------------------------------------------------------------------------------------
# Running transactions


def snapshot(db: Database) -> dict[str, dict[str, tuple[str, dict[str, Any]]]]:
    """Every committed row: table -> uuid -> (version, data copy)."""
    return {
        tname: {u: (row.version, dict(row.data)) for u, row in table.rows.items()}
        for tname, table in db.tables.items()
    }


def derived_state(db: Database) -> Any:
    """The derived state Database.apply maintains (indexes, strong ref counts, weak ref
    back-pointers), as plain comparable values."""
    return {
        tname: (
            [dict(i) for i in table.indexes],
            dict(table.n_refs),
            {k: dict(v) for k, v in table.weak_refs_in.items()},
        )
        for tname, table in db.tables.items()
    }


def recomputed_derived_state(db: Database) -> Any:
    """Derived state rebuilt from scratch from the rows, by replaying them into an
    empty database (what `derived_state(db)` must equal)."""
    from pyovsdb.ovsdb.changeset import Changeset, RowChange

    fresh = Database(db.schema)
    cs = Changeset(
        {
            tname: {u: RowChange(u, None, row) for u, row in table.rows.items()}
            for tname, table in db.tables.items()
            if table.rows
        }
    )
    fresh.apply(cs)
    return derived_state(fresh)


def execute_ops(db: Database, ops: list[Any], **kw: Any) -> Any:
    ops = copy.deepcopy(ops)
    return execute(db, ops, **kw)


def commit(db: Database, ops: list[Any], **kw: Any) -> list[Any]:
    """Execute `ops`, require success, apply the changeset; return the results."""
    out = execute_ops(db, ops, **kw)
    assert isinstance(out, Committed), f"expected commit, got {type(out).__name__}: " + (
        repr(out.results) if isinstance(out, Failed) else repr(getattr(out, "deadline", None))
    )
    db.apply(out.changeset)
    return out.results


def fail(db: Database, ops: list[Any], **kw: Any) -> list[Any]:
    """Execute `ops`, require failure and an unchanged database; return the results."""
    before = snapshot(db)
    out = execute_ops(db, ops, **kw)
    assert isinstance(out, Failed), f"expected failure, got {type(out).__name__}: " + repr(
        getattr(out, "results", None)
    )
    assert snapshot(db) == before
    # The error object is the last non-null result.
    non_null = [r for r in out.results if r is not None]
    assert non_null[-1] == out.error.to_json()
    return out.results


def run(db: Database, ops: list[Any], **kw: Any) -> list[Any]:
    """Execute `ops`; apply if committed; return the result array (not for Blocked)."""
    before = snapshot(db)
    out = execute_ops(db, ops, **kw)
    if isinstance(out, Committed):
        db.apply(out.changeset)
        return out.results
    assert isinstance(out, Failed), f"unexpected {type(out).__name__}"
    assert snapshot(db) == before, "a failed transaction changed the database"
    return out.results


def select(db: Database, table: str, where: list[Any] | None = None, **kw: Any) -> list[Any]:
    op: dict[str, Any] = {"op": "select", "table": table, "where": where or []}
    op.update(kw)
    return commit(db, [op])[0]["rows"]


def rows_by_uuid(db: Database, table: str) -> dict[str, dict[str, Any]]:
    """Committed rows of `table` as JSON objects (select output) keyed by uuid string."""
    return {r["_uuid"][1]: r for r in select(db, table)}


def row_json(db: Database, table: str, uuid: str, *columns: str) -> dict[str, Any]:
    rows = select(db, table, [["_uuid", "==", ["uuid", uuid]]], columns=list(columns))
    assert len(rows) == 1, rows
    return rows[0]


def uuids(rows: list[dict[str, Any]]) -> set[str]:
    return {r["_uuid"][1] for r in rows}


# ---------------------------------------------------------------------------------------
# Table-driven cases


@dataclass
class Case:
    id: str
    ops: list[Any]
    expect: list[Any]
    setup: list[list[Any]] = field(default_factory=list)
    xfail: str | None = None  # reason, for known core bugs
    # "T" (every_type, with a root set), "T0" (every_type, no root set), "NB" (OVN NB)
    schema: str = "T"


def case_params(cases: list[Case]) -> list[Any]:
    out = []
    for c in cases:
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def run_case(case: Case) -> None:
    db = new_db(schema_named(case.schema))
    for txn in case.setup:
        commit(db, txn)
    results = run(db, case.ops)
    assert results == case.expect
    assert derived_state(db) == recomputed_derived_state(db)


# Convenience builders for operations.


def ins(table: str, row: dict[str, Any] | None = None, uuid: int | str | None = None,
        name: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "insert", "table": table}
    if row is not None:
        op["row"] = row
    if uuid is not None:
        op["uuid"] = U(uuid) if isinstance(uuid, int) else uuid
    if name is not None:
        op["uuid-name"] = name
    return op


def sel(table: str, where: list[Any] | None = None, **kw: Any) -> dict[str, Any]:
    op: dict[str, Any] = {"op": "select", "table": table, "where": where or []}
    op.update(kw)
    return op


def upd(table: str, where: list[Any], row: dict[str, Any]) -> dict[str, Any]:
    return {"op": "update", "table": table, "where": where, "row": row}


def mut(table: str, where: list[Any], mutations: list[Any]) -> dict[str, Any]:
    return {"op": "mutate", "table": table, "where": where, "mutations": mutations}


def dele(table: str, where: list[Any]) -> dict[str, Any]:
    return {"op": "delete", "table": table, "where": where}


def by_uuid(n: int | str) -> list[Any]:
    return [["_uuid", "==", ["uuid", U(n) if isinstance(n, int) else n]]]


# A valid row of table C (its scalar constrained columns have no valid default).
C_ROW = {"e": "red", "ie": 1, "ci": 5}

__all__ = [
    "ANY",
    "ANY_UUID",
    "C_ROW",
    "INDEX_INSERTED",
    "INDEX_MODIFIED_OTHER",
    "INDEX_UNMODIFIED",
    "OVN_NB_PATH",
    "SCHEMA_PATH",
    "UU",
    "UUID_RX",
    "ZERO",
    "Blocked",
    "Case",
    "Committed",
    "Failed",
    "OneOf",
    "Re",
    "U",
    "by_uuid",
    "case_params",
    "commit",
    "dele",
    "derived_state",
    "execute_ops",
    "fail",
    "index_before",
    "index_details",
    "ins",
    "mut",
    "new_db",
    "ovn_nb_schema",
    "recomputed_derived_state",
    "row_json",
    "rows_by_uuid",
    "run",
    "run_case",
    "schema",
    "schema_json",
    "schema_named",
    "schema_no_root",
    "sel",
    "select",
    "snapshot",
    "upd",
    "uuids",
]
