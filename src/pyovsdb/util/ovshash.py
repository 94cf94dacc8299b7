"""The iteration order of Open vSwitch's hash tables (lib/hash.c, lib/hmap.c,
lib/shash.c), which decides the order the real tools write and report things in.

Rules kept here:
- `hash_string` is lib/hash.c's `hash_string` (murmur3 words, little-endian; the
  portable build), bit for bit; `hash_add`, `hash_finish` and `hash_int` are the
  steps of lib/hash.h it is made of, for the callers that hash words.
- An hmap pushes each insert onto the front of its bucket's chain; when n/2 exceeds the
  mask the table grows, re-inserting bucket by bucket, chain by chain. The order of a
  walk depends only on the hashes and the insertion order; it is computed by one sort
  (`_walk`), not by replaying the inserts (the tests replay them as the oracle).
- The order of a set of names is cached: the same schemas and requests come back.
- Knows nothing of OVSDB: the callers say what was inserted, in which order.
"""

from __future__ import annotations

import bisect
import functools
import struct
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

_M32 = 0xFFFFFFFF


def hash_add(h: int, data: int) -> int:
    """lib/hash.h `hash_add`: one 32-bit word mixed into the state (murmur3)."""
    data = (data * 0xCC9E2D51) & _M32
    data = ((data << 15) | (data >> 17)) & _M32
    h ^= (data * 0x1B873593) & _M32
    h = ((h << 13) | (h >> 19)) & _M32
    return (h * 5 + 0xE6546B64) & _M32


def hash_finish(h: int, final: int) -> int:
    """lib/hash.h `hash_finish`: `final` (the length hashed) folded in, then mixed."""
    h ^= final
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def hash_int(x: int, basis: int) -> int:
    """lib/hash.h `hash_int` (the portable `hash_2words`)."""
    return hash_finish(hash_add(hash_add(x & _M32, 0), basis & _M32), 8)


# Unpackers of the little-endian words of strings up to 255 bytes, made once.
_WORDS = [struct.Struct(f"<{n}I").unpack_from for n in range(64)]


def hash_string(s: str, basis: int = 0) -> int:
    b = s.encode()
    n = len(b)
    h = basis
    k = n >> 2
    words: tuple[int, ...] = _WORDS[k](b) if k < 64 else struct.unpack_from(f"<{k}I", b)
    if n & 3:
        words += (int.from_bytes(b[k << 2:], "little"),)
    # `hash_add` inlined, for speed (a record of 10,000 rows hashes 10,000 UUIDs).
    for d in words:
        d = (d * 0xCC9E2D51) & _M32
        d = ((d << 15) | (d >> 17)) & _M32
        h ^= (d * 0x1B873593) & _M32
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    return hash_finish(h, n)


def calc_mask(capacity: int) -> int:
    mask = capacity // 2
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    return mask | ((mask & 1) << 1)


def hmap_order(hashed: Iterable[tuple[int, T]]) -> list[T]:
    """Items given with their hashes, in insertion order, in the order of a walk."""
    items = list(hashed)
    return _walk(((i, h, item) for i, (h, item) in enumerate(items, 1)), len(items))


def hmap_expansions(total: int) -> list[int]:
    """The insertion counts after which an hmap being filled with `total` items
    expands, as `hmap_order` simulates (the check `n // 2 > mask` first holds at
    n = 2 * mask + 2)."""
    out: list[int] = []
    mask, n = 0, 2
    while n <= total:
        new_mask = calc_mask(n)
        if new_mask > mask:
            out.append(n)
            mask = new_mask
            n = 2 * mask + 2
        else:
            n += 1
    return out


def hmap_mask(total: int) -> int:
    """The mask of an hmap after `total` insertions (no removals)."""
    expansions = hmap_expansions(total)
    return calc_mask(expansions[-1]) if expansions else 0


def hmap_order_of(hashed: Iterable[tuple[int, int, T]], total: int) -> list[T]:
    """The walk order of some of the items of an hmap filled with `total` items, each
    given as (its place among the `total` insertions, from 1; its hash; the item), in
    insertion order: `hmap_order` of all of them, restricted to these, at a cost in
    their number rather than `total`'s."""
    return _walk(hashed, total)


