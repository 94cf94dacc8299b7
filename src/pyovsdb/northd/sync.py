"""Desired state vs. the replica: the operations that make a database hold what the
builders want (`sync_apply` writes them into an IDL transaction).

Rules kept here:
- `plan` is pure: it reads the desired tables and the replica tables and returns
  `Insert`/`Update`/`Delete` operations; nothing else.
- Existing rows are matched to desired ones by a key computed from the row the same
  way the builders name theirs (`row_key`): a datapath by its NB UUID in external_ids, a
  port binding by `logical_port`, a multicast group by (datapath key, name), ... Of
  several rows with one key the one with the lowest UUID is kept, the others are
  deleted like rows nobody wants (owned tables only). A row the table `replace`s is
  deleted and inserted anew. In a table keyed by its content (`REUSED`: datapath
  groups), a row nobody wants any more is given to the new key that shares most with
  it and updated in place: no row is deleted and another inserted, and the rows
  referring to it keep their reference. A row of such a table matched by its own key
  already holds what it is wanted to: it is not compared (a group of a thousand
  datapaths is not read again because a flow came to use it).
- Only managed columns are compared, in the replica's canonical form, and an Update
  carries only the columns that differ: an engine run that changed nothing plans
  nothing, and the transaction is never sent. `fill` columns are written only where
  the row holds the column's default; a `keep` column a desired row leaves out is not
  compared.
- In a table that is not owned (NB write-backs), nothing is inserted, nothing is
  deleted but the rows its `delete` names, and a desired row names the only columns
  compared.
- A `Ref` becomes the UUID of the existing row it names, or the handle of the row this
  plan inserts (`Pending`), or nothing where no such row exists (an optional reference
  left empty, a set element left out: e.g. a chassis not registered yet). Inserts come
  in an order where every row comes after the rows it references.
- Output order is deterministic: tables by name, rows by key.
- A table planned by key may come with an index of its replica rows by key (`index`,
  the caller's, current with the replica): then only the rows of those keys are read,
  not the whole table.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from operator import lt
from typing import Any

from ..idl.replica import ReplicaTable
from ..idl.row import IdlRow, cached
from ..ovsdb.changeset import RowChange
from .build.datapaths import NB_KEY, datapath_key
from .desired import DesiredDb, DesiredTable, Ref


@dataclass(frozen=True, slots=True)
class Pending:
    """A reference to a row inserted by the same plan."""

    table: str
    key: Hashable


@dataclass(frozen=True, slots=True)
class Insert:
    table: str
    key: Hashable
    values: dict[str, Any]
    # The rows inserted by the same plan that `values` refers to (its references not
    # yet resolved to UUIDs): none for most rows, whose values are then sent as they are.
    pending: tuple[Pending, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Update:
    table: str
    key: Hashable
    row: IdlRow
    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Delete:
    table: str
    row: IdlRow


Op = Insert | Update | Delete


# -- keys of existing rows ------------------------------------------------------------------

Tables = Mapping[str, ReplicaTable]
KeyFn = Callable[[IdlRow, Tables], Hashable | None]


def _dp_key(dp: Any) -> str | None:
    """A datapath binding's key (its NB row's UUID), kept in its row's cache."""
    return datapath_key(dp) if isinstance(dp, IdlRow) else None


def _group_key(row: IdlRow) -> Hashable:
    """A datapath group by the keys of its datapaths (read from its stored UUIDs), kept
    in its row's cache (the datapaths of a group change with a new row, and a
    datapath binding's key with its own)."""
    key: Hashable = cached(row, "group_key", _datapaths_key)
    return key


def _binding_rows(row: IdlRow) -> Mapping[str, IdlRow]:
    replica = row.table.replica
    table = replica.tables.get("Datapath_Binding") if replica is not None else None
    return table.rows if table is not None else {}


def _datapaths_key(row: IdlRow) -> Hashable:
    rows = _binding_rows(row)
    keys: list[str] = []
    for uuid in row.value("datapaths"):  # (`datapath_key`, its cache read inline)
        dp = rows.get(uuid)
        if dp is None:
            continue
        cache = dp.cache
        k = cache[NB_KEY] if cache is not None and NB_KEY in cache else datapath_key(dp)
        if k is not None:
            keys.append(k)
    keys.sort()
    return tuple(keys)


