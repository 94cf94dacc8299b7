"""Meters: SB Meter and Meter_Band rows from NB Meter, plus the private copies of fair
meters that ACL logging uses.

Rules kept here (OVN 23.03, `sync_meters`, `sync_acl_fair_meter` and
`alloc_acl_log_unique_meter_name` in northd.c):
- One SB Meter per NB Meter, same name, unit and bands; for every NB ACL whose `meter`
  names a meter with `fair=true`, one more copy named `<meter>__<ACL UUID>`, so each
  ACL's log is rate-limited on its own. Meters of other names are deleted.
- Every meter has band rows of its own, as in 23.03 (two meters with equal bands are
  two sets of rows): a band is keyed by its meter's name and its content (action,
  rate, burst_size), and never changes in place.
- In place (`meters_changed`, `acl_meters_changed`): the meters of the names an NB
  meter or band change touches are put again with their ACLs' copies (a walk of the
  ACLs); an ACL changed puts again its own copy alone. Rows of those names no longer
  desired go; the keys whose rows changed are in the delta.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable, Ref
from .delta import PortsDelta

METER_COLUMNS = ("name", "unit", "bands")
BAND_COLUMNS = ("action", "rate", "burst_size")


def _band_ref(bands: DesiredTable, meter: str, band: IdlRow) -> Ref:
    key = (meter, band.action, int(band.rate), int(band.burst_size))
    bands.put(key, action=key[1], rate=key[2], burst_size=key[3])
    return Ref("Meter_Band", key)


def fair_meter_name(meter: str, acl_uuid: str) -> str:
    return f"{meter}__{acl_uuid}"


def _by_name(table: ReplicaTable | None, names: Iterable[str] | None = None
             ) -> dict[str, IdlRow]:
    """The NB meter each name stands for (the first by UUID of that name)."""
    rows = [] if table is None else table.rows.values() if names is None else \
        [r for r in table.rows.values() if r.name in names]
    by_name: dict[str, IdlRow] = {}
    for row in sorted(rows, key=lambda r: (r.name, r.uuid)):
        by_name.setdefault(row.name, row)
    return by_name


def _put(meters: DesiredTable, bands: DesiredTable, name: str, meter: IdlRow) -> None:
    refs = sorted({_band_ref(bands, name, b) for b in meter.bands if isinstance(b, IdlRow)},
                  key=lambda r: str(r.key))
    meters.put(name, name=name, unit=meter.unit, bands=refs)


def build_meters(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> None:
    meters = sb.add(DesiredTable("Meter", METER_COLUMNS))
    bands = sb.add(DesiredTable("Meter_Band", BAND_COLUMNS))
    by_name = _by_name(nb.get("Meter"))
    for name, meter in by_name.items():
        _put(meters, bands, name, meter)
    acls = nb.get("ACL")
    for acl in sorted([] if acls is None else acls.rows.values(), key=lambda r: r.uuid):
        fair = by_name.get(acl.meter) if acl.meter else None
        if fair is not None and fair.fair:
            _put(meters, bands, fair_meter_name(acl.meter, acl.uuid), fair)


def _replaced(sb: DesiredDb, names: set[str], put: Callable[[DesiredTable, DesiredTable], None],
              delta: PortsDelta) -> None:
    """The desired meters `names` (and their bands) as `put` puts them again."""
    meters, bands = sb.tables["Meter"], sb.tables["Meter_Band"]
    old_meters: dict[Hashable, dict[str, Any]] = {
        k: meters.rows.pop(k) for k in names if k in meters.rows}
    old_bands: dict[Hashable, dict[str, Any]] = {
        k: bands.rows.pop(k) for k in [k for k in bands.rows
                                       if isinstance(k, tuple) and k[0] in names]}
    put(meters, bands)
    for table, old in (("Meter", old_meters), ("Meter_Band", old_bands)):
        rows = sb.tables[table].rows
        keys: set[Hashable] = set(old) | {k for k in rows if (k[0] if isinstance(k, tuple)
                                                              else k) in names}
        for key in keys:
            if rows.get(key) != old.get(key):
                delta.touch("sb", table, key)


def meters_changed(nb: Mapping[str, ReplicaTable], sb: DesiredDb, names: set[str],
                   delta: PortsDelta) -> None:
    """NB meters of `names` changed (created, deleted, renamed, their bands): those
    meters and their ACLs' copies put again (see the rules)."""
    by_name = _by_name(nb.get("Meter"), names)
    acls = nb.get("ACL")
    copies = {fair_meter_name(a.meter, a.uuid): by_name[a.meter]
              for a in ([] if acls is None else acls.rows.values())
              if a.meter in by_name and by_name[a.meter].fair}
    old_copies = {k for k in sb.tables["Meter"].rows
                  if isinstance(k, str) and k.partition("__")[0] in names and "__" in k}

    def put(meters: DesiredTable, bands: DesiredTable) -> None:
        for name, meter in by_name.items():
            _put(meters, bands, name, meter)
        for name, meter in copies.items():
            _put(meters, bands, name, meter)

    _replaced(sb, set(names) | set(copies) | old_copies, put, delta)


def acl_meters_changed(nb: Mapping[str, ReplicaTable], sb: DesiredDb,
                       changes: Mapping[str, RowChange[IdlRow]], delta: PortsDelta) -> None:
    """ACLs changed: each one's copy of a fair meter put again (see the rules)."""
    keys: set[str] = set()
    wanted: dict[str, IdlRow] = {}
    by_name = _by_name(nb.get("Meter"), {r.meter for rc in changes.values()
                                         for r in (rc.old, rc.new) if r is not None and r.meter})
    for uuid, rc in changes.items():
        for row in (rc.old, rc.new):
            if row is not None and row.meter:
                keys.add(fair_meter_name(row.meter, uuid))
        new = rc.new
        meter = by_name.get(new.meter) if new is not None and new.meter else None
        if new is not None and meter is not None and meter.fair:
            wanted[fair_meter_name(new.meter, uuid)] = meter

    def put(meters: DesiredTable, bands: DesiredTable) -> None:
        for name, meter in wanted.items():
            _put(meters, bands, name, meter)

    if keys:
        _replaced(sb, keys, put, delta)
