"""Dynamic addresses of switch ports added, updated or deleted in place
(`ports_incremental`): IPAM decided again for them, every other port keeping what it has.

Rules kept here:
- IPAM is one allocation over every switch (MACs are unique across all of them, each
  subnet's addresses across its switch), so the plan is the build's own
  (`ipam.plan_ipam`) over the core as it is after the change, scoped to the switches
  the change touched: their ports and the router ports peered with them are walked,
  the MACs every other port holds come from the core's index (`ipam_macs.MacIndex`,
  built once when first needed). It runs only where it can move something: a port
  changed that asks IPAM (or held a dynamic address), one on a switch whose IPAM
  hands addresses out, or one with a static MAC of the prefix while dynamic addresses
  exist.
- Every port of those switches not changed must keep the dynamic_addresses the last
  build gave it (the plan equal to `CoreData.dynamic_addresses` for it): else another
  port's address would move (a static address taking a dynamic one's place), and the
  caller recomputes. Ports of other switches cannot move: IPv4 addresses are taken
  per switch, and a MAC taken twice moves nobody's (the kept ones are taken unchecked).
- The index follows the ports changed and gone, whether a plan ran or not.
- The changed ports take the plan's addresses: appended to their own (as a build
  appends them), written back to NB, and recorded in the core's dynamic addresses;
  deleted ones leave it. A switch's IPAM settings changed: `datapaths_updated.
  ipam_again`.
- The handlers ask first whether a port asks IPAM for addresses (`asks_ipam`) and
  whether NB holds every address IPAM decided (`ipam_settled`): while one is pending
  they recompute.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, MutableMapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from .core import CoreData
from .delta import PortsDelta
from .ipam import NB_LSP_COLUMNS, IpamPlan, IpamScope, plan_ipam, switch_ipam
from .ports import Port, PortsData
from .ports_addresses import is_dynamic

_MISSING = object()  # (a port IPAM does not look at)


def moved(plan: IpamPlan, dynamic: Mapping[str, str | None]) -> set[str]:
    """The ports whose dynamic addresses `plan` decides other than the core's record
    (`CoreData.dynamic_addresses`), looked at or not."""
    return {name for name in plan.result.keys() | dynamic.keys()
            if plan.result.get(name, _MISSING) != dynamic.get(name, _MISSING)}


def _involves(changed: Collection[Port], gone: Collection[str], ports: PortsData,
              dynamic: Mapping[str, str | None], mac_prefix: int | None) -> bool:
    """Whether the switch ports `changed` (new or updated, as built now) and `gone`
    (names of deleted ones) can move a dynamic address (see the rules)."""
    if any(name in dynamic for name in gone):
        return True
    for port in changed:
        if port.name in dynamic or any(is_dynamic(a) for a in port.nb.addresses) \
                or port.nb.dynamic_addresses is not None:
            return True
        if mac_prefix is not None and any(
                not (a.mac ^ mac_prefix) >> 24 for a in port.lsp_addrs[:port.n_static_addrs]) \
                and any(v is not None for v in dynamic.values()):  # (last: O(dynamic))
            return True
        info = switch_ipam(port.dp.nb.other_config)
        if info.active and any(p.name in dynamic for p in ports.by_datapath.get(port.dp.key, [])):
            return True
    return False


def ipam_in_place(changed: Collection[Port], gone: Collection[str], touched: Collection[str],
                  core: CoreData, nb_desired: DesiredDb, delta: PortsDelta) -> bool:
    """The dynamic addresses of `changed` and `gone` (on the switches `touched`)
    applied where they can move one (see the rules); False (nothing touched) where
    another port's would move."""
    ports, dynamic, macs = core.ports, core.dynamic_addresses, core.macs
    names = [*(p.name for p in changed), *gone]
    if not _involves(changed, gone, ports, dynamic, core.mac_prefix):
        macs.refresh(names, ports, dynamic)
        return True
    plan, moving = plan_over(core, touched, gone)
    if moving - set(names):
        return False
    for name in gone:
        dynamic.pop(name, None)
    table = nb_desired.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
    for port in changed:
        added = plan.added.get(port.name)
        if added is not None:
            port.lsp_addrs.append(added)
        write_back(port, plan.result, dynamic, table, delta)
    macs.refresh(names, ports, dynamic)
    return True


def plan_over(core: CoreData, switches: Collection[str], gone: Collection[str] = ()
              ) -> tuple[IpamPlan, set[str]]:
    """The build's IPAM plan over `switches` alone (see the rules; `gone`: ports just
    deleted, whose MACs are free), and the names of their ports it moves."""
    ports, dynamic, macs = core.ports, core.dynamic_addresses, core.macs
    if not macs.valid:
        macs.build(ports, dynamic, core.mac_prefix)
    walked = [p for key in switches for p in ports.of_datapath(key)]
    walked += [peer for p in walked if p.is_lsp
               and (peer := ports.peer_of(p)) is not None and not peer.is_lsp]
    plan = plan_ipam(core.datapaths, ports, core.mac_prefix, IpamScope(
        switches, walked, macs.taken_outside([*(p.name for p in walked), *gone])))
    return plan, moved(plan, {p.name: dynamic[p.name] for p in walked if p.name in dynamic})


def write_back(port: Port, result: Mapping[str, str | None],
                dynamic: MutableMapping[str, str | None], table: DesiredTable,
                delta: PortsDelta) -> None:
    """The port's dynamic_addresses as the plan `result` has them (or none) in the
    core's record and the NB write-back."""
    uuid = port.nb.uuid
    if port.name in result:
        value = dynamic[port.name] = result[port.name]
        table.set(uuid, dynamic_addresses=[value] if value is not None else [])
        delta.touch("nb", "Logical_Switch_Port", uuid)
        return
    dynamic.pop(port.name, None)  # (IPAM does not look at it: no write-back)
    row = table.rows.get(uuid)
    if row is not None and row.pop("dynamic_addresses", None) is not None:
        if not row:
            del table.rows[uuid]
        delta.touch("nb", "Logical_Switch_Port", uuid)


def asks_ipam(row: IdlRow) -> bool:
    """Whether a switch port asks IPAM for addresses (or holds some; or is gone)."""
    return not isinstance(row, IdlRow) or row.dynamic_addresses is not None \
        or any("dynamic" in a.split() for a in row.addresses)


def ipam_settled(core_dynamic: Mapping[str, str | None], ports: PortsData,
                 lsps: ReplicaTable | None) -> bool:
    """Whether NB holds every dynamic address IPAM decided (no allocation pending: a
    pending one could pick another MAC once a static one is added or freed); of a
    port whose row is gone (deleted in this change) nothing is pending."""
    for name, value in core_dynamic.items():
        port = ports.ports.get(name)
        row = lsps.rows.get(port.nb.uuid) if port is not None and lsps is not None else None
        if (row is None and port is None) or (row is not None
                                              and row.dynamic_addresses != value):
            return False
    return True
