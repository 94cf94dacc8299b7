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
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable, Ref

METER_COLUMNS = ("name", "unit", "bands")
BAND_COLUMNS = ("action", "rate", "burst_size")


def _band_ref(bands: DesiredTable, meter: str, band: IdlRow) -> Ref:
    key = (meter, band.action, int(band.rate), int(band.burst_size))
    bands.put(key, action=key[1], rate=key[2], burst_size=key[3])
    return Ref("Meter_Band", key)


def fair_meter_name(meter: str, acl_uuid: str) -> str:
    return f"{meter}__{acl_uuid}"


def build_meters(nb: Mapping[str, ReplicaTable], sb: DesiredDb) -> None:
    meters = sb.add(DesiredTable("Meter", METER_COLUMNS))
    bands = sb.add(DesiredTable("Meter_Band", BAND_COLUMNS))
    table = nb.get("Meter")
    by_name: dict[str, IdlRow] = {}
    for row in sorted([] if table is None else table.rows.values(),
                      key=lambda r: (r.name, r.uuid)):
        by_name.setdefault(row.name, row)

    def put(name: str, meter: IdlRow) -> None:
        refs = sorted({_band_ref(bands, name, b) for b in meter.bands if isinstance(b, IdlRow)},
                      key=lambda r: str(r.key))
        meters.put(name, name=name, unit=meter.unit, bands=refs)

    for name, meter in by_name.items():
        put(name, meter)
    acls = nb.get("ACL")
    for acl in sorted([] if acls is None else acls.rows.values(), key=lambda r: r.uuid):
        fair = by_name.get(acl.meter) if acl.meter else None
        if fair is not None and fair.fair:
            put(fair_meter_name(acl.meter, acl.uuid), fair)