def carry_group_key(old: IdlRow, new: IdlRow) -> None:
    """The key of the group row `new`, an update of `old` whose key is kept, put in
    `new`'s cache from `old`'s and the datapaths that came and went: a group of
    thousands gaining one datapath is not keyed again from each. Nothing is put where
    a datapath that went has no binding any more (its key is not known)."""
    was = old.cache.get("group_key") if old.cache is not None else None
    if not isinstance(was, tuple) or (new.cache is not None and "group_key" in new.cache):
        return
    before, after = old.value("datapaths"), new.value("datapaths")
    gone, came = set(before).difference(after), set(after).difference(before)
    rows = _binding_rows(new)
    key = list(was)
    for uuid in gone:
        k = _dp_key(rows.get(uuid))
        at = bisect.bisect_left(key, k) if k is not None else len(key)
        if at == len(key) or key[at] != k:
            return
        del key[at]
    for uuid in came:
        k = _dp_key(rows.get(uuid))
        if k is not None:
            bisect.insort(key, k)
    cached(new, "group_key", lambda _: tuple(key))


def _ha_chassis_key(row: IdlRow, tables: Tables) -> Hashable | None:
    groups = tables.get("HA_Chassis_Group")
    if groups is None:
        return None
    for group in sorted(groups.rows.values(), key=lambda r: r.uuid):
        if row.uuid in group.data["ha_chassis"]:
            return (group.name, row.external_ids.get("chassis-name", ""))
    return None


def _ha_chassis_keys(tables: Tables) -> dict[str, Hashable]:
    """`_ha_chassis_key` of every HA_Chassis row at once (by UUID), in one walk of the
    groups instead of one per row."""
    groups = tables.get("HA_Chassis_Group")
    chassis = tables.get("HA_Chassis")
    out: dict[str, Hashable] = {}
    if groups is None or chassis is None:
        return out
    for group in sorted(groups.rows.values(), key=lambda r: r.uuid, reverse=True):
        for uuid in group.data["ha_chassis"]:
            row = chassis.rows.get(uuid)
            if row is not None:  # (the first group by UUID wins: it is written last)
                out[uuid] = (group.name, row.external_ids.get("chassis-name", ""))
    return out


def _band_key(row: IdlRow, tables: Tables) -> Hashable | None:
    """A meter band by its meter's name and its content (`build.meters`)."""
    meters = tables.get("Meter")
    if meters is None:
        return None
    for meter in sorted(meters.rows.values(), key=lambda r: r.uuid):
        if row.uuid in meter.data["bands"]:
            return (meter.name, row.action, row.rate, row.burst_size)
    return None


def _by(column: str) -> KeyFn:
    return lambda row, _: row[column]


def _external_id(key: str) -> KeyFn:
    return lambda row, _: row.external_ids.get(key)


def _flow_key(row: IdlRow, tables: Tables) -> Hashable | None:
    """A logical flow by what it is, whatever datapaths it is on (`table.flow_row_key`);
    its datapath type from its datapath or the first of its group's. Kept in the
    replica row's cache: a row never changes (an update makes a new one), and a plan
    of a few keys must not compute the keys of every flow."""
    return cached(row, "sync_key", _compute_flow_key)  # type: ignore[no-any-return]


def _compute_flow_key(row: IdlRow) -> Hashable | None:
    # Read from the row's stored values: every flow of SB is keyed once after a
    # recompute's commit comes back, and typed column access costs 3x this.
    value = row.value
    replica = row.table.replica
    tables = replica.tables if replica is not None else {}
    dp = _first_row(tables.get("Datapath_Binding"), value("logical_datapath"))
    if dp is None:
        group = _first_row(tables.get("Logical_DP_Group"), value("logical_dp_group"))
        if group is not None:
            dp = _first_row(tables.get("Datapath_Binding"), group.value("datapaths"))
    if dp is None:
        return None
    kind = _dp_kind(dp)
    if kind is None:
        return None
    meter = value("controller_meter")
    return (kind, value("pipeline"), value("table_id"), value("priority"), value("match"),
            value("actions"), meter[0] if meter else "")


