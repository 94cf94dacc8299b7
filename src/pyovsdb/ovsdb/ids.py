"""Sources of row UUIDs and row versions, passed to a `Database` by whoever owns it.

Rules kept here:
- `ovsdb` never draws randomness itself: a database is given one callable that makes
  the UUIDs of inserted rows (and of named-uuid symbols) and one that makes `_version`
  values. The server passes fast OS-seeded generators; tests and northd pass seeded
  ones, so that a run is reproducible UUID for UUID.
- `SeededUuids` is pure arithmetic (`util.prng.SplitMix64`): the same seed gives the
  same sequence on every machine and Python version, with no global state. Its
  values are well-formed version 4 UUIDs, because clients check the form.
- A version must only be unique among the versions of one database, never
  unpredictable; a UUID must also be unique, which the 122 random bits make so.
"""

from __future__ import annotations

from collections.abc import Callable

from ..util.prng import SplitMix64

__all__ = ["SeededUuids", "UuidSource", "format_uuid"]

UuidSource = Callable[[], str]
"""Makes one fresh UUID string (lower-case, 8-4-4-4-12 hex digits) per call."""

# Version 4, variant 1: bits 76-79 hold 4, bits 62-63 hold 0b10.
_VERSION_MASK = ~(0xF << 76) & ~(0x3 << 62) & ((1 << 128) - 1)
_VERSION_BITS = (0x4 << 76) | (0x2 << 62)


def format_uuid(value: int) -> str:
    """A 128-bit integer as a version 4 UUID string (the version and variant bits are
    overwritten, so any integer gives a well-formed UUID)."""
    h = f"{(value & _VERSION_MASK) | _VERSION_BITS:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class SeededUuids:
    """A deterministic stream of version 4 UUIDs: `SeededUuids(seed)()` gives the next.

    Two instances with the same seed give the same stream; different seeds give
    streams that are, for every practical purpose, disjoint."""

    __slots__ = ("_next64",)

    def __init__(self, seed: int = 0) -> None:
        self._next64 = SplitMix64(seed).next64

    def __call__(self) -> str:
        next64 = self._next64
        return format_uuid((next64() << 64) | next64())
