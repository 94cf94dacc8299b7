"""OVSDB column types (RFC 7047 section 3.2): atomic types, base types with constraints,
and column types with their min/max cardinality.

Rules kept here:
- A type is immutable once parsed; every layer may share one instance.
- Parsing follows the real server: unknown members are errors, "unlimited" max,
  refType only with refTable, constraints only on the atomic type they apply to.
- Serialization (`to_json`) is the normalized form the real server reports in
  `get_schema`: defaults left out, a bare atomic-type string where nothing else is set.

Values of these types live in `datum`; this module knows nothing about values beyond
the constraint bounds.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from .errors import syntax_error
from .parser import MemberParser

if TYPE_CHECKING:
    from .datum import Codec

INTEGER = "integer"
REAL = "real"
BOOLEAN = "boolean"
STRING = "string"
UUID = "uuid"
ATOMIC_TYPES = (INTEGER, REAL, BOOLEAN, STRING, UUID)

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
UINT_MAX = 2**32 - 1
DBL_MAX = 1.7976931348623157e308


def _as_int(value: Any) -> int | None:
    return None if value is None else int(value)


class BaseType:
    """An atomic type plus its constraints (enum, ranges, lengths, references)."""

    __slots__ = (
        "enum",
        "max_integer",
        "max_length",
        "max_real",
        "min_integer",
        "min_length",
        "min_real",
        "ref_table",
        "ref_type",
        "type",
    )

    def __init__(
        self,
        type: str,
        *,
        enum: tuple[Any, ...] | None = None,
        min_integer: int | None = None,
        max_integer: int | None = None,
        min_real: float | None = None,
        max_real: float | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        ref_table: str | None = None,
        ref_type: str = "strong",
    ) -> None:
        self.type = type
        self.enum = enum
        self.min_integer = min_integer
        self.max_integer = max_integer
        self.min_real = min_real
        self.max_real = max_real
        self.min_length = min_length
        self.max_length = max_length
        self.ref_table = ref_table
        self.ref_type = ref_type

    @property
    def is_ref(self) -> bool:
        return self.ref_table is not None

    @property
    def is_strong_ref(self) -> bool:
        return self.ref_table is not None and self.ref_type == "strong"

    @property
    def is_weak_ref(self) -> bool:
        return self.ref_table is not None and self.ref_type == "weak"

    @property
    def has_constraints(self) -> bool:
        return (
            self.enum is not None
            or self.min_integer is not None
            or self.max_integer is not None
            or self.min_real is not None
            or self.max_real is not None
            or self.min_length is not None
            or self.max_length is not None
        )

    @classmethod
    def from_json(cls, json: Any) -> BaseType:
        """Parse a base type as the real server does: only the constraint members that
        apply to the atomic type are read, so any other is "not allowed here"."""
        if isinstance(json, str):
            if json not in ATOMIC_TYPES:
                raise syntax_error(json, f'"{json}" is not an atomic-type')
            return cls(json)
        p = MemberParser(json, "ovsdb type")
        atype = p.get("type", "string")
        if atype not in ATOMIC_TYPES:
            raise syntax_error(atype, f'"{atype}" is not an atomic-type')
        base = cls(atype)
        enum = p.get("enum", "any", optional=True)
        if enum is not None:
            from .datum import enum_from_json

            base.enum = enum_from_json(atype, enum)
        elif atype == INTEGER:
            base.min_integer = _as_int(p.get("minInteger", "integer", optional=True))
            base.max_integer = _as_int(p.get("maxInteger", "integer", optional=True))
            if (base.min_integer is not None and base.max_integer is not None
                    and base.min_integer > base.max_integer):
                raise syntax_error(json, "minInteger exceeds maxInteger")
        elif atype == REAL:
            lo = p.get("minReal", "number", optional=True)
            hi = p.get("maxReal", "number", optional=True)
            base.min_real = None if lo is None else float(lo)
            base.max_real = None if hi is None else float(hi)
            if (base.min_real is not None and base.max_real is not None
                    and base.min_real > base.max_real):
                raise syntax_error(json, "minReal exceeds maxReal")
        elif atype == STRING:
            base.min_length = _as_int(p.get("minLength", "integer", optional=True))
            base.max_length = _as_int(p.get("maxLength", "integer", optional=True))
            if (base.min_length is not None and base.max_length is not None
                    and base.min_length > base.max_length):
                raise syntax_error(json, "minLength exceeds maxLength")
        elif atype == UUID:
            ref_table = p.get("refTable", "id", optional=True)
            if ref_table is not None:
                base.ref_table = ref_table
                ref_type = p.get("refType", "string", optional=True)
                if ref_type is not None:
                    if ref_type not in ("strong", "weak"):
                        raise syntax_error(
                            json, f'refType must be "strong" or "weak" (not "{ref_type}")'
                        )
                    base.ref_type = ref_type
        p.finish()
        return base

    def to_json(self) -> Any:
        if not self.has_constraints and self.ref_table is None:
            return self.type
        out: dict[str, Any] = {"type": self.type}
        if self.enum is not None:
            from .datum import enum_to_json

            out["enum"] = enum_to_json(self.type, self.enum)
        if self.min_integer is not None:
            out["minInteger"] = self.min_integer
        if self.max_integer is not None:
            out["maxInteger"] = self.max_integer
        if self.min_real is not None:
            out["minReal"] = self.min_real
        if self.max_real is not None:
            out["maxReal"] = self.max_real
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.ref_table is not None:
            out["refTable"] = self.ref_table
            if self.ref_type != "strong":
                out["refType"] = self.ref_type
        return out

    def without_ref(self) -> BaseType:
        """The same constraints on a plain uuid: for columns whose refTable is unknown."""
        copy = BaseType(self.type)
        for slot in BaseType.__slots__:
            setattr(copy, slot, getattr(self, slot))
        copy.ref_table = None
        copy.ref_type = "strong"
        return copy


class ColumnType:
    """A column's type: key base type, optional value base type (a map), cardinality."""

    __slots__ = ("__dict__", "key", "max", "min", "value")

    def __init__(
        self, key: BaseType, value: BaseType | None = None, min: int = 1, max: int | float = 1
    ) -> None:
        self.key = key
        self.value = value
        self.min = min
        self.max = max  # float("inf") for "unlimited"

    @property
    def is_map(self) -> bool:
        return self.value is not None

    @property
    def is_scalar(self) -> bool:
        """Exactly one atom, no map: stored and sent as a bare atom."""
        return self.value is None and self.min == 1 and self.max == 1

    @property
    def is_set(self) -> bool:
        return self.value is None and not (self.min == 1 and self.max == 1)

    @property
    def is_optional_scalar(self) -> bool:
        return self.value is None and self.min == 0 and self.max == 1

    @property
    def has_refs(self) -> bool:
        return self.key.is_ref or (self.value is not None and self.value.is_ref)

    @cached_property
    def codec(self) -> Codec:
        from .datum import Codec

        return Codec(self)

    @classmethod
    def from_json(cls, json: Any) -> ColumnType:
        if isinstance(json, str):
            return cls(BaseType.from_json(json))
        if not isinstance(json, dict):
            raise syntax_error(json, "ovsdb type expected")
        p = MemberParser(json, "ovsdb type")
        key_json = p.get("key", "string|object")
        value_json = p.get("value", "string|object", optional=True)
        min_json = p.get("min", "integer", optional=True)
        max_json = p.get("max", "integer|string", optional=True)
        p.finish()
        key = BaseType.from_json(key_json)
        value = BaseType.from_json(value_json) if value_json is not None else None
        min_ = 1 if min_json is None else int(min_json)
        max_: int | float
        if max_json is None:
            max_ = 1
        elif isinstance(max_json, str):
            if max_json != "unlimited":
                raise syntax_error(max_json, "unlimited expected")
            max_ = float("inf")
        else:
            max_ = int(max_json)
        if min_ < 0 or min_ > 1 or max_ < 1 or min_ > max_ or (
                max_ != float("inf") and max_ > UINT_MAX):
            raise syntax_error(json, "ovsdb type fails constraint checks")
        return cls(key, value, min_, max_)

    def to_json(self) -> Any:
        if self.value is None and self.min == 1 and self.max == 1 and isinstance(
            self.key.to_json(), str
        ):
            return self.key.type
        out: dict[str, Any] = {"key": self.key.to_json()}
        if self.value is not None:
            out["value"] = self.value.to_json()
        if self.min != 1:
            out["min"] = self.min
        if self.max != 1:
            out["max"] = "unlimited" if self.max == float("inf") else self.max
        return out

    def to_english(self) -> str:
        """The real server's wording of a type in error messages (`ovsdb_type_to_english`):
        "string", "set of up to 1 strings", "map of 1 to 2 (string, integer) pairs"."""
        if self.is_scalar:
            return self.key.type
        unlimited = self.max == float("inf")
        if self.min == 0 and unlimited:
            count = ""
        elif unlimited:
            count = f" {self.min} or more"
        elif self.min == 0:
            count = f" up to {self.max}"
        else:
            count = f" {self.min} to {self.max}"
        if self.value is None:
            return f"set of{count} {self.key.type}s"
        return f"map of{count} ({self.key.type}, {self.value.type}) pairs"


def column_type(key: Any, value: Any = None, min: int = 1, max: int | float = 1) -> ColumnType:
    """Shorthand for building types in code: atomic names or BaseType objects."""
    kb = key if isinstance(key, BaseType) else BaseType(key)
    vb = None if value is None else value if isinstance(value, BaseType) else BaseType(value)
    return ColumnType(kb, vb, min, max)
