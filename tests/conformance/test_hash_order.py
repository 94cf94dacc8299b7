"""`ovsdb.hashorder` against orders observed on the real ovsdb-server 3.1 (no server
needed): which extra member it names, and which of several `where`s it keeps."""

from __future__ import annotations

from pyovsdb.ovsdb.hashorder import first_in_shash_order, shash_find_index, shash_order


def test_extra_member_named_first() -> None:
    # "Member 'bar' and 1 other member...", "Member 'baz' and 2 other members..."
    op = ["op", "table", "row", "foo", "bar"]
    assert first_in_shash_order(op, ["foo", "bar"]) == "bar"
    assert first_in_shash_order([*op, "baz"], ["foo", "bar", "baz"]) == "baz"


def test_order_is_a_permutation_that_depends_on_insertion() -> None:
    names = [f"c{i}" for i in range(40)]
    assert sorted(shash_order(names)) == sorted(names)
    assert shash_order(names) != tuple(names)


def test_duplicate_condition_found() -> None:
    # Two `where`s on one table: the first is kept; three: the last (observed).
    assert shash_find_index(1) == 0
    assert shash_find_index(2) == 0
    assert shash_find_index(3) == 2
