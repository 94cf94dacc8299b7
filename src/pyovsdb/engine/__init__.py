"""The incremental-processing engine: a DAG of nodes whose data is kept up to date from
their inputs' changes, falling back to a full recompute where a change is not handled.

It is generic: it imports nothing from pyovsdb and knows no OVSDB, so its leaf nodes
take whatever data and change type the caller has (for northd, a replica table and its
Changeset). A node's output is data; nothing inside the engine writes anywhere.

The public API, all stable:

- `Node[D, C]`: a computing node with data D and deltas C. Subclass it, pass the inputs
  by name (`super().__init__("name", a=Input(node_a, self.on_a), b=Input(node_b))`),
  and define `run(self, *, a: DA, b: DB) -> D | NoChange` (full recompute, every
  input's data by keyword). `node.data` (settable by its handlers; a node not brought
  up to date in the last run keeps its older data), `node.state`, `node.delta` (this
  run's, None when untracked), `node.track()` (this run's delta, created by
  `new_delta()`); hooks `new_delta()`, `merge_deltas(earlier, later)` (the handlers'
  delta with that of a recompute after them; Deltas compose by default) and
  `clear_delta()`.
- `Leaf[D, C](name, data, *, is_change=bool)`: an input node holding caller-owned data;
  `set_data(data)`.
- `Input[D, C](node, handler=None)`: handler `Callable[[Change[D, C]], Handled]`, or None
  (any change recomputes). `input.data`, `input.delta`, `input.updated`.
- `Group[D, C](members)`: inputs `run()` reads as one mapping (key -> data), passed
  by the group's name (`t=Group({"a": Input(leaf_a, self.on_a)})`, `run(self, *, t)`);
  each member is an input named after its node, with its own handler. `node.groups`,
  `node.group_data(name)` and `node.run_arguments()` (what `run()` gets, for handlers).
- `noop`: the handler of an input another input of the node always covers (OVN's
  `engine_noop_handler`).
- `Change[D, C]`: `input` (its name in the node), `node` (the input node's name),
  `data`, `delta` (None: the input recomputed or did not say what changed).
- `Handled`: UNHANDLED, HANDLED_UPDATED, HANDLED_UNCHANGED.
- `State`: STALE, UPDATED, UNCHANGED, CANCELED.
- `NO_CHANGE` (`NoChange`): what `run()` returns when the data did not change.
- `Engine(root, *, clock=None, log=None, compute_log_timeout_ms=500, debug=None)`:
  `run(leaf_changes=None, recompute_allowed=True) -> RunResult`;
  `force_recompute()`; `recompute_pending`; `canceled`; `need_run(leaf_changes=None)`;
  `has_run()`; `has_updated(name=None)`; `state(name)`; `node(name)`;
  `node_data(name)`; `nodes` (topological order); `leaves`; `stats: EngineStats`;
  `clear_stats()`; `show_stats(node=None, stat=None) -> str` (ovn-northd's text);
  `dump_dot() -> str`; `compute_log_timeout_ms` (settable); `last_result`. The clock
  returns seconds; `log` gets OVN's "node: X, recompute (R) took Nms" texts for slow
  steps, `debug` those of every other step.
- `RunResult`: `states`, `ran`, `canceled`, `canceled_node`, `recomputed`
  (node -> reason), `computed`, `updated`.
- `EngineStats` (Mapping node name -> `NodeStats`: `recompute`, `compute`, `cancel`,
  `recompute_time`, `compute_time`, `time`), `clear()`, `show(node, stat)`.
- `Delta[K]`: `added`, `removed`, `updated` key sets; `add`, `remove`, `update`,
  `merge`, `Delta.merged(*deltas)`, `Delta.diff(old, new)`.
- `CycleError` (a ValueError), `NoDataError` (a LookupError).
"""

from .delta import Delta
from .graph import CycleError, Engine, RunResult
from .node import (
    NO_CHANGE,
    Change,
    Group,
    Handled,
    Input,
    Leaf,
    NoChange,
    NoDataError,
    Node,
    State,
    noop,
)
from .stats import EngineStats, NodeStats

__all__ = [
    "NO_CHANGE",
    "Change",
    "CycleError",
    "Delta",
    "Engine",
    "EngineStats",
    "Group",
    "Handled",
    "Input",
    "Leaf",
    "NoChange",
    "NoDataError",
    "Node",
    "NodeStats",
    "RunResult",
    "State",
    "noop",
]
