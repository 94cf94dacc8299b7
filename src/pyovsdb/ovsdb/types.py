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

from .errors import OvsdbError, syntax_error

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


def _schema_error(details: str, json: Any = None) -> OvsdbError:
    return syntax_error(json, details) if json is not None else OvsdbError("syntax error", details)


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
        if isinstance(json, str):
            if json not in ATOMIC_TYPES:
                raise _schema_error(f'unknown atomic type "{json}"', json)
            return cls(json)
        if not isinstance(json, dict):
            raise _schema_error("base type expected", json)
        allowed = {
            "type",
            "enum",
            "minInteger",
            "maxInteger",
            "minReal",
            "maxReal",
            "minLength",
            "maxLength",
            "refTable",
            "refType",
        }
        for key in json:
            if key not in allowed:
                raise _schema_error(f"Type mismatch for member '{key}'.", json)
        atype = json.get("type")
        if not isinstance(atype, str) or atype not in ATOMIC_TYPES:
            raise _schema_error(f'unknown atomic type "{atype}"', json)
        base = cls(atype)
        if "enum" in json:
            from .datum import enum_from_json

            base.enum = enum_from_json(atype, json["enum"])
        if atype == INTEGER:
            base.min_integer = _int_member(json, "minInteger")
            base.max_integer = _int_member(json, "maxInteger")
            if (
                base.min_integer is not None
                and base.max_integer is not None
                and base.min_integer > base.max_integer
            ):
                raise _schema_error('"minInteger" exceeds "maxInteger"', json)
        elif atype == REAL:
            base.min_real = _real_member(json, "minReal")
            base.max_real = _real_member(json, "maxReal")
            if (
                base.min_real is not None
                and base.max_real is not None
                and base.min_real > base.max_real
            ):
                raise _schema_error('"minReal" exceeds "maxReal"', json)
        elif atype == STRING:
            base.min_length = _uint_member(json, "minLength")
            base.max_length = _uint_member(json, "maxLength")
            if (
                base.min_length is not None
                and base.max_length is not None
                and base.min_length > base.max_length
            ):
                raise _schema_error('"minLength" exceeds "maxLength"', json)
        elif atype == UUID:
            ref_table = json.get("refTable")
            if ref_table is not None:
                if not isinstance(ref_table, str):
                    raise _schema_error("refTable must be a string", json)
                base.ref_table = ref_table
                ref_type = json.get("refType", "strong")
                if ref_type not in ("strong", "weak"):
                    raise _schema_error(
                        f'refType must be "strong" or "weak" (not "{ref_type}")', json
                    )
                base.ref_type = ref_type
            elif "refType" in json:
                raise _schema_error("refType requires refTable", json)
        for key, atomic in (
            ("minInteger", INTEGER),
            ("maxInteger", INTEGER),
            ("minReal", REAL),
            ("maxReal", REAL),
            ("minLength", STRING),
            ("maxLength", STRING),
            ("refTable", UUID),
        ):
            if key in json and atype != atomic:
                raise _schema_error(f'"{key}" is not allowed for type "{atype}"', json)
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


def _int_member(json: dict[str, Any], name: str) -> int | None:
    value = json.get(name)
    if value is None:
        return None
    if type(value) is not int:
        raise _schema_error(f'"{name}" must be an integer', json)
    return value


def _real_member(json: dict[str, Any], name: str) -> float | None:
    value = json.get(name)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise _schema_error(f'"{name}" must be a number', json)
    return float(value)


def _uint_member(json: dict[str, Any], name: str) -> int | None:
    value = json.get(name)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise _schema_error(f'"{name}" must be a non-negative integer', json)
    return value


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
            raise _schema_error("type must be a string or an object", json)
        for key in json:
            if key not in ("key", "value", "min", "max"):
                raise _schema_error(f"Type mismatch for member '{key}'.", json)
        if "key" not in json:
            raise _schema_error("Required 'key' member is missing.", json)
        key = BaseType.from_json(json["key"])
        value = BaseType.from_json(json["value"]) if "value" in json else None
        min_ = json.get("min", 1)
        max_ = json.get("max", 1)
        if type(min_) is not int or min_ not in (0, 1):
            raise _schema_error("ovsdb type min must be 0 or 1", json)
        if max_ == "unlimited":
            max_ = float("inf")
        elif type(max_) is not int or max_ < 1 or max_ > UINT_MAX:
            raise _schema_error('max must be at least 1 or "unlimited"', json)
        if min_ > max_:
            raise _schema_error("ovsdb type min greater than max", json)
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
