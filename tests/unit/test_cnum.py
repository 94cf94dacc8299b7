"""`util.cnum` against the C library itself (glibc through ctypes): `atoi`, `atoll`,
and `strtoll`/`strtoull` with their end pointer and ERANGE, which OVS's `str_to_*`
wrap (lib/util.c: the whole text, then the type's range)."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from pyovsdb.util import cnum

TEXTS = ["0", "42", " \t\n\v\f\r42", "+7", "-7", "-0", "12abc", "abc", "", " ", "+", "-",
         "+-1", "1 ", " 1", "1_000", "0x10", "010", "\u00a012", "\u0661\u0662", "²",
         "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295",
         "4294967296", "4294967297", "9223372036854775807", "9223372036854775808",
         "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
         "18446744073709551616", "-18446744073709551615", "-18446744073709551616",
         "99999999999999999999999", "-99999999999999999999999", "1e3", "3.5"]


@pytest.fixture(scope="module")
def libc() -> ctypes.CDLL:
    name = ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C library to compare with")
    lib = ctypes.CDLL(name, use_errno=True)
    lib.atoi.argtypes = [ctypes.c_char_p]
    lib.atoi.restype = ctypes.c_int
    lib.atoll.argtypes = [ctypes.c_char_p]
    lib.atoll.restype = ctypes.c_longlong
    for fn, res in ((lib.strtoll, ctypes.c_longlong), (lib.strtoull, ctypes.c_ulonglong)):
        fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
        fn.restype = res
    return lib


def _strto(fn: ctypes._CFuncPtr, text: bytes) -> tuple[int, bool, bool]:
    """(value, whole text read and at least a digit, ERANGE)."""
    buf = ctypes.create_string_buffer(text)
    end = ctypes.c_char_p()
    ctypes.set_errno(0)
    value = fn(buf, ctypes.byref(end), 10)
    erange = ctypes.get_errno() == 34
    read = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)  # type: ignore[operator]
    return value, read == len(text) and read > 0 and bool(text.strip(b" \t\n\v\f\r+-")), \
        erange


def test_readers_match_the_c_library(libc: ctypes.CDLL) -> None:
    for text in TEXTS:
        raw = text.encode()
        assert cnum.atoi(text) == libc.atoi(raw), text
        assert cnum.atoll(text) == libc.atoll(raw), text
        value, whole, erange = _strto(libc.strtoll, raw)
        llong = value if whole and not erange else None
        assert cnum.str_to_llong(text) == llong, text
        assert cnum.str_to_int(text) == (llong if llong is not None and
                                         -2**31 <= llong < 2**31 else None), text
        assert cnum.str_to_uint(text) == (llong if llong is not None and
                                          0 <= llong < 2**32 else None), text
        value, whole, erange = _strto(libc.strtoull, raw)
        assert cnum.str_to_ullong(text) == (value if whole and not erange else None), text


def test_ovs_scan_conversions_wrap() -> None:
    # lib/util.c scan_int: blanks, a sign, digits; the value keeps its low bits
    assert cnum.scan_int(" -5x") == (-5, 3)
    assert cnum.scan_int("4294967320") == (24, 10)  # %d: stored in an int
    assert cnum.scan_int("2147483648") == (-2**31, 10)
    assert cnum.scan_int("300", bits=8, signed=False) == (44, 3)  # %hhu
    assert cnum.scan_int("-1", bits=8, signed=False) == (255, 2)
    assert cnum.scan_int("18446744073709551617", bits=8, signed=False) == (1, 20)
    assert cnum.scan_int("x1") is None and cnum.scan_int("+") is None
    assert cnum.scan_int("a 7", 1) == (7, 3)
    assert cnum.scan_int("\u0661") is None  # a Unicode digit is no C digit
