"""northd's core build: datapaths, ports and their bindings, multicast groups, HA
chassis groups, IPAM and the NB write-backs that go with them, in one pure call.

Rules kept here:
- The SB tables it fills: Datapath_Binding, Port_Binding, Multicast_Group,
  HA_Chassis_Group, HA_Chassis, Mirror, Static_MAC_Binding, BFD, and deletions of the
  MAC_Binding, IGMP_Group and FDB rows that lost their port or datapath; the NB
  write-backs: Logical_Switch_Port `tag`, `dynamic_addresses`, `up`,
  Logical_Router_Port `ipv6_prefix`, BFD `status`.
- `build_core` reads only its `BuildInput` and fills the SB and NB desired databases
  it is given; what later builders (logical flows, the other SB tables) need of it is
  returned as `CoreData`, never read back from the desired tables.
- The order of the steps is 23.03's: datapaths, ports (joined, peered, keyed), dynamic
  addresses, port bindings, HA chassis groups, multicast groups, then what 23.03 reads
  back from the SB bindings: NB `up` and the groups' `ref_chassis`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.changeset import RowChange
from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths import DatapathsData, build_datapaths, datapath_key, put_datapaths, smap_bool
from .ha_chassis import build_ha_chassis_groups, copy_groups
from .inputs import BuildInput
from .ipam import build_ipam, nb_mac_prefix, parse_mac_prefix
from .ipam_macs import MacIndex
from .lsp_up import lsp_up
from .mcast_groups import build_mcast_groups
from .ports import PortsData, build_ports, existing_port_bindings, stale_mac_bindings
from .ports_bfd import build_bfd
from .ports_mirrors import build_mirrors, mirror_rules
from .ports_router import router_port_binding
from .ports_static_mac import build_static_mac_bindings
from .ports_switch import SwitchPortState, switch_port_binding
from .ref_chassis import RefChassis, build_ref_chassis

PORT_BINDING_COLUMNS = (
    "logical_port", "type", "options", "datapath", "tunnel_key", "parent_port", "tag",
    "mac", "port_security", "nat_addresses", "external_ids", "requested_chassis",
    "requested_additional_chassis", "ha_chassis_group", "gateway_chassis", "mirror_rules",
    "up")

NB_LSP_COLUMNS = ("tag",)
NB_LRP_COLUMNS = ("ipv6_prefix",)


def put_ipv6_prefixes(ports: PortsData, nb: DesiredDb) -> None:
    """NB `Logical_Router_Port.ipv6_prefix` from the prefix ovn-controller delegated
    (`ovn_update_ipv6_prefix`: binding option `ipv6_ra_pd_list` "ID:PREFIX", on router
    ports with `options:prefix=true`); never cleared."""
    for port in ports.ports.values():
        if port.is_lsp or port.sb is None or not smap_bool(port.options, "prefix"):
            continue
        aid, sep, prefix = port.sb.options.get("ipv6_ra_pd_list", "").partition(":")
        prefix = prefix.split()[0] if prefix.split() else ""
        if sep and aid.isdigit() and prefix:
            nb.table("Logical_Router_Port", NB_LRP_COLUMNS, owned=False).set(
                port.nb.uuid, ipv6_prefix=[prefix])


@dataclass(slots=True)
class CoreData:
    datapaths: DatapathsData
    ports: PortsData
    bfd_ports: set[str]  # logical ports with a BFD session
    # Every LSP IPAM looked at: its dynamic_addresses after this run (None: none).
    dynamic_addresses: dict[str, str | None]
    mac_prefix: int | None  # the prefix IPAM used (top 24 bits of a MAC)
    macs: MacIndex = field(default_factory=MacIndex)  # the ports' MACs of that prefix

    def refresh_macs(self, names: Iterable[Hashable]) -> None:
        """IPAM's MAC index (if built) refreshed for the ports `names` (by the
        Port_Binding keys a step touched: a port's MAC moving moves its binding)."""
        self.macs.refresh([n for n in names if isinstance(n, str)], self.ports,
                          self.dynamic_addresses)


def put_port_bindings(ports: PortsData, state: SwitchPortState, sb: DesiredDb,
                      nb: DesiredDb, mirrors: DesiredTable) -> DesiredTable:
    table = sb.add(DesiredTable("Port_Binding", PORT_BINDING_COLUMNS, fill=("up",),
                                replace=set(ports.recreated)))
    for port in ports.ports.values():
        values = (switch_port_binding(port, ports, state) if port.is_lsp
                  else router_port_binding(port, ports))
        table.put(port.name, logical_port=port.name,
                  datapath=Ref("Datapath_Binding", port.dp.key),
                  tunnel_key=port.tunnel_key, up=[False],
                  mirror_rules=mirror_rules(port, mirrors), **values)
    if state.new_tags:
        lsp = nb.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
        for uuid, tag in sorted(state.new_tags.items()):
            lsp.set(uuid, tag=[tag])
    return table


def cleanup_mac_bindings(inp: BuildInput, datapaths: DatapathsData, ports: PortsData,
                         sb: DesiredDb) -> None:
    """Delete the MAC bindings of datapaths and ports that are gone, whenever a port
    binding goes (23.03's `cleanup_mac_bindings`; MAC_Binding is ovn-controller's
    table, and its strong reference would keep a deleted datapath's binding alive)."""
    if not ports.bindings_removed(existing_port_bindings(inp.sb)):
        return
    doomed = stale_mac_bindings(inp.sb, datapaths, ports)
    if doomed:
        sb.table("MAC_Binding", (), owned=False).delete.update(doomed)


