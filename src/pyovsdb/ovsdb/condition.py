"""Conditions: the `where` of operations and the `where` of conditional monitors.

Rules kept here:
- A `where` is a list of clauses `[column, function, value]`; a bare JSON `true`/`false`
  is a clause (OVS extension). In an operation it is a conjunction (every clause must
  hold); in a conditional monitor it is a disjunction (a row is sent if it matches any
  clause), as the real server evaluates them (`ovsdb_condition_match_every_clause` and
  `ovsdb_condition_empty_or_match_any`). An empty `where` is true in both.
- A monitor condition made only of `==`, `true` and `false` clauses takes the real
  server's fast path: after its sort (false, true, then the others) a `true` clause
  counts only in the first two places, so `[false, false, true]` matches no row there,
  and here.
- `==`/`!=` compare whole datums; `includes`/`excludes` test that every / no element (set)
  or key-value pair (map) of the argument is in the column; on a scalar they equal
  `==`/`!=`.
- `<`, `<=`, `>`, `>=` apply to integer and real scalars and optional scalars (OVS
  extension); an empty optional scalar satisfies none of them.
- Arguments are parsed with the column's type, relaxed as the real server relaxes it:
  `includes` allows fewer elements than the column's minimum, `excludes` any number.
- A compiled condition evaluates a row by plain Python comparisons; clauses that pin
  `_uuid`, or pin columns to values (`pinned`), are exposed so callers can look a row
  up (by uuid, or in a table index) instead of scanning.
- A monitor condition looks a row's values up in sets (its `==` values per column, its
  one-element `includes` per set or map column) instead of testing its clauses one by
  one: ovn-controller's conditions have tens of clauses, tested on every change for
  every chassis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .datum import SymbolTable
from .errors import OvsdbError, syntax_error
from .row import Row
from .schema import TableSchema
from .types import INTEGER, REAL, ColumnType

FUNCTIONS = ("<", "<=", "==", "!=", ">=", ">", "includes", "excludes")

Predicate = Callable[[Row], bool]


class Clause:
    __slots__ = ("arg", "column", "function", "predicate")

    def __init__(self, column: str | None, function: str, arg: Any, predicate: Predicate) -> None:
        self.column = column
        self.function = function
        self.arg = arg
        self.predicate = predicate


class Condition:
    """A parsed operation `where`; `matches(row)` is true if every clause holds."""

    __slots__ = ("always_false", "clauses", "matches", "pinned", "uuids")

    def __init__(self, clauses: list[Clause]) -> None:
        self.clauses = clauses
        self.always_false = any(c.function == "false" for c in clauses)
        real = [c for c in clauses if c.function not in ("true", "false")]
        # Rows that can match if the condition pins _uuid: enables direct lookup.
        self.uuids: frozenset[str] | None = None
        # Columns the condition pins to one value (`==`, or `includes` on a scalar),
        # the first clause's if several: a table index over them finds the one
        # committed row that can match.
        self.pinned: dict[str, Any] = {}
        for c in real:
            if _pins_uuid(c):
                if self.uuids is None:
                    self.uuids = frozenset((c.arg,))
            elif (col := _pinned_column(c)) is not None:
                self.pinned.setdefault(col, c.arg)
        preds = [c.predicate for c in real]
        if self.always_false:
            self.matches: Predicate = _never
        elif not preds:
            self.matches = _always
        elif len(preds) == 1:
            self.matches = preds[0]
        elif len(preds) == 2:
            p0, p1 = preds
            self.matches = lambda row: p0(row) and p1(row)
        else:
            self.matches = lambda row: all(p(row) for p in preds)

    @property
    def is_true(self) -> bool:
        return not self.always_false and all(c.function == "true" for c in self.clauses)


_FAST_PATH = frozenset(("true", "false", "=="))


class MonitorCondition:
    """A parsed monitor `where`; `matches(row)` is true if any clause holds (or there
    is none). `is_true` says it selects every row, so a monitor can drop it. `lookup`
    is the same disjunction in the form that looks values up (see `Lookup`)."""

    __slots__ = ("clauses", "is_true", "lookup", "matches")

    def __init__(self, clauses: list[Clause]) -> None:
        self.clauses = clauses
        n_false = sum(c.function == "false" for c in clauses)
        has_true = any(c.function == "true" for c in clauses)
        if all(c.function in _FAST_PATH for c in clauses):
            # The real server's hashed path sees a true clause only in the first two
            # places of its sorted array, behind at most one false clause.
            has_true = has_true and n_false <= 1
        self.is_true = not clauses or has_true
        self.lookup = Lookup([c for c in clauses if c.function not in ("true", "false")])
        self.matches: Predicate = _always if self.is_true else self.lookup.predicate()


class Lookup:
    """A disjunction of clauses as values to look up: the `==` values of each column
    (`equal`), the elements of each set or map column's one-element `includes`
    (`any_of`), the `_uuid`s (`uuids`), and the clauses that are none of these
    (`rest`). Datums are canonical and hashable, so a lookup agrees with `==`. A
    conditional monitor of ovn-controller has tens of clauses per table (its ports, its
    datapaths), and a change is tested against every monitor: by lookup, in a few set
    operations; or, by the server's fan-out index, once for all monitors."""

    __slots__ = ("any_of", "equal", "rest", "uuids")

    def __init__(self, clauses: list[Clause]) -> None:
        equal: dict[str, set[Any]] = {}
        any_of: dict[str, set[Any]] = {}
        uuids: set[str] = set()
        rest: list[Clause] = []
        for c in clauses:
            if _pins_uuid(c):
                uuids.add(c.arg)
            elif (col := _pinned_column(c)) is not None:
                equal.setdefault(col, set()).add(c.arg)
            elif (col := _one_element_includes(c)) is not None:
                any_of.setdefault(col, set()).add(c.arg[0])
            else:
                rest.append(c)
        self.equal = {col: frozenset(v) for col, v in equal.items()}
        self.any_of = {col: frozenset(v) for col, v in any_of.items()}
        self.uuids = frozenset(uuids)
        self.rest = tuple(rest)

    def predicate(self) -> Predicate:
        """True for a row that any clause selects."""
        equal, any_of, uuids = self.equal, self.any_of, self.uuids
        preds = tuple(c.predicate for c in self.rest)
        if not equal and not any_of and not uuids:
            if not preds:
                return _never
            if len(preds) == 1:
                return preds[0]
        if len(equal) == 1 and not any_of and not uuids and not preds:
            ((col, values),) = equal.items()
            return lambda row: row.data[col] in values
        eq_items = tuple(equal.items())
        any_items = tuple(any_of.items())

        def matches(row: Row) -> bool:
            if row.uuid in uuids:
                return True
            data = row.data
            for col, values in eq_items:
                if data[col] in values:
                    return True
            for col, values in any_items:
                if not values.isdisjoint(data[col]):
                    return True
            for p in preds:  # noqa: SIM110 (any() of a generator: a frame per row)
                if p(row):
                    return True
            return False

        return matches


