"""The iteration order of Open vSwitch's hash tables (lib/hash.c, lib/hmap.c,
lib/shash.c), which decides the order the real tools write and report things in.

Rules kept here:
- `hash_string` is lib/hash.c's `hash_string` (murmur3 words, little-endian; the
  portable build), bit for bit; `hash_add`, `hash_finish` and `hash_int` are the
  steps of lib/hash.h it is made of, for the callers that hash words.
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
    their number rather than `total`'s. Two items in one bucket of the full table
    share a bucket at every size; an insertion puts an item at its chain's head and
    every expansion reverses each chain, so chains per final bucket are enough."""
    expansions = hmap_expansions(total)
    mask = 0
    for n in expansions:
        mask = calc_mask(n)
    chains: dict[int, list[T]] = {}
    done = 0  # expansions applied
    for index, h, item in hashed:
        while done < len(expansions) and expansions[done] < index:
            for chain in chains.values():
                chain.reverse()
            done += 1
        chains.setdefault(h & mask, []).insert(0, item)
    for _ in range(done, len(expansions)):
        for chain in chains.values():
            chain.reverse()
    return [item for bucket in sorted(chains) for item in chains[bucket]]


@functools.lru_cache(maxsize=4096)
def _order(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(hmap_order((hash_string(n), n) for n in names))


def shash_order(names: Iterable[str]) -> tuple[str, ...]:
    """`names` (distinct, in insertion order) in the order the real tools walk a shash
    (or a parsed JSON object) holding them."""
    return _order(tuple(names))


@functools.lru_cache(maxsize=1 << 17)
def hash_name(name: str) -> int:
    """`hash_string(name)`, remembered: northd walks the hash tables of its ports and
    datapaths by their names again and again (a switch's router ports, on every binding
    that comes back), and the names are few next to the walks."""
    return hash_string(name)
