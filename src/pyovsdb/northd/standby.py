"""What a northd on standby planned and did not write: the rows its takeover plans.

Rules kept here:
- A hot standby (holding no SB lock) runs the engine as the active instance does, so
  its desired databases follow NB and SB, and writes nothing. Each run's plan covers
  a scope: some tables whole, others by key (`Scope`). After the run, the rows of that
  scope it would have written are exactly those whose operations the plan made; every
  other row of the scope was as desired.
- So `Unwritten` keeps, per table, the keys of the rows whose last plan made an
  operation (of a row rewritten under another key, both). A row planned again
  without one (the active wrote it, or NB changed back) leaves; a table planned whole
  keeps only the keys of its new operations.
- A table is kept whole (`None`) when one of its operations names no key: a row to
  delete in a table whose rows are not found by key (not `INDEXED`), and the
  operations made outside the plan by key (`ALWAYS_WHOLE`: a Service_Monitor set
  offline, an aged MAC_Binding). Only a plan of the table whole clears that.
- Taking over plans the kept scope against the replicas as they are then, so what
  the active wrote meanwhile is not written again. What is kept is bounded by the
  rows of the tables (and is usually empty: the active writes what the standby plans).
- Pure: nothing here performs I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from .nodes.sync_to_sb import INDEXED
from .sync import Delete, Insert, Op, row_key

Scope = dict[str, set[Hashable] | None]
"""Tables planned (or to plan), each by these keys or whole (None)."""

ALWAYS_WHOLE = frozenset(("MAC_Binding", "Service_Monitor"))


@dataclass
class Unwritten:
    """The SB and NB rows a standby's plans wanted written, by table."""

    sb: Scope = field(default_factory=dict)
    nb: Scope = field(default_factory=dict)

    def record(self, sb_planned: Scope | None, sb_ops: Iterable[Op],
               nb_planned: Scope | None, nb_ops: Iterable[Op]) -> None:
        """One run's plan (None: every table whole) and the operations it made."""
        _record(self.sb, sb_planned, sb_ops, owned=True)
        _record(self.nb, nb_planned, nb_ops, owned=False)

    def copy(self) -> Unwritten:
        """What is kept now, for the takeover's plan (the globals added to it)."""
        return Unwritten(*({t: None if keys is None else set(keys)
                            for t, keys in scope.items()} for scope in (self.sb, self.nb)))

    def clear(self) -> None:
        """Forget everything (a recompute plans every table anyway)."""
        self.sb.clear()
        self.nb.clear()

    @property
    def rows(self) -> int:
        """The rows kept by key (a table kept whole counts none)."""
        return sum(len(keys) for scope in (self.sb, self.nb)
                   for keys in scope.values() if keys is not None)

    @property
    def whole(self) -> list[str]:
        """The tables kept whole."""
        return sorted(t for scope in (self.sb, self.nb)
                      for t, keys in scope.items() if keys is None)

    def __bool__(self) -> bool:
        return bool(self.sb or self.nb)


def _record(kept: Scope, planned: Scope | None, ops: Iterable[Op], *, owned: bool) -> None:
    if planned is None:
        kept.clear()
    else:
        for table, planned_keys in planned.items():
            if planned_keys is None:
                kept.pop(table, None)
                continue
            mine = kept.get(table)
            if mine is not None:
                mine -= planned_keys
                if not mine:
                    del kept[table]
    for op in ops:
        table = op.table
        keys = _keys(op, owned)
        if keys is None:
            kept[table] = None
            continue
        mine = kept.setdefault(table, set())
        if mine is not None:
            mine.update(keys)


def _keys(op: Op, owned: bool) -> tuple[Hashable, ...] | None:
    """The keys a plan finds the operation's rows by (None: the table planned whole):
    an update's own and, where it differs, that of the row it rewrites (a datapath
    group taken over for another set of datapaths: its old key finds it unused)."""
    if op.table in ALWAYS_WHOLE:
        return None
    if isinstance(op, Delete):
        if not owned:
            return (op.row.uuid,)
        # (rows found by their own key alone: those of `INDEXED` tables)
        return (row_key(op.table, op.row, {}),) if op.table in INDEXED else None
    if isinstance(op, Insert) or not owned or op.table not in INDEXED:
        return (op.key,)
    key = row_key(op.table, op.row, {})
    return (op.key,) if key == op.key else (op.key, key)
