"""Values of OVSDB columns ("datums") in one compact, canonical, immutable form.

Rules kept here:
- Atoms are plain Python values: int, float, bool, str, and a uuid is its canonical
  lowercase 36-character string. The column type, not the value, says which one a str is.
- A scalar column (exactly one atom, no map) holds the bare atom.
- Every other column holds a tuple: a set is a sorted tuple of distinct atoms, a map a
  tuple of (key, value) pairs sorted by key with distinct keys. Sorting follows the real
  server's atom order, so two equal datums are equal tuples and JSON output matches.
- Because values are canonical and immutable, "did this column change" is `==`, and a
  row's values can be shared by every version and every reader without copying.
- Parsing validates everything (types, constraints, cardinality) and raises OvsdbError
  with the real server's wording; rendering never fails.

A `Codec` is built once per column type and specializes parsing and rendering to it,
so the hot paths do no per-value type dispatch.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..util.ovsjson import Real, format_real, json_string
from ..util.utf8 import has_escaped_bytes, invalid_sequence
from .errors import OvsdbError, syntax_error
from .types import BOOLEAN, INT_MAX, INT_MIN, INTEGER, REAL, STRING, UINT_MAX, UUID, BaseType

if TYPE_CHECKING:
    from .types import ColumnType

UUID_ZERO = "00000000-0000-0000-0000-000000000000"
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)

ATOM_DEFAULTS: dict[str, Any] = {INTEGER: 0, REAL: 0.0, BOOLEAN: False, STRING: "", UUID: UUID_ZERO}


def is_uuid_string(s: Any) -> bool:
    return isinstance(s, str) and len(s) == 36 and _UUID_RE.match(s) is not None


class Symbol:
    """A named-uuid of one transaction: its uuid, and whether an insert created it."""

    __slots__ = ("created", "strong_ref", "uuid", "weak_ref")

    def __init__(self, uuid: str) -> None:
        self.uuid = uuid
        self.created = False
        self.strong_ref = False
        self.weak_ref = False


class SymbolTable(dict[str, Symbol]):
    """Named uuids of one transaction. Referencing a name creates it on first use."""

    def __init__(self, new_uuid: Callable[[], str]) -> None:
        super().__init__()
        self._new_uuid = new_uuid

    def lookup(self, name: str) -> Symbol:
        sym = self.get(name)
        if sym is None:
            sym = self[name] = Symbol(self._new_uuid())
        return sym


# ---------------------------------------------------------------------------------------
# Atoms


_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def atom_from_json(atype: str, json: Any, symtab: SymbolTable | None = None) -> Any:
    """Parse one atom of `atype` from its JSON form (no constraint checks)."""
    t = type(json)
    if atype == STRING:
        if t is str:
            return json
    elif atype == INTEGER:
        if t is int:
            if INT_MIN <= json <= INT_MAX:
                return json
        elif t is float and json.is_integer() and INT_MIN < json <= INT_MAX:
            # OVS's JSON parser reads 1.0 and 1e2 as integers. (A float equal to INT64_MIN
            # comes from text such as -9223372036854775809 that it reads as a real.)
            return int(json)
    elif atype == REAL:
        if t is float:
            return json
        if t is int:
            return float(json)
    elif atype == BOOLEAN:
        if t is bool:
            return json
    elif atype == UUID:
        if t is list and len(json) == 2 and type(json[1]) is str:
            tag, value = json
            if tag == "uuid":
                if is_uuid_string(value):
                    return value.lower()
                raise syntax_error(json, f'"{value}" is not a valid UUID')
            if tag == "named-uuid" and symtab is not None:
                if not _ID_RE.match(value):
                    raise syntax_error(json, "named-uuid string is not a valid <id>")
                return symtab.lookup(value).uuid
        raise syntax_error(json, 'expected ["uuid", <string>]')
    else:
        raise OvsdbError("internal error", f"unknown atomic type {atype}")
    if (t is int and not INT_MIN <= json <= INT_MAX) or (t is float and json == INT_MIN):
        # OVS's JSON parser read this number as a real: quote it as one.
        json = Real(json)
    raise syntax_error(json, f"expected {atype}")


def atom_to_json(atype: str, atom: Any) -> Any:
    return ["uuid", atom] if atype == UUID else atom


def atom_to_string(atype: str, atom: Any) -> str:
    """The real server's textual form of an atom (`ovsdb_atom_to_string`), used inside
    error details: strings are bare unless they could be mistaken for something else."""
    if atype == STRING:
        return _quote(atom) if _string_needs_quotes(atom) else atom
    if atype == BOOLEAN:
        return "true" if atom else "false"
    if atype == REAL:
        return format_real(atom)
    return str(atom)


_BARE_STRING_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def _string_needs_quotes(s: str) -> bool:
    return (
        not _BARE_STRING_RE.match(s)
        or s in ("true", "false")
        or is_uuid_string(s)
    )


def _quote(s: str) -> str:
    return json_string(s)


def datum_to_string(codec: Codec, value: Any) -> str:
    """`ovsdb_datum_to_string`: `[a, b]` for sets, `{k=v}` for maps, a bare atom when the
    type holds at most one element and one is present."""
    kt = codec.key_type
    if codec.is_scalar:
        return atom_to_string(kt, value)
    if codec.is_map:
        vt = codec.value_type
        assert vt is not None
        pairs = ", ".join(f"{atom_to_string(kt, k)}={atom_to_string(vt, v)}" for k, v in value)
        return pairs if codec.max == 1 and len(value) == 1 else "{" + pairs + "}"
    if codec.max == 1 and len(value) == 1:
        return atom_to_string(kt, value[0])
    return "[" + ", ".join(atom_to_string(kt, a) for a in value) + "]"


def enum_from_json(atype: str, json: Any) -> tuple[Any, ...]:
    atoms = _set_atoms_from_json(atype, json, None)
    return tuple(sorted(set(atoms)))


def enum_to_json(atype: str, enum: tuple[Any, ...]) -> Any:
    items = [atom_to_json(atype, a) for a in enum]
    return items[0] if len(items) == 1 else ["set", items]


def _set_elements(json: Any) -> list[Any]:
    """The JSON elements of a set value: `["set", [...]]` or a bare atom."""
    if type(json) is list and json and json[0] == "set":
        if len(json) != 2 or type(json[1]) is not list:
            raise syntax_error(json, 'expected ["set", <array>]')
        return json[1]
    return [json]


def _set_atoms_from_json(atype: str, json: Any, symtab: SymbolTable | None) -> list[Any]:
    return [atom_from_json(atype, j, symtab) for j in _set_elements(json)]


def check_atom(base: BaseType, atom: Any) -> None:
    """Raise "constraint violation" if `atom` breaks one of `base`'s constraints."""
    if base.enum is not None:
        if atom not in base.enum:
            allowed = "[" + ", ".join(atom_to_string(base.type, a) for a in base.enum) + "]"
            raise OvsdbError(
                "constraint violation",
                f"{atom_to_string(base.type, atom)} is not one of the allowed values "
                f"({allowed})",
            )
        return
    t = base.type
    if t == INTEGER:
        lo, hi = base.min_integer, base.max_integer
        if lo is not None and hi is not None:
            if not lo <= atom <= hi:
                raise OvsdbError(
                    "constraint violation",
                    f"{atom} is not in the valid range {lo} to {hi} (inclusive)",
                )
        elif lo is not None and atom < lo:
            raise OvsdbError(
                "constraint violation", f"{atom} is less than minimum allowed value {lo}"
            )
        elif hi is not None and atom > hi:
            raise OvsdbError(
                "constraint violation", f"{atom} is greater than maximum allowed value {hi}"
            )
    elif t == REAL:
        lo_r, hi_r = base.min_real, base.max_real
        if lo_r is not None and hi_r is not None:
            if not lo_r <= atom <= hi_r:
                raise OvsdbError(
                    "constraint violation",
                    f"{format_real(atom)} is not in the valid range {format_real(lo_r)} to "
                    f"{format_real(hi_r)} (inclusive)",
                )
        elif lo_r is not None and atom < lo_r:
            raise OvsdbError(
                "constraint violation",
                f"{format_real(atom)} is less than minimum allowed value {format_real(lo_r)}",
            )
        elif hi_r is not None and atom > hi_r:
            raise OvsdbError(
                "constraint violation",
                f"{format_real(atom)} is greater than maximum allowed value {format_real(hi_r)}",
            )
    elif t == STRING:
        if not atom.isascii():
            # Bytes that are not UTF-8, kept by the JSON parser (see util/utf8.py).
            bad = invalid_sequence(atom)
            if bad is not None:
                raise OvsdbError("constraint violation", f"not a valid UTF-8 string: {bad}")
        lo_l, hi_l = base.min_length, base.max_length
        if lo_l is None and hi_l is None:
            return
        n = len(atom)
        if lo_l is not None and n < lo_l:
            raise OvsdbError(
                "constraint violation",
                f'"{atom}" length {n} is less than minimum allowed length {lo_l}',
            )
        if hi_l is not None and n > hi_l:
            raise OvsdbError(
                "constraint violation",
                f'"{atom}" length {n} is greater than maximum allowed length {hi_l}',
            )


