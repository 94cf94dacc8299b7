"""engine: handler answers, recompute fallback, cancel and forced recompute, state
merging across inputs, stats and their show-stats text, topological order, cycles, DOT.

The nodes here are small and record what the engine asked of them, so each test states
exactly which nodes recomputed, which were computed by handlers, and what they saw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pyovsdb.engine import (
    NO_CHANGE,
    Change,
    CycleError,
    Delta,
    Engine,
    Group,
    Handled,
    Input,
    Leaf,
    NoChange,
    NoDataError,
    Node,
    State,
)

Items = dict[str, int]
ItemsLeaf = Leaf[Items, Delta[str]]


class Scripted(Node[list[str], Delta[str]]):
    """A node whose handlers answer from a script, and whose data is the names of its
    inputs at the last recompute plus the handler calls since."""

    def __init__(
        self,
        name: str,
        inputs: dict[str, Node[Any, Any]],
        answers: dict[str, Handled | None],
    ) -> None:
        self.answers = dict(answers)
        self.calls: list[str] = []
        self.runs = 0
        self.run_result: list[str] | NoChange | None = None
        ins: dict[str, Input[Any, Any]] = {}
        for key, node in inputs.items():
            handler = None if answers.get(key) is None else self._handler(key, node.name)
            ins[key] = Input(node, handler)
        super().__init__(name, inputs=Group(ins))

    def _handler(self, key: str, node: str) -> Callable[[Change[Any, Any]], Handled]:
        def handle(change: Change[Any, Any]) -> Handled:
            assert change.input == node
            self.calls.append(key)
            answer = self.answers[key]
            assert answer is not None
            if answer is Handled.HANDLED_UPDATED:
                self.track().update(key)
            return answer

        handle.__name__ = f"on_{key}"
        return handle

    def run(self, *, inputs: Mapping[str, Any]) -> list[str] | NoChange:
        self.runs += 1
        if self.run_result is not None:
            return self.run_result
        return sorted(inputs)

    def new_delta(self) -> Delta[str]:
        return Delta()


def leaf(name: str, data: Items | None = None) -> ItemsLeaf:
    return Leaf(name, {} if data is None else data)


def change(*keys: str) -> Delta[str]:
    return Delta(updated=keys)


# -- states and handler answers -----------------------------------------------------


def test_first_run_recomputes_everything_then_unchanged_inputs_do_nothing() -> None:
    a, b = leaf("a"), leaf("b")
    n = Scripted("n", {"a": a, "b": b}, {"a": Handled.HANDLED_UPDATED})
    engine = Engine(n)
    result = engine.run()
    assert result.ran and not result.canceled
    assert result.recomputed == {"n": "forced"}
    assert result.states == {"a": State.UNCHANGED, "b": State.UNCHANGED, "n": State.UPDATED}
    assert n.data == ["a", "b"]
    assert n.runs == 1

    result = engine.run({"a": Delta(), "b": None})  # empty changes are no changes
    assert result.states["n"] is State.UNCHANGED
    assert result.recomputed == {} and result.computed == ()
    assert n.runs == 1 and n.calls == []
    assert not result.updated and not engine.has_updated()


def test_handled_updated_and_delta_reaches_successor() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": Handled.HANDLED_UPDATED})
    seen: list[Delta[str] | None] = []

    class Sink(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("sink", n=Input(n, self.on_n))

        def run(self, *, n: list[str]) -> int:
            return len(n)

        def on_n(self, change: Change[list[str], Delta[str]]) -> Handled:
            seen.append(change.delta)
            assert change.node == "n" and change.data is n.data
            return Handled.HANDLED_UNCHANGED

    engine = Engine(Sink())
    engine.run()
    result = engine.run({"a": change("x")})
    assert result.states == {"a": State.UPDATED, "n": State.UPDATED, "sink": State.UNCHANGED}
    assert result.computed == ("n", "sink")
    assert result.recomputed == {}
    assert seen == [Delta(updated=["a"])]
    assert n.calls == ["a"] and n.runs == 1
    assert engine.has_updated("n") and not engine.has_updated("sink")

    # The next run starts from clean deltas: nothing leaks from the last run.
    result = engine.run()
    assert n.delta is None and a.delta is None
    assert result.states["n"] is State.UNCHANGED


def test_handled_unchanged_keeps_the_node_unchanged() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": Handled.HANDLED_UNCHANGED})
    engine = Engine(n)
    engine.run()
    result = engine.run({"a": change("x")})
    assert result.states["n"] is State.UNCHANGED
    assert result.computed == ("n",)
    assert engine.stats["n"].compute == 1 and engine.stats["n"].recompute == 1


def test_one_updated_and_one_unchanged_handler_merge_to_updated() -> None:
    for order in (("a", "b"), ("b", "a")):
        a, b = leaf("a"), leaf("b")
        answers: dict[str, Handled | None] = {
            "a": Handled.HANDLED_UPDATED,
            "b": Handled.HANDLED_UNCHANGED,
        }
        inputs: dict[str, Node[Any, Any]] = {"a": a, "b": b}
        n = Scripted("n", {k: inputs[k] for k in order}, answers)
        engine = Engine(n)
        engine.run()
        result = engine.run({"a": change("x"), "b": change("y")})
        # Whichever handler runs last, the UPDATED answer is not overwritten.
        assert n.calls == list(order)
        assert result.states["n"] is State.UPDATED, order
        assert n.delta == Delta(updated=["a"])


def test_missing_handler_recomputes_without_calling_other_handlers() -> None:
    a, b = leaf("a"), leaf("b")
    n = Scripted("n", {"a": a, "b": b}, {"a": Handled.HANDLED_UPDATED, "b": None})
    engine = Engine(n)
    engine.run()
    result = engine.run({"a": change("x"), "b": change("y")})
    assert result.recomputed == {"n": "missing handler for input b"}
    assert n.calls == []  # OVN checks every updated input for a handler first
    assert n.runs == 2
    assert result.states["n"] is State.UPDATED
    assert n.delta is None  # a recompute that says nothing leaves successors untracked


def test_failed_handler_recomputes_and_drops_partial_delta() -> None:
    a, b = leaf("a"), leaf("b")
    n = Scripted("n", {"a": a, "b": b}, {"a": Handled.HANDLED_UPDATED, "b": Handled.UNHANDLED})
    engine = Engine(n)
    engine.run()
    result = engine.run({"a": change("x"), "b": change("y")})
    assert n.calls == ["a", "b"]
    assert result.recomputed == {"n": "failed handler for input b"}
    assert n.delta is None  # a's tracked update was cleared before run()
    assert result.computed == ()
    stats = engine.stats["n"]
    assert (stats.recompute, stats.compute, stats.cancel) == (2, 0, 0)


def test_recompute_may_say_no_change() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": None})
    engine = Engine(n)
    engine.run()
    first = n.data
    n.run_result = NO_CHANGE
    result = engine.run({"a": change("x")})
    assert result.states["n"] is State.UNCHANGED
    assert n.data is first


def test_handler_returning_a_bool_is_an_error_and_forces_recompute() -> None:
    a = leaf("a")

    class Bad(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("bad", a=Input(a, self.on_a))

        def run(self, *, a: Items) -> int:
            return 0

        def on_a(self, change: Change[Items, Delta[str]]) -> Handled:
            return True  # type: ignore[return-value]

    engine = Engine(Bad())
    engine.run()
    with pytest.raises(TypeError, match="not a Handled"):
        engine.run({"a": change("x")})
    assert engine.recompute_pending
    assert engine.run().recomputed == {"bad": "forced"}


# -- cancel and forced recompute ----------------------------------------------------


def test_cancel_stops_the_run_and_forces_recompute_next() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": None})
    m = Scripted("m", {"n": n}, {"n": None})
    engine = Engine(m)
    engine.run()
    result = engine.run({"a": change("x")}, recompute_allowed=False)
    assert result.canceled and result.ran
    assert result.canceled_node == "n"
    assert result.states == {"a": State.UPDATED, "n": State.CANCELED, "m": State.STALE}
    assert engine.canceled and engine.recompute_pending
    assert engine.stats["n"].cancel == 1 and engine.stats["m"].cancel == 0
    assert n.runs == 1 and m.runs == 1

    # While the recompute is pending, a run without recomputes does nothing at all.
    skipped = engine.run({"a": change("y")}, recompute_allowed=False)
    assert not skipped.ran and skipped.canceled
    assert set(skipped.states.values()) == {State.STALE}
    assert engine.stats["n"].cancel == 1

    result = engine.run()
    assert result.recomputed == {"n": "forced", "m": "forced"}
    assert not result.canceled and not engine.canceled and not engine.recompute_pending
    assert n.runs == 2 and m.runs == 2


def test_handled_changes_run_even_when_recompute_not_allowed() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": Handled.HANDLED_UPDATED})
    engine = Engine(n)
    engine.run()
    result = engine.run({"a": change("x")}, recompute_allowed=False)
    assert not result.canceled and result.states["n"] is State.UPDATED


def test_force_recompute() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": Handled.HANDLED_UPDATED})
    engine = Engine(n)
    engine.run()
    assert not engine.need_run() and not engine.need_run({"a": Delta()})
    assert engine.need_run({"a": change("x")})
    engine.force_recompute()
    assert engine.need_run()
    result = engine.run()
    assert result.recomputed == {"n": "forced"} and n.calls == []
    assert not engine.recompute_pending
    assert engine.run().recomputed == {}


def test_first_run_canceled_when_recompute_not_allowed() -> None:
    n = Scripted("n", {"a": leaf("a")}, {"a": None})
    engine = Engine(n)
    result = engine.run(recompute_allowed=False)
    assert result.canceled and not n.has_data
    with pytest.raises(NoDataError):
        engine.node_data("n")
    engine.run()
    assert engine.node_data("n") == ["a"]


def test_unknown_leaf_change_is_rejected() -> None:
    n = Scripted("n", {"a": leaf("a")}, {"a": None})
    engine = Engine(n)
    with pytest.raises(KeyError, match="no leaf node 'n'"):
        engine.run({"n": change("x")})
    with pytest.raises(KeyError):
        engine.run({"typo": change("x")})


# -- building the graph -------------------------------------------------------------


def test_topological_order_follows_inputs_depth_first() -> None:
    x, y, z = leaf("x"), leaf("y"), leaf("z")
    p = Scripted("p", {"y": y, "x": x}, {})
    q = Scripted("q", {"z": z, "p": p}, {})
    root = Scripted("root", {"q": q, "p": p, "x": x}, {})
    engine = Engine(root)
    assert [node.name for node in engine.nodes] == ["z", "y", "x", "p", "q", "root"]
    assert list(engine.stats) == ["z", "y", "x", "p", "q", "root"]
    assert sorted(engine.leaves) == ["x", "y", "z"]
    assert engine.node("p") is p


def test_shared_input_runs_once() -> None:
    a = leaf("a")
    p = Scripted("p", {"a": a}, {"a": None})
    q = Scripted("q", {"a": a}, {"a": None})
    root = Scripted("root", {"p": p, "q": q}, {"p": None, "q": None})
    engine = Engine(root)
    engine.run()
    engine.run({"a": change("x")})
    assert (p.runs, q.runs, root.runs) == (2, 2, 2)
    assert engine.stats["a"].recompute == 2


def test_cycle_rejected() -> None:
    a = leaf("a")

    class Later(Node[int, None]):
        def run(self, *, q: int = 0, a: int = 0, p: int = 0) -> int:
            return 0

    p, q = Later("p"), Later("q")
    p.inputs = {"q": Input(q), "a": Input(a)}
    q.inputs = {"p": Input(p)}
    with pytest.raises(CycleError, match="p -> q -> p"):
        Engine(p)


def test_bad_graphs_rejected() -> None:
    a1, a2 = leaf("a"), leaf("a")
    with pytest.raises(ValueError, match="two engine nodes are called 'a'"):
        Engine(Scripted("n", {"x": a1, "y": Scripted("m", {"z": a2}, {})}, {}))

    class NoInputs(Node[int, None]):
        def run(self) -> int:
            return 0

    with pytest.raises(ValueError, match="no inputs"):
        Engine(NoInputs("lonely"))

    class WrongParams(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("wrong", a=Input(leaf("a")))

        def run(self, *, b: Items) -> int:
            return 0

    with pytest.raises(TypeError, match=r"run\(\) takes \['b'\], its inputs are \['a'\]"):
        Engine(WrongParams())

    class NoRun(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("norun", a=Input(leaf("a")))

    with pytest.raises(TypeError, match="does not define run"):
        Engine(NoRun())


def test_typed_run_receives_each_inputs_data_by_name() -> None:
    items = leaf("items", {"x": 2, "y": 3})
    weights = leaf("weights", {"x": 10})

    class Weighted(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("weighted", items=Input(items), weights=Input(weights))

        def run(self, *, items: Items, weights: Items) -> int:
            return sum(v * weights.get(k, 1) for k, v in items.items())

    node = Weighted()
    engine = Engine(node)
    engine.run()
    assert node.data == 23
    items.data["y"] = 4
    engine.run({"items": change("y")})
    assert engine.node_data("weighted") == 24


def test_group_is_read_as_one_mapping_and_handled_member_by_member() -> None:
    a, b = leaf("T_a", {"x": 1}), leaf("T_b", {"y": 2})
    calls: list[str] = []

    class Total(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("total", tables=Group({"a": Input(a, self.on_a), "b": Input(b)}))

        def run(self, *, tables: Any) -> int:
            calls.append("run")
            assert set(tables) == {"a", "b"}
            with pytest.raises(TypeError):
                tables["c"] = {}  # read-only
            return sum(sum(t.values()) for t in tables.values())

        def on_a(self, change: Change[Items, Delta[str]]) -> Handled:
            calls.append(f"on_a {change.input}")
            return Handled.HANDLED_UNCHANGED

    node = Total()
    engine = Engine(node)
    assert set(node.inputs) == {"T_a", "T_b"}
    engine.run()
    assert node.data == 3 and calls == ["run"]
    engine.run({"T_a": change("x")})
    assert calls == ["run", "on_a T_a"]
    b.data["z"] = 5
    engine.run({"T_b": change("z")})  # no handler: recompute, reading the group
    assert calls == ["run", "on_a T_a", "run"] and node.data == 8


def test_signature_check_covers_groups_and_refuses_catch_alls() -> None:
    a = leaf("T_a")

    class CatchAll(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("catchall", tables=Group({"a": Input(a)}))

        def run(self, **inputs: Any) -> int:
            return 0

    with pytest.raises(TypeError, match=r"run\(\) takes every keyword"):
        Engine(CatchAll())

    class MemberByName(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("byname", tables=Group({"a": Input(a)}))

        def run(self, *, T_a: Items) -> int:
            return 0

    with pytest.raises(TypeError, match=r"run\(\) takes \['T_a'\], its inputs are \['tables'\]"):
        Engine(MemberByName())

    with pytest.raises(ValueError, match="input T_a given twice"):
        Node("twice", x=Group({"a": Input(a)}), T_a=Input(a))


# -- stats, logging, text -----------------------------------------------------------


class TickClock:
    """Advances by `step` seconds on every reading."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_stats_durations_and_slow_step_log() -> None:
    a = leaf("a")
    n = Scripted("n", {"a": a}, {"a": Handled.HANDLED_UPDATED})
    logged: list[str] = []
    debugged: list[str] = []
    engine = Engine(n, clock=TickClock(0.6), log=logged.append, debug=debugged.append)
    engine.run()
    engine.run({"a": change("x")})
    assert debugged == []
    stats = engine.stats["n"]
    assert (stats.recompute, stats.compute, stats.cancel) == (1, 1, 0)
    assert stats.recompute_time == pytest.approx(0.6)
    assert stats.compute_time == pytest.approx(0.6)
    assert stats.time == pytest.approx(1.2)
    assert logged == [
        "node: n, recompute (forced) took 600ms",
        "node: n, handler for input a took 600ms",
    ]
    engine.compute_log_timeout_ms = 600
    engine.run({"a": change("x")})
    assert len(logged) == 2  # 600 ms is not over a 600 ms timeout
    assert debugged == ["node: n, handler for input a took 600ms"]
    engine.force_recompute()
    engine.run(recompute_allowed=False)
    assert debugged[1:] == ["node: n, recompute (forced) aborted"]
    assert engine.last_result is not None and engine.last_result.canceled_node == "n"
    engine.clear_stats()
    assert engine.stats["n"].compute == 0 and engine.stats["n"].time == 0