def _pins_uuid(c: Clause) -> bool:
    """The clause holds only for the row of one `_uuid`."""
    return c.column == "_uuid" and c.function in ("==", "includes")


def _pinned_column(c: Clause) -> str | None:
    """The column (not `_uuid` or `_version`) the clause pins to one value, if it does:
    `==`, or `includes` on a scalar column (where it is `==`: a scalar's argument is a
    bare atom, every other column's a tuple)."""
    col = c.column
    if col is None or col in ("_uuid", "_version"):
        return None
    if c.function == "==" or (c.function == "includes" and type(c.arg) is not tuple):
        return col
    return None


def _one_element_includes(c: Clause) -> str | None:
    """The set or map column of an `includes` of one element, if the clause is one."""
    col = c.column
    if col is None or col in ("_uuid", "_version") or c.function != "includes":
        return None
    return col if type(c.arg) is tuple and len(c.arg) == 1 else None


def _always(row: Row) -> bool:
    return True


def _never(row: Row) -> bool:
    return False


def parse_where(
    ts: TableSchema, json: Any, symtab: SymbolTable | None = None
) -> Condition:
    if type(json) is not list:
        raise syntax_error(json, "Parsing where clauses failed: array expected")
    return Condition([parse_clause(ts, c, symtab) for c in json])