def _first_row(table: ReplicaTable | None, uuids: Iterable[str]) -> IdlRow | None:
    """The first of `uuids` (a reference column's stored value) that is a row of
    `table`."""
    if table is not None:
        rows = table.rows
        for uuid in uuids:
            row = rows.get(uuid)
            if row is not None:
                return row
    return None


def _dp_kind(dp: IdlRow) -> str | None:
    """"ls" or "lr" for a datapath binding, kept in its row's cache."""
    return cached(dp, "flow_kind", _compute_dp_kind)  # type: ignore[no-any-return]


def _compute_dp_kind(dp: IdlRow) -> str | None:
    ids = dp.external_ids
    return "ls" if "logical-switch" in ids else "lr" if "logical-router" in ids else None


ROW_KEYS: dict[str, KeyFn] = {
    "Logical_Flow": _flow_key,
    "Datapath_Binding": lambda row, _: _dp_key(row),
    "Port_Binding": _by("logical_port"),
    "Multicast_Group": lambda row, _: (_dp_key(row.datapath), row.name)
    if _dp_key(row.datapath) else None,
    "Logical_DP_Group": lambda row, _: _group_key(row),
    "HA_Chassis_Group": _by("name"),
    "HA_Chassis": _ha_chassis_key,
    "Chassis": _by("name"),
    "Mirror": _by("name"),
    "Meter_Band": lambda row, tables: _band_key(row, tables),
    "Chassis_Template_Var": _by("chassis"),
    "BFD": lambda row, _: (row.logical_port, row.dst_ip),
    "Static_MAC_Binding": lambda row, _: (row.logical_port, row.ip),
    "Address_Set": _by("name"),
    "Port_Group": _by("name"),
    "Meter": _by("name"),
    "DHCP_Options": _by("name"),
    "DHCPv6_Options": _by("name"),
    "RBAC_Role": _by("name"),
    "RBAC_Permission": _by("table"),
    "DNS": _external_id("dns_id"),
    "Load_Balancer": _external_id("lb_id"),
    "IP_Multicast": lambda row, _: _dp_key(row.datapath),
    "Service_Monitor": lambda row, _: (row.ip, row.port, row.protocol, row.logical_port),
    "SB_Global": lambda row, _: (),
}


# Tables whose rows no longer desired are given to new keys and updated in place
# (`_Planner._reuse`), each with the table its rows' keys are made of (a row's key is
# the keys of the rows it lists there); and how many (new key, unwanted row) pairs are
# weighed at most.
REUSED = {"Logical_DP_Group": "Datapath_Binding"}
REUSE_AT_MOST = 4096

# Tables whose rows' keys are cheaper computed all at once (by UUID; a row not there
# names nothing), for a walk of the whole table.
TABLE_KEYS: dict[str, Callable[[Tables], dict[str, Hashable]]] = {
    "HA_Chassis": _ha_chassis_keys,
}


def row_key(table: str, row: IdlRow, tables: Tables, owned: bool = True) -> Hashable | None:
    """The key the builders give the row `row` of `table` (None: it names nothing).
    Rows of tables that are not owned are keyed by UUID (NB write-backs)."""
    fn = ROW_KEYS.get(table)
    if fn is None or not owned:
        return row.uuid
    return fn(row, tables)


def changed_keys(table: str, changes: Mapping[str, RowChange[IdlRow]] | None,
                  tables: Mapping[str, ReplicaTable], desired: DesiredTable | None
                  ) -> set[Hashable] | None:
    """The sync keys of the rows `changes` names, before and after (None: some row
    names no key, plan the table whole)."""
    if changes is None:
        return None
    keys: set[Hashable] = set()
    owned = desired is None or desired.owned
    for rc in changes.values():
        for row in (rc.old, rc.new):
            if row is not None:
                key = row_key(table, row, tables, owned)
                if key is None:
                    return None
                keys.add(key)
    return keys