def test_show_stats_text_matches_ovn_northd() -> None:
    a = leaf("NB_logical_switch")
    n = Scripted("northd", {"ls": a}, {"ls": None})
    engine = Engine(n)
    engine.run()
    engine.run({"NB_logical_switch": change("x")}, recompute_allowed=False)
    assert engine.show_stats() == (
        "Node: NB_logical_switch\n"
        "- recompute:            2\n"
        "- compute:              0\n"
        "- abort:                0\n"
        "Node: northd\n"
        "- recompute:            1\n"
        "- compute:              0\n"
        "- abort:                1\n"
    )
    assert engine.show_stats("northd") == (
        "Node: northd\n- recompute:            1\n- compute:              0\n"
        "- abort:                1\n"
    )
    assert engine.show_stats("northd", "recompute") == "1"
    assert engine.show_stats("northd", "abort") == "1"
    assert engine.show_stats("northd", "bogus") == "Invalid stat type : bogus"
    assert engine.show_stats("nothing") == ""
    assert engine.show_stats("northd", "standby") == "0"


def test_show_stats_counts_standby_runs_on_a_line_of_their_own() -> None:
    a = leaf("NB_logical_switch")
    n = Scripted("northd", {"ls": a}, {"ls": None})
    engine = Engine(n)
    result = engine.run()
    engine.stats.count_standby((*result.recomputed, *result.computed))
    assert engine.show_stats("northd") == (
        "Node: northd\n- recompute:            1\n- compute:              0\n"
        "- abort:                0\n- standby:              1\n"
    )
    assert engine.show_stats("northd", "standby") == "1"
    assert "standby" not in engine.show_stats("NB_logical_switch")
    engine.clear_stats()
    assert "standby" not in engine.show_stats()


