"""The walk order of an hmap, computed by one sort, against the oracle that replays
every insertion and expansion as lib/hmap.c makes them; `hmap_order_of`, the walk of
some items of a large hmap computed from those items alone, equals the full walk
restricted to them (northd's partial rebuilds walk the ports of a few datapaths in the
order a full build walks every port); `hash_strings`, all lanes at once, equals
`hash_string` one by one."""

from __future__ import annotations

import random

import pytest

from pyovsdb.util.ovshash import (
    calc_mask,
    hash_string,
    hash_strings,
    hmap_expansions,
    hmap_order,
    hmap_order_of,
    shash_order,
    shash_walk,
)
from pyovsdb.util.uuidgen import new_uuid


def _replayed(hashed: list[tuple[int, str]]) -> list[str]:
    """The walk of an hmap filled with `hashed` in that order, by replaying lib/hmap.c:
    each insert at its chain's head; when n/2 exceeds the mask, every node re-inserted
    into the grown table, bucket by bucket, chain by chain."""
    mask = 0
    buckets: list[list[tuple[int, str]]] = [[]]
    for n, (h, item) in enumerate(hashed, 1):
        buckets[h & mask].insert(0, (h, item))
        if n // 2 > mask and calc_mask(n) > mask:
            mask = calc_mask(n)
            grown: list[list[tuple[int, str]]] = [[] for _ in range(mask + 1)]
            for chain in buckets:
                for node in chain:
                    grown[node[0] & mask].insert(0, node)
            buckets = grown
    return [item for chain in buckets for _, item in chain]


@pytest.mark.parametrize("seed", range(4))
def test_the_sorted_walk_is_the_replayed_one(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [*range(0, 70), *(rng.randint(70, 6000) for _ in range(12))]
    for total in sizes:
        # a few colliding hashes, so that chains hold more than one item
        hashed = [(hash_string(f"n{rng.random()}") if rng.random() < 0.8 else rng.randint(0, 7),
                   f"item{i}") for i in range(total)]
        assert hmap_order(hashed) == _replayed(hashed), total
        assert hmap_order_of([(i, h, x) for i, (h, x) in enumerate(hashed, 1)], total) == \
            _replayed(hashed), total


def test_hash_strings_all_at_once_is_hash_string_one_by_one() -> None:
    rng = random.Random(7)
    strings = [new_uuid() for _ in range(500)]
    # lengths that are and are not a multiple of 4, non-ASCII, empty, few of a length
    strings += ["".join(chr(rng.choice([rng.randint(32, 126), rng.randint(128, 0x2FFF)]))
                        for _ in range(rng.randint(0, 45))) for _ in range(2000)]
    for basis in (0, 1, 0xDEADBEEF, 0xFFFFFFFF):
        assert hash_strings(strings, basis) == [hash_string(x, basis) for x in strings]
    assert shash_walk(strings[:500]) == list(shash_order(strings[:500]))


def _expansions_one_by_one(total: int) -> list[int]:
    mask, out = 0, []
    for n in range(1, total + 1):
        if n // 2 > mask and calc_mask(n) > mask:
            mask = calc_mask(n)
            out.append(n)
    return out


def test_expansions_as_the_full_simulation_finds_them() -> None:
    for total in range(0, 3000, 3):
        assert hmap_expansions(total) == _expansions_one_by_one(total)


@pytest.mark.parametrize("seed", range(6))
def test_a_subset_walks_as_the_full_table_restricted(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        total = rng.randint(0, 2500)
        names = [f"lsp-{rng.random()}" for _ in range(total)]
        full = hmap_order((hash_string(n), n) for n in names)
        chosen = set(rng.sample(range(total), min(total, rng.randint(0, 80))))
        place = {n: i for i, n in enumerate(names)}
        got = hmap_order_of(((i + 1, hash_string(names[i]), names[i])
                             for i in sorted(chosen)), total)
        assert got == [n for n in full if place[n] in chosen]


def test_an_off_by_one_place_is_seen() -> None:
    """Places counted from 0 instead of 1 give another order (the check is not vacuous)."""
    names = [f"p{i}" for i in range(300)]
    full = hmap_order((hash_string(n), n) for n in names)
    wrong = hmap_order_of(((i, hash_string(n), n) for i, n in enumerate(names)), len(names))
    assert wrong != full