# ---------------------------------------------------------------------------------------
# Datums


class Codec:
    """Parsing, validation, rendering and diffing for one column type."""

    __slots__ = (
        "_check_key",
        "_check_value",
        "_fast_type",
        "_utf8",
        "default",
        "is_map",
        "is_scalar",
        "key",
        "key_type",
        "key_uuid",
        "max",
        "min",
        "type",
        "value",
        "value_type",
        "value_uuid",
    )

    def __init__(self, ctype: ColumnType) -> None:
        self.type = ctype
        self.key: BaseType = ctype.key
        self.value: BaseType | None = ctype.value
        self.key_type = ctype.key.type
        self.value_type = ctype.value.type if ctype.value is not None else None
        self.key_uuid = self.key_type == UUID
        self.value_uuid = self.value_type == UUID
        self.min = ctype.min
        self.max = ctype.max
        self.is_map = ctype.value is not None
        self.is_scalar = ctype.is_scalar
        self._check_key = ctype.key.has_constraints
        self._check_value = ctype.value is not None and ctype.value.has_constraints
        # Every string is checked for UTF-8, as the real server checks it. Where that is
        # a string's only constraint, a batch of atoms holding no byte that is not UTF-8
        # (no lone surrogate: see util/utf8.py) needs nothing;
        # otherwise it is parsed again with every check (`_recheck`), which raises the
        # error the real server meets first.
        self._utf8 = self.key_type == STRING or self.value_type == STRING
        # The real server's default: min elements of the atoms' defaults, so a set or map
        # with min 1 defaults to one default element (`ovsdb_datum_init_default`).
        kd = ATOM_DEFAULTS[self.key_type]
        if self.is_scalar:
            self.default: Any = kd
        elif self.min == 0:
            self.default = ()
        elif self.is_map:
            self.default = ((kd, ATOM_DEFAULTS[self.value_type]),)  # type: ignore[index]
        else:
            self.default = (kd,)
        self._fast_type: type[Any] | None = None
        if self.is_scalar and not self._check_key:
            self._fast_type = {STRING: str, INTEGER: int, BOOLEAN: bool}.get(self.key_type)

    # -- parsing ---------------------------------------------------------------------

    def from_json(
        self,
        json: Any,
        symtab: SymbolTable | None = None,
        lo: int | None = None,
        hi: int | float | None = None,
    ) -> Any:
        """Parse and validate a datum: wrapper, element count (the column's, or `lo`..`hi`
        where an operation relaxes it), atom types, constraints, then duplicates. The
        result has the column's canonical form whatever the bounds."""
        fast = self._fast_type
        if fast is not None and type(json) is fast and lo is None and hi is None and (
                fast is bool or (not has_escaped_bytes(json) if fast is str
                                 else INT_MIN <= json <= INT_MAX)):
            return json  # a plain scalar string (UTF-8)/integer/boolean without constraints
        lo = self.min if lo is None else lo
        hi = self.max if hi is None else hi
        if self.is_map:
            return self._map_from_json(json, symtab, lo, hi)
        elems = _set_elements(json)
        _check_count("set", len(elems), lo, hi, json)
        kt = self.key_type
        if self._check_key:
            key = self.key
            atoms = []
            for j in elems:  # each atom: its type, then its constraints
                a = atom_from_json(kt, j, symtab)
                check_atom(key, a)
                atoms.append(a)
        else:
            try:
                atoms = [atom_from_json(kt, j, symtab) for j in elems]
            except OvsdbError:
                if self._utf8:
                    self._recheck(elems, symtab)
                raise
            if self._utf8 and has_escaped_bytes("".join(atoms)):
                self._recheck(elems, symtab)
        if self.is_scalar:
            return atoms[0]
        if len(atoms) <= 1:
            return tuple(atoms)
        unique = sorted(set(atoms))
        if len(unique) != len(atoms):
            raise OvsdbError("ovsdb error", "set contains duplicate")
        return tuple(unique)

    def _map_from_json(
        self, json: Any, symtab: SymbolTable | None, lo: int, hi: int | float
    ) -> Any:
        if not (type(json) is list and len(json) == 2 and json[0] == "map"
                and type(json[1]) is list):
            raise syntax_error(json, 'expected ["map", <array>]')
        assert self.value_type is not None and self.value is not None
        elems = json[1]
        _check_count("map", len(elems), lo, hi, json)
        kt, vt = self.key_type, self.value_type
        pairs: dict[Any, Any] = {}
        n = 0
        try:
            for item in elems:
                if type(item) is not list or len(item) != 2:
                    raise syntax_error(item, "expected 2-element array")
                k = atom_from_json(kt, item[0], symtab)
                if self._check_key:
                    check_atom(self.key, k)
                v = atom_from_json(vt, item[1], symtab)
                if self._check_value:
                    check_atom(self.value, v)
                pairs[k] = v
                n += 1
        except OvsdbError:
            if self._utf8:
                self._recheck(elems, symtab)
            raise
        if self._utf8 and (len(pairs) != n
                           or (kt == STRING and has_escaped_bytes("".join(pairs)))
                           or (vt == STRING and has_escaped_bytes("".join(pairs.values())))):
            self._recheck(elems, symtab)
        if len(pairs) != n:
            raise OvsdbError("ovsdb error", "map contains duplicate key")
        return tuple(sorted(pairs.items()))

    def _recheck(self, elems: list[Any], symtab: SymbolTable | None) -> None:
        """Parse the elements of a set or map again, checking every atom in order
        (UTF-8 included): raises the first error the real server would report."""
        kt, vt = self.key_type, self.value_type
        for item in elems:
            if vt is None:
                check_atom(self.key, atom_from_json(kt, item, symtab))
                continue
            assert self.value is not None
            if type(item) is not list or len(item) != 2:
                raise syntax_error(item, "expected 2-element array")
            check_atom(self.key, atom_from_json(kt, item[0], symtab))
            check_atom(self.value, atom_from_json(vt, item[1], symtab))

    def keys_from_json(self, json: Any, symtab: SymbolTable | None = None) -> tuple[Any, ...]:
        """A set of map keys, any size (the `delete` mutator on a map accepts one)."""
        atoms = _set_atoms_from_json(self.key_type, json, symtab)
        if self._check_key or self.key_type == STRING:
            for a in atoms:
                check_atom(self.key, a)
        unique = sorted(set(atoms))
        if len(unique) != len(atoms):
            raise OvsdbError("ovsdb error", "set contains duplicate")
        return tuple(unique)

    def check_constraints(self, value: Any) -> None:
        """Validate a value computed by a mutation against the full column type."""
        if self.is_scalar:
            if self._check_key:
                check_atom(self.key, value)
            return
        if self.is_map:
            if self._check_key or self._check_value:
                for k, v in value:
                    if self._check_key:
                        check_atom(self.key, k)
                    if self._check_value:
                        check_atom(self.value, v)  # type: ignore[arg-type]
        elif self._check_key:
            for a in value:
                check_atom(self.key, a)

    # -- rendering -------------------------------------------------------------------

    def to_json(self, value: Any) -> Any:
        if self.is_scalar:
            return ["uuid", value] if self.key_uuid else value
        if self.is_map:
            ku, vu = self.key_uuid, self.value_uuid
            if not ku and not vu:
                return ["map", [[k, v] for k, v in value]]
            return [
                "map",
                [[["uuid", k] if ku else k, ["uuid", v] if vu else v] for k, v in value],
            ]
        if len(value) == 1:
            return ["uuid", value[0]] if self.key_uuid else value[0]
        if self.key_uuid:
            return ["set", [["uuid", a] for a in value]]
        return ["set", list(value)]

    def is_default(self, value: Any) -> bool:
        same: bool = value == self.default
        return same

    # -- diffs (update2 "modify", file diff records) ---------------------------------

    def sort_key(self, value: Any) -> Any:
        """Order of `ovsdb_datum_compare_3way`: fewer elements first, then the keys (or
        set elements) in order, then a map's values in order."""
        if self.is_scalar:
            return value
        if self.is_map:
            return (len(value), tuple(k for k, _ in value), tuple(v for _, v in value))
        return (len(value), value)

    def diff(self, old: Any, new: Any) -> Any:
        """The datum a diff carries for a changed column: the new value when the column
        holds at most one element, the symmetric difference for a set, and for a map the
        added and changed keys with their new values and removed keys with their old."""
        if self.max == 1:
            return new
        if self.is_map:
            old_d = dict(old)
            new_d = dict(new)
            out: dict[Any, Any] = {}
            for k, v in old_d.items():
                nv = new_d.get(k, _MISSING)
                if nv is _MISSING:
                    out[k] = v
                elif nv != v:
                    out[k] = nv
            for k, v in new_d.items():
                if k not in old_d:
                    out[k] = v
            return tuple(sorted(out.items()))
        return tuple(sorted(set(old).symmetric_difference(new)))

    def apply_diff(self, old: Any, diff: Any) -> Any:
        if self.max == 1:
            return diff
        if self.is_map:
            d = dict(old)
            for k, v in diff:
                cur = d.get(k, _MISSING)
                if cur is _MISSING:
                    d[k] = v
                elif cur == v:
                    del d[k]
                else:
                    d[k] = v
            return tuple(sorted(d.items()))
        if len(diff) * 8 < len(old):
            # A few elements in or out of a large set (a port joining a group): put in
            # place in the sorted tuple, each by a binary search.
            out = list(old)
            for x in (set(diff) if len(diff) > 1 else diff):
                i = bisect_left(out, x)
                if i < len(out) and out[i] == x:
                    del out[i]
                else:
                    out.insert(i, x)
            return tuple(out)
        return tuple(sorted(set(old).symmetric_difference(diff)))

    def diff_from_json(self, json: Any) -> Any:
        if self.max == 1:
            return self.from_json(json)
        return self.from_json(json, None, 0, UNLIMITED)

    # -- references ------------------------------------------------------------------

    def iter_refs(self, value: Any, strong: bool) -> Iterator[tuple[str, str]]:
        """(ref_table, uuid) for every reference of the given strength in `value`."""
        key, val = self.key, self.value
        key_refs = key.ref_table is not None and (key.ref_type == "strong") == strong
        val_refs = (
            val is not None and val.ref_table is not None and (val.ref_type == "strong") == strong
        )
        if not key_refs and not val_refs:
            return
        if self.is_scalar:
            if key_refs:
                yield key.ref_table, value  # type: ignore[misc]
            return
        if self.is_map:
            for k, v in value:
                if key_refs:
                    yield key.ref_table, k  # type: ignore[misc]
                if val_refs:
                    yield val.ref_table, v  # type: ignore[union-attr,misc]
            return
        for a in value:
            yield key.ref_table, a  # type: ignore[misc]


_MISSING = object()
UNLIMITED = float("inf")


def _check_count(kind: str, n: int, lo: int, hi: int | float, json: Any) -> None:
    if n < lo or n > hi:
        if lo == 1 and hi == 1:
            raise syntax_error(json, f"set must have exactly one member but {n} are present")
        top = UINT_MAX if hi == UNLIMITED else hi
        raise syntax_error(json, f"{kind} must have {lo} to {top} members but {n} are present")


def set_from_atoms(atoms: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(sorted(set(atoms)))
