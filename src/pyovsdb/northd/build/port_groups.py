"""Port groups: SB Port_Group rows, one per (NB port group, logical switch with ports
in it), named `<switch tunnel key>_<port group name>`, listing the ports by name.

Rules kept here (OVN 23.03, `build_port_group_lswitches`, `get_sb_port_group_name` and
`sync_port_groups` in northd.c):
- Only switch ports of switches that have datapaths count; a port group with none has
  no SB row (its `_ip4`/`_ip6` address sets still exist, see `address_sets`).
- Keyed by the SB name; SB rows of other names are deleted.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from .datapaths import DatapathsData

COLUMNS = ("name", "ports")


def sb_port_group_name(tunnel_key: int, name: str) -> str:
    return f"{tunnel_key}_{name}"


def port_switches(dps: DatapathsData) -> dict[str, str]:
    """Switch port UUID -> the datapath key of its switch."""
    out: dict[str, str] = {}
    for key, dp in dps.switches.items():
        for lsp in dp.nb.ports:
            if isinstance(lsp, IdlRow):
                out.setdefault(lsp.uuid, key)
    return out


def build_port_groups(nb: Mapping[str, ReplicaTable], dps: DatapathsData,
                      sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("Port_Group", COLUMNS))
    where = port_switches(dps)
    pgs = nb.get("Port_Group")
    for pg in sorted([] if pgs is None else pgs.rows.values(),
                     key=lambda r: (r.name, r.uuid)):
        per_switch: dict[str, set[str]] = {}
        for lsp in pg.ports:
            if isinstance(lsp, IdlRow) and lsp.uuid in where:
                per_switch.setdefault(where[lsp.uuid], set()).add(lsp.name)
        for key, names in per_switch.items():
            name = sb_port_group_name(dps.switches[key].tunnel_key, pg.name)
            table.put(name, name=name, ports=sorted(names))
