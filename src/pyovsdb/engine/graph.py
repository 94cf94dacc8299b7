"""The engine: a DAG of nodes brought up to date, incrementally where it can, each run.

The algorithm is OVN's `lib/inc-proc-eng.c` (23.03) with the later fixes built in:
handlers answer with `Handled` and the engine sets the state, and `run()` returns the
node's data.

Rules kept here:
- Built once from a root: the nodes are every node the root reaches, in a topological
  order found by a depth-first walk over inputs in their declared order (OVN's order,
  which is also the order of `show-stats`). A cycle, two nodes with one name, a computing
  node without inputs, or a `run()` whose parameters are not its inputs' names is
  rejected at build time.
- Each run starts with every node STALE and every delta cleared, then walks the order.
  A leaf is UPDATED if the caller gave it a change, else UNCHANGED. A computing node
  recomputes if a recompute is forced, or if an UPDATED input has no handler ("missing
  handler for input X") or its handler answers UNHANDLED ("failed handler for input
  X"); otherwise it is UPDATED if any handler said HANDLED_UPDATED, else UNCHANGED. A
  node none of whose inputs is UPDATED is UNCHANGED without any call.
- A run that needs a recompute where none is allowed cancels the node, stops, and forces
  a full recompute on the next run; while that is pending, a run that allows no
  recompute does nothing at all (OVN's `engine_run`). An exception from a node leaves
  its data suspect, so it also forces the next run to recompute, and propagates.
- The first run of an engine is a full recompute: nodes have no data before it.
- Pure: no I/O and no clock of its own. Durations come from the clock the caller gives
  (seconds), and slow recomputes and handlers (over `compute_log_timeout_ms`) are
  reported, with OVN's texts, to the logger the caller gives (`log`, OVN's INFO);
  every other recompute, handler and canceled recompute to `debug` (OVN's DBG).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .node import Change, Handled, Leaf, NoChange, Node, State
from .stats import EngineStats

__all__ = ["CycleError", "Engine", "RunResult"]

Clock = Callable[[], float]
Logger = Callable[[str], None]


class CycleError(ValueError):
    """The nodes' inputs form a cycle."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one `Engine.run()` did.

    `states`: every node's state, in topological order. `ran`: False when the run was
    skipped (a recompute was pending and none was allowed). `canceled`: the run stopped
    at a node that needed a recompute it was not allowed. `recomputed`: nodes that
    recomputed (or were canceled), with the reason, in run order. `computed`: nodes
    brought up to date by their handlers alone.
    """

    states: Mapping[str, State]
    ran: bool
    canceled: bool
    recomputed: Mapping[str, str]
    computed: tuple[str, ...]

    @property
    def updated(self) -> bool:
        """Whether any node's data changed."""
        return any(state is State.UPDATED for state in self.states.values())

    @property
    def canceled_node(self) -> str | None:
        for name, state in self.states.items():
            if state is State.CANCELED:
                return name
        return None


def _no_clock() -> float:
    return 0.0


