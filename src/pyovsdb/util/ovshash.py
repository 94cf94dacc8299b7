"""The iteration order of Open vSwitch's hash tables (lib/hash.c, lib/hmap.c,
lib/shash.c), which decides the order the real tools write and report things in.

Rules kept here:
- `hash_string` is lib/hash.c's `hash_string` (murmur3 words, little-endian; the
  portable build), bit for bit.
- An hmap pushes each insert onto the front of its bucket's chain; when n/2 exceeds the
  mask the table grows, re-inserting bucket by bucket, chain by chain. The order of a
  walk depends only on the hashes and the insertion order.
- The order of a set of names is cached: the same schemas and requests come back.
- Knows nothing of OVSDB: the callers say what was inserted, in which order.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

_M32 = 0xFFFFFFFF


def hash_string(s: str, basis: int = 0) -> int:
    b = s.encode()
    n = len(b)
    h = basis
    whole = n & ~3
    words: tuple[int, ...] = struct.unpack_from(f"<{whole >> 2}I", b) if whole else ()
    if whole < n:
        words += (int.from_bytes(b[whole:], "little"),)
    # Inlined for speed (a record of 10,000 rows hashes 10,000 UUIDs).
    for d in words:
        d = (d * 0xCC9E2D51) & _M32
        d = ((d << 15) | (d >> 17)) & _M32
        h ^= (d * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def calc_mask(capacity: int) -> int:
    mask = capacity // 2
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    return mask | ((mask & 1) << 1)


def hmap_order(hashed: Iterable[tuple[int, T]]) -> list[T]:
    """Items given with their hashes, in insertion order, in the order of a walk."""
    mask = 0
    buckets: list[list[tuple[int, T]]] = [[]]
    for n, (h, item) in enumerate(hashed, 1):
        buckets[h & mask].insert(0, (h, item))
        if n // 2 > mask:
            new_mask = calc_mask(n)
            if new_mask > mask:
                grown: list[list[tuple[int, T]]] = [[] for _ in range(new_mask + 1)]
                for chain in buckets:
                    for node in chain:
                        grown[node[0] & new_mask].insert(0, node)
                buckets = grown
                mask = new_mask
    return [item for chain in buckets for _, item in chain]


@functools.lru_cache(maxsize=4096)
def _order(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(hmap_order((hash_string(n), n) for n in names))


def shash_order(names: Iterable[str]) -> tuple[str, ...]:
    """`names` (distinct, in insertion order) in the order the real tools walk a shash
    (or a parsed JSON object) holding them."""
    return _order(tuple(names))