# -- plan --------------------------------------------------------------------------------


KeyIndex = Mapping[Hashable, Mapping[str, IdlRow]]


class _Planner:
    def __init__(self, desired: DesiredDb, tables: Tables,
                 keys: Mapping[str, set[Hashable]] | None = None,
                 index: Mapping[str, KeyIndex] | None = None,
                 collect: Mapping[str, dict[Hashable, dict[str, IdlRow]]] | None = None
                 ) -> None:
        self.desired = desired
        self.tables = tables
        self.keys: Mapping[str, set[Hashable]] = keys or {}
        self.index: Mapping[str, KeyIndex] = index or {}
        self.matched: dict[str, dict[Hashable, IdlRow]] = {}
        self.extra: dict[str, list[IdlRow]] = {}
        self.inserted: set[tuple[str, Hashable]] = set()
        self.reused: set[tuple[str, Hashable]] = set()  # (`REUSED` rows given new keys)
        self._lookup: dict[str, dict[Hashable, IdlRow]] = {}
        self.collect: Mapping[str, dict[Hashable, dict[str, IdlRow]]] = collect or {}

    def match(self, dt: DesiredTable) -> None:
        table = self.tables[dt.name]
        if dt.owned and dt.name not in ROW_KEYS:
            # Without a key no row would ever match: every run would delete and
            # insert the whole table.
            raise KeyError(f"sync: no key for owned table {dt.name} in ROW_KEYS")
        only = self.keys.get(dt.name)
        if only is not None and not only:  # (planned for no key: nothing to match)
            self.matched[dt.name], self.extra[dt.name] = {}, []
            return
        if not dt.owned:
            self.matched[dt.name] = {k: table.rows[str(k)] for k in dt.rows
                                     if str(k) in table.rows and (only is None or k in only)}
            return
        found: dict[Hashable, IdlRow] = {}
        extra: list[IdlRow] = []
        index = self.index.get(dt.name) if only is not None else None
        if index is not None:
            # The index holds the rows by their keys: the first of a key by UUID is
            # its match, as in a match of the whole table. Each is read again from the
            # replica: a change of a column the replica does not report (northd's own
            # writes to columns it only writes) leaves the index an older row.
            current = table.rows
            for key in only or ():
                bucket = index.get(key)
                if not bucket:
                    continue
                rows = [r for u in (bucket if len(bucket) == 1 else sorted(bucket))
                        if (r := current.get(u)) is not None]
                for row in rows:
                    if key not in dt.rows or key in found or key in dt.replace:
                        extra.append(row)
                    else:
                        found[key] = row
            extra.sort(key=_uuid_of)
        else:
            collected = self.collect.get(dt.name) if only is None else None
            keyed = self._table_keys(dt.name)
            for row in sorted(table.rows.values(), key=_uuid_of):
                key = row_key(dt.name, row, self.tables) if keyed is None \
                    else keyed.get(row.uuid)
                if collected is not None:
                    collected.setdefault(key, {})[row.uuid] = row
                if only is not None and key not in only:
                    continue
                if key is None or key not in dt.rows or key in found or key in dt.replace:
                    extra.append(row)
                else:
                    found[key] = row
        if dt.name in REUSED and extra:
            self._reuse(dt, only, found, extra)
        self.matched[dt.name] = found
        self.extra[dt.name] = extra
        for key in dt.rows if only is None else only & dt.rows.keys():
            if key not in found:
                self.inserted.add((dt.name, key))

    def _reuse(self, dt: DesiredTable, only: set[Hashable] | None,
               found: dict[Hashable, IdlRow], extra: list[IdlRow]) -> None:
        """Rows of `dt`'s table whose keys are no longer desired given to new keys
        (`REUSED`): the pairs of a new key and an unwanted row sharing most members
        go first (then by key order, then by the rows' UUID order), each key and row
        in one pair at most; a row paired is then updated in place,
        not deleted while another is inserted. A datapath group that gains or loses a
        datapath stays the same row, and the flows naming it stay as they are. Only
        while the pairs to weigh are few (`REUSE_AT_MOST`)."""
        wanted = sorted((k for k in (dt.rows if only is None else only & dt.rows.keys())
                         if k not in found), key=repr)
        if not wanted:
            return
        stale: list[tuple[IdlRow, set[Any]]] = []
        for row in extra:
            key = row_key(dt.name, row, self.tables)
            if isinstance(key, tuple) and key not in dt.rows:
                stale.append((row, set(key)))
        if not stale or len(wanted) * len(stale) > REUSE_AT_MOST:
            return
        pairs = []
        for k, key in enumerate(wanted):
            members = set(key) if isinstance(key, tuple) else set()
            for i, (_row, have) in enumerate(stale):
                shared = len(members & have)
                if shared:
                    pairs.append((-shared, k, i))
        taken_keys: set[int] = set()
        taken_rows: set[int] = set()
        for _, k, i in sorted(pairs):
            if k in taken_keys or i in taken_rows:
                continue
            taken_keys.add(k)
            taken_rows.add(i)
            row = stale[i][0]
            found[wanted[k]] = row
            self.reused.add((dt.name, wanted[k]))
            extra.remove(row)

    def _table_keys(self, table: str) -> Mapping[str, Hashable] | None:
        """The keys of every row of `table` at once, where `TABLE_KEYS` has them."""
        fn = TABLE_KEYS.get(table)
        return fn(self.tables) if fn is not None else None

    def existing(self, table: str, key: Hashable) -> IdlRow | None:
        """A row of a table with no desired state (e.g. Chassis), or planned by key
        outside its keys, by key (the first by UUID, as a match takes it)."""
        rows = self.index.get(table)
        if rows is not None:
            found = rows.get(key)
            return found[_first(found)] if found else None
        index = self._lookup.get(table)
        if index is None:
            index = {}
            replica = self.tables.get(table)
            if replica is not None:
                keyed = self._table_keys(table)
                for row in sorted(replica.rows.values(), key=lambda r: r.uuid):
                    k = row_key(table, row, self.tables) if keyed is None \
                        else keyed.get(row.uuid)
                    if k is not None:
                        index.setdefault(k, row)
            self._lookup[table] = index
        return index.get(key)

    def _resolve_refs(self, refs: Iterable[Ref]) -> _Refs:
        """Many references at once (a datapath group's thousand datapaths): those to
        rows matched looked up directly, the rest one by one."""
        out = _Refs()
        append = out.append
        matched = self.matched
        index = self.index
        resolve_ref = self.resolve_ref
        for ref in refs:
            table = ref.table
            rows = matched.get(table)
            if rows is not None:
                row = rows.get(ref.key)
                if row is not None:
                    append(row.uuid)
                    continue
            else:
                keyed = index.get(table)
                if keyed is not None:  # (`existing`, inline: a table not planned)
                    bucket = keyed.get(ref.key)
                    if bucket:
                        append(_first(bucket))
                    continue
            found = resolve_ref(ref)
            if found is not None:
                append(found)
        return out

    def resolve_ref(self, ref: Ref) -> str | Pending | None:
        matched = self.matched.get(ref.table)
        if matched is not None:
            row = matched.get(ref.key)
            if row is not None:
                return row.uuid
            if (ref.table, ref.key) in self.inserted:
                return Pending(ref.table, ref.key)
            only = self.keys.get(ref.table)
            if only is None or ref.key in only:
                return None
            # A row of a table planned by key, outside the keys: as it exists.
        row = self.existing(ref.table, ref.key)
        return row.uuid if row is not None else None

    def resolve(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self.resolve_ref(value)
        if isinstance(value, (list, tuple, set, frozenset)) and any(
                isinstance(v, Ref) for v in value):
            if all(v.__class__ is Ref for v in value):
                return self._resolve_refs(value)
            out = [self.resolve_ref(v) if isinstance(v, Ref) else v for v in value]
            return [v for v in out if v is not None]
        if isinstance(value, dict) and any(isinstance(v, Ref) for v in value.values()):
            pairs = {k: self.resolve_ref(v) if isinstance(v, Ref) else v
                     for k, v in value.items()}
            return {k: v for k, v in pairs.items() if v is not None}
        return value


def _first(rows: Mapping[str, IdlRow]) -> str:
    """The UUID of the row a key matches among `rows` (by UUID): the lowest."""
    return next(iter(rows)) if len(rows) == 1 else min(rows)


class _Refs(list[Any]):
    """References resolved: row UUIDs as the replica has them (canonical), or
    `Pending`s."""

    __slots__ = ()


def _has_pending(value: Any) -> bool:
    if isinstance(value, Pending):
        return True
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, Pending) for v in value)
    if isinstance(value, dict):
        return any(isinstance(v, Pending) for v in value.values())
    return False


