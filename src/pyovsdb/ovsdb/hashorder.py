"""The order in which ovsdb-server iterates the members of a JSON object it parsed.

The real server keeps JSON objects in a `shash` (lib/shash.c over lib/hmap.c, keyed by
lib/hash.c's `hash_string`, basis 0) and iterates it bucket by bucket. When a request
has several problems, the one it reports is the first it meets in that order: the extra
member named in "Member 'x' and N other members are present but not allowed here.", the
first bad column of a row, the first unknown table of a monitor request. To report the
same one, we replay its hash table here.

Rules kept here:
- The order depends only on the member names and the order in which the parser inserted
  them (the text order of the object), so it is computed from that and cached.
- Only error paths need it: callers parse in text order and ask for the hash order only
  to pick which of several errors to report.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .schema import TableSchema

T = TypeVar("T")

_M32 = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M32


def _mhash_add(h: int, data: int) -> int:
    if data:  # a zero word leaves the hash unchanged, as in lib/hash.h
        data = (data * 0xCC9E2D51) & _M32
        data = _rot(data, 15)
        data = (data * 0x1B873593) & _M32
        h ^= data
    h = _rot(h, 13)
    return (h * 5 + 0xE6546B64) & _M32


def hash_string(s: str) -> int:
    """lib/hash.c `hash_string(s, 0)` (the murmur-based variant, little-endian words)."""
    b = s.encode()
    n = len(b)
    h = 0
    i = 0
    while n - i >= 4:
        h = _mhash_add(h, int.from_bytes(b[i:i + 4], "little"))
        i += 4
    if i < n:
        h = _mhash_add(h, int.from_bytes(b[i:], "little"))
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def _calc_mask(capacity: int) -> int:
    mask = capacity // 2
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    return mask | ((mask & 1) << 1)


def hmap_order(hashed: Iterable[tuple[int, T]]) -> list[T]:
    """Items given with their hashes, in insertion order, in the order lib/hmap.c walks
    them: each insert pushes onto the front of its bucket's chain; when n/2 exceeds the
    mask the table grows, re-inserting bucket by bucket, chain by chain."""
    mask = 0
    buckets: list[list[tuple[int, T]]] = [[]]
    for n, (h, item) in enumerate(hashed, 1):
        buckets[h & mask].insert(0, (h, item))
        if n // 2 > mask:
            new_mask = _calc_mask(n)
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
    """`names` (distinct, in insertion order) in the real server's iteration order."""
    return _order(tuple(names))


def first_in_shash_order(names: Iterable[str], candidates: Iterable[str]) -> str:
    """Of `candidates` (a subset of the object's member `names`), the one the real server
    meets first."""
    wanted = set(candidates)
    for name in shash_order(names):
        if name in wanted:
            return name
    raise ValueError("no candidate among the names")


@functools.lru_cache(maxsize=64)
def shash_find_index(n: int) -> int:
    """Of `n` entries added to one shash under the same name, the insertion index of the
    one `shash_find` returns: the head of their common bucket chain, which an insert
    pushes onto and a growth of the table reverses."""
    chain: list[int] = []
    mask = 0
    for count in range(1, n + 1):
        chain.insert(0, count - 1)
        if count // 2 > mask:
            new_mask = _calc_mask(count)
            if new_mask > mask:
                chain.reverse()
                mask = new_mask
    return chain[0]


def table_columns_order(ts: TableSchema) -> tuple[str, ...]:
    """The real server's hash of a table's columns: `_uuid` and `_version` are inserted
    first, then the schema's columns in the hash order of the schema's JSON object."""
    return shash_order(["_uuid", "_version", *shash_order(ts.columns)])
