"""Port_Binding rows of logical switch ports, every type of 23.03 (VIF "", router,
localnet, localport, l2gateway, vtep, external, virtual, remote), and the NB `tag`
northd allocates for nested containers.

Rules kept here (OVN 23.03, `ovn_port_update_sbrec` for `op->nbsp`):
- Router-type ports are "l3gateway" when their router port is on a gateway router,
  else "patch"; options `peer` (the `router-port` option) and `l3gateway-chassis`.
- Other ports: type as in NB (an unknown type is not written, the binding keeps its
  own); options the NB options plus `qdisc_queue_id` when the port has QoS settings
  (kept, or the lowest id from 1 free on its chassis; a localnet port is its own
  "chassis"; an unbound VIF gets none), `vlan-passthru=true` from the switch, and
  `additional-chassis-activated` kept from the binding while it has requested
  additional chassis.
- `requested-chassis` is a comma-separated list of chassis names or hostnames; the
  first one found is `requested_chassis`, the others `requested_additional_chassis`.
- An external port's HA chassis group is its NB group's (by name).
- mac, port_security, parent_port are the NB values, tag the NB tag (after
  allocation), external_ids the NB ones plus `name` from `neutron:port_name`.
- Tags: a port with a parent and `tag_request=0` gets the lowest tag 1..4095 not used
  by its parent's other nested ports (once: a tag already set stays); a nonzero
  `tag_request` is copied to `tag`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import Ref
from .datapaths import smap_bool, smap_int
from .ports import ChassisAsks, Port, PortsData
from .ports_router import ChassisLookup, peer_router, router_lsp_nat_addresses

KNOWN_TYPES = frozenset(("", "l2gateway", "localnet", "localport", "router", "vtep",
                         "external", "virtual", "remote"))
MAX_TAGS = 4096
QDISC_MAX_QUEUE_ID = 0xF000


def queues_in_use(data: PortsData) -> dict[str, set[int]]:
    """The QoS queue ids the switch ports' bindings hold, per chassis."""
    queues: dict[str, set[int]] = {}
    for port in data.ports.values():
        pb = port.sb
        if port.is_lsp and pb is not None and isinstance(pb.chassis, IdlRow):
            queue = smap_int(pb.options, "qdisc_queue_id")
            if queue:
                queues.setdefault(pb.chassis.uuid, set()).add(queue)
    return queues


def tags_in_use(data: PortsData) -> dict[str, set[int]]:
    """The VLAN tags nested switch ports hold, per parent port name."""
    tags: dict[str, set[int]] = {}
    for port in data.ports.values():
        lsp = port.nb
        if port.is_lsp and lsp.parent_name and lsp.tag is not None:
            tags.setdefault(lsp.parent_name, set()).add(lsp.tag)
    return tags


def has_qos(options: Mapping[str, str]) -> bool:
    return "qos_max_rate" in options or "qos_min_rate" in options or "qos_burst" in options


