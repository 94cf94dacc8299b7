"""DNS: SB DNS rows, one per NB DNS row that some logical switch lists, with the
switches' datapaths.

Rules kept here (OVN 23.03, `sync_dns_entries` in northd.c):
- Keyed by the NB DNS UUID (`external_ids:dns_id`, the only external id); a DNS row no
  switch lists has no SB row.
- Record values are lower-cased (DNS lookups are case-insensitive); names stay as NB
  has them.
"""

from __future__ import annotations

from ...idl.row import IdlRow
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
        table.put(uuid, records={k: v.lower() for k, v in dns.records.items()},
                  datapaths=[Ref("Datapath_Binding", k) for k in sorted(set(switches))],
                  external_ids={"dns_id": uuid})
