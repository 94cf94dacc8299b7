"""Engine nodes: what a node is, what its inputs are, and what its handlers may answer.

A node is a materialized view (OVN's `inc-proc-eng.h`): its data is the pure outcome of
its inputs' data. `run()` recomputes the data from scratch; a change handler per input
updates it from that input's change instead, or declines.

Rules kept here:
- Handlers answer with `Handled` and never set a state: the engine merges the answers
  of all of a node's handlers into the node's state (UPDATED if any handler said
  HANDLED_UPDATED), so one input's UNCHANGED never hides another's UPDATED (OVN's 2025
  fix, here from the start). A handler may mutate its node's data and record a delta.
- A handler that cannot be sure answers UNHANDLED and the node recomputes. In
  particular, an input whose delta is None (it recomputed, or did not say what
  changed) can only be handled by a handler that does not need to know what changed.
  An input without a handler (None) makes any change of it recompute the node. A
  handler that does nothing must say in a comment which correlated input covers it.
- A handler answering UNHANDLED must not have changed the data without tracking it: the
  recompute starts from the data as this run's handlers left it, so a `run()` that
  diffs old against new gets the right delta once the engine composes it with theirs
  (`merge_deltas`); a `run()` that records no delta leaves successors with None.
- Inputs are typed: `Input[D, C]` holds a `Node[D, C]`, its handler gets a typed
  `Change[D, C]`, and `run()` gets every input's data as a keyword argument named after
  the input. Nobody looks data up by a string. Inputs of one kind that a node reads as
  a collection (the replica's tables) form a `Group`: each member is an input of its
  own (with its own handler, named after its node), and `run()` gets one keyword
  argument for the group, a read-only mapping from each member's key to its data, so
  what is not declared cannot be read.
- The delta of a node (`node.delta`) lives for one run: the engine clears it at the
  start of each run, so successors only ever see this run's changes.
- Leaf nodes hold data the caller owns (e.g. a replica's table) and take their change
  from the caller on every run; they compute nothing.
- Nothing here performs I/O or reads a clock; the engine measures time with the clock it
  is given.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Generic, TypeVar

from .delta import Delta

__all__ = [
    "NO_CHANGE",
    "Change",
    "Group",
    "Handled",
    "Input",
    "Leaf",
    "NoChange",
    "NoDataError",
    "Node",
    "State",
    "noop",
]

D = TypeVar("D")
C = TypeVar("C")
D_co = TypeVar("D_co", covariant=True)
C_co = TypeVar("C_co", covariant=True)


class Handled(enum.Enum):
    """A change handler's answer."""

    UNHANDLED = "unhandled"  # cannot handle this change: recompute the node
    HANDLED_UPDATED = "handled-updated"  # handled, and the node's data changed
    HANDLED_UNCHANGED = "handled-unchanged"  # handled, and the node's data did not change


class State(enum.Enum):
    """A node's state in the current (or last) run; the values are OVN's names."""

    STALE = "Stale"  # not (yet) brought up to date in this run
    UPDATED = "Updated"  # up to date, and its data changed in this run
    UNCHANGED = "Unchanged"  # up to date, and its data did not change
    CANCELED = "Canceled"  # needed a recompute the run did not allow; the run stopped


class NoChange(enum.Enum):
    """The type of `NO_CHANGE`."""

    NO_CHANGE = "no-change"


NO_CHANGE: Final = NoChange.NO_CHANGE
"""What `Node.run()` returns to say the recomputed data equals the current data: the
engine keeps the current data and marks the node UNCHANGED."""


class NoDataError(LookupError):
    """A node's data was asked for before the node ever computed any."""


class _Missing(enum.Enum):
    MISSING = "missing"


_MISSING: Final = _Missing.MISSING


@dataclass(frozen=True, slots=True)
class Change(Generic[D_co, C_co]):
    """An updated input, as its change handler sees it.

    `delta` is what the input recorded in this run; None when it recomputed or did not
    say (the handler then cannot know what changed). For a leaf, it is the change the
    caller gave the engine.
    """

    input: str  # the input's name in the receiving node (its run() keyword)
    node: str  # the input node's own name
    data: D_co
    delta: C_co | None


@dataclass(frozen=True, eq=False, slots=True)
class Input(Generic[D, C]):
    """One input of a node: the node it reads, and the handler for its changes (None:
    any change of it recomputes the receiving node)."""

    node: Node[D, C]
    handler: Callable[[Change[D, C]], Handled] | None = None

    @property
    def data(self) -> D:
        """The input node's current data (for handlers that read their other inputs)."""
        return self.node.data

    @property
    def delta(self) -> C | None:
        return self.node.delta

    @property
    def updated(self) -> bool:
        """Whether the input node is UPDATED in the current run."""
        return self.node.state is State.UPDATED


@dataclass(frozen=True, eq=False, slots=True)
class Group(Generic[D, C]):
    """Inputs a node's `run()` reads as one mapping, by key (e.g. table name). Each
    member is an input of the node in its own right, named after its node."""

    members: Mapping[str, Input[D, C]]


