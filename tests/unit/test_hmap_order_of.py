"""`hmap_order_of`: the walk order of some items of a large hmap, computed from those
items alone, equals the full walk restricted to them (northd's partial rebuilds walk
the ports of a few datapaths in the order a full build walks every port)."""

from __future__ import annotations

import random

import pytest

from pyovsdb.util.ovshash import calc_mask, hash_string, hmap_expansions, hmap_order, hmap_order_of


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
