"""Database schemas (RFC 7047 section 3.2) with the OVS extensions.

Rules kept here:
- Every table implicitly has the read-only columns `_uuid` and `_version`.
- Names of user tables and columns match `[A-Za-z_][A-Za-z0-9_]*` and must not start
  with an underscore (reserved for the implicit columns and `_Server`).
- If no table sets "isRoot", every table is a root table (schemas older than garbage
  collection), as the real server does.
- A weak reference column is always mutable; a refTable must name a table of the schema.
- `to_json` gives the normalized form the real server reports (`get_schema`, `_Server`).
"""

from __future__ import annotations

import re
from typing import Any

from .errors import OvsdbError
from .types import UUID, BaseType, ColumnType

_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\Z")


def _err(details: str) -> OvsdbError:
    return OvsdbError("syntax error", details)


class ColumnSchema:
    __slots__ = ("ephemeral", "index", "mutable", "name", "type")

    def __init__(
        self, name: str, type: ColumnType, *, mutable: bool = True, ephemeral: bool = False
    ) -> None:
        self.name = name
        self.type = type
        self.mutable = mutable
        self.ephemeral = ephemeral
        self.index = -1  # position among the table's columns, set by TableSchema

    @property
    def persistent(self) -> bool:
        return not self.ephemeral

    @classmethod
    def from_json(cls, name: str, json: Any) -> ColumnSchema:
        if not isinstance(json, dict):
            raise _err(f"column {name} must be an object")
        for key in json:
            if key not in ("type", "mutable", "ephemeral"):
                raise _err(f"Parsing column {name} failed: unknown member '{key}'")
        if "type" not in json:
            raise _err(f"Parsing column {name} failed: Required 'type' member is missing.")
        ctype = ColumnType.from_json(json["type"])
        mutable = json.get("mutable", True)
        ephemeral = json.get("ephemeral", False)
        if type(mutable) is not bool or type(ephemeral) is not bool:
            raise _err(f"Parsing column {name} failed: mutable/ephemeral must be booleans")
        if ctype.key.is_weak_ref or (ctype.value is not None and ctype.value.is_weak_ref):
            mutable = True
        return cls(name, ctype, mutable=mutable, ephemeral=ephemeral)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type.to_json()}
        if not self.mutable:
            out["mutable"] = False
        if self.ephemeral:
            out["ephemeral"] = True
        return out


UUID_COLUMN = ColumnSchema("_uuid", ColumnType(BaseType(UUID)), mutable=False)
VERSION_COLUMN = ColumnSchema("_version", ColumnType(BaseType(UUID)), mutable=False)