def _pending_of(value: Any) -> list[Pending]:
    if isinstance(value, Pending):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Pending)]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, Pending)]
    return []


def plan(desired: DesiredDb, tables: Tables,
         keys: Mapping[str, set[Hashable]] | None = None,
         index: Mapping[str, KeyIndex] | None = None,
         collect: Mapping[str, dict[Hashable, dict[str, IdlRow]]] | None = None) -> list[Op]:
    """The operations that turn `tables` into `desired` (see the module rules). With
    `keys`, the tables it names are planned only for those keys (their desired rows,
    and existing rows of those keys), every other row taken as already right: the
    caller's promise, after a plan that left them right and changes it knows of.
    `collect`: tables matched whole have every row put there by key (the index a later
    plan by key takes), as the match keys them anyway."""
    p = _Planner(desired, tables, keys, index, collect)
    names = sorted(desired.tables)
    for name in names:
        p.match(desired.tables[name])
    updates: list[Op] = []
    inserts: dict[tuple[str, Hashable], Insert] = {}
    deletes: list[Op] = []
    for name in names:
        dt = desired.tables[name]
        table = tables[name]
        only = p.keys.get(name)
        if only is not None and not only and not dt.delete:
            continue  # (planned for no key, deleting nothing)
        codecs = table.codecs
        converters = table.converters
        refs = {c for c in dt.columns
                if codecs[c].key_type == "uuid" or codecs[c].value_type == "uuid"}
        # Sets of strings, integers or booleans: their Python values are their atoms.
        plain = {c for c in dt.columns if not codecs[c].is_scalar and not codecs[c].is_map
                 and codecs[c].key_type in _ATOM_TYPES}
        fill = set(dt.fill)
        keep = set(dt.keep)
        empty_default = {c for c in dt.columns
                         if not codecs[c].is_scalar and codecs[c].default == ()}
        defaults = {c: codecs[c].default for c in dt.columns}
        # Scalar string, integer and boolean columns: a value of that Python type is
        # its own canonical form.
        atom_type = {c: _ATOM_TYPES[codecs[c].key_type] for c in dt.columns
                     if codecs[c].is_scalar and codecs[c].key_type in _ATOM_TYPES}
        # Per column: its position, converter, default and roles, looked up once.
        info = {c: _column(table, c, refs, fill, keep) for c in dt.columns}
        columns = list(info.values())
        matched = p.matched[name]
        wanted_keys = dt.rows.keys() if only is None else only & dt.rows.keys()
        # Keys are visited in any order and the table's operations sorted by key at
        # the end: a plan that finds most rows right sorts only what it writes.
        table_inserts: list[Insert] = []
        table_updates: list[Update] = []
        for key in wanted_keys:
            wanted = dt.rows[key]
            row = matched.get(key)
            if row is None:
                if not dt.owned:
                    continue
                values: dict[str, Any] = {}
                pending: list[Pending] = []
                for col, value in wanted.items():
                    if col in refs:
                        v = p.resolve(value)
                        waits = _pending_of(v)
                        if waits:
                            pending += waits
                            values[col] = v
                        elif converters[col](v) != defaults[col]:
                            values[col] = v
                    elif value.__class__ is atom_type.get(col):
                        if value != defaults[col]:  # (an atom of the column's type)
                            values[col] = value
                    elif value.__class__ in _CONTAINERS and col in empty_default:
                        if value:  # (a set or map: its default is the empty one)
                            values[col] = value
                    elif converters[col](value) != defaults[col]:
                        values[col] = value
                table_inserts.append(Insert(name, key, values, tuple(pending)))
                continue
            if name in REUSED and (name, key) not in p.reused and not p.extra.get(
                    REUSED[name]):
                continue  # (keyed by its content, and its own key's: as wanted; unless
                #          a duplicate member goes, one it may list in its place)
            changed: dict[str, Any] = {}
            current_values = row._values
            for col, pos, convert, default, is_ref, is_fill, is_keep in (
                    columns if dt.owned else
                    [info.get(c) or _column(table, c, refs, fill, keep) for c in wanted]):
                current = current_values[pos]
                if is_fill and current != default:
                    continue
                if col not in wanted:
                    if not is_keep and current != default:
                        changed[col] = default
                    continue
                if is_ref:
                    v = p.resolve(wanted[col])
                    if (v.__class__ is str and (current == v or current == (v,))) or \
                            (v is None and current == ()):
                        continue  # a resolved reference, as stored (the common case)
                    if _has_pending(v):
                        changed[col] = v
                    elif v.__class__ is _Refs and len(v) > 1:  # (canonical already)
                        if tuple(sorted(set(v))) != current:
                            changed[col] = v
                    elif convert(v) != current:
                        changed[col] = v
                else:
                    w = wanted[col]
                    if w.__class__ is list:
                        if tuple(w) == current:
                            continue  # (a set as stored: sorted, distinct; no conversion)
                        if col in plain and all(map(lt, w, islice(w, 1, None))):
                            changed[col] = w  # (sorted, distinct: as it would be stored)
                            continue
                    if convert(w) != current:
                        changed[col] = w
            if changed:
                table_updates.append(Update(name, key, row, changed))
        table_inserts.sort(key=lambda op: _sort_key(op.key))
        table_updates.sort(key=lambda op: _sort_key(op.key))
        inserts.update(((name, op.key), op) for op in table_inserts)
        updates += table_updates
        gone: set[str] = set()
        if dt.owned:
            for extra in p.extra.get(name, ()):
                deletes.append(Delete(name, extra))
                gone.add(extra.uuid)
        for uuid in sorted(dt.delete - gone):
            doomed = table.rows.get(uuid)
            if doomed is not None:
                deletes.append(Delete(name, doomed))
    return [*_ordered(inserts), *updates, *deletes]