class Engine:
    """The engine over every node `root` reaches (see the module docstring)."""

    def __init__(
        self,
        root: Node[Any, Any],
        *,
        clock: Clock | None = None,
        log: Logger | None = None,
        compute_log_timeout_ms: int = 500,
        debug: Logger | None = None,
    ) -> None:
        self.root = root
        self.nodes: tuple[Node[Any, Any], ...] = _topological_order(root)
        self._by_name = {node.name: node for node in self.nodes}
        self._leaves = {node.name: node for node in self.nodes if isinstance(node, Leaf)}
        for node in self.nodes:
            _check_node(node)
        self.stats = EngineStats([node.name for node in self.nodes])
        # Who reads each node: a node none of whose inputs came out UPDATED is passed
        # over without a look at its inputs (most nodes, most runs: a few leaves of
        # seventy change).
        readers: dict[str, list[str]] = {node.name: [] for node in self.nodes}
        for node in self.nodes:
            for inp in node.inputs.values():
                readers[inp.node.name].append(node.name)
        self._readers = {name: tuple(names) for name, names in readers.items()}
        self.compute_log_timeout_ms = compute_log_timeout_ms
        self._clock = clock or _no_clock
        self._log = log
        self._debug = debug
        self.last_result: RunResult | None = None
        self._force = True
        self._canceled = False

    # -- queries ----------------------------------------------------------------

    def node(self, name: str) -> Node[Any, Any]:
        """The node called `name`; KeyError if there is none."""
        return self._by_name[name]

    def node_data(self, name: str) -> Any:
        """The data of the node called `name` (untyped; typed code reads `node.data`)."""
        return self._by_name[name].data

    def state(self, name: str) -> State:
        return self._by_name[name].state

    def has_updated(self, name: str | None = None) -> bool:
        """Whether node `name` (any node, if None) is UPDATED in the last run."""
        if name is not None:
            return self._by_name[name].state is State.UPDATED
        return any(node.state is State.UPDATED for node in self.nodes)

    def has_run(self) -> bool:
        """Whether the last run did anything (OVN's `engine_has_run`)."""
        return any(node.state is not State.STALE for node in self.nodes)

    @property
    def canceled(self) -> bool:
        """Whether the last run was canceled (OVN's `engine_aborted`)."""
        return self._canceled

    @property
    def recompute_pending(self) -> bool:
        """Whether the next run will recompute every node."""
        return self._force

    def need_run(self, leaf_changes: Mapping[str, object] | None = None) -> bool:
        """Whether a run would do anything: a recompute is pending, or one of
        `leaf_changes` is a change for its leaf."""
        if self._force:
            return True
        for name, change in (leaf_changes or {}).items():
            leaf = self._leaf(name)
            if change is not None and leaf.is_change(change):
                return True
        return False

    @property
    def leaves(self) -> Mapping[str, Leaf[Any, Any]]:
        return self._leaves

    # -- control ----------------------------------------------------------------

    def force_recompute(self) -> None:
        """Make the next run recompute every node (a reconnect, a failed commit,
        `inc-engine/recompute`)."""
        self._force = True

    def clear_stats(self) -> None:
        self.stats.clear()

    def show_stats(self, node: str | None = None, stat: str | None = None) -> str:
        """`inc-engine/show-stats [NODE [STAT]]`, in ovn-northd 23.03's text."""
        return self.stats.show(node, stat)

    # -- running ----------------------------------------------------------------

    def run(
        self, leaf_changes: Mapping[str, object] | None = None, recompute_allowed: bool = True
    ) -> RunResult:
        """Bring every node up to date with the leaves' changes of this run.

        `leaf_changes` maps leaf names to their change (leaves not named, or given
        None, have none). Returns what happened; see `RunResult`.
        """
        changes = dict(leaf_changes or {})
        for name in changes:
            self._leaf(name)
        for node in self.nodes:
            node._state = State.STALE
            node.clear_delta()
        recomputed: dict[str, str] = {}
        computed: list[str] = []
        if not recompute_allowed and self._canceled:
            return self._result(False, True, recomputed, computed)

        self._canceled = False
        force, self._force = self._force, False  # a request made during the run stays
        touched: set[str] = set()  # (nodes with an input UPDATED in this run)
        try:
            for node in self.nodes:
                if isinstance(node, Leaf):
                    self._run_leaf(node, changes.get(node.name))
                elif force or node.name in touched:
                    self._run_node(node, force, recompute_allowed, recomputed, computed)
                else:
                    node._state = State.UNCHANGED
                if node._state is State.UPDATED:
                    touched.update(self._readers[node.name])
                elif node._state is State.CANCELED:
                    self.stats[node.name].cancel += 1
                    self._canceled = True
                    self._force = True
                    return self._result(True, True, recomputed, computed)
        except BaseException:
            self._force = True
            raise
        return self._result(True, False, recomputed, computed)

    def _result(
        self, ran: bool, canceled: bool, recomputed: dict[str, str], computed: list[str]
    ) -> RunResult:
        self.last_result = RunResult(
            states={node.name: node.state for node in self.nodes},
            ran=ran,
            canceled=canceled,
            recomputed=recomputed,
            computed=tuple(computed),
        )
        return self.last_result

    def _leaf(self, name: str) -> Leaf[Any, Any]:
        try:
            return self._leaves[name]
        except KeyError:
            raise KeyError(f"no leaf node {name!r}") from None

    def _run_leaf(self, leaf: Leaf[Any, Any], change: object) -> None:
        if change is not None and leaf.is_change(change):
            leaf.delta = change
            leaf._state = State.UPDATED
        else:
            leaf._state = State.UNCHANGED
        self.stats[leaf.name].recompute += 1

    def _run_node(
        self,
        node: Node[Any, Any],
        force: bool,
        allowed: bool,
        recomputed: dict[str, str],
        computed: list[str],
    ) -> None:
        if force:
            self._recompute(node, "forced", allowed, recomputed)
            return
        updated = [(name, inp) for name, inp in node.inputs.items()
                   if inp.node._state is State.UPDATED]
        if not updated:
            node._state = State.UNCHANGED
            return
        for _, inp in updated:
            if inp.handler is None:
                reason = f"missing handler for input {inp.node.name}"
                self._recompute(node, reason, allowed, recomputed)
                return
        changed = False
        stats = self.stats[node.name]
        for name, inp in updated:
            assert inp.handler is not None
            start = self._clock()
            answer = inp.handler(Change(name, inp.node.name, inp.node.data, inp.node.delta))
            elapsed = self._clock() - start
            stats.compute_time += elapsed
            self._maybe_log(elapsed, f"node: {node.name}, handler for input {inp.node.name}")
            if answer is Handled.UNHANDLED:
                reason = f"failed handler for input {inp.node.name}"
                self._recompute(node, reason, allowed, recomputed, changed)
                return
            if answer is Handled.HANDLED_UPDATED:
                changed = True
            elif answer is not Handled.HANDLED_UNCHANGED:
                raise TypeError(
                    f"handler for input {inp.node.name} of node {node.name} "
                    f"returned {answer!r}, not a Handled"
                )
        stats.compute += 1
        computed.append(node.name)
        node._state = State.UPDATED if changed else State.UNCHANGED

    def _recompute(
        self,
        node: Node[Any, Any],
        reason: str,
        allowed: bool,
        recomputed: dict[str, str],
        handled_update: bool = False,
    ) -> None:
        recomputed[node.name] = reason
        if not allowed:
            node._state = State.CANCELED
            if self._debug is not None:
                self._debug(f"node: {node.name}, recompute ({reason}) aborted")
            return
        # Handlers that ran before this recompute may have changed the data already:
        # run() starts from the data as they left it, with no delta, and whatever delta
        # it records is composed with theirs.
        partial = node.delta
        node.clear_delta()
        start = self._clock()
        data = node.run(**node.run_arguments())
        elapsed = self._clock() - start
        stats = self.stats[node.name]
        stats.recompute += 1
        stats.recompute_time += elapsed
        self._maybe_log(elapsed, f"node: {node.name}, recompute ({reason})")
        if isinstance(data, NoChange):
            if not node.has_data:
                raise TypeError(f"node {node.name} returned NO_CHANGE but has no data yet")
            if handled_update:
                node.delta = partial
            node._state = State.UPDATED if handled_update else State.UNCHANGED
            return
        node._data = data
        node._state = State.UPDATED
        if partial is not None and node.delta is not None:
            node.delta = node.merge_deltas(partial, node.delta)
        elif handled_update:
            node.delta = None

    def _maybe_log(self, elapsed: float, what: str) -> None:
        ms = int(elapsed * 1000)
        if self._log is not None and ms > self.compute_log_timeout_ms:
            self._log(f"{what} took {ms}ms")
        elif self._debug is not None:
            self._debug(f"{what} took {ms}ms")

    # -- graph dump -------------------------------------------------------------

    def dump_dot(self) -> str:
        """The graph in Graphviz DOT: leaves as ellipses, computing nodes as boxes; an
        edge per input from the input to the node, labelled with its handler's name, or
        dashed if it has none (any change recomputes). Stable: topological order."""
        lines = ["digraph engine {", "    rankdir=LR;"]
        for node in self.nodes:
            shape = "ellipse" if isinstance(node, Leaf) else "box"
            lines.append(f"    {_dot_id(node.name)} [shape={shape}];")
        for node in self.nodes:
            for inp in node.inputs.values():
                edge = f"    {_dot_id(inp.node.name)} -> {_dot_id(node.name)}"
                if inp.handler is None:
                    lines.append(f"{edge} [style=dashed];")
                else:
                    label = getattr(inp.handler, "__name__", type(inp.handler).__name__)
                    lines.append(f"{edge} [label={_dot_id(label)}];")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _topological_order(root: Node[Any, Any]) -> tuple[Node[Any, Any], ...]:
    order: list[Node[Any, Any]] = []
    done: set[int] = set()
    path: list[Node[Any, Any]] = []
    names: dict[str, Node[Any, Any]] = {}

    def visit(node: Node[Any, Any]) -> None:
        if id(node) in done:
            return
        if any(n is node for n in path):
            start = next(i for i, n in enumerate(path) if n is node)
            cycle = [n.name for n in path[start:]] + [node.name]
            raise CycleError("engine nodes form a cycle: " + " -> ".join(reversed(cycle)))
        other = names.setdefault(node.name, node)
        if other is not node:
            raise ValueError(f"two engine nodes are called {node.name!r}")
        path.append(node)
        for inp in node.inputs.values():
            visit(inp.node)
        path.pop()
        done.add(id(node))
        order.append(node)

    visit(root)
    return tuple(order)


def _check_node(node: Node[Any, Any]) -> None:
    if isinstance(node, Leaf):
        return
    if not node.inputs:
        raise ValueError(f"node {node.name} has no inputs and is not a Leaf")
    if type(node).run is Node.run:
        raise TypeError(f"node {node.name} does not define run()")
    params = inspect.signature(node.run).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        raise TypeError(f"node {node.name}: run() takes every keyword; name its inputs")
    names = {
        p.name
        for p in params
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    required = {
        p.name
        for p in params
        if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_POSITIONAL
    }
    grouped = {m for members in node.groups.values() for m in members.values()}
    inputs = (set(node.inputs) - grouped) | set(node.groups)
    if not required <= inputs or not inputs <= names:
        raise TypeError(
            f"node {node.name}: run() takes {sorted(names)}, its inputs are {sorted(inputs)}"
        )
