"""engine property: a small incremental graph equals its own full recompute, and an
independent oracle, after every run of a random change sequence.

The toy graph (sums and filters over two dicts) has every kind of input the engine
knows: handled incrementally, handled but declining (a removed weight, an untracked
delta after an input's recompute), no handler at all, a recompute that reports
NO_CHANGE, and a node with two inputs whose answers must merge. Random steps also force
recomputes and disallow them (canceled runs).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from pyovsdb.engine import (
    NO_CHANGE,
    Change,
    Delta,
    Engine,
    Handled,
    Input,
    Leaf,
    NoChange,
    Node,
    State,
)

Items = dict[str, int]
ItemsLeaf = Leaf[Items, Delta[str]]


class Evens(Node[Items, Delta[str]]):
    """The items with even values. Its recompute records no delta, so successors get
    delta None after it and must fall back."""

    def __init__(self, items: ItemsLeaf) -> None:
        super().__init__("evens", items=Input(items, self.on_items))

    def run(self, *, items: Items) -> Items:
        return {k: v for k, v in items.items() if v % 2 == 0}

    def new_delta(self) -> Delta[str]:
        return Delta()

    def on_items(self, change: Change[Items, Delta[str]]) -> Handled:
        if change.delta is None:
            return Handled.UNHANDLED
        for key in sorted(change.delta.keys()):
            value = change.data.get(key)
            had = key in self.data
            if value is not None and value % 2 == 0:
                if not had:
                    self.track().add(key)
                elif self.data[key] != value:
                    self.track().update(key)
                self.data[key] = value
            elif had:
                del self.data[key]
                self.track().remove(key)
        return Handled.HANDLED_UPDATED if self.delta else Handled.HANDLED_UNCHANGED


class Weighted(Node[Items, Delta[str]]):
    """Even items times their weight (1 if none). A removed weight is not handled; its
    recompute diffs old against new, so successors get a delta even then."""

    def __init__(self, evens: Evens, weights: ItemsLeaf) -> None:
        self.evens = Input(evens, self.on_evens)
        self.weights = Input(weights, self.on_weights)
        super().__init__("weighted", evens=self.evens, weights=self.weights)

    def run(self, *, evens: Items, weights: Items) -> Items:
        new = {k: v * weights.get(k, 1) for k, v in evens.items()}
        if self.has_data:
            self.delta = Delta.diff(self.data, new)
        return new

    def new_delta(self) -> Delta[str]:
        return Delta()

    def _refresh(self, keys: set[str]) -> Handled:
        evens, weights = self.evens.data, self.weights.data
        before = self.track().copy()
        for key in sorted(keys):
            if key in evens:
                value = evens[key] * weights.get(key, 1)
                if key not in self.data:
                    self.track().add(key)
                elif self.data[key] != value:
                    self.track().update(key)
                self.data[key] = value
            elif key in self.data:
                del self.data[key]
                self.track().remove(key)
        return Handled.HANDLED_UPDATED if self.track() != before else Handled.HANDLED_UNCHANGED

    def on_evens(self, change: Change[Items, Delta[str]]) -> Handled:
        if change.delta is None:
            return Handled.UNHANDLED
        return self._refresh(change.delta.keys())

    def on_weights(self, change: Change[Items, Delta[str]]) -> Handled:
        if change.delta is None or change.delta.removed:
            return Handled.UNHANDLED
        return self._refresh(change.delta.keys())


@dataclass
class Sum:
    total: int = 0
    parts: Items = field(default_factory=dict)


class Total(Node[Sum, None]):
    def __init__(self, weighted: Weighted) -> None:
        super().__init__("total", weighted=Input(weighted, self.on_weighted))

    def run(self, *, weighted: Items) -> Sum:
        return Sum(sum(weighted.values()), dict(weighted))

    def on_weighted(self, change: Change[Items, Delta[str]]) -> Handled:
        if change.delta is None:
            return Handled.UNHANDLED
        old = Sum(self.data.total, dict(self.data.parts))
        for key in sorted(change.delta.keys()):
            self.data.total -= self.data.parts.pop(key, 0)
            if key in change.data:
                self.data.parts[key] = change.data[key]
                self.data.total += change.data[key]
        return Handled.HANDLED_UNCHANGED if self.data == old else Handled.HANDLED_UPDATED


class Count(Node[int, None]):
    """How many items: no handler, every change recomputes; NO_CHANGE when equal."""

    def __init__(self, items: ItemsLeaf) -> None:
        super().__init__("count", items=Input(items))

    def run(self, *, items: Items) -> int | NoChange:
        if self.has_data and self.data == len(items):
            return NO_CHANGE
        return len(items)


class Output(Node[tuple[int, int], None]):
    def __init__(self, total: Total, count: Count) -> None:
        self.total = Input(total, self.on_input)
        self.count = Input(count, self.on_input)
        super().__init__("output", total=self.total, count=self.count)

    def run(self, *, total: Sum, count: int) -> tuple[int, int]:
        return (total.total, count)

    def on_input(self, change: Change[object, None]) -> Handled:
        new = (self.total.data.total, self.count.data)
        if new == self.data:
            return Handled.HANDLED_UNCHANGED
        self.data = new
        return Handled.HANDLED_UPDATED


def build(items: Items, weights: Items) -> tuple[Engine, ItemsLeaf, ItemsLeaf]:
    items_leaf: ItemsLeaf = Leaf("items", items)
    weights_leaf: ItemsLeaf = Leaf("weights", weights)
    evens = Evens(items_leaf)
    output = Output(Total(Weighted(evens, weights_leaf)), Count(items_leaf))
    return Engine(output), items_leaf, weights_leaf


def oracle(items: Items, weights: Items) -> tuple[int, int]:
    total = sum(v * weights.get(k, 1) for k, v in items.items() if v % 2 == 0)
    return total, len(items)


def snapshot(engine: Engine) -> dict[str, object]:
    return {node.name: node.data for node in engine.nodes}


def apply(target: Items, delta: Delta[str], key: str, value: int | None) -> None:
    if value is None:
        if key in target:
            del target[key]
            delta.remove(key)
    elif key not in target:
        target[key] = value
        delta.add(key)
    elif target[key] != value:
        target[key] = value
        delta.update(key)


KEYS = st.sampled_from("abcde")
OP = st.tuples(st.booleans(), KEYS, st.none() | st.integers(0, 5))
STEP = st.tuples(st.lists(OP, max_size=4), st.booleans(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=25))
def test_incremental_equals_recompute_after_every_run(
    steps: list[tuple[list[tuple[bool, str, int | None]], bool, bool]],
) -> None:
    items: Items = {}
    weights: Items = {}
    engine, _, _ = build(items, weights)
    engine.run()
    for ops, force, disallow in steps:
        item_delta: Delta[str] = Delta()
        weight_delta: Delta[str] = Delta()
        for is_weight, key, value in ops:
            if is_weight:
                apply(weights, weight_delta, key, value)
            else:
                apply(items, item_delta, key, value)
        if force:
            engine.force_recompute()
        result = engine.run(
            {"items": item_delta, "weights": weight_delta}, recompute_allowed=not disallow
        )
        if result.canceled:
            assert engine.recompute_pending
            continue
        assert result.states["output"] is not State.STALE
        fresh, _, _ = build(dict(items), dict(weights))
        fresh.run()
        assert snapshot(engine) == snapshot(fresh)
        assert engine.node_data("output") == oracle(items, weights)


def test_small_changes_stay_incremental() -> None:
    items: Items = {"a": 2, "b": 3}
    weights: Items = {"a": 10}
    engine, _, _ = build(items, weights)
    engine.run()
    engine.clear_stats()

    items["c"] = 4
    result = engine.run({"items": Delta(added=["c"])})
    assert result.recomputed == {"count": "missing handler for input items"}
    assert result.computed == ("evens", "weighted", "total", "output")
    assert engine.node_data("output") == (24, 3)

    weights["c"] = 2  # handled
    result = engine.run({"weights": Delta(added=["c"])})
    assert result.recomputed == {}
    assert result.states["count"] is State.UNCHANGED  # no updated input: untouched
    assert engine.node_data("output") == (28, 3)

    del weights["a"]  # a removed weight is declined: weighted recomputes, with a diff
    result = engine.run({"weights": Delta(removed=["a"])})
    assert result.recomputed == {"weighted": "failed handler for input weights"}
    assert result.computed == ("total", "output")
    assert engine.node_data("output") == (10, 3)

    items["b"] = 5  # odd to odd: count recomputes to the same value, nothing else moves
    result = engine.run({"items": Delta(updated=["b"])})
    assert result.states["evens"] is State.UNCHANGED
    assert result.states["count"] is State.UNCHANGED
    assert result.states["output"] is State.UNCHANGED
    stats = engine.stats
    assert (stats["total"].recompute, stats["total"].compute) == (0, 3)
    assert (stats["count"].recompute, stats["count"].compute) == (2, 0)


# -- Delta composition ----------------------------------------------------------------

STATE = st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 2), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(STATE, min_size=1, max_size=8))
def test_merged_diffs_describe_the_overall_change(states: list[Items]) -> None:
    steps = [Delta.diff(a, b) for a, b in itertools.pairwise(states)]
    merged = Delta.merged(*steps)
    overall = Delta.diff(states[0], states[-1])
    assert merged.added == overall.added
    assert merged.removed == overall.removed
    # Updates may be overstated (a value changed and came back), never missed.
    assert overall.updated <= merged.updated
    for key in merged.updated - overall.updated:
        assert states[0][key] == states[-1][key]


@settings(max_examples=200, deadline=None)
@given(st.lists(STATE, min_size=4, max_size=4))
def test_delta_merge_is_associative(states: list[Items]) -> None:
    a, b, c = (Delta.diff(x, y) for x, y in itertools.pairwise(states))
    assert Delta.merged(a, Delta.merged(b, c)) == Delta.merged(Delta.merged(a, b), c)
