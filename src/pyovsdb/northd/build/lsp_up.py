"""NB `Logical_Switch_Port.up` from the SB port bindings (OVN 23.03,
`handle_port_binding_changes`).

Rules kept here:
- A switch port of type router is up. Another port is up once its binding has a
  chassis: if that chassis announces `other_config:port-up-notif=true`, only when the
  binding's `up` is true (ovn-controller sets it once flows are installed), else at
  once. Without a chassis it is down.
- Every switch port is decided, a port whose binding this run creates as unbound (it
  has no chassis yet): 23.03 decides only ports with a binding and so needs a second
  run after its own inserts come back; the value it reaches is the same. The value
  goes into the NB desired table (not owned), so sync writes it only where NB differs.
- `lsp_up` decides every binding; `lsp_up_for` decides some, so that an engine node
  can handle a change of SB Port_Binding (or Chassis) rows without a full pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb
from .datapaths import smap_bool
from .ports import PortsData, datapath_keys, existing_port_bindings

NB_LSP_COLUMNS = ("up",)


def port_up(lsp: IdlRow, pb: IdlRow | None) -> bool:
    if lsp.value("type") == "router":
        return True
    if pb is None or not pb.value("chassis"):
        return False
    chassis = pb.chassis
    if not isinstance(chassis, IdlRow):
        return False
    if smap_bool(chassis.other_config, "port-up-notif", False):
        return pb.up is True
    return True


def switch_ports(ports: PortsData) -> dict[str, IdlRow]:
    """The NB LSP of every switch port, by name."""
    return {p.name: p.nb for p in ports.ports.values() if p.is_lsp}


def lsp_up_for(bindings: Iterable[IdlRow], lsps: Mapping[str, IdlRow],
               nb: DesiredDb) -> dict[str, bool]:
    """Decide `up` for the ports of `bindings`; the values by LSP UUID."""
    table = nb.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
    out: dict[str, bool] = {}
    for pb in bindings:
        lsp = lsps.get(pb.logical_port)
        if lsp is None:
            continue
        up = port_up(lsp, pb)
        out[lsp.uuid] = up
        table.set(lsp.uuid, up=[up])
    return out


def lsp_up(sb: Mapping[str, ReplicaTable], ports: PortsData,
           nb: DesiredDb) -> dict[str, bool]:
    """Decide `up` for every switch port from the bindings in `sb` (which may be newer
    than the build of `ports`); the values by LSP UUID."""
    bindings = existing_port_bindings(sb)
    dp_keys = datapath_keys(sb)
    table = nb.table("Logical_Switch_Port", NB_LSP_COLUMNS, owned=False)
    out: dict[str, bool] = {}
    for port in ports.ports.values():
        if port.is_lsp:
            # None: created (or recreated) by this build, not there yet.
            up = port_up(port.nb, ports.binding_of(port, bindings, dp_keys))
            out[port.nb.uuid] = up
            table.set(port.nb.uuid, up=[up])
    return out