_CONTAINERS = frozenset((list, tuple, dict, set, frozenset))
_ATOM_TYPES: dict[str | None, type] = {"string": str, "integer": int, "boolean": bool}

# A column as the plan compares it: name, position, converter, default, whether it
# references rows, is filled only when empty (`fill`), is kept when left out (`keep`).
_Column = tuple[str, int, Callable[[Any], Any], Any, bool, bool, bool]


def _column(table: ReplicaTable, c: str, refs: set[str], fill: set[str], keep: set[str]
            ) -> _Column:
    return (c, table.col_index[c], table.converters[c], table.codecs[c].default, c in refs,
            c in fill, c in keep)


def _uuid_of(row: IdlRow) -> str:
    return row.uuid


def _sort_key(key: Hashable) -> tuple[str, str]:
    return (type(key).__name__, repr(key))


def _ordered(inserts: dict[tuple[str, Hashable], Insert]) -> list[Op]:
    """Inserts with every row after the inserted rows it references."""
    out: list[Op] = []
    done: set[tuple[str, Hashable]] = set()
    visiting: set[tuple[str, Hashable]] = set()

    def visit(k: tuple[str, Hashable]) -> None:
        if k in done or k in visiting:
            return
        visiting.add(k)
        ins = inserts[k]
        for dep in ins.pending:
            dk = (dep.table, dep.key)
            if dk in inserts:
                visit(dk)
        visiting.discard(k)
        done.add(k)
        out.append(ins)

    for k in inserts:
        visit(k)
    return out