class Node(Generic[D, C]):
    """A computing node with data of type D and deltas of type C.

    Subclass it: pass the inputs to `__init__` by name, override `run()` with one
    keyword parameter per input, and give handlers to the inputs that can be handled
    incrementally::

        class Evens(Node[dict[str, int], Delta[str]]):
            def __init__(self, items: Leaf[dict[str, int], Delta[str]]) -> None:
                self.items = Input(items, self.on_items)
                super().__init__("evens", items=self.items)

            def run(self, *, items: dict[str, int]) -> dict[str, int]:
                return {k: v for k, v in items.items() if v % 2 == 0}

            def on_items(self, change: Change[dict[str, int], Delta[str]]) -> Handled:
                ...

    The engine checks at build time that `run()` takes exactly the inputs' names.
    """

    def __init__(self, name: str, /, **inputs: Input[Any, Any] | Group[Any, Any]) -> None:
        if not name:
            raise ValueError("a node needs a name")
        self.name: Final = name
        flat: dict[str, Input[Any, Any]] = {}
        groups: dict[str, Mapping[str, str]] = {}
        for key, inp in inputs.items():
            if isinstance(inp, Group):
                groups[key] = MappingProxyType({k: m.node.name for k, m in inp.members.items()})
                for member in inp.members.values():
                    if member.node.name in flat or member.node.name in inputs:
                        raise ValueError(f"node {name}: input {member.node.name} given twice")
                    flat[member.node.name] = member
            else:
                if key in flat:
                    raise ValueError(f"node {name}: input {key} given twice")
                flat[key] = inp
        self.inputs: Mapping[str, Input[Any, Any]] = MappingProxyType(flat)
        self.groups: Mapping[str, Mapping[str, str]] = MappingProxyType(groups)
        self.delta: C | None = None
        self._state = State.STALE
        self._data: D | _Missing = _MISSING

    @property
    def state(self) -> State:
        """The node's state in the current (or last) run; only the engine sets it."""
        return self._state

    @property
    def data(self) -> D:
        """The node's current data; NoDataError before it was ever computed."""
        if self._data is _MISSING:  # (an identity test: read in every handler)
            raise NoDataError(f"node {self.name} has no data yet")
        return self._data

    @data.setter
    def data(self, value: D) -> None:
        """Replace the node's data (a handler whose data is an immutable value)."""
        self._data = value

    @property
    def has_data(self) -> bool:
        return self._data is not _MISSING

    def run_arguments(self) -> dict[str, Any]:
        """The keyword arguments of `run()`: each input's data, a group's members'
        data as one read-only mapping by key (for handlers that share run()'s work)."""
        grouped = {m for members in self.groups.values() for m in members.values()}
        args: dict[str, Any] = {g: self.group_data(g) for g in self.groups}
        for name, inp in self.inputs.items():
            if name not in grouped:
                args[name] = inp.node.data
        return args

    def group_data(self, group: str) -> Mapping[str, Any]:
        """A group's members' current data by key, as `run()` gets it (for handlers)."""
        return MappingProxyType(
            {key: self.inputs[name].node.data for key, name in self.groups[group].items()}
        )

    def run(self, *args: Any, **inputs: Any) -> D | NoChange:
        """Full recompute: the node's new data from its inputs' data (one keyword
        argument per input outside a group, one mapping per group), or NO_CHANGE if it
        equals the current data.

        It may record a delta for successors with `track()` (e.g. by diffing the old
        data against the new); without one, successors see delta None.
        """
        raise NotImplementedError(f"node {self.name} has inputs but no run()")

    def new_delta(self) -> C:
        """An empty delta, for `track()`; override it to use `track()`."""
        raise NotImplementedError(f"node {self.name} does not say how to make a delta")

    def track(self) -> C:
        """This run's delta, made empty by `new_delta()` on first use in the run."""
        if self.delta is None:
            self.delta = self.new_delta()
        return self.delta

    def merge_deltas(self, earlier: C, later: C) -> C | None:
        """The delta of a run in which handlers recorded `earlier` and then a recompute,
        starting from the data as they left it, recorded `later`. None: cannot tell
        (successors then see no delta). By default Deltas are composed, others not."""
        if isinstance(earlier, Delta) and isinstance(later, Delta):
            merged: C = Delta.merged(earlier, later)  # type: ignore[assignment]
            return merged
        return None

    def clear_delta(self) -> None:
        """Forget this run's delta (the engine calls it at the start of each run and
        before a recompute); override it to also drop other per-run tracking."""
        self.delta = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._state.value}>"


def noop(change: Change[Any, Any]) -> Handled:
    """The handler of an input whose every change another input of the same node
    carries too (OVN's `engine_noop_handler`); who uses it says which input that is."""
    return Handled.HANDLED_UNCHANGED


class Leaf(Node[D, C]):
    """An input node: data the caller owns and a change per run from the caller.

    It is UPDATED in a run that got a change for which `is_change(change)` holds
    (default: truthiness, so an empty Changeset or Delta is no change), else UNCHANGED.
    The change becomes the leaf's delta for that run.
    """

    def __init__(self, name: str, data: D, /, *, is_change: Callable[[C], bool] = bool) -> None:
        super().__init__(name)
        self._data = data
        self.is_change: Final = is_change

    def set_data(self, data: D) -> None:
        """Replace the data the leaf stands for (e.g. a new replica after a reconnect;
        the caller should then force a recompute)."""
        self._data = data

    def run(self, *args: Any, **inputs: Any) -> D | NoChange:
        raise TypeError(f"leaf {self.name} is not computed; it takes its change from the caller")