def test_dump_dot() -> None:
    a, b = leaf("a"), leaf('b"q')
    n = Scripted("n", {"a": a, "b": b}, {"a": Handled.HANDLED_UPDATED})
    assert Engine(n).dump_dot() == (
        "digraph engine {\n"
        "    rankdir=LR;\n"
        '    "a" [shape=ellipse];\n'
        '    "b\\"q" [shape=ellipse];\n'
        '    "n" [shape=box];\n'
        '    "a" -> "n" [label="on_a"];\n'
        '    "b\\"q" -> "n" [style=dashed];\n'
        "}\n"
    )


# -- Delta ----------------------------------------------------------------------------


def test_delta_steps_compose() -> None:
    d: Delta[str] = Delta()
    d.add("a")
    d.remove("a")  # added then removed: nothing
    assert not d and len(d) == 0
    d.remove("b")
    d.add("b")  # removed then added: updated
    d.add("c")
    d.update("c")  # added then updated: added
    d.update("e")
    d.remove("e")  # updated then removed: removed
    assert d == Delta(added=["c"], removed=["e"], updated=["b"])
    assert d.keys() == {"b", "c", "e"} and "b" in d and "a" not in d
    assert sorted(d) == ["b", "c", "e"]
    assert repr(d) == "Delta(added={'c'}, removed={'e'}, updated={'b'})"


