"""Decimal numbers in text as C reads them: glibc's `atoi`/`atoll` and `strtoll`/
`strtoull`, Open vSwitch's `str_to_*` (lib/util.c, behind `smap_get_int`/`_uint`/
`_ullong`), and one integer conversion of its `ovs_scan` (`%d`, `%hhu`, ...).

Rules kept here:
- Blanks are C's `isspace` in the "C" locale (space, \\t \\n \\v \\f \\r) and digits
  are 0-9: Python's `str.strip`, `isdigit`, `int()` and `\\s`/`\\d` take more (other
  Unicode blanks and digits, "1_000") that C refuses.
- `scan_decimal` is what all of them read: blanks, an optional sign, digits; the exact
  value and where it ends. The readers differ only in what they make of a value out
  of range and of text after the digits:
  - `atoi`/`atoll`: text after the digits ends the number, none read is 0, and a value
    out of range is clamped (`strtol`/`strtoll`'s ERANGE), `atoi`'s then cut to an int;
  - `str_to_llong`/`str_to_int`/`str_to_uint`/`str_to_ullong`: the whole text, and
    within range (`strtoll`'s, then the type's), else None; `str_to_ullong` wraps a
    negative number, as `strtoull` negates in unsigned arithmetic;
  - `scan_int`: an `ovs_scan` conversion never fails on range: the value keeps its
    low `bits`, as C stores it in a narrower integer.
- Pure: functions of their text.
"""

from __future__ import annotations

import re

BLANKS = " \t\n\v\f\r"
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
UINT_MAX = (1 << 32) - 1
LLONG_MIN, LLONG_MAX = -(1 << 63), (1 << 63) - 1
ULLONG_MAX = (1 << 64) - 1

# What `strtol` and `ovs_scan`'s `%d` read: blanks, a sign, digits (the group). Also
# for patterns of several conversions (`IP_SCAN_FMT`'s four "%hhu").
DECIMAL = "[ \t\n\v\f\r]*([+-]?[0-9]+)"
_DECIMAL = re.compile(DECIMAL)


def scan_decimal(text: str, pos: int = 0) -> tuple[int, int] | None:
    """Blanks, a sign and decimal digits at `pos`: their exact value and where they
    end; None without a digit."""
    m = _DECIMAL.match(text, pos)
    return None if m is None else (int(m.group(1)), m.end())


def wrap(value: int, bits: int, signed: bool) -> int:
    """The low `bits` of `value` as a C integer of that width keeps them."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def scan_int(text: str, pos: int = 0, bits: int = 32,
             signed: bool = True) -> tuple[int, int] | None:
    """One `ovs_scan` integer conversion in base 10 at `pos` (`%d` by default; `%hhu`
    is `bits=8, signed=False`): the value as stored, and where it ends."""
    found = scan_decimal(text, pos)
    return None if found is None else (wrap(found[0], bits, signed), found[1])


def atoll(text: str) -> int:
    """`atoll`: `strtoll(text, NULL, 10)`, clamped to a long long; 0 without digits."""
    found = scan_decimal(text)
    return 0 if found is None else min(max(found[0], LLONG_MIN), LLONG_MAX)


def atoi(text: str) -> int:
    """`atoi`: `(int) strtol(text, NULL, 10)`: clamped to a 64-bit long, then cut to an
    int ("4294967297" is 1, a number past a long -1)."""
    return wrap(atoll(text), 32, True)


def str_to_llong(text: str) -> int | None:
    """`str_to_llong(text, 10, ...)`: the whole text one number within a long long."""
    found = scan_decimal(text)
    if found is None or found[1] != len(text) or not LLONG_MIN <= found[0] <= LLONG_MAX:
        return None
    return found[0]


def str_to_int(text: str) -> int | None:
    """`str_to_int(text, 10, ...)`: `str_to_llong` within an int."""
    value = str_to_llong(text)
    return value if value is not None and INT_MIN <= value <= INT_MAX else None


def str_to_uint(text: str) -> int | None:
    """`str_to_uint(text, 10, ...)`: `str_to_llong` from 0 to UINT_MAX."""
    value = str_to_llong(text)
    return value if value is not None and 0 <= value <= UINT_MAX else None


def str_to_ullong(text: str) -> int | None:
    """`str_to_ullong(text, 10, ...)`: the whole text one number `strtoull` reads
    without ERANGE; a negative one wraps ("-1" is ULLONG_MAX)."""
    found = scan_decimal(text)
    if found is None or found[1] != len(text) or abs(found[0]) > ULLONG_MAX:
        return None
    return found[0] & ULLONG_MAX
