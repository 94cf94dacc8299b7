"""Database schemas (RFC 7047 section 3.2) with the OVS extensions.

Rules kept here:
- Every table implicitly has the read-only columns `_uuid` and `_version`.
- Names of user tables and columns match `[A-Za-z_][A-Za-z0-9_]*` and must not start
  with an underscore (reserved for the implicit columns and `_Server`).
- If no table sets "isRoot", every table is a root table (schemas older than garbage
  collection), as the real server does.
- A weak reference column is always mutable; a refTable must name a table of the schema.
- `to_json` (and `json`) give the normalized form the real server reports (`get_schema`,
  `_Server`, the schema record it writes when compacting): defaults such as `"max": 1`
  left out, enums sorted, `isRoot` only where it matters. The schema as it was read from
  a file is kept in `raw_json`; it is never reported, since the real server does not
  report its file's text either.
- No file access: schemas are parsed from JSON (or its text) handed over; reading a
  schema file is the storage side's job (`storage.schemafile.load_schema`).
"""

from __future__ import annotations

import re
from typing import Any

from .errors import OvsdbError, syntax_error
from .parser import ID_RE, MemberParser
from .types import UUID, BaseType, ColumnType

_VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\Z")


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
        p = MemberParser(json, f"schema for column {name}")
        mutable = p.get("mutable", "boolean", optional=True)
        ephemeral = p.get("ephemeral", "boolean", optional=True)
        type_json = p.get("type", "string|object")
        p.finish()
        ctype = ColumnType.from_json(type_json)
        mutable = True if mutable is None else mutable
        if ctype.key.is_weak_ref or (ctype.value is not None and ctype.value.is_weak_ref):
            mutable = True
        return cls(name, ctype, mutable=mutable, ephemeral=bool(ephemeral))

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
        p = MemberParser(json, f"table schema for table {name}")
        cols_json = p.get("columns", "object")
        max_rows_json = p.get("maxRows", "integer", optional=True)
        is_root = p.get("isRoot", "boolean", optional=True)
        indexes_json = p.get("indexes", "array", optional=True)
        p.finish()
        max_rows: int | float = float("inf")
        if max_rows_json is not None:
            if max_rows_json <= 0:
                raise syntax_error(json, "maxRows must be at least 1")
            max_rows = int(max_rows_json)
        if not cols_json:
            raise syntax_error(json, "table must have at least one column")
        columns: dict[str, ColumnSchema] = {}
        for cname, cjson in cols_json.items():
            if cname.startswith("_"):
                raise syntax_error(json, 'names beginning with "_" are reserved')
            if not ID_RE.match(cname):
                raise syntax_error(json, "name must be a valid id")
            columns[cname] = ColumnSchema.from_json(cname, cjson)
        indexes: list[tuple[str, ...]] = []
        for idx in indexes_json or []:
            names: list[str] = []
            if type(idx) is not list:
                raise syntax_error(idx, "array of distinct column names expected")
            for cname in idx:
                if type(cname) is not str or cname in names:
                    raise syntax_error(idx, "array of distinct column names expected")
                if cname not in columns and cname not in ("_uuid", "_version"):
                    raise syntax_error(idx, f"{cname} is not a valid column name")
                col = columns.get(cname)
                if col is not None and col.ephemeral:
                    raise syntax_error(
                        json, f"ephemeral columns (such as {cname}) may not be indexed"
                    )
                names.append(cname)
            if not names:
                raise syntax_error(json, "index must have at least one column")
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
    __slots__ = ("_normalized", "cksum", "name", "raw_json", "tables", "version")

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
        self.raw_json: dict[str, Any] | None = None
        self._normalized: dict[str, Any] | None = None

    @property
    def json(self) -> dict[str, Any]:
        """The normalized schema (see `to_json`)."""
        return self.to_json()

    @json.setter
    def json(self, value: dict[str, Any] | None) -> None:
        """The schema as read (a file's first record): kept as `raw_json` only."""
        self.raw_json = value

    @classmethod
    def from_json(cls, json: Any, *, allow_reserved: bool = False) -> DatabaseSchema:
        p = MemberParser(json, "database schema")
        name = p.get("name", "id")
        version = p.get("version", "string", optional=True)
        cksum = p.get("cksum", "string", optional=True)
        tables_json = p.get("tables", "object")
        p.finish()
        if version is not None and not _VERSION_RE.match(version):
            raise syntax_error(json, f'schema version "{version}" not in format x.y.z')
        tables: dict[str, TableSchema] = {}
        for tname, tjson in tables_json.items():
            if tname.startswith("_") and not allow_reserved:
                raise syntax_error(json, 'names beginning with "_" are reserved')
            if not ID_RE.match(tname):
                raise syntax_error(json, "name must be a valid id")
            tables[tname] = TableSchema.from_json(tname, tjson)
        if not any(t._root_set and t.is_root for t in tables.values()):
            # Schemas from before garbage collection: every table is a root table.
            for t in tables.values():
                t.is_root = True
        for t in tables.values():
            for col in t.columns.values():
                for which, base in (("key", col.type.key), ("value", col.type.value)):
                    if base is not None and base.ref_table is not None \
                            and base.ref_table not in tables:
                        raise syntax_error(
                            json, f"column {col.name} {which} refers to undefined table "
                                  f"{base.ref_table}"
                        )
        return cls(name, tables, version, cksum)

    @property
    def all_root(self) -> bool:
        return all(t.is_root for t in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        if self._normalized is None:
            all_root = self.all_root
            out: dict[str, Any] = {"name": self.name}
            if self.version is not None:
                out["version"] = self.version
            if self.cksum is not None:
                out["cksum"] = self.cksum
            out["tables"] = {n: t.to_json(all_root) for n, t in self.tables.items()}
            self._normalized = out
        return self._normalized

    def version_tuple(self) -> tuple[int, int, int]:
        if self.version is None:
            return (0, 0, 0)
        a, b, c = self.version.split(".")
        return int(a), int(b), int(c)


def schema_from_text(data: bytes | str, name: str) -> DatabaseSchema:
    """Parse a schema's JSON text; errors name where it came from (`name`, as the real
    tools name the file). Reading the text is the caller's business."""
    import orjson

    try:
        json = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise OvsdbError("syntax error", f"{name}: {e}") from None
    return DatabaseSchema.from_json(json)