def test_delta_merge_is_sequential_composition() -> None:
    first = Delta(added=["a", "c"], removed=["b"], updated=["d"])
    later = Delta(added=["b"], removed=["a", "d"], updated=["c", "e"])
    assert Delta.merged(first, later) == Delta(removed=["d"], updated=["b", "e"], added=["c"])
    assert first == Delta(added=["a", "c"], removed=["b"], updated=["d"])  # not mutated
    copy = first.copy()
    copy.merge(later)
    assert copy == Delta.merged(first, later)


def test_delta_diff_and_validation() -> None:
    old = {"a": 1, "b": 2, "c": 3}
    new = {"b": 2, "c": 4, "d": 5}
    assert Delta.diff(old, new) == Delta(added=["d"], removed=["a"], updated=["c"])
    with pytest.raises(ValueError):
        Delta(added=["a"], removed=["a"])


# -- a recompute after handlers that already changed the data ------------------------


class Mirror(Node[Items, Delta[str]]):
    """A copy of leaf `a` (handled key by key) that declines any change of leaf `b`;
    its recompute diffs the data as the handlers left it against the new data."""

    def __init__(self, a: ItemsLeaf, b: ItemsLeaf) -> None:
        self.a = Input(a, self.on_a)
        super().__init__("mirror", a=self.a, b=Input(b, self.on_b))
        self.no_change = False

    def run(self, *, a: Items, b: Items) -> Items | NoChange:
        new = {**a, **b}
        if self.no_change:
            return NO_CHANGE
        self.delta = Delta.diff(self.data, new) if self.has_data else None
        return new

    def on_a(self, change: Change[Items, Delta[str]]) -> Handled:
        assert change.delta is not None
        for key in change.delta:
            if key in change.data:
                if key in self.data:
                    self.track().update(key)
                else:
                    self.track().add(key)
                self.data[key] = change.data[key]
            else:
                self.data.pop(key, None)
                self.track().remove(key)
        return Handled.HANDLED_UPDATED

    def on_b(self, change: Change[Items, Delta[str]]) -> Handled:
        return Handled.UNHANDLED

    def new_delta(self) -> Delta[str]:
        return Delta()


