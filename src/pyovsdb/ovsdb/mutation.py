"""Mutations: the `mutations` of the mutate operation (RFC 7047 section 5.1).

Rules kept here:
- Arithmetic mutators (`+=`, `-=`, `*=`, `/=`, `%=`) apply to integer and real columns,
  scalar or set, element by element; `%=` only to integers. Arguments are single atoms
  parsed without the column's constraints; the result must satisfy them.
- Integer arithmetic is 64-bit: overflow is a "range error", division or remainder by
  zero a "domain error". Integer division truncates toward zero and the remainder takes
  the dividend's sign (C semantics), as in the real server.
- `insert` adds set elements, or map pairs whose key is absent; `delete` removes set
  elements, map pairs that match key and value, or map keys given as a set.
- A mutation never partly applies: it computes a new datum, then validates it, and the
  row is only updated if every mutation of the operation succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..util.ovsjson import format_real
from .datum import UNLIMITED, SymbolTable, _check_count, _set_elements, atom_from_json
from .errors import OvsdbError, syntax_error
from .schema import ColumnSchema, TableSchema
from .types import INT_MAX, INT_MIN, INTEGER, REAL, BaseType

ARITH = ("+=", "-=", "*=", "/=", "%=")
MUTATORS = (*ARITH, "insert", "delete")


class Mutation:
    __slots__ = ("apply", "column", "mutator")

    def __init__(self, column: ColumnSchema, mutator: str, apply: Callable[[Any], Any]) -> None:
        self.column = column
        self.mutator = mutator
        self.apply = apply


def parse_mutations(
    ts: TableSchema, json: Any, symtab: SymbolTable | None = None
) -> list[Mutation]:
    if type(json) is not list:
        raise syntax_error(json, "Parsing mutations failed: array expected")
    return [parse_mutation(ts, m, symtab) for m in json]


def parse_mutation(ts: TableSchema, json: Any, symtab: SymbolTable | None) -> Mutation:
    if type(json) is not list or len(json) != 3 or type(json[0]) is not str \
            or type(json[1]) is not str:
        raise syntax_error(json, "Parse error in mutation.")
    cname, mutator, arg_json = json
    col = ts.all_columns.get(cname)
    if col is None:
        raise OvsdbError("unknown column", f"No column {cname} in table {ts.name}.", json)
    if not col.mutable:
        raise OvsdbError(
            "constraint violation",
            f"Cannot mutate immutable column {cname} in table {ts.name}.",
            json,
        )
    if mutator not in MUTATORS:
        raise OvsdbError("unknown mutator", f"No mutator named {mutator}.")
    ctype = col.type
    codec = ctype.codec
    if mutator in ARITH:
        key = ctype.key
        if (ctype.is_map or key.type not in (INTEGER, REAL)
                or (mutator == "%=" and key.type == REAL)):
            raise _type_mismatch(json, mutator, col)
        elems = _set_elements(arg_json)
        _check_count("set", len(elems), 1, 1, arg_json)
        arg = atom_from_json(key.type, elems[0], symtab)
        op = _arith_op(mutator, key.type, arg)
        check = _atom_checker(key)
        if ctype.is_scalar:

            def apply_scalar(v: Any) -> Any:
                r = op(v)
                check(r)
                return r

            return Mutation(col, mutator, apply_scalar)

        def apply_set(v: Any) -> Any:
            out = [op(a) for a in v]
            for a in out:
                check(a)
            result = tuple(sorted(set(out)))
            if len(result) != len(out):
                raise OvsdbError(
                    "constraint violation",
                    f'Result of "{mutator}" operation contains duplicates.',
                )
            return result

        return Mutation(col, mutator, apply_set)
    # insert / delete
    if ctype.is_scalar:
        raise _type_mismatch(json, mutator, col)
    if mutator == "insert":
        arg = codec.from_json(arg_json, symtab, 0, ctype.max)
        if ctype.is_map:

            def insert_pairs(v: Any) -> Any:
                d = dict(v)
                for k, val in arg:
                    d.setdefault(k, val)
                return _check_size(col, tuple(sorted(d.items())))

            return Mutation(col, mutator, insert_pairs)
        elems_set = frozenset(arg)

        def insert_elems(v: Any) -> Any:
            # `v` is sorted already: the new elements appended, timsort merges one run
            # into it in linear time (a set of a thousand gaining one element).
            extra = elems_set.difference(v)
            return _check_size(col, tuple(sorted(v + tuple(extra))) if extra else v)

        return Mutation(col, mutator, insert_elems)
    if ctype.is_map:
        try:
            pairs = frozenset(codec.from_json(arg_json, symtab, 0, UNLIMITED))
        except OvsdbError:
            keys = frozenset(codec.keys_from_json(arg_json, symtab))

            def delete_keys(v: Any) -> Any:
                return _check_size(col, tuple(p for p in v if p[0] not in keys))

            return Mutation(col, mutator, delete_keys)

        def delete_pairs(v: Any) -> Any:
            return _check_size(col, tuple(p for p in v if p not in pairs))

        return Mutation(col, mutator, delete_pairs)
    elems_del = frozenset(codec.from_json(arg_json, symtab, 0, UNLIMITED))

    def delete_elems(v: Any) -> Any:
        return _check_size(col, tuple(a for a in v if a not in elems_del))

    return Mutation(col, mutator, delete_elems)


def _type_mismatch(json: Any, mutator: str, col: ColumnSchema) -> OvsdbError:
    return syntax_error(
        json,
        f'Type mismatch: "{mutator}" operator may not be applied to column {col.name} of '
        f"type {col.type.to_english()}.",
    )


def _check_size(col: ColumnSchema, value: tuple[Any, ...]) -> tuple[Any, ...]:
    t = col.type
    n = len(value)
    if n > t.max or n < t.min:
        raise OvsdbError(
            "constraint violation", f"Attempted to store {n} elements in {t.to_english()}."
        )
    return value


def _atom_checker(base: BaseType) -> Callable[[Any], None]:
    if not base.has_constraints:
        return lambda a: None
    from .datum import check_atom

    return lambda a: check_atom(base, a)


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mul_overflows(x: int, y: int) -> bool:
    """The real server's overflow test for `*=` (Hacker's Delight), including its
    conservative `>=`: it also refuses a few products that just fit, such as 1 * INT64_MAX."""
    if x > 0:
        return x >= _cdiv(INT_MAX, y) if y > 0 else y < _cdiv(INT_MIN, x)
    if y > 0:
        return x < _cdiv(INT_MIN, y)
    return x != 0 and y < _cdiv(INT_MAX, x)


def _arith_op(mutator: str, atype: str, arg: Any) -> Callable[[Any], Any]:
    if atype == REAL:
        def real_op(v: float) -> float:
            r: float
            if mutator == "+=":
                r = v + arg
            elif mutator == "-=":
                r = v - arg
            elif mutator == "*=":
                r = v * arg
            else:
                if arg == 0:
                    raise OvsdbError("domain error", "Division by zero.")
                r = v / arg
            if r != r or r in (float("inf"), float("-inf")):
                raise OvsdbError(
                    "range error", f'Result of "{mutator}" operation is out of range.'
                )
            return r

        return real_op

    def int_op(v: int) -> int:
        r: int
        if mutator == "+=":
            r = v + arg
        elif mutator == "-=":
            r = v - arg
        elif mutator == "*=":
            if _mul_overflows(v, arg):
                raise OvsdbError("range error", 'Result of "*=" operation is out of range.')
            r = v * arg
        elif arg == 0:
            raise OvsdbError("domain error", "Division by zero.")
        elif mutator == "/=":
            q = abs(v) // abs(arg)
            r = q if (v >= 0) == (arg >= 0) else -q
        else:
            if v == INT_MIN and arg == -1:
                raise OvsdbError("range error", 'Result of "%=" operation is out of range.')
            m = abs(v) % abs(arg)
            r = m if v >= 0 else -m
        if r < INT_MIN or r > INT_MAX:
            raise OvsdbError("range error", f'Result of "{mutator}" operation is out of range.')
        return r

    return int_op


__all__ = ["MUTATORS", "Mutation", "format_real", "parse_mutation", "parse_mutations"]