@dataclass(slots=True)
class SwitchPortState:
    """Allocation state of one build: QoS queue ids per chassis, tags per parent."""

    queues: dict[str, set[int]] = field(default_factory=dict)
    tags: dict[str, set[int]] = field(default_factory=dict)
    new_tags: dict[str, int] = field(default_factory=dict)  # LSP uuid -> tag to write
    chassis_rows: ChassisLookup | None = None
    passthru: dict[str, bool] = field(default_factory=dict)  # by switch UUID
    asked: ChassisAsks = field(default_factory=ChassisAsks)  # what `chassis` was asked

    @classmethod
    def start(cls, sb: Mapping[str, ReplicaTable], data: PortsData) -> SwitchPortState:
        state = cls()
        state.chassis_rows = ChassisLookup(sb)
        state.asked = data.chassis_asked
        state.tags = tags_in_use(data)
        state.queues = queues_in_use(data)
        return state

    @classmethod
    def for_ports(cls, sb: Mapping[str, ReplicaTable], data: PortsData,
                  changed: Iterable[Port]) -> SwitchPortState:
        """The state for binding `changed` again alone: the queues and tags the others
        hold only where one of `changed` may take or give back one (O(ports) then)."""
        state = cls()
        state.chassis_rows = ChassisLookup(sb)
        state.asked = data.chassis_asked
        changed = list(changed)
        if any(has_qos(p.options) or (p.sb is not None and "qdisc_queue_id" in p.sb.options)
               for p in changed):
            state.queues = queues_in_use(data)
        if any(p.nb.parent_name and p.nb.tag_request == 0 for p in changed):
            state.tags = tags_in_use(data)  # (a nested port taking its parent's next VLAN)
        return state

    def tag_of(self, lsp: IdlRow) -> int | None:
        request = lsp.tag_request
        if request is None:
            return lsp.tag  # type: ignore[no-any-return]
        if lsp.parent_name and request == 0:
            if lsp.tag is not None:
                return lsp.tag  # type: ignore[no-any-return]
            used = self.tags.setdefault(lsp.parent_name, set())
            for tag in range(1, MAX_TAGS):
                if tag not in used:
                    used.add(tag)
                    self.new_tags[lsp.uuid] = tag
                    return tag
            return None  # "out of vlans"
        if request != 0:
            if lsp.tag != request:
                self.new_tags[lsp.uuid] = request
            return request  # type: ignore[no-any-return]
        return lsp.tag  # type: ignore[no-any-return]

    def queue_id(self, port: Port) -> int:
        pb = port.sb
        queue = smap_int(pb.options, "qdisc_queue_id") if pb is not None else 0
        qos = has_qos(port.options)
        if port.type == "localnet":
            owner: str | None = "localnet:" + port.name
        elif pb is not None and isinstance(pb.chassis, IdlRow):
            owner = pb.chassis.uuid
        else:
            owner = None
        if qos and not queue:
            if owner is None:
                return 0
            used = self.queues.setdefault(owner, set())
            for q in range(1, QDISC_MAX_QUEUE_ID + 1):
                if q not in used:
                    used.add(q)
                    return q
            return 0
        if not qos and queue:
            if owner is not None:
                self.queues.get(owner, set()).discard(queue)
            return 0
        return queue

    def vlan_passthru(self, switch: IdlRow) -> bool:
        value = self.passthru.get(switch.uuid)
        if value is None:
            value = self.passthru[switch.uuid] = smap_bool(switch.other_config,
                                                           "vlan-passthru", False)
        return value

    def chassis(self, name: str, port: str) -> IdlRow | None:
        """The chassis `port` asks for by `name` (its name, else its hostname)."""
        self.asked.add(name, port)
        return self.chassis_rows.find(name) if self.chassis_rows is not None else None


def switch_port_binding(port: Port, data: PortsData, state: SwitchPortState) -> dict[str, Any]:
    lsp = port.nb
    values: dict[str, Any] = {"ha_chassis_group": [], "gateway_chassis": []}
    state.asked.forget(port.name)  # (what it asks for is read again below)
    if port.type != "router":
        options = dict(port.options)
        queue = state.queue_id(port)
        if queue:
            options["qdisc_queue_id"] = str(queue)
        if state.vlan_passthru(port.dp.nb):
            options["vlan-passthru"] = "true"
        pb = port.sb
        if pb is not None and pb.requested_additional_chassis:
            activated = pb.options.get("additional-chassis-activated")
            if activated is not None:
                options["additional-chassis-activated"] = activated
        values["options"] = options
        if port.type in KNOWN_TYPES:
            values["type"] = port.type
        else:
            values["type"] = pb.type if pb is not None else ""
        values["nat_addresses"] = []
        if port.type == "external" and lsp.ha_chassis_group is not None:
            values["ha_chassis_group"] = [Ref("HA_Chassis_Group", lsp.ha_chassis_group.name)]
        requested: list[Ref] = []
        for name in (port.options.get("requested-chassis") or "").split(","):
            if not name:
                continue
            chassis = state.chassis(name, port.name)
            if chassis is not None:
                requested.append(Ref("Chassis", chassis.name))
        values["requested_chassis"] = requested[:1]
        values["requested_additional_chassis"] = requested[1:]
    else:
        router = peer_router(port, data)
        gw_chassis = router.nb.options.get("chassis") if router is not None else None
        values["type"] = "l3gateway" if gw_chassis is not None else "patch"
        options = {}
        router_port = port.options.get("router-port")
        if router_port is not None:
            options["peer"] = router_port
        if gw_chassis is not None:
            options["l3gateway-chassis"] = gw_chassis
        values["options"] = options
        values["nat_addresses"] = router_lsp_nat_addresses(port, data, gw_chassis)
        values["requested_chassis"] = []
        values["requested_additional_chassis"] = []
    tag = state.tag_of(lsp)
    values["parent_port"] = [lsp.parent_name] if lsp.parent_name is not None else []
    values["tag"] = [tag] if tag is not None else []
    values["mac"] = list(lsp.addresses)
    values["port_security"] = list(lsp.port_security)
    ids = dict(lsp.external_ids)
    neutron_name = ids.get("neutron:port_name")
    if neutron_name:
        ids["name"] = neutron_name
    values["external_ids"] = ids
    return values