def test_recompute_after_handled_changes_composes_deltas() -> None:
    a, b = leaf("a", {"x": 1, "y": 2}), leaf("b")
    node = Mirror(a, b)
    engine = Engine(node)
    engine.run()
    del a.data["x"]
    a.data["z"] = 3
    b.data["q"] = 9
    # on_a removes x and adds z (tracked); on_b declines; run() then sees x and z done
    # already and diffs only q. Successors must still learn about x and z.
    result = engine.run({"a": Delta(removed=["x"], added=["z"]), "b": Delta(added=["q"])})
    assert result.recomputed == {"mirror": "failed handler for input b"}
    assert node.data == {"y": 2, "z": 3, "q": 9}
    assert node.delta == Delta(removed=["x"], added=["z", "q"])

    # A recompute saying NO_CHANGE after a handler changed the data is still UPDATED,
    # with the handlers' delta.
    a.data["y"] = 5
    node.no_change = True
    result = engine.run({"a": change("y"), "b": change("q")})
    assert result.recomputed == {"mirror": "failed handler for input b"}
    assert result.states["mirror"] is State.UPDATED
    assert node.delta == Delta(updated=["y"])


def test_recompute_requested_during_a_run_is_kept_for_the_next() -> None:
    a = leaf("a")
    engine: Engine | None = None

    class Asks(Node[int, None]):
        def __init__(self) -> None:
            super().__init__("asks", a=Input(a))

        def run(self, *, a: Items) -> int:
            assert engine is not None
            engine.force_recompute()  # e.g. a node that knows its input is incomplete
            return len(a)

    engine = Engine(Asks())
    engine.run()
    assert engine.recompute_pending
    assert engine.run().recomputed == {"asks": "forced"}
