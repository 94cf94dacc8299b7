"""DNS: SB DNS rows, one per NB DNS row that some logical switch lists, with the
switches' datapaths.

Rules kept here (OVN 23.03, `sync_dns_entries` in northd.c):
- Keyed by the NB DNS UUID (`external_ids:dns_id`, the only external id); a DNS row no
  switch lists has no SB row.
- Record values are lower-cased (DNS lookups are case-insensitive); names stay as NB
  has them.
- A DNS row's records changed (`dns_changed`) change its SB row in place; a row
  created or deleted is listed by no switch that did not change with it (the
  switch's `dns_records` changed: `dns_listed` moves that switch in or out of the
  rows' datapaths, making or deleting a row as the first switch lists it or the last
  one stops).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.row import IdlRow
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths import DatapathsData

COLUMNS = ("records", "datapaths", "external_ids")


def build_dns(dps: DatapathsData, sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("DNS", COLUMNS))
    users: dict[str, tuple[IdlRow, list[str]]] = {}
    for key, dp in dps.switches.items():
        for dns in dp.nb.dns_records:
            if isinstance(dns, IdlRow):
                users.setdefault(dns.uuid, (dns, []))[1].append(key)
    for uuid in sorted(users):
        dns, switches = users[uuid]
        _put(table, dns, set(switches))


def _put(table: DesiredTable, dns: IdlRow, switches: set[str]) -> None:
    """The SB row of NB DNS row `dns`, listed by the switches `switches`."""
    table.put(dns.uuid, records=_records(dns),
              datapaths=[Ref("Datapath_Binding", k) for k in sorted(switches)],
              external_ids={"dns_id": dns.uuid})


def _records(dns: IdlRow) -> dict[str, str]:
    return {k: v.lower() for k, v in dns.records.items()}


def dns_changed(changes: Mapping[str, RowChange[IdlRow]], sb: DesiredDb) -> set[str]:
    """The keys of the SB DNS rows `changes` (NB DNS rows) changed in place (their
    records: NB's external_ids are not copied). A row created or deleted comes with
    the switches that list it or stop (a switch's reference is strong)."""
    table = sb.tables.get("DNS")
    changed: set[str] = set()
    for uuid, rc in changes.items():
        if rc.old is None or rc.new is None:
            continue  # (with the switches that list it or stop: `dns_listed`)
        if table is None or uuid not in table.rows or rc.old.records == rc.new.records:
            continue
        table.set(uuid, records=_records(rc.new))
        changed.add(uuid)
    return changed


def dns_listed(switch: str, before: set[str], after: set[str],
               rows: Mapping[str, IdlRow], sb: DesiredDb) -> set[str]:
    """Switch `switch` listing the DNS rows `after` (NB UUIDs; `rows` by UUID) instead
    of `before`: the keys of the SB DNS rows changed."""
    table = sb.tables.get("DNS")
    if table is None:
        table = sb.add(DesiredTable("DNS", COLUMNS))
    changed: set[str] = set()
    for uuid in before ^ after:
        current = table.rows.get(uuid)
        switches = {str(ref.key) for ref in current["datapaths"]} if current else set()
        if uuid in after:
            switches.add(switch)
        else:
            switches.discard(switch)
        if not switches:
            table.rows.pop(uuid, None)
        else:
            _put(table, rows[uuid], switches)
        changed.add(uuid)
    return changed