def _walk(hashed: Iterable[tuple[int, int, T]], total: int) -> list[T]:
    """The walk, by one sort. Two items in one bucket of the full table share a bucket
    at every size; an insertion puts an item at its chain's head and every expansion
    reverses each chain. So a final chain, read head first, holds the items that met an
    even number of expansions after their insertion, latest first, then those that met
    an odd number, earliest first."""
    expansions = hmap_expansions(total)
    mask = calc_mask(expansions[-1]) if expansions else 0
    n_exp = len(expansions)
    span = 2 * total + 2
    keyed: list[tuple[int, T]] = []
    add = keyed.append
    for index, h, item in hashed:
        # The expansions an item meets: those after insertions index..total.
        met = n_exp - bisect.bisect_left(expansions, index)
        add(((h & mask) * span + (total - index if met % 2 == 0 else total + 1 + index),
             item))
    keyed.sort(key=_first)
    return [item for _, item in keyed]


def _first(pair: tuple[int, T]) -> int:
    return pair[0]


def hash_strings(strings: list[str], basis: int = 0) -> list[int]:
    """`hash_string` of each of `strings`, computed for all strings of one length at
    once: each is a 64-bit lane of one big integer, its 32-bit state in the lane's low
    half, and every step of the hash is a few big-integer operations on all lanes (a
    product of a lane and a 32-bit constant fits the lane; what a shift brings in from
    the next lane lands above bit 32 and is masked away). A transaction record of
    10,000 rows hashes 10,000 UUIDs: one by one they took longer than the rest of
    writing the record."""
    out = [0] * len(strings)
    by_size: dict[int, list[int]] = {}
    encoded = [x.encode() for x in strings]
    for i, b in enumerate(encoded):
        by_size.setdefault(len(b), []).append(i)
    for n, members in by_size.items():
        if len(members) < _LANES_WORTHWHILE:
            for i in members:
                out[i] = hash_string(strings[i], basis)
            continue
        for i, h in zip(members, _hash_lanes([encoded[i] for i in members], n, basis), strict=True):
            out[i] = h
    return out


_LANES_WORTHWHILE = 8


def _hash_lanes(blobs: list[bytes], n: int, basis: int) -> list[int]:
    m = len(blobs)
    width = (n + 3) & ~3
    pad = b"\0" * (width - n)
    joined = b"".join(b + pad for b in blobs) if pad else b"".join(blobs)
    lanes = bytearray(8 * m)

    def spread(value: int) -> int:
        return int.from_bytes(value.to_bytes(8, "little") * m, "little")

    mask = spread(_M32)
    h = spread(basis & _M32)
    add = spread(0xE6546B64)
    for word in range(0, width, 4):
        for byte in range(4):
            lanes[byte::8] = joined[word + byte::width]
        d = int.from_bytes(lanes, "little")
        d = (d * 0xCC9E2D51) & mask
        d = ((d << 15) | (d >> 17)) & mask
        h ^= (d * 0x1B873593) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + add) & mask
    h ^= spread(n)
    h = (h ^ (h >> 16)) & mask
    h = (h * 0x85EBCA6B) & mask
    h = (h ^ (h >> 13)) & mask
    h = (h * 0xC2B2AE35) & mask
    h = (h ^ (h >> 16)) & mask
    return list(struct.unpack(f"<{m}Q", h.to_bytes(8 * m, "little")))


@functools.lru_cache(maxsize=4096)
def _order(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(hmap_order((hash_string(n), n) for n in names))


def shash_order(names: Iterable[str]) -> tuple[str, ...]:
    """`names` (distinct, in insertion order) in the order the real tools walk a shash
    (or a parsed JSON object) holding them. Remembered: the same schemas and requests
    come back (see `shash_walk` for names that do not)."""
    return _order(tuple(names))


def shash_walk(names: list[str]) -> list[str]:
    """`shash_order` of names that will not come again (a transaction's row UUIDs):
    not remembered, and hashed all at once."""
    if len(names) <= 1:
        return list(names)
    return hmap_order(zip(hash_strings(names), names, strict=True))


@functools.lru_cache(maxsize=1 << 17)
def hash_name(name: str) -> int:
    """`hash_string(name)`, remembered: northd walks the hash tables of its ports and
    datapaths by their names again and again (a switch's router ports, on every binding
    that comes back), and the names are few next to the walks."""
    return hash_string(name)
