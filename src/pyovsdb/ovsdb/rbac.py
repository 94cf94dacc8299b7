"""What one client may write: the read-only flag and the role of the remote it came in
through, and role-based access control per the `RBAC_Role` / `RBAC_Permission` tables
(OVN's Southbound database; the real server's `rbac.c`).

Rules kept here:
- No role (absent or empty), or a database without an `RBAC_Role` table: every write is
  allowed as far as RBAC goes.
- Otherwise a write to a table needs a client id (the TLS peer's certificate CN; a
  client without TLS has none, so it is denied everything), the role's row in
  `RBAC_Role` (first row whose `name` holds it), and that role's `permissions` entry for
  the table (a row of the referenced table). Anything missing denies.
- A row is authorized when one of the permission's `authorization` names says so: the
  empty name authorizes every client; `COL` when the row's string column COL equals the
  client id; `COL:KEY` when the row's string-to-string map COL has KEY with that value.
- insert and delete need the row(s) authorized and `insert_delete` true; update and
  mutate need every matching row authorized and every column written listed in
  `update`. A column of the wrong type counts as absent, as in the real server.
- Denials are `permission error`s with the real wording; a missing client id is printed
  as `(null)`, as the real server's C formatting prints it.
- `convert` is for clients without a role only.
- Read-only clients may run select, wait, abort, comment and assert; anything else is
  `not allowed` with the real wording (checked by the transaction engine).
Pure: reads rows it is given, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .database import Database, Table
from .errors import OvsdbError
from .row import Row
from .schema import TableSchema
from .types import UINT_MAX, ColumnType

READ_ONLY_REASON = "when database server is in read only mode"


class Access:
    """The requesting client as the transaction engine sees it. It is called as the
    engine's lock test (`owns_lock`), so that every layer that runs a transaction again
    later (blocked waits, a cluster member's retries) applies the permissions the client
    had when it asked, without knowing about them; the real server also keeps them
    with the pending transaction."""

    __slots__ = ("_owns_lock", "client_id", "read_only", "role")

    def __init__(self, owns_lock: Callable[[str], bool] | None = None, *,
                 read_only: bool = False, role: str | None = None,
                 client_id: str | None = None) -> None:
        self._owns_lock = owns_lock
        self.read_only = read_only
        self.role = role
        self.client_id = client_id

    def __call__(self, lock: str) -> bool:
        return self._owns_lock is not None and self._owns_lock(lock)


def _unlimited(t: ColumnType) -> bool:
    return t.max == float("inf") or t.max == UINT_MAX


def _column(ts: TableSchema, name: str) -> ColumnType | None:
    col = ts.columns.get(name)
    return None if col is None else col.type


def _atoms(value: Any) -> tuple[Any, ...]:
    return value if type(value) is tuple else (value,)


def read_string(ts: TableSchema, data: dict[str, Any], name: str) -> str | None:
    """A column holding at most one string, else None."""
    t = _column(ts, name)
    if t is None or t.key.type != "string" or t.value is not None or t.max != 1:
        return None
    atoms = _atoms(data[name])
    return atoms[0] if atoms else None


def read_bool(ts: TableSchema, data: dict[str, Any], name: str) -> bool | None:
    t = _column(ts, name)
    if t is None or t.key.type != "boolean" or t.value is not None or t.max != 1:
        return None
    atoms = _atoms(data[name])
    return bool(atoms[0]) if atoms else None


def read_string_set(ts: TableSchema, data: dict[str, Any], name: str) -> tuple[str, ...] | None:
    t = _column(ts, name)
    if t is None or t.key.type != "string" or t.value is not None or not _unlimited(t):
        return None
    return _atoms(data[name])


def read_map_value(ts: TableSchema, data: dict[str, Any], name: str, key: str) -> str | None:
    t = _column(ts, name)
    if (t is None or t.key.type != "string" or t.value is None or t.value.type != "string"
            or not _unlimited(t)):
        return None
    for k, v in data[name]:
        if k == key:
            return str(v)
    return None


def _split_map_name(name: str) -> tuple[str | None, str | None]:
    """"COL:KEY" split the way C's strtok does it: empty fields are skipped, anything
    after a third field ignored."""
    fields = [f for f in name.split(":") if f]
    return (fields[0] if fields else None), (fields[1] if len(fields) > 1 else None)


class Rbac:
    """The RBAC checks for one transaction of one client, or None from `for_access` when
    nothing restricts it. `row_of(table, uuid)` is the row as the transaction sees it
    (permission rows may have changed earlier in the same transaction)."""

    def __init__(self, db: Database, role: str, client_id: str | None,
                 row_of: Callable[[Table, str], Row | None] | None = None) -> None:
        self.db = db
        self.role = role
        self.client_id = client_id
        self.row_of = row_of or (lambda table, uuid: table.rows.get(uuid))

    @classmethod
    def for_access(cls, db: Database, access: Access | None,
                   row_of: Callable[[Table, str], Row | None] | None = None) -> Rbac | None:
        if access is None or not access.role or "RBAC_Role" not in db.tables:
            return None
        return cls(db, access.role, access.client_id, row_of)

    # -- lookups -----------------------------------------------------------------------

    def permissions(self, table: str) -> tuple[TableSchema, dict[str, Any]] | None:
        """The role's permission row for `table` (schema, values), or None."""
        roles = self.db.tables["RBAC_Role"]
        rs = roles.schema
        name_t = _column(rs, "name")
        if name_t is None or name_t.key.type != "string":
            return None
        role_row = None
        for row in roles.rows.values():
            if any(a and a == self.role for a in _atoms(row.data["name"])):
                role_row = row
                break
        if role_row is None:
            return None
        perm_t = _column(rs, "permissions")
        if (perm_t is None or perm_t.key.type != "string" or perm_t.value is None
                or perm_t.value.type != "uuid" or perm_t.value.ref_table is None):
            return None
        ref = self.db.tables.get(perm_t.value.ref_table)
        if ref is None:
            return None
        for k, uuid in role_row.data["permissions"]:
            if k == table:
                perm = self.row_of(ref, uuid)
                return None if perm is None else (ref.schema, perm.data)
        return None

    def authorized(self, perms: tuple[TableSchema, dict[str, Any]], ts: TableSchema,
                   data: dict[str, Any]) -> bool:
        names = read_string_set(perms[0], perms[1], "authorization")
        if names is None:
            return False
        for name in names:
            if name == "":
                return True
            if ":" in name:
                col, key = _split_map_name(name)
                value = (read_map_value(ts, data, col, key)
                         if col is not None and key is not None else None)
            else:
                value = read_string(ts, data, name)
            if value is not None and value == self.client_id:
                return True
        return False

    # -- the checks, one per operation -------------------------------------------------

    def may_insert(self, table: Table, data: dict[str, Any]) -> bool:
        perms = self._perms(table)
        return (perms is not None and self.authorized(perms, table.schema, data)
                and read_bool(perms[0], perms[1], "insert_delete") is True)

    def may_delete(self, table: Table, rows: Iterable[Row]) -> bool:
        perms = self._perms(table)
        if perms is None:
            return False
        insert_delete = read_bool(perms[0], perms[1], "insert_delete") is True
        return all(self.authorized(perms, table.schema, r.data) and insert_delete
                   for r in rows)

    def may_modify(self, table: Table, columns: Iterable[str], rows: Iterable[Row]) -> bool:
        """update and mutate: the same rule, different wording when denied."""
        perms = self._perms(table)
        if perms is None:
            return False
        updatable = read_string_set(perms[0], perms[1], "update")
        if updatable is None:
            return False
        cols = list(columns)
        return all(self.authorized(perms, table.schema, r.data)
                   and all(c in updatable for c in cols) for r in rows)

    def _perms(self, table: Table) -> tuple[TableSchema, dict[str, Any]] | None:
        if self.client_id is None:
            return None
        return self.permissions(table.name)

    def denied(self, op: str, table: str) -> OvsdbError:
        return OvsdbError("permission error", _DENIED[op].format(
            client=_c_string(self.client_id), role=self.role, table=table))


_DENIED = {
    "insert": 'RBAC rules for client "{client}" role "{role}" prohibit row insertion into '
              'table "{table}".',
    "delete": 'RBAC rules for client "{client}" role "{role}" prohibit row deletion from '
              'table "{table}".',
    "update": 'RBAC rules for client "{client}" role "{role}" prohibit modification of '
              'table "{table}".',
    "mutate": 'RBAC rules for client "{client}" role "{role}" prohibit mutate operation on '
              'table "{table}".',
}


def _c_string(s: str | None) -> str:
    return "(null)" if s is None else s


def convert_denied(access: Access, db_name: str) -> OvsdbError | None:
    """Why this client may not convert `db_name`, or None if it may (any database: the
    real server refuses every client with a role, RBAC tables or not)."""
    if access.role:
        return OvsdbError(
            "permission error",
            f'RBAC rules for client "{_c_string(access.client_id)}" role "{access.role}" '
            f'prohibit "convert" of database {db_name} (only the root role may convert '
            "databases)")
    if access.read_only:
        return OvsdbError("not allowed",
                          f"conversion is not allowed for read-only database {db_name}")
    return None
