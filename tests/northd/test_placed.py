"""`build.placed.Placed` puts a few keys in the dict's own order without walking it:
after any sequence of puts, deletes, pops, clears and updates, `in_order` of any keys
is the dict's order of those keys, as a plain dict would have it."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyovsdb.northd.build.placed import Placed

KEYS = st.sampled_from("abc")
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), KEYS, st.integers(0, 9)),
    st.tuples(st.just("del"), KEYS, st.just(0)),
    st.tuples(st.just("pop"), KEYS, st.just(0)),
    st.tuples(st.just("clear"), KEYS, st.just(0)),
    st.tuples(st.just("update"), KEYS, st.integers(0, 9)),
), max_size=40)


@settings(max_examples=500, derandomize=True, database=None)
@given(OPS, st.sets(KEYS))
@example([("set", "a", 1), ("set", "b", 2), ("pop", "a", 0), ("set", "a", 3)], {"a", "b"})
def test_in_order_is_the_dict_order(ops: list[tuple[str, str, int]], some: set[str]) -> None:
    placed: Placed[str, int] = Placed()
    plain: dict[str, int] = {}
    for op, key, value in ops:
        if op == "set":
            placed[key] = plain[key] = value
        elif op in ("del", "pop") and key in plain:
            del plain[key]
            if op == "del":
                del placed[key]
            else:
                assert placed.pop(key) is not None
        elif op == "clear":
            placed.clear()
            plain.clear()
        elif op == "update":
            placed.update({key: value, "z": value})
            plain.update({key: value, "z": value})
    assert list(placed.items()) == list(plain.items())
    assert placed.in_order(some) == [v for k, v in plain.items() if k in some]


def test_ways_around_the_places_are_refused() -> None:
    placed: Placed[str, int] = Placed()
    placed["a"] = 1
    with pytest.raises(TypeError):
        placed.setdefault("b", 2)
    with pytest.raises(TypeError):
        placed.popitem()
    with pytest.raises(TypeError):
        placed.update(b=2)
    assert dict(placed) == {"a": 1}