def cleanup_fdb(inp: BuildInput, datapaths: DatapathsData, ports: PortsData,
                sb: DesiredDb) -> None:
    """Delete the FDB entries (ovn-controller's) whose datapath or port tunnel key no
    datapath or port holds any more (23.03's `cleanup_stale_fdb_entries`)."""
    table = inp.sb.get("FDB")
    if table is None or not table.rows:
        return
    doomed = stale_fdb(table, datapaths, ports)
    if doomed:
        sb.table("FDB", (), owned=False).delete.update(doomed)


def held_tunnel_keys(datapaths: DatapathsData, ports: PortsData) -> dict[int, set[int]]:
    """Each datapath's tunnel key, with the tunnel keys of its ports."""
    keys: dict[int, set[int]] = {dp.tunnel_key: set() for dp in datapaths.all()}
    for port in ports.ports.values():
        keys[port.dp.tunnel_key].add(port.tunnel_key)
    return keys


def stale_fdb(table: ReplicaTable, datapaths: DatapathsData, ports: PortsData) -> set[str]:
    """The FDB entries (UUIDs) of `table` whose datapath or port tunnel key no
    datapath or port holds."""
    keys = held_tunnel_keys(datapaths, ports)
    return {row.uuid for row in table.rows.values()
            if row.port_key not in keys.get(row.dp_key, ())}


# The index of SB Datapath_Binding rows by `tunnel_key` that `graph.wire` adds to the
# replica (for `fdb_stale`).
DP_BY_TUNNEL_KEY = "tunnel_key"


def fdb_stale(changes: Mapping[str, RowChange[IdlRow]], sb: Mapping[str, ReplicaTable],
              core: CoreData) -> set[str] | None:
    """The FDB entries of `changes` not going that name, by tunnel keys, no datapath
    and port of it that this build holds (so `cleanup_fdb` would delete them), found
    through the SB datapath bindings by tunnel key and the datapath's ports alone; None
    if SB has no such index."""
    table = sb.get("Datapath_Binding")
    index = table.indexes.get(DP_BY_TUNNEL_KEY) if table is not None else None
    if index is None or index.columns != ("tunnel_key",):
        return None
    stale: set[str] = set()
    for uuid, rc in changes.items():
        new = rc.new
        if new is not None and not any(
                _holds(core, row, new.dp_key, new.port_key)
                for row in index.entries.get((new.dp_key,), {}).values()):
            stale.add(uuid)
    return stale


def _holds(core: CoreData, binding: IdlRow, dp_key: int, port_key: int) -> bool:
    key = datapath_key(binding)
    dp = core.datapaths.get(key) if key else None
    return dp is not None and dp.tunnel_key == dp_key and any(
        p.tunnel_key == port_key for p in core.ports.by_datapath.get(dp.key, ()))


def sb_feedback(inp: BuildInput, core: CoreData, sb: DesiredDb, nb: DesiredDb
                ) -> RefChassis | None:
    """What the core derives from ovn-controller's writes to Port_Binding (`chassis`,
    `up`) and Chassis: NB `Logical_Switch_Port.up`, and `ref_chassis` of the desired
    HA_Chassis_Group rows of `sb` (a copy of the table replaces it, so the table
    `build_core` made is not changed). An engine node can run this alone on a claim,
    without rebuilding the rest; what keeps `ref_chassis` claim by claim (None: no
    groups) returned."""
    lsp_up(inp.sb, core.ports, nb)
    groups = sb.tables.get("HA_Chassis_Group")
    if groups is None:
        return None
    copy = copy_groups(groups)
    sb.tables[groups.name] = copy
    return build_ref_chassis(core.datapaths, core.ports, inp.sb, copy)


def build_core(inp: BuildInput, sb: DesiredDb, nb: DesiredDb, *,
               mac_prefix: str | None = None, from_sb: bool = True) -> CoreData:
    """Every core table of one run. `mac_prefix` ("xx:xx:xx") is used where NB_Global
    has no valid `options:mac_prefix` (the daemon's random choice, which it writes
    back to NB_Global as 23.03 does). `from_sb=False` leaves `sb_feedback` (NB up,
    ref_chassis) to the caller; the groups' `ref_chassis` is then empty."""
    datapaths = build_datapaths(inp)
    put_datapaths(datapaths, sb)
    ports = build_ports(inp, datapaths)
    state = SwitchPortState.start(inp.sb, ports)
    prefix = nb_mac_prefix(inp.nb)
    if prefix is None:
        prefix = parse_mac_prefix(mac_prefix)
    dynamic = build_ipam(datapaths, ports, nb, prefix)
    mirrors = build_mirrors(inp.nb, sb)
    put_port_bindings(ports, state, sb, nb, mirrors)
    cleanup_mac_bindings(inp, datapaths, ports, sb)
    build_static_mac_bindings(inp.nb, inp.sb, ports, sb)
    cleanup_fdb(inp, datapaths, ports, sb)
    put_ipv6_prefixes(ports, nb)
    build_ha_chassis_groups(ports, sb)
    build_mcast_groups(datapaths, ports, sb, inp.sb)
    bfd = build_bfd(inp.nb, inp.sb, sb, nb)
    core = CoreData(datapaths, ports, bfd, dynamic, prefix)
    if from_sb:
        sb_feedback(inp, core, sb, nb)
    return core