def parse_monitor_where(ts: TableSchema, json: Any) -> MonitorCondition:
    if type(json) is not list:
        raise syntax_error(json, "Parsing where clauses failed: array expected")
    return MonitorCondition([parse_clause(ts, c) for c in json])


def parse_clause(ts: TableSchema, json: Any, symtab: SymbolTable | None = None) -> Clause:
    if json is True:
        return Clause(None, "true", None, _always)
    if json is False:
        return Clause(None, "false", None, _never)
    if type(json) is not list or len(json) != 3 or type(json[0]) is not str \
            or type(json[1]) is not str:
        raise syntax_error(json, "Parse error in condition.")
    cname, function, arg_json = json
    col = ts.all_columns.get(cname)
    if col is None:
        raise OvsdbError("unknown column", f"No column {cname} in table {ts.name}.", json)
    if function not in FUNCTIONS:
        raise OvsdbError("unknown function", f"No function named {function}.")
    ctype = col.type
    codec = ctype.codec
    if function in ("<", "<=", ">", ">="):
        if not (ctype.is_scalar or ctype.is_optional_scalar) or ctype.key.type not in (
            INTEGER,
            REAL,
        ):
            raise syntax_error(
                json,
                f'Type mismatch: "{function}" operator may not be applied to column {cname} '
                f"of type {ctype.to_english()}.",
            )
        arg = codec.from_json(arg_json, symtab, 1, 1)
    elif function == "includes" and not ctype.is_scalar:
        arg = codec.from_json(arg_json, symtab, 0, ctype.max)
    elif function == "excludes" and not ctype.is_scalar:
        arg = codec.from_json(arg_json, symtab, 0, float("inf"))
    else:
        arg = codec.from_json(arg_json, symtab)
    return Clause(cname, function, arg, _predicate(cname, function, arg, ctype))


def _getter(cname: str) -> Callable[[Row], Any]:
    if cname == "_uuid":
        return lambda row: row.uuid
    if cname == "_version":
        return lambda row: row.version
    return lambda row: row.data[cname]


def _predicate(cname: str, function: str, arg: Any, ctype: ColumnType) -> Predicate:
    if cname == "_uuid":
        if function in ("==", "includes"):
            return lambda row: row.uuid == arg
        return lambda row: row.uuid != arg
    if ctype.is_scalar:
        if cname == "_version":
            get = _getter(cname)
        else:
            def get(row: Row) -> Any:
                return row.data[cname]
        if function in ("==", "includes"):
            return lambda row: get(row) == arg
        if function in ("!=", "excludes"):
            return lambda row: get(row) != arg
        if function == "<":
            return lambda row: get(row) < arg
        if function == "<=":
            return lambda row: get(row) <= arg
        if function == ">":
            return lambda row: get(row) > arg
        return lambda row: get(row) >= arg
    if function == "==":
        return lambda row: row.data[cname] == arg
    if function == "!=":
        return lambda row: row.data[cname] != arg
    if function in ("<", "<=", ">", ">="):
        # Optional scalar: an empty value (or argument) satisfies no inequality.
        if not arg:
            return _never
        a = arg[0]
        ops: dict[str, Callable[[Any], bool]] = {
            "<": lambda v: v < a,
            "<=": lambda v: v <= a,
            ">": lambda v: v > a,
            ">=": lambda v: v >= a,
        }
        test = ops[function]

        def ineq(row: Row) -> bool:
            v = row.data[cname]
            return bool(v) and test(v[0])

        return ineq
    if ctype.is_map:
        pairs = frozenset(arg)
        if function == "includes":
            if not pairs:
                return _always
            return lambda row: pairs.issubset(row.data[cname])
        if not pairs:
            return _always
        return lambda row: pairs.isdisjoint(row.data[cname])
    elems = frozenset(arg)
    if function == "includes":
        if not elems:
            return _always
        if len(elems) == 1:
            (e,) = elems
            return lambda row: e in row.data[cname]
        return lambda row: elems.issubset(row.data[cname])
    if not elems:
        return _always
    if len(elems) == 1:
        (e,) = elems
        return lambda row: e not in row.data[cname]
    return lambda row: elems.isdisjoint(row.data[cname])
