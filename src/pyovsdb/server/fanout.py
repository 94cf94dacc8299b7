"""The fan-out index: which monitors of a database can see a change, found by looking
the changed rows' values up instead of asking every monitor.

A Southbound database with hundreds of chassis has hundreds of conditional monitors, and
most changes concern one chassis (its ports, the flows of its datapaths). Asking every
monitor costs each change a condition test per monitor and per row; the index costs a
few dictionary lookups per row, whatever the number of monitors.

Rules kept here:
- A monitor is a candidate for a change if, in a table the change touches, its
  condition selects the old or the new version of a changed row, or it has no
  condition there (it sees every row). Every monitor that has something to send for a
  change is a candidate; a candidate may still have nothing (a modify of columns it
  does not track, a kind of change it did not select). The caller asks the candidates
  alone (`Monitor.updates`), so what is sent is what asking every monitor would send.
- A condition is indexed in its lookup form (`ovsdb.condition.Lookup`): each `==`
  value of a column, each one-element `includes` element, each `_uuid`. The clauses
  that are none of these are evaluated once per row for every monitor that holds the
  same clause (ovn-controller's `logical_dp_group != []` is held by every chassis).
- A table whose condition is being changed (its `old_condition` is not its
  `condition`: a `monitor_cond_change` that failed part way) is not looked up: its
  monitor is a candidate for every change of the table until it is refreshed with
  settled conditions.
- The index follows the monitors: `add` when one starts, `remove` when it goes,
  `refresh` after its conditions changed. A value no monitor asks for any more is
  forgotten, so the index grows with the monitors' conditions, not with their history.
  It knows nothing of sessions or sockets.
"""

from __future__ import annotations

from typing import Any

from ..ovsdb.changeset import Changeset
from ..ovsdb.condition import Predicate
from .monitor import Monitor

Bucket = dict[Any, set[Monitor]]
_EVERY_ROW = "every row"


class _TableIndex:
    """The monitors of one table, by what their conditions select."""

    __slots__ = ("any_of", "equal", "everyone", "rest", "rest_predicates", "uuids")

    def __init__(self) -> None:
        self.everyone: Bucket = {}  # one key: monitors that see every row
        self.equal: dict[str, Bucket] = {}  # column -> value -> monitors
        self.any_of: dict[str, Bucket] = {}  # set or map column -> element -> monitors
        self.uuids: Bucket = {}
        self.rest: Bucket = {}  # (column, function, argument) -> monitors
        self.rest_predicates: dict[Any, Predicate] = {}


class FanoutIndex:
    """The candidates of each change among one database's monitors."""

    def __init__(self) -> None:
        self._tables: dict[str, _TableIndex] = {}
        # What each monitor was filed under, to take it out again.
        self._filed: dict[Monitor, list[tuple[str, Bucket, Any]]] = {}

    def __len__(self) -> int:
        return len(self._filed)

    def add(self, mon: Monitor) -> None:
        filed = self._filed.setdefault(mon, [])
        for tname, mt in mon.tables.items():
            ti = self._tables.get(tname)
            if ti is None:
                ti = self._tables[tname] = _TableIndex()
            cond = mt.condition
            if cond is None or cond is not mt.old_condition:
                filed.append(_file(tname, ti.everyone, _EVERY_ROW, mon))
                continue
            lookup = cond.lookup
            for col, values in lookup.equal.items():
                bucket = ti.equal.setdefault(col, {})
                filed.extend(_file(tname, bucket, v, mon) for v in values)
            for col, elems in lookup.any_of.items():
                bucket = ti.any_of.setdefault(col, {})
                filed.extend(_file(tname, bucket, e, mon) for e in elems)
            filed.extend(_file(tname, ti.uuids, u, mon) for u in lookup.uuids)
            for c in lookup.rest:
                key = (c.column, c.function, c.arg)
                ti.rest_predicates.setdefault(key, c.predicate)
                filed.append(_file(tname, ti.rest, key, mon))

    def remove(self, mon: Monitor) -> None:
        for tname, bucket, key in self._filed.pop(mon, ()):
            mons = bucket.get(key)
            if mons is None:  # filed twice (a clause repeated), already gone
                continue
            mons.discard(mon)
            if not mons:
                del bucket[key]
                if bucket is self._tables[tname].rest:
                    del self._tables[tname].rest_predicates[key]

    def refresh(self, mon: Monitor) -> None:
        """File `mon` again under its conditions as they are now."""
        if mon in self._filed:
            self.remove(mon)
            self.add(mon)

    def clear(self) -> None:
        self._tables.clear()
        self._filed.clear()

    def candidates(self, cs: Changeset) -> set[Monitor]:
        out: set[Monitor] = set()
        for tname, changes in cs.tables.items():
            ti = self._tables.get(tname)
            if ti is None:
                continue
            for mons in ti.everyone.values():
                out |= mons
            equal = tuple(ti.equal.items())
            any_of = tuple(ti.any_of.items())
            uuids = ti.uuids
            rest = tuple((ti.rest_predicates[k], mons) for k, mons in ti.rest.items())
            for ch in changes.values():
                for row in (ch.old, ch.new):
                    if row is None:
                        continue
                    data = row.data
                    for col, by_value in equal:
                        hit = by_value.get(data[col])
                        if hit is not None:
                            out |= hit
                    for col, by_elem in any_of:
                        for e in data[col]:
                            hit = by_elem.get(e)
                            if hit is not None:
                                out |= hit
                    if uuids:
                        hit = uuids.get(row.uuid)
                        if hit is not None:
                            out |= hit
                    for predicate, mons in rest:
                        if predicate(row):
                            out |= mons
        return out


def _file(tname: str, bucket: Bucket, key: Any, mon: Monitor) -> tuple[str, Bucket, Any]:
    mons = bucket.get(key)
    if mons is None:
        mons = bucket[key] = set()
    mons.add(mon)
    return tname, bucket, key