class TableSchema:
    __slots__ = (
        "_defaults",
        "_root_set",
        "all_columns",
        "columns",
        "indexes",
        "is_root",
        "max_rows",
        "name",
        "persistent",
        "ref_columns",
        "single_checked",
        "strong_ref_columns",
        "weak_ref_columns",
    )

    def __init__(
        self,
        name: str,
        columns: dict[str, ColumnSchema],
        *,
        is_root: bool | None = None,
        max_rows: int | float = float("inf"),
        indexes: list[tuple[str, ...]] | None = None,
    ) -> None:
        self.name = name
        self.columns = columns
        for i, col in enumerate(columns.values()):
            col.index = i
        self.all_columns = {"_uuid": UUID_COLUMN, "_version": VERSION_COLUMN, **columns}
        self._root_set = is_root is not None
        self.is_root = bool(is_root)
        self.max_rows = max_rows
        self.indexes = indexes or []
        self.ref_columns = [c for c in columns.values() if c.type.has_refs]
        self.strong_ref_columns = [
            c
            for c in self.ref_columns
            if c.type.key.is_strong_ref or (c.type.value is not None and c.type.value.is_strong_ref)
        ]
        self.weak_ref_columns = [
            c
            for c in self.ref_columns
            if c.type.key.is_weak_ref or (c.type.value is not None and c.type.value.is_weak_ref)
        ]
        # Columns holding at most one atom whose type has constraints: the real server
        # checks these on insert even when they keep their default value.
        self.single_checked = [
            c for c in columns.values()
            if c.type.max == 1 and (c.type.key.has_constraints
                                    or (c.type.value is not None
                                        and c.type.value.has_constraints))
        ]
        self._defaults: dict[str, Any] | None = None
        # (name, codec, default) of the columns written to disk, for record rendering.
        self.persistent = [
            (n, c.type.codec, c.type.codec.default) for n, c in columns.items() if not c.ephemeral
        ]

    def defaults(self) -> dict[str, Any]:
        """A fresh dict of every column's default value."""
        d = self._defaults
        if d is None:
            d = self._defaults = {n: c.type.codec.default for n, c in self.columns.items()}
        return d.copy()

    @classmethod
    def from_json(cls, name: str, json: Any) -> TableSchema:
        if not isinstance(json, dict):
            raise _err(f"table {name} must be an object")
        for key in json:
            if key not in ("columns", "isRoot", "maxRows", "indexes"):
                raise _err(f"Parsing table {name} failed: unknown member '{key}'")
        cols_json = json.get("columns")
        if not isinstance(cols_json, dict):
            raise _err(f"Parsing table {name} failed: Required 'columns' member is missing.")
        if not cols_json:
            raise _err(f"table {name} must have at least one column")
        columns: dict[str, ColumnSchema] = {}
        for cname, cjson in cols_json.items():
            if cname.startswith("_"):
                raise _err(f"{cname}: names beginning with \"_\" are reserved")
            if not _ID_RE.match(cname):
                raise _err(f"{cname}: invalid column name")
            columns[cname] = ColumnSchema.from_json(cname, cjson)
        is_root = json.get("isRoot")
        if is_root is not None and type(is_root) is not bool:
            raise _err(f"table {name}: isRoot must be a boolean")
        max_rows: int | float = float("inf")
        if "maxRows" in json:
            mr = json["maxRows"]
            if type(mr) is not int or mr < 1:
                raise _err(f"table {name}: maxRows must be at least 1")
            max_rows = mr
        indexes: list[tuple[str, ...]] = []
        for idx in json.get("indexes", []):
            if not isinstance(idx, list) or not idx:
                raise _err(f"table {name}: index must be a nonempty array of column names")
            names: list[str] = []
            for cname in idx:
                col = columns.get(cname) if isinstance(cname, str) else None
                if col is None:
                    raise _err(f"table {name} has no column {cname!r} named in index")
                if col.ephemeral:
                    raise _err(
                        f"ephemeral columns (such as {cname}) may not be indexed because "
                        "the index could become inconsistent"
                    )
                names.append(cname)
            indexes.append(tuple(names))
        return cls(name, columns, is_root=is_root, max_rows=max_rows, indexes=indexes)

    def to_json(self, default_is_root: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": {n: c.to_json() for n, c in self.columns.items()}}
        if self.is_root != default_is_root:
            out["isRoot"] = self.is_root
        if self.max_rows != float("inf"):
            out["maxRows"] = self.max_rows
        if self.indexes:
            out["indexes"] = [list(i) for i in self.indexes]
        return out


class DatabaseSchema:
    __slots__ = ("cksum", "json", "name", "tables", "version")

    def __init__(
        self,
        name: str,
        tables: dict[str, TableSchema],
        version: str | None = None,
        cksum: str | None = None,
    ) -> None:
        self.name = name
        self.tables = tables
        self.version = version
        self.cksum = cksum
        self.json: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, json: Any, *, allow_reserved: bool = False) -> DatabaseSchema:
        if not isinstance(json, dict):
            raise _err("schema must be a JSON object")
        for key in json:
            if key not in ("name", "version", "cksum", "tables", "doc"):
                raise _err(f"Parsing database schema failed: unknown member '{key}'")
        name = json.get("name")
        if not isinstance(name, str):
            raise _err("Parsing database schema failed: Required 'name' member is missing.")
        if not _ID_RE.match(name) or (name.startswith("_") and not allow_reserved):
            raise _err(f"{name}: invalid database name")
        version = json.get("version")
        if version is not None and (not isinstance(version, str) or not _VERSION_RE.match(version)):
            raise _err(f'schema version "{version}" not in format x.y.z')
        cksum = json.get("cksum")
        if cksum is not None and not isinstance(cksum, str):
            raise _err("cksum must be a string")
        tables_json = json.get("tables")
        if not isinstance(tables_json, dict):
            raise _err("Parsing database schema failed: Required 'tables' member is missing.")
        tables: dict[str, TableSchema] = {}
        for tname, tjson in tables_json.items():
            if not isinstance(tname, str) or not _ID_RE.match(tname):
                raise _err(f"{tname}: invalid table name")
            if tname.startswith("_") and not allow_reserved:
                raise _err(f"{tname}: names beginning with \"_\" are reserved")
            tables[tname] = TableSchema.from_json(tname, tjson)
        if not any(t._root_set and t.is_root for t in tables.values()):
            for t in tables.values():
                t.is_root = True
        for t in tables.values():
            for col in t.columns.values():
                for base in (col.type.key, col.type.value):
                    if base is not None and base.ref_table is not None:
                        if base.ref_table not in tables:
                            raise _err(
                                f"table {t.name} column {col.name} refers to undefined table "
                                f"{base.ref_table}"
                            )
        schema = cls(name, tables, version, cksum)
        return schema

    @property
    def all_root(self) -> bool:
        return all(t.is_root for t in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        if self.json is None:
            all_root = self.all_root
            out: dict[str, Any] = {"name": self.name}
            if self.version is not None:
                out["version"] = self.version
            if self.cksum is not None:
                out["cksum"] = self.cksum
            out["tables"] = {n: t.to_json(all_root) for n, t in self.tables.items()}
            self.json = out
        return self.json

    def version_tuple(self) -> tuple[int, int, int]:
        if self.version is None:
            return (0, 0, 0)
        a, b, c = self.version.split(".")
        return int(a), int(b), int(c)


def load_schema_file(path: str) -> DatabaseSchema:
    import orjson

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OvsdbError("I/O error", f"{path}: {e.strerror}") from None
    try:
        json = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise OvsdbError("syntax error", f"{path}: {e}") from None
    return DatabaseSchema.from_json(json)
