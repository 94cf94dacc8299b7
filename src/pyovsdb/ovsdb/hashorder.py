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
from typing import TYPE_CHECKING

from ..util.ovshash import (
    calc_mask,
    hash_string,
    hmap_order,
    hmap_order_of,
    shash_order,
    shash_walk,
)

if TYPE_CHECKING:
    from .schema import TableSchema

__all__ = ["first_in_shash_order", "hash_string", "hmap_order", "hmap_order_of", "shash_find_index",
           "shash_order", "shash_walk", "table_columns_order"]


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
            new_mask = calc_mask(count)
            if new_mask > mask:
                chain.reverse()
                mask = new_mask
    return chain[0]


def table_columns_order(ts: TableSchema) -> tuple[str, ...]:
    """The real server's hash of a table's columns: `_uuid` and `_version` are inserted
    first, then the schema's columns in the hash order of the schema's JSON object."""
    return shash_order(["_uuid", "_version", *shash_order(ts.columns)])
