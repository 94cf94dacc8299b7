"""The engine's contract per change kind (upstream's `check_engine_stats`, as a table):
for each kind of NB or SB change, on one topology, which nodes recompute and which
are computed by handlers alone until northd settles. The table is exact, so a handler
added (a node leaving `recompute`) or lost (a node joining it) shows as a failing row
to update here; the self-check of `LocalNorthd` proves every row's result equals a
recompute's. Issue 17's goal is a table whose `recompute` column is empty."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build.peers_incremental import alone_in_bucket
from pyovsdb.northd.testing import LocalDb, LocalNorthd, Nb, add_chassis
from pyovsdb.ovsdb.changeset import Changeset

COMPUTING = ("northd", "sync_from_sb", "sync_cfg", "mac_binding_aging", "lflow",
             "sync_to_sb")
# `northd` changed in place: no node recomputes.
CFG = frozenset(("sync_cfg",))
# An NB_Global option only flows read: the flows built again, every one.
EVERY_FLOW = frozenset(("sync_cfg", "lflow"))
DHCP = {"lease_time": "3600", "router": "10.0.0.1", "server_id": "10.0.0.1",
        "server_mac": "00:00:00:00:ff:01"}
FEATURES = {"ct-no-masked-label": "true", "mac-binding-timestamp": "true",
            "ovn-ct-lb-related": "true"}
IN_PLACE: frozenset[str] = frozenset()


def _nb_option(nb: Nb, key: str, value: str) -> None:
    """NB_Global's options as they are (northd's write-backs too), with `key` set."""
    uuid = next(iter(nb.db.tables["NB_Global"].rows))
    options = dict(nb.db.tables["NB_Global"].rows[uuid].data["options"])
    nb.db.update("NB_Global", uuid, options={**options, key: value})


class World:
    """A switch with two VIFs, an ACL and a router port, a second switch, a chassis; every
    transaction made through `nb`/`sb` while `change()` is open goes to northd."""

    def __init__(self, nb: Nb, sb: LocalDb, self_check: bool = True) -> None:
        self.nb, self.sb = nb, sb
        self.northd = LocalNorthd(nb.db, sb, step_ms=10, self_check=self_check)
        self._feeding = False
        self.baseline: dict[str, tuple[int, int]] = {}
        self._wrap(nb.db, self.northd.nb_changed)
        self._wrap(sb, self.northd.sb_changed)
        with self.change():
            nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                               "svc_monitor_mac": "0a:00:00:00:00:fe"})
            nb.ls_add("sw0")
            nb.ls_add("sw1")
            nb.lr_add("lr0")
            nb.connect("sw0", "lr0", "lrp0", "00:00:00:00:ff:01", "10.0.0.1/24")
            for i in (1, 2):
                nb.lsp_add("sw0", f"vm{i}", addresses=[f"00:00:00:00:00:0{i} 10.0.0.1{i}"])
            nb.add_child("Logical_Switch", "sw0", "acls", "ACL", priority=900,
                         direction="to-lport", match="ip4.dst == 10.0.0.12",
                         action="allow")
            nb.db.insert("Port_Group", name="pgs",
                         ports=[nb.uuid("Logical_Switch_Port", "vm1")])
            self.chassis = add_chassis(sb, "ch0", "192.0.2.1")
            sb.insert("Chassis_Private", name="ch0", chassis=self.chassis)
        self.northd.settle()

    def _wrap(self, db: LocalDb, push: Callable[[Changeset[IdlRow]], None]) -> None:
        transact = db.transact

        def feeding(ops: list[dict[str, Any]]) -> Changeset[IdlRow]:
            cs = transact(ops)
            if self._feeding:
                push(cs)
            return cs

        db.transact = feeding  # type: ignore[method-assign]

    @contextmanager
    def change(self) -> Iterator[None]:
        self._feeding = True
        try:
            yield
        finally:
            self._feeding = False

    def settled(self) -> None:
        """The change's setup done: northd settles, and the row counts from here."""
        self.northd.settle()
        self.baseline = self.counts()

    def counts(self) -> dict[str, tuple[int, int]]:
        d = self.northd.driver
        return {n: (d.engine.stats[n].recompute, d.engine.stats[n].compute)
                for n in COMPUTING} if d.engine is not None else {}


def _pb(sb: LocalDb, name: str) -> str:
    return next(r.uuid for r in sb.tables["Port_Binding"].rows.values()
                if r.logical_port == name)


def _acl(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.add_child("Logical_Switch", "sw0", "acls", "ACL", priority=1000,
                 direction="from-lport", match="ip4", action="drop")


def _lb(nb: Nb, sb: LocalDb, world: World) -> None:
    uuid = nb.db.insert("Load_Balancer", name="lb0",
                        vips={"10.0.0.100:80": "10.0.0.11:80"}, protocol="tcp")
    nb.db.add_to("Logical_Switch", nb.uuid("Logical_Switch", "sw0"), "load_balancer", uuid)


def _lb_on(nb: Nb, table: str, name: str) -> str:
    uuid = nb.db.insert("Load_Balancer", name="lb1",
                        vips={"10.0.0.101:80": "10.0.0.12:80"}, protocol="udp")
    nb.db.add_to(table, nb.uuid(table, name), "load_balancer", uuid)
    return uuid


def _lb_vip_set(nb: Nb, sb: LocalDb, world: World) -> None:
    uuid = _lb_on(nb, "Logical_Switch", "sw0")
    world.northd.settle()
    nb.db.update("Load_Balancer", uuid, vips={"10.0.0.101:81": "10.0.0.11:81,10.0.0.12:81"})


def _lb_group(nb: Nb, sb: LocalDb, world: World) -> None:
    lb = nb.db.insert("Load_Balancer", name="lb2", vips={"10.0.0.102": "10.0.0.11"})
    group = nb.db.insert("Load_Balancer_Group", name="lbg", load_balancer=[lb])
    nb.db.add_to("Logical_Switch", nb.uuid("Logical_Switch", "sw1"), "load_balancer_group",
                 group)
    nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "lr0"), "load_balancer_group",
                 group)


def _lb_health_check(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.db.transact([
        {"op": "insert", "table": "Load_Balancer_Health_Check", "uuid-name": "hc",
         "row": {"vip": "10.0.0.103:80"}},
        {"op": "insert", "table": "Load_Balancer", "uuid-name": "lb",
         "row": {"name": "lbh", "vips": ["map", [["10.0.0.103:80", "10.0.0.11:80"]]],
                 "health_check": ["named-uuid", "hc"]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["load_balancer", "insert", ["named-uuid", "lb"]]]}])


def _monitor_status(nb: Nb, sb: LocalDb, world: World, status: str) -> None:
    """A health-checked VIP on sw0 whose backends vm1 and vm2 are probed (their SB
    Service_Monitor rows made by northd); then (`status`) ovn-controller sets vm1's
    `status`, or the health check's options, the mappings or the load balancer
    change ("options", "mappings", "del"; "": nothing more), or a VIF no mapping names
    is added ("vif"), or probed vm2 disabled ("probed": its monitor goes) or deleted
    ("probed-del"), or a port a mapping names comes ("probed-add": its monitor comes,
    its responder on another switch)."""
    nb.db.transact([
        {"op": "insert", "table": "Load_Balancer_Health_Check", "uuid-name": "hc",
         "row": {"vip": "10.0.0.103:80"}},
        {"op": "insert", "table": "Load_Balancer", "uuid-name": "lb",
         "row": {"name": "lbh", "vips": ["map", [["10.0.0.103:80",
                                                  "10.0.0.11:80,10.0.0.12:80"]]],
                 "health_check": ["named-uuid", "hc"],
                 "ip_port_mappings": ["map", [["10.0.0.11", "vm1:10.0.0.2"],
                                              ["10.0.0.12", "vm2:10.0.0.2"]]]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["load_balancer", "insert", ["named-uuid", "lb"]]]}])
    if not status:
        return
    nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"])
    world.settled()
    lb = nb.uuid("Load_Balancer", "lbh")
    if status in ("vif", "probed", "probed-del", "probed-add"):
        if status == "vif":
            nb.lsp_add("sw1", "vm8", addresses=["00:00:00:00:00:08 10.1.0.8"])
        elif status == "probed":
            nb.db.update("Logical_Switch_Port", nb.uuid("Logical_Switch_Port", "vm2"),
                         enabled=False)
        elif status == "probed-del":
            nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                             "where": [["name", "==", "sw0"]],
                             "mutations": [["ports", "delete", [
                                 "uuid", nb.uuid("Logical_Switch_Port", "vm2")]]]}])
        else:
            nb.db.update("Load_Balancer", lb, ip_port_mappings={
                "10.0.0.11": "vm1:10.0.0.2", "10.0.0.12": "vm7:10.1.0.2"})
            world.settled()
            nb.lsp_add("sw1", "vm7", addresses=["00:00:00:00:00:07 10.1.0.7"])
        return
    if status == "options":
        hc = nb.db.tables["Load_Balancer"].rows[lb].data["health_check"][0]
        nb.db.update("Load_Balancer_Health_Check", hc,
                     options={"interval": "10", "failure_count": "5"})
    elif status == "mappings":
        nb.db.update("Load_Balancer", lb, ip_port_mappings={"10.0.0.11": "vm9:10.1.0.2"})
    elif status == "del":
        nb.db.transact([
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
             "mutations": [["load_balancer", "delete", ["uuid", lb]]]},
            {"op": "delete", "table": "Load_Balancer", "where": [["_uuid", "==", ["uuid", lb]]]}])
    else:
        monitor = next(u for u, r in sb.tables["Service_Monitor"].rows.items()
                       if r.data["logical_port"] == "vm1")
        sb.update("Service_Monitor", monitor, status=status)


def _lb_del(nb: Nb, world: World) -> None:
    uuid = _lb_on(nb, "Logical_Switch", "sw0")
    world.northd.settle()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["load_balancer", "delete", ["set", [["uuid", uuid]]]]]},
        {"op": "delete", "table": "Load_Balancer", "where": [["_uuid", "==", ["uuid", uuid]]]}])


def _nat(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="snat",
                 external_ip="172.16.0.1", logical_ip="10.0.0.0/24")


def _nat_set(nb: Nb, sb: LocalDb, world: World) -> None:
    _nat(nb, sb, world)
    world.northd.settle()
    nb.db.update("NAT", next(iter(nb.db.tables["NAT"].rows)), external_ip="172.16.0.2")


def _nat_del(nb: Nb, sb: LocalDb, world: World) -> None:
    _nat(nb, sb, world)
    world.northd.settle()
    uuid = next(iter(nb.db.tables["NAT"].rows))
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["nat", "delete", ["set", [["uuid", uuid]]]]]}])


def _pair_later(nb: Nb, world: World) -> None:
    nb.lrp_add("lr0", "lrp1", "00:00:00:00:ff:02", "10.1.0.1/24")
    world.northd.settle()
    nb.lsp_add("sw1", "sw1-lrp1", type="router", addresses=["router"],
               options={"router-port": "lrp1"})


def _unpair(nb: Nb) -> None:
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Router_Port", "lrp0")]]]]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "sw0-lrp0")]]]]]}])


def _pair_gateway(nb: Nb) -> None:
    nb.lr_add("gw0", options={"chassis": "ch0"})
    nb.connect("sw1", "gw0", "gw0-sw1", "00:00:00:00:ff:03", "10.1.0.254/24")


def _unpair_gateway(nb: Nb, world: World) -> None:
    """A gateway router on sw1 (counted from after it), then its port and the switch
    port naming it deleted at once."""
    _pair_gateway(nb)
    world.settled()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "gw0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Router_Port", "gw0-sw1")]]]]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "delete", ["set", [["uuid", nb.uuid(
             "Logical_Switch_Port", next(r.name for r in nb.db.tables[
                 "Logical_Switch_Port"].rows.values() if r.options.get(
                     "router-port") == "gw0-sw1"))]]]]]}])


def _share(nb: Nb, world: World) -> None:
    """A second router on sw0, whose router port's networks lr0 resolves statically
    (neither router has `dynamic_neigh_routers`)."""
    nb.lr_add("lr1")
    world.northd.settle()
    nb.connect("sw0", "lr1", "lr1-sw0", "00:00:00:00:ff:11", "10.0.0.2/24")


def _unshare(nb: Nb, world: World) -> None:
    _share(nb, world)
    world.northd.settle()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr1"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Router_Port", "lr1-sw0")]]]]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "sw0-lr1-sw0")]]]]]}])


def _gateway_router(nb: Nb, switch: str = "sw0", chassis: str = "ch0",
                    options: dict[str, str] | None = None) -> None:
    """What a cloud CMS does for a router with an external gateway, in one transaction:
    the router, its gateway port (gateway chassis `chassis`) and that port's peer on
    `switch` (with more `options`)."""
    nb.db.transact([
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
         "row": {"name": "lr9-gw-" + chassis, "chassis_name": chassis, "priority": 10}},
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr9-gw", "mac": "00:00:00:00:ff:99", "networks": "10.0.0.99/24",
                 "gateway_chassis": ["named-uuid", "gc"]}},
        {"op": "insert", "table": "Logical_Router",
         "row": {"name": "lr9", "ports": ["named-uuid", "gw"],
                 "options": ["map", [["dynamic_neigh_routers", "true"]]]}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "pub",
         "row": {"name": f"{switch}-lr9", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", "lr9-gw"],
                                     *([k, v] for k, v in (options or {}).items())]]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", switch]],
         "mutations": [["ports", "insert", ["named-uuid", "pub"]]]}])


def _gateway_peer_gone(nb: Nb, world: World, how: str) -> None:
    """A router with a gateway port on sw1 (`_gateway_router`, settled); then the
    switch port peering that port deleted ("lsp-del"), or sw1 with it ("ls-del")."""
    _gateway_router(nb, "sw1")
    world.settled()
    if how == "ls-del":
        nb.db.transact([{"op": "delete", "table": "Logical_Switch",
                         "where": [["name", "==", "sw1"]]}])
        return
    nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                     "where": [["name", "==", "sw1"]], "mutations": [["ports", "delete", [
                         "uuid", nb.uuid("Logical_Switch_Port", "sw1-lr9")]]]}])


def _external_switch(nb: Nb, world: World) -> None:
    """A gateway router gw0 (settled); then, in one transaction, its port to an external
    switch made with a localnet port and the router-type port pairing with it (its
    GARP entry reads the localnet port): ovn-kubernetes's node provisioning."""
    nb.lr_add("gw0", options={"chassis": "ch0"})
    world.settled()
    nb.db.transact([
        _named("Logical_Router_Port", "rp", {"name": "gw0-ext", "mac": "00:00:00:00:ff:0e",
                                             "networks": "172.18.0.2/16"}),
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "gw0"]],
         "mutations": [["ports", "insert", ["named-uuid", "rp"]]]},
        _named("Logical_Switch_Port", "ln", {"name": "lnet", "type": "localnet",
                                             "addresses": "unknown", "options": [
                                                 "map", [["network_name", "physnet"]]]}),
        _named("Logical_Switch_Port", "er", {"name": "ext-gw0", "type": "router",
                                             "addresses": "router", "options": [
                                                 "map", [["router-port", "gw0-ext"],
                                                         ["nat-addresses", "router"]]]}),
        {"op": "insert", "table": "Logical_Switch", "row": {
            "name": "ext", "ports": ["set", [["named-uuid", "ln"], ["named-uuid", "er"]]]}}])


def _policies(nb: Nb, world: World, update: bool) -> None:
    """A policy on lr0 (counted from after it); then an ECMP reroute added (its group
    id comes before the first's, UUIDs permitting), or the first one's match changed."""
    _policy(nb, world.sb, world)
    world.settled()
    uuid = next(iter(nb.db.tables["Logical_Router_Policy"].rows))
    if update:
        nb.db.update("Logical_Router_Policy", uuid, match="ip4.src == 10.0.0.12",
                     action="reroute", nexthops=["10.0.0.250"])
        return
    nb.add_child("Logical_Router", "lr0", "policies", "Logical_Router_Policy", priority=90,
                 match="ip4.dst == 10.9.0.0/16", action="reroute",
                 nexthops=["10.0.0.251", "10.0.0.252"])


def _localnet_by_gateway(nb: Nb, world: World, gateway_router: bool,
                         then_del: bool = False) -> None:
    """A router with a gateway port on sw1, or a gateway router (`options:chassis`)
    with a port on sw1 (counted from after it), then a localnet port on sw1 (the
    gateway router's switch port's `nat_addresses` change); `then_del`: counted from
    after that, the localnet port deleted."""
    if gateway_router:
        nb.lr_add("lr8", options={"chassis": "ch0"})
        nb.connect("sw1", "lr8", "lr8-sw1", "00:00:00:00:ff:08", "10.1.0.1/24")
    else:
        _gateway_router(nb, "sw1")
    world.settled()
    nb.lsp_add("sw1", "ln1", type="localnet", addresses=["unknown"],
               options={"network_name": "phys"})
    if then_del:
        world.settled()
        nb.db.transact([{"op": "delete", "table": "Logical_Switch_Port",
                         "where": [["name", "==", "ln1"]]},
                        {"op": "mutate", "table": "Logical_Switch",
                         "where": [["name", "==", "sw1"]], "mutations": [[
                             "ports", "delete",
                             ["set", [["uuid", nb.uuid("Logical_Switch_Port", "ln1")]]]]]}])


def _localnet_del(nb: Nb, world: World) -> None:
    """A localnet port with a VLAN on sw1 (counted from after it), then deleted."""
    nb.lsp_add("sw1", "ln1", type="localnet", addresses=["unknown"], tag_request=101,
               options={"network_name": "phys"})
    world.settled()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "ln1")]]]]]}])


def _qos_set(nb: Nb, world: World) -> None:
    """A QoS rule on sw0 (counted from after it), then its match and action."""
    nb.add_child("Logical_Switch", "sw0", "qos_rules", "QoS", priority=100,
                 direction="from-lport", match="ip4.src == 10.0.0.11", action={"dscp": 12})
    world.settled()
    uuid = next(iter(nb.db.tables["QoS"].rows))
    nb.db.update("QoS", uuid, match="ip4.src == 10.0.0.12", action={"dscp": 14})


def _dhcp(nb: Nb, world: World) -> None:
    """DHCP options vm1 names (its DHCP flows), then their lease time and router."""
    uuid = nb.db.insert("DHCP_Options", cidr="10.0.0.0/24", options=DHCP)
    nb.set("Logical_Switch_Port", "vm1", dhcpv4_options=uuid)
    world.northd.settle()
    nb.db.update("DHCP_Options", uuid, options={**DHCP, "lease_time": "600",
                                                "router": "10.0.0.254"})


def _dns(nb: Nb, world: World, host: str | None) -> None:
    """sw0 listing a DNS row (not counted); then its records set to a new name
    (`host`), or emptied (""); None: only the row listed (counted)."""
    uuid = nb.db.insert("DNS", records={"vm1": "10.0.0.11"})
    nb.set("Logical_Switch", "sw0", dns_records=[uuid])
    if host is None:
        return
    world.settled()
    nb.db.update("DNS", uuid, records={host: "10.0.0.19"} if host else {})


def _dns_gone(nb: Nb, world: World) -> None:
    """sw0 listing a DNS row (counted from after it); then the row unlisted and
    deleted in one transaction."""
    uuid = nb.db.insert("DNS", records={"vm1": "10.0.0.11"})
    nb.set("Logical_Switch", "sw0", dns_records=[uuid])
    world.settled()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["dns_records", "delete", ["uuid", uuid]]]},
        {"op": "delete", "table": "DNS", "where": [["_uuid", "==", ["uuid", uuid]]]}])


def _gateway_gone(nb: Nb, world: World, router: bool) -> None:
    """A router with a gateway port on sw1 (and a default route); then its gateway
    port deleted, or (`router`) the router deleted with the switch port naming it."""
    _gateway_router(nb, "sw1")
    world.northd.settle()
    nb.add_child("Logical_Router", "lr9", "static_routes", "Logical_Router_Static_Route",
                 ip_prefix="0.0.0.0/0", nexthop="10.0.0.254")
    world.northd.settle()
    if not router:
        nb.db.transact([
            {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr9"]],
             "mutations": [["ports", "delete",
                            ["set", [["uuid", nb.uuid("Logical_Router_Port", "lr9-gw")]]]]]}])
        return
    nb.db.transact([
        {"op": "delete", "table": "Logical_Router", "where": [["name", "==", "lr9"]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "sw1-lr9")]]]]]}])


def _named_before(nb: Nb, world: World, what: str) -> None:
    """Something names router port lrp9 before it exists (`what`: a router port's
    `peer`, a router-type switch port, a static MAC binding); then lrp9 is added."""
    if what == "peer":
        nb.lrp_add("lr0", "lrp8", "00:00:00:00:ff:08", "10.8.0.1/24", peer="lrp9")
    elif what == "lsp":
        nb.lsp_add("sw1", "sw1-lrp9", type="router", addresses=["router"],
                   options={"router-port": "lrp9"})
    else:
        nb.db.insert("Static_MAC_Binding", logical_port="lrp9", ip="10.9.0.50",
                     mac="00:00:00:00:09:50")
    world.northd.settle()
    nb.lrp_add("lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24")


def _lrp_peer(nb: Nb, world: World, how: str) -> None:
    """Router ports lrp8 (lr0) and lrp9 (lr9, with a route out of it) on one subnet,
    settled ("both": lrp8 naming lrp9 already); then lrp8 names lrp9 ("one way"),
    lrp9 names lrp8 back ("both"), lrp8 names a port that is not there ("nowhere"), or
    lrp8 (naming lrp9) names none ("drop")."""
    nb.lr_add("lr9")
    nb.lrp_add("lr0", "lrp8", "00:00:00:00:ff:08", "10.8.0.1/24",
               **({"peer": "lrp9"} if how in ("both", "drop") else {}))
    nb.lrp_add("lr9", "lrp9", "00:00:00:00:ff:09", "10.8.0.2/24")
    nb.add_child("Logical_Router", "lr9", "static_routes", "Logical_Router_Static_Route",
                 ip_prefix="10.0.0.0/24", nexthop="10.8.0.1")
    world.settled()
    name, peer = ("lrp9", ["lrp8"]) if how == "both" else ("lrp8", {
        "one way": ["lrp9"], "nowhere": ["lrp7"], "drop": []}[how])
    nb.set("Logical_Router_Port", name, peer=peer)


def _unpair_in_turn(nb: Nb, world: World) -> None:
    """A router interface removed as a CMS may: the router port first, then (its
    switch port left naming nothing) the switch port."""
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Router_Port", "lrp0")]]]]]}])
    world.northd.settle()
    lsp = next(u for u, r in nb.db.tables["Logical_Switch_Port"].rows.items()
               if r.value("type") == "router")
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["ports", "delete", ["set", [["uuid", lsp]]]]]}])


def _router_swap(nb: Nb, world: World) -> None:
    nb.lr_add("lr8")
    world.northd.settle()
    nb.db.transact([
        {"op": "delete", "table": "Logical_Router", "where": [["name", "==", "lr8"]]},
        {"op": "insert", "table": "Logical_Router", "row": {"name": "lr9"}}])


def _route(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.add_child("Logical_Router", "lr0", "static_routes", "Logical_Router_Static_Route",
                 ip_prefix="192.168.0.0/16", nexthop="10.0.0.254")


def _policy(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.add_child("Logical_Router", "lr0", "policies", "Logical_Router_Policy",
                 priority=100, match="ip4.src == 10.0.0.11", action="drop")


def _port_group(nb: Nb, sb: LocalDb, world: World) -> None:
    nb.db.insert("Port_Group", name="pg0",
                 ports=[nb.uuid("Logical_Switch_Port", "vm1")])


def _claim(nb: Nb, sb: LocalDb, world: World) -> None:
    sb.update("Port_Binding", _pb(sb, "vm1"), chassis=world.chassis, up=True)


def _virtual_claim(nb: Nb, sb: LocalDb, world: World, parent: str) -> None:
    """A virtual port with parents vm1 and vm2 added; then the SB claims it as
    ovn-controller does when a parent answers for the VIP (`virtual_parent`,
    `chassis`): its VIP resolves to the parent's MAC on the switch's routers."""
    nb.lsp_add("sw0", "vip", type="virtual", addresses=["00:00:00:00:00:50 10.0.0.50"],
               options={"virtual-ip": "10.0.0.50", "virtual-parents": "vm1,vm2"})
    world.settled()
    sb.update("Port_Binding", _pb(sb, "vip"), virtual_parent=parent, chassis=world.chassis)


def _learn_after(nb: Nb, sb: LocalDb, world: World) -> None:
    """A VIF added and deleted (its binding come and gone), then a MAC learned."""
    nb.lsp_add("sw0", "vm3", addresses=["00:00:00:00:00:03 10.0.0.13"])
    world.northd.settle()
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "vm3")]]]]]}])
    world.northd.settle()
    _learn(nb, sb, world)


def _learn_beside_stale(sb: LocalDb, world: World) -> None:
    """A binding of no port (another client's), and a MAC learned on it in the same
    run: both deleted, as a build deletes them."""
    dp = next(iter(sb.tables["Datapath_Binding"].rows))
    sb.insert("Port_Binding", logical_port="gone", datapath=dp, tunnel_key=77)
    sb.insert("MAC_Binding", logical_port="gone", ip="10.0.0.77", mac="00:00:00:00:00:77",
              datapath=dp)


def _fdb(sb: LocalDb, port: str, port_key: int | None = None) -> None:
    """ovn-controller learning a MAC on `port` (by its tunnel keys; `port_key`: a key
    no port of that switch holds)."""
    pb = sb.tables["Port_Binding"].rows[_pb(sb, port)]
    sb.insert("FDB", mac="00:00:00:00:cc:01", dp_key=pb.datapath.tunnel_key,
              port_key=pb.tunnel_key if port_key is None else port_key)


def _chassis_named(sb: LocalDb, world: World, by: str) -> None:
    """Chassis ch1 (hostname host1) named before it registers (`by`: a gateway
    chassis of a new router's gateway port, a switch port's `requested-chassis` by
    name or by hostname, the name with the migration's second chassis, the name by a
    port with QoS options, the name by a port deleted since); then it registers."""
    nb = world.nb
    if by == "gateway":
        _gateway_router(nb, "sw1", "ch1")
    else:
        asks = {"port": "ch1", "hostname": "host1", "migrating": "ch0,ch1", "qos": "ch1",
                "gone": "ch1"}[by]
        nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
                   options={"requested-chassis": asks,
                            **({"qos_max_rate": "1000"} if by == "qos" else {})})
        if by == "gone":
            world.northd.settle()
            nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                             "where": [["name", "==", "sw1"]], "mutations": [[
                                 "ports", "delete",
                                 ["uuid", nb.uuid("Logical_Switch_Port", "vm9")]]]}])
    world.northd.settle()
    add_chassis(sb, "ch1", "192.0.2.2", hostname="host1")


def _chassis_del(sb: LocalDb, world: World, named: str = "") -> None:
    """Chassis ch1 registered (a gateway chassis naming it, or a switch port asking for
    it, if `named`), then gone."""
    if named == "gateway":
        _gateway_router(world.nb, "sw1", "ch1")
    elif named == "port":
        world.nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
                         options={"requested-chassis": "ch1"})
    uuid = add_chassis(sb, "ch1", "192.0.2.2")
    world.northd.settle()
    sb.transact([{"op": "delete", "table": "Chassis", "where": [["_uuid", "==", ["uuid", uuid]]]}])


def _vxlan(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """A chassis with a vxlan encap registers (`how` "add": then a switch with a VIF
    comes, their keys in the narrow ranges; "switch", "port", "transit": a switch, a
    port, a transit switch asking for a key above them first); or ("del", "encap") it
    leaves, or its encap is made geneve ("del asked", "del port", "del router port": a
    switch, a port, a router port asking for a key above while it was there)."""
    if how in ("switch", "del asked"):
        _dp_set(nb, "Logical_Switch", "sw1", other_config={"requested-tnl-key": "5000"})
    elif how == "transit":
        nb.ls_add("ts0", other_config={"interconn-ts": "ts0", "requested-tnl-key": "5000"})
    elif how == "port":
        nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
                   options={"requested-tnl-key": "3000"})
    if how in ("del", "encap", "del asked", "del port", "del router port"):
        uuid = add_chassis(sb, "ch1", "192.0.2.2", encap="vxlan")
        world.settled()
        if how == "del port":
            nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
                       options={"requested-tnl-key": "3000"})
            world.settled()
        elif how == "del router port":  # (symmetric ECMP replies name lrp0 by its key)
            _dp_set(nb, "Logical_Router", "lr0", options={"chassis": "ch0"})
            for hop in ("10.0.0.100", "10.0.0.101"):
                nb.add_child("Logical_Router", "lr0", "static_routes",
                             "Logical_Router_Static_Route", ip_prefix="192.168.0.0/24",
                             nexthop=hop, options={"ecmp_symmetric_reply": "true"})
            nb.set("Logical_Router_Port", "lrp0", options={"requested-tnl-key": "3000"})
            world.settled()
        if how != "encap":
            sb.transact([{"op": "delete", "table": "Chassis",
                          "where": [["_uuid", "==", ["uuid", uuid]]]}])
        else:
            sb.update("Encap", sb.tables["Chassis"].rows[uuid].encaps[0].uuid, type="geneve")
        return
    world.settled()
    add_chassis(sb, "ch1", "192.0.2.2", encap="vxlan")
    if how == "add":
        world.northd.settle()
        nb.ls_add("sw9")
        nb.lsp_add("sw9", "vm9", addresses=["00:00:00:00:00:09 10.9.0.9"])


def _migration(nb: Nb, sb: LocalDb, world: World, phase: str) -> None:
    """VIF vm1 on ch0 live-migrating to ch1 (as Nova asks it): `requested-chassis`
    names both; then (`phase` "activated") ovn-controller on the target reports the
    port activated there; then (`phase` "done") the target alone is asked for."""
    add_chassis(sb, "ch1", "192.0.2.2")
    world.northd.settle()
    uuid = nb.uuid("Logical_Switch_Port", "vm1")
    nb.db.update("Logical_Switch_Port", uuid, options={"requested-chassis": "ch0,ch1"})
    if phase in ("activated", "done"):
        world.northd.settle()
        binding = next(r for r in sb.tables["Port_Binding"].rows.values()
                       if r.logical_port == "vm1")
        sb.update("Port_Binding", binding.uuid,
                  options={**binding.options, "additional-chassis-activated": "ch1"})
    if phase == "done":
        world.northd.settle()
        nb.db.update("Logical_Switch_Port", uuid, options={"requested-chassis": "ch1"})


def _chassis_renamed(sb: LocalDb, world: World) -> None:
    """A switch port asks for host1; chassis ch1 registered, then given that hostname."""
    world.nb.lsp_add("sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
                     options={"requested-chassis": "host1"})
    uuid = add_chassis(sb, "ch1", "192.0.2.2")
    world.northd.settle()
    sb.update("Chassis", uuid, hostname="host1")


def _ha_claim(nb: Nb, sb: LocalDb, world: World, release: bool) -> None:
    """lr0 given a gateway port with two gateway chassis (its SB group's `ref_chassis`
    counts the chassis bound beside lr0); then vm1 claimed on ch0, or (`release`)
    claimed and then released."""
    ch1 = add_chassis(sb, "ch1", "192.0.2.2")
    nb.db.transact([
        *({"op": "insert", "table": "Gateway_Chassis", "uuid-name": f"gc{i}",
           "row": {"name": f"lr0-gw-ch{i}", "chassis_name": f"ch{i}", "priority": 20 - i}}
          for i in (0, 1)),
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:99", "networks": "172.16.0.1/24",
                 "gateway_chassis": ["set", [["named-uuid", "gc0"], ["named-uuid", "gc1"]]]}},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "insert", ["named-uuid", "gw"]]]}])
    sb.update("Port_Binding", _pb(sb, "vm2"), chassis=ch1, up=True)
    world.settled()
    sb.update("Port_Binding", _pb(sb, "vm1"), chassis=world.chassis, up=True)
    if release:
        world.settled()
        sb.update("Port_Binding", _pb(sb, "vm1"), chassis=[], up=False)


def _gateway_set(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """lr0 given a gateway port (gateway chassis ch0; with `how` starting "ha", ch1
    too), vm2 beside lr0 bound to ch1; then its gateway chassis changed (`how`:
    "priority" of one, "add" a chassis, "ha-swap" the priorities, "ha-drop" one)."""
    ch1 = add_chassis(sb, "ch1", "192.0.2.2")
    nb.db.transact([
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc0",
         "row": {"name": "lr0-gw-ch0", "chassis_name": "ch0", "priority": 10}},
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:99", "networks": "172.16.0.1/24",
                 "gateway_chassis": ["named-uuid", "gc0"]}},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "insert", ["named-uuid", "gw"]]]}])
    world.northd.settle()
    gw = nb.uuid("Logical_Router_Port", "lr0-gw")
    add = [{"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
            "row": {"name": "lr0-gw-ch1", "chassis_name": "ch1", "priority": 5}},
           {"op": "mutate", "table": "Logical_Router_Port",
            "where": [["_uuid", "==", ["uuid", gw]]],
            "mutations": [["gateway_chassis", "insert", ["named-uuid", "gc"]]]}]
    if how.startswith("ha"):
        nb.db.transact(add)
    sb.update("Port_Binding", _pb(sb, "vm2"), chassis=ch1, up=True)
    world.settled()
    gcs = {r.data["chassis_name"]: u for u, r in nb.db.tables["Gateway_Chassis"].rows.items()}
    if how == "priority":
        nb.db.update("Gateway_Chassis", gcs["ch0"], priority=20)
    elif how == "add":
        nb.db.transact(add)
    elif how == "last":
        nb.db.update("Logical_Router_Port", gw, gateway_chassis=[])
    elif how == "ha-swap":
        nb.db.update("Gateway_Chassis", gcs["ch0"], priority=5)
        nb.db.update("Gateway_Chassis", gcs["ch1"], priority=10)
    else:
        nb.db.transact([
            {"op": "mutate", "table": "Logical_Router_Port",
             "where": [["_uuid", "==", ["uuid", gw]]],
             "mutations": [["gateway_chassis", "delete", ["uuid", gcs["ch1"]]]]}])


def _nb_ha_group(nb: Nb, sb: LocalDb, world: World, user: str, how: str) -> None:
    """An NB HA chassis group (ch0 at 20, ch1 at 10) used by `user` ("external": an
    external switch port on sw1; "gateway": lr0's gateway port); then its members
    changed (`how`: "priority" of ch1, "add" a third chassis)."""
    add_chassis(sb, "ch1", "192.0.2.2")
    group = [
        *({"op": "insert", "table": "HA_Chassis", "uuid-name": f"hc{i}",
           "row": {"chassis_name": f"ch{i}", "priority": 20 - 10 * i}} for i in (0, 1)),
        {"op": "insert", "table": "HA_Chassis_Group", "uuid-name": "g",
         "row": {"name": "g0", "ha_chassis": ["set", [["named-uuid", "hc0"],
                                                       ["named-uuid", "hc1"]]]}}]
    nb.db.transact([
        *group,
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ext",
         "row": {"name": "ext0", "type": "external", "addresses": "00:00:00:00:00:e0",
                 "ha_chassis_group": ["named-uuid", "g"]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "insert", ["named-uuid", "ext"]]]}]
        if user == "external" else [
        *group,
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:99", "networks": "172.16.0.1/24",
                 "ha_chassis_group": ["named-uuid", "g"]}},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "insert", ["named-uuid", "gw"]]]}])
    world.settled()
    hcs = {r.data["chassis_name"]: u for u, r in nb.db.tables["HA_Chassis"].rows.items()}
    if how == "priority":
        nb.db.update("HA_Chassis", hcs["ch1"], priority=30)
    else:
        nb.db.transact([
            {"op": "insert", "table": "HA_Chassis", "uuid-name": "hc2",
             "row": {"chassis_name": "ch2", "priority": 5}},
            {"op": "mutate", "table": "HA_Chassis_Group", "where": [["name", "==", "g0"]],
             "mutations": [["ha_chassis", "insert", ["named-uuid", "hc2"]]]}])


def _meter(nb: Nb, name: str = "m0", fair: bool = False, rate: int = 100) -> str:
    nb.db.transact([
        {"op": "insert", "table": "Meter_Band", "uuid-name": "b",
         "row": {"action": "drop", "rate": rate}},
        {"op": "insert", "table": "Meter", "row": {"name": name, "unit": "pktps",
                                                   "fair": fair, "bands": ["named-uuid", "b"]}}])
    return next(u for u, r in nb.db.tables["Meter"].rows.items() if r.data["name"] == name)


def _log_acl(nb: Nb, meter: str = "m0") -> None:
    nb.add_child("Logical_Switch", "sw0", "acls", "ACL", priority=1002,
                 direction="to-lport", match="ip4.dst == 10.0.0.11", action="drop",
                 log=True, meter=meter)


def _meters(nb: Nb, world: World, how: str) -> None:
    """Meters as a CMS sets them (`how`): "fair-after" an ACL logging through m0 first,
    then m0 created fair (each ACL its own copy); "acl" m0 fair first, then an ACL
    logging through it; "band" m0 there, then its band's rate changed; "copp-del"
    lr0's Copp naming m0 for ARP resolution, then m0 deleted; "copp-set" that Copp
    then naming m1 too."""
    if how == "fair-after":
        _log_acl(nb)
        world.settled()
        _meter(nb, fair=True)
    elif how == "acl":
        _meter(nb, fair=True)
        world.settled()
        _log_acl(nb)
    elif how == "band":
        meter = _meter(nb, fair=True)
        _log_acl(nb)
        world.settled()
        band = nb.db.tables["Meter"].rows[meter].data["bands"][0]
        nb.db.update("Meter_Band", band, rate=200)
    else:
        meter = _meter(nb)
        _meter(nb, "m1")
        copp = nb.db.insert("Copp", name="c0", meters={"arp-resolve": "m0"})
        nb.db.update("Logical_Router", nb.uuid("Logical_Router", "lr0"), copp=copp)
        world.settled()
        if how == "copp-del":
            nb.db.transact([{"op": "delete", "table": "Meter",
                             "where": [["_uuid", "==", ["uuid", meter]]]}])
        else:
            nb.db.update("Copp", copp, meters={"arp-resolve": "m0", "icmp4-error": "m1"})


def _static_mac(nb: Nb, world: World, how: str) -> None:
    """A static MAC binding on lrp0 added; then (`how`) its MAC changed, or deleted."""
    smb = nb.db.insert("Static_MAC_Binding", logical_port="lrp0", ip="10.0.0.99",
                       mac="00:00:00:00:00:99")
    if how == "add":
        return
    world.settled()
    if how == "update":
        nb.db.update("Static_MAC_Binding", smb, mac="00:00:00:00:00:98")
    else:
        nb.db.transact([{"op": "delete", "table": "Static_MAC_Binding",
                         "where": [["_uuid", "==", ["uuid", smb]]]}])


def _lrp_set(nb: Nb, world: World, gateway: bool, port: str = "", **cols: Any) -> None:
    """A router port updated (`cols`): lrp0, or (`gateway`) lr0's gateway port added
    first (and updated, unless `port` names another)."""
    name = "lrp0"
    if gateway:
        nb.db.transact([
            {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
             "row": {"name": "lr0-gw-ch0", "chassis_name": "ch0", "priority": 10}},
            {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
             "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:99",
                     "networks": "172.16.0.1/24", "gateway_chassis": ["named-uuid", "gc"]}},
            {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
             "mutations": [["ports", "insert", ["named-uuid", "gw"]]]}])
        world.settled()
        name = "lr0-gw"
    nb.db.update("Logical_Router_Port", nb.uuid("Logical_Router_Port", port or name), **cols)


def _dp_set(nb: Nb, table: str, row: str, **columns: Any) -> None:
    """A switch or router row (`table`, by name) updated in `columns`."""
    nb.db.update(table, nb.uuid(table, row), **columns)


def _key_of(sb: LocalDb, name: str) -> str:
    """The tunnel key datapath `name` holds, as a requested-tnl-key value."""
    return str(next(r.tunnel_key for r in sb.tables["Datapath_Binding"].rows.values()
                    if r.external_ids.get("name") == name))


def _port_key(sb: LocalDb, name: str) -> str:
    """The tunnel key port `name`'s binding holds, as a requested-tnl-key value."""
    return str(next(r.tunnel_key for r in sb.tables["Port_Binding"].rows.values()
                    if r.logical_port == name))


def _port_asking(nb: Nb, sb: LocalDb, world: World, then: str) -> None:
    """vm1 asks for the key it holds (settled); then ("add") a VIF added beside it, or
    ("race") a VIF asking for vm1's key too (vm1 keeps it), or ("del") vm1 deleted
    while a VIF asking for its key is there (that one takes it)."""
    key = _port_key(sb, "vm1")
    nb.set("Logical_Switch_Port", "vm1", options={"requested-tnl-key": key})
    if then == "del":
        nb.lsp_add("sw0", "vm9", addresses=["00:00:00:00:00:09 10.0.0.19"],
                   options={"requested-tnl-key": key})
    world.settled()
    if then == "del":
        nb.db.transact([{"op": "mutate", "table": "Logical_Switch", "where": [
            ["name", "==", "sw0"]], "mutations": [["ports", "delete", [
                "uuid", nb.uuid("Logical_Switch_Port", "vm1")]]]}])
        return
    nb.lsp_add("sw0", "vm9", addresses=["00:00:00:00:00:09 10.0.0.19"],
               options={"requested-tnl-key": key} if then == "race" else {})


def _lrp_asking(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """lr0 has a second port, lrp9 (settled); then lrp0 asks for a free key ("free"),
    for the key lrp9 holds ("held": lrp9 moves; "ecmp": on a gateway router with
    symmetric ECMP routes via lrp9), or lrp9 asks for lrp0's key and then ("drop")
    stops asking (its key stays)."""
    nb.lrp_add("lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24")
    if how == "drop":
        world.settled()
        nb.set("Logical_Router_Port", "lrp9", options={"requested-tnl-key": "11"})
    world.settled()
    if how == "drop":
        nb.set("Logical_Router_Port", "lrp9", options={})
        return
    if how == "ecmp":  # (lrp9's key is in the flows of symmetric ECMP replies via it)
        _dp_set(nb, "Logical_Router", "lr0", options={"chassis": "ch0"})
        for hop in ("10.9.0.100", "10.9.0.101"):
            nb.add_child("Logical_Router", "lr0", "static_routes",
                         "Logical_Router_Static_Route", ip_prefix="192.168.0.0/24",
                         nexthop=hop, options={"ecmp_symmetric_reply": "true"})
        world.settled()
    key = "9" if how == "free" else _port_key(sb, "lrp9")
    nb.set("Logical_Router_Port", "lrp0", options={"requested-tnl-key": key})


def _named(table: str, name: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"op": "insert", "table": table, "uuid-name": name, "row": row}


# What a switch made or deleted with a VIF (`_switch_with`) holds besides: the rows
# made with it, and its columns naming them (or rows there before: "GROUP", "DNS").
SWITCH_HOLDS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "acl": ([_named("ACL", "a", {"priority": 1001, "direction": "to-lport", "match": "ip4",
                                 "action": "allow-related"})],
            {"acls": ["set", [["named-uuid", "a"]]]}),
    "lb": ([_named("Load_Balancer", "l", {"name": "lbx", "protocol": "tcp", "vips": [
        "map", [["172.16.0.9:80", "10.7.0.5:80"]]]})],
           {"load_balancer": ["set", [["named-uuid", "l"]]]}),
    "lb group": ([], {"load_balancer_group": "GROUP"}),
    "dns": ([], {"dns_records": "DNS"}),
    "qos": ([_named("QoS", "q", {"priority": 100, "direction": "from-lport", "match": "ip4",
                                 "action": ["map", [["dscp", 10]]]})],
            {"qos_rules": ["set", [["named-uuid", "q"]]]}),
    "mcast": ([], {"other_config": ["map", [["mcast_snoop", "true"],
                                            ["mcast_flood_unregistered", "true"],
                                            ["vlan-passthru", "true"]]]}),
    "port group": ([_named("Port_Group", "g", {"name": "pgx", "ports": [
        "set", [["named-uuid", "p"]]]})], {}),
}


def _switch_with(nb: Nb, world: World, holds: str, then: str) -> None:
    """A load balancer group and a DNS row there (settled); then swx made with VIF vmx
    and what `SWITCH_HOLDS[holds]` says ("add"), or made (settled) and deleted ("del")."""
    nb.db.transact([
        _named("Load_Balancer", "l", {"name": "lbg", "protocol": "tcp", "vips": [
            "map", [["172.30.0.1:80", "10.7.0.5:8080"]]]}),
        {"op": "insert", "table": "Load_Balancer_Group", "row": {
            "name": "grp", "load_balancer": ["set", [["named-uuid", "l"]]]}},
        {"op": "insert", "table": "DNS", "row": {"records": ["map", [["vmx", "10.7.0.5"]]]}}])
    world.settled()
    made, columns = SWITCH_HOLDS[holds]
    there = {"GROUP": "Load_Balancer_Group", "DNS": "DNS"}
    row = {c: ["set", [["uuid", next(iter(nb.db.tables[there[v]].rows))]]]
           if isinstance(v, str) else v for c, v in columns.items()}
    nb.db.transact([*made, _named("Logical_Switch_Port", "p", {
        "name": "vmx", "addresses": "00:00:00:00:0a:01 10.7.0.5"}),
        {"op": "insert", "table": "Logical_Switch", "row": {
            "name": "swx", "ports": ["set", [["named-uuid", "p"]]], **row}}])
    if then == "del":
        world.settled()
        nb.db.transact([{"op": "delete", "table": "Logical_Switch",
                         "where": [["name", "==", "swx"]]}])


_LRX_PORT = _named("Logical_Router_Port", "rp", {"name": "lrx-p", "mac": "00:00:00:00:0b:01",
                                                  "networks": "10.8.0.1/24"})
# What a router made or deleted (`_router_with`) holds: the rows made with it, and its
# columns naming them (or the load balancer group there before: "GROUP").
ROUTER_HOLDS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "a load balancer": ([_named("Load_Balancer", "l", {
        "name": "lbx", "protocol": "tcp", "vips": ["map", [["172.16.0.9:80", "10.0.0.11:80"]]]})],
        {"load_balancer": ["set", [["named-uuid", "l"]]]}),
    "a load balancer and a port": ([_LRX_PORT, _named("Load_Balancer", "l", {
        "name": "lbx", "protocol": "tcp", "vips": ["map", [["10.8.0.100:80", "10.0.0.11:80"]]]})],
        {"load_balancer": ["set", [["named-uuid", "l"]]],
         "ports": ["set", [["named-uuid", "rp"]]]}),
    "the cluster's load balancer group, as a gateway router with a port": ([_LRX_PORT], {
        "load_balancer_group": "GROUP", "options": ["map", [["chassis", "ch0"]]],
        "ports": ["set", [["named-uuid", "rp"]]]}),
    "NAT and routes, no port": ([
        _named("NAT", "n", {"type": "snat", "external_ip": "172.24.0.2",
                            "logical_ip": "10.8.0.0/24"}),
        _named("Logical_Router_Static_Route", "r", {"ip_prefix": "0.0.0.0/0",
                                                    "nexthop": "172.24.0.1"})],
        {"nat": ["set", [["named-uuid", "n"]]], "static_routes": ["set", [["named-uuid", "r"]]]}),
    "a gateway port and a floating IP": ([
        _named("Gateway_Chassis", "gc", {"name": "gcx", "chassis_name": "ch0", "priority": 1}),
        _named("Logical_Router_Port", "gp", {"name": "lrx-gw", "mac": "00:00:00:00:0b:02",
                                             "networks": "172.24.0.2/24",
                                             "gateway_chassis": ["set", [["named-uuid", "gc"]]]}),
        _LRX_PORT, _named("NAT", "n", {"type": "dnat_and_snat", "external_ip": "172.24.0.9",
                                       "logical_ip": "10.8.0.5"})],
        {"nat": ["set", [["named-uuid", "n"]]],
         "ports": ["set", [["named-uuid", "rp"], ["named-uuid", "gp"]]]}),
    "CoPP": ([_named("Meter_Band", "b", {"action": "drop", "rate": 10}),
              _named("Meter", "m", {"name": "m1", "unit": "pktps",
                                    "bands": ["set", [["named-uuid", "b"]]]}),
              _named("Copp", "c", {"name": "c", "meters": ["map", [["arp", "m1"]]]})],
             {"copp": ["named-uuid", "c"]}),
}


def _router_with(nb: Nb, world: World, holds: str, then: str) -> None:
    """A load balancer group there (settled); then lrx made with what
    `ROUTER_HOLDS[holds]` says ("add"), or made (settled) and deleted ("del")."""
    nb.db.transact([
        _named("Load_Balancer", "l", {"name": "lbg", "protocol": "tcp", "vips": [
            "map", [["172.30.0.1:80", "10.0.0.11:8080"]]]}),
        {"op": "insert", "table": "Load_Balancer_Group", "row": {
            "name": "grp", "load_balancer": ["set", [["named-uuid", "l"]]]}}])
    world.settled()
    made, columns = ROUTER_HOLDS[holds]
    group = next(iter(nb.db.tables["Load_Balancer_Group"].rows))
    row = {c: ["set", [["uuid", group]]] if v == "GROUP" else v for c, v in columns.items()}
    nb.db.transact([*made, {"op": "insert", "table": "Logical_Router",
                            "row": {"name": "lrx", **row}}])
    if then == "del":
        world.settled()
        nb.db.transact([{"op": "delete", "table": "Logical_Router",
                         "where": [["name", "==", "lrx"]]}])


def _freed(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """A datapath asks for the key it holds and one after it in build order for the same
    key (the first keeps it); then the first goes: "ls-del" (sw00, sw1 asking), "lr-del"
    or "disable" (lr0, with its port; lr9 asking). The one asking takes the key."""
    first, second = ("sw00", "sw1") if how == "ls-del" else ("lr0", "lr9")
    table = "Logical_Switch" if how == "ls-del" else "Logical_Router"
    column = "other_config" if how == "ls-del" else "options"
    if how == "ls-del":
        nb.ls_add("sw00")
    else:
        nb.lr_add("lr9")
    world.settled()
    key = _key_of(sb, first)
    for name in (first, second):
        _dp_set(nb, table, name, **{column: {"requested-tnl-key": key}})
    world.settled()
    if how == "disable":
        _dp_set(nb, table, first, enabled=[False])
    else:
        nb.db.transact([{"op": "delete", "table": table, "where": [["name", "==", first]]}])


def _dynamic_then(nb: Nb, world: World, other_config: dict[str, str],
                  lrp_mac: bool = False) -> None:
    """sw1 given a subnet and a port asking for a dynamic address; then the switch's
    `other_config` set to `other_config`, or (`lrp_mac`) lrp0's MAC changed."""
    _dp_set(nb, "Logical_Switch", "sw1", other_config={"subnet": "10.9.0.0/24"})
    nb.lsp_add("sw1", "dyn1", addresses=["dynamic"])
    world.settled()
    if lrp_mac:  # (to the MAC IPAM gave dyn1, which keeps it)
        dyn = nb.db.tables["Logical_Switch_Port"].rows[nb.uuid("Logical_Switch_Port", "dyn1")]
        nb.set("Logical_Router_Port", "lrp0", mac=dyn.dynamic_addresses.split()[0])
    else:
        _dp_set(nb, "Logical_Switch", "sw1", other_config=other_config)


def _no_prefix(nb: Nb) -> None:
    uuid = next(iter(nb.db.tables["NB_Global"].rows))
    options = dict(nb.db.tables["NB_Global"].rows[uuid].data["options"])
    del options["mac_prefix"]
    nb.db.update("NB_Global", uuid, options=options)


def _ipam_vif(nb: Nb, world: World, then: str) -> None:
    """sw1 given a subnet and a port asking for a dynamic address (settled); `then` a
    second one added ("dynamic"), a static VIF added beside it ("static"), the first
    one deleted ("del"), a second one added on sw0, whose subnet puts its first free
    address on the same low 24 bits, so on the MAC dyn1 holds ("elsewhere"), that
    after dyn1 was deleted in a run of its own ("freed": it takes dyn1's MAC), or
    added before sw0 has its subnet, then given it ("later"); or, a static VIF on
    another switch holding the MAC of the new prefix dyn1 would take, and a second port
    asking IPAM, the prefix made 0a:00:01 ("prefix": the MACs move, dyn1's to the next
    free) or dropped ("no prefix")."""
    _dp_set(nb, "Logical_Switch", "sw1", other_config={"subnet": "10.9.0.0/24"})
    if then in ("elsewhere", "freed"):
        _dp_set(nb, "Logical_Switch", "sw0", other_config={"subnet": "11.9.0.0/24"})
    nb.lsp_add("sw1", "dyn1", addresses=["dynamic"])
    world.settled()
    if then in ("del", "freed"):
        nb.db.transact([{"op": "delete", "table": "Logical_Switch_Port",
                         "where": [["name", "==", "dyn1"]]},
                        {"op": "mutate", "table": "Logical_Switch",
                         "where": [["name", "==", "sw1"]], "mutations": [
                             ["ports", "delete", ["uuid", nb.uuid("Logical_Switch_Port",
                                                                  "dyn1")]]]}])
    if then in ("elsewhere", "freed"):
        world.northd.settle()
        nb.lsp_add("sw0", "dyn2", addresses=["dynamic"])
    elif then == "later":
        nb.lsp_add("sw0", "dyn2", addresses=["dynamic"])
        world.northd.settle()
        _dp_set(nb, "Logical_Switch", "sw0", other_config={"subnet": "11.9.0.0/24"})
    elif then in ("prefix", "no prefix"):
        nb.ls_add("sw2")  # (no port of it asks IPAM: the static MAC IPAM gave dyn1 next)
        nb.lsp_add("sw2", "st1", addresses=["0a:00:01:09:00:03 10.9.0.11"])
        nb.lsp_add("sw0", "dyn3", addresses=["dynamic"])
        world.northd.settle()
        if then == "prefix":
            _nb_option(nb, "mac_prefix", "0a:00:01")
        else:
            _no_prefix(nb)
    elif then != "del":
        nb.lsp_add("sw1", "dyn2", addresses=["dynamic"] if then == "dynamic"
                   else ["00:00:00:00:09:09 10.9.0.9"])


def _renumber(nb: Nb, world: World, beside: str) -> None:
    """lrp0's networks changed (a second IPv4 subnet and an IPv6 one), `beside`: "" on
    the plain topology; "router" another router on sw0; "lb" lr0 with a load balancer
    whose VIP is on the new subnet; "ipam" sw0 doing IPAM for a port asking for a
    dynamic address ("ipam-taken": lrp0 taking that port's address); "gateway" lr9's
    gateway port on sw1 instead, its switch port advertising NAT addresses and one
    NAT rule's external IP becoming the port's own."""
    port, networks = "lrp0", ["10.0.0.1/24", "10.5.0.1/24", "fd00::1/64"]
    if beside == "router":
        nb.lr_add("lr1")
        nb.connect("sw0", "lr1", "lrp1", "00:00:00:00:ff:11", "10.0.0.2/24")
    elif beside == "lb":  # (its VIP reachable once lrp0 is on its network)
        uuid = nb.db.insert("Load_Balancer", name="lb5", protocol="tcp",
                            vips={"10.5.0.100:80": "10.0.0.11:80"})
        nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "lr0"), "load_balancer",
                     uuid)
    elif beside.startswith("ipam"):
        _dp_set(nb, "Logical_Switch", "sw0", other_config={"subnet": "10.0.0.0/24"})
        nb.lsp_add("sw0", "dyn0", addresses=["dynamic"])
        if beside == "ipam-taken":  # (the address IPAM gave dyn0: it moves)
            networks = ["10.0.0.1/24", "10.0.0.2/24"]
    elif beside == "gateway":
        _gateway_router(nb, "sw1", "ch0", {"nat-addresses": "router"})
        nb.add_child("Logical_Router", "lr9", "nat", "NAT", type="dnat_and_snat",
                     external_ip="10.0.0.98", logical_ip="10.9.0.5")
        port, networks = "lr9-gw", ["10.0.0.99/24", "10.0.0.98/24"]
    world.settled()
    nb.db.update("Logical_Router_Port", nb.uuid("Logical_Router_Port", port),
                 networks=networks)


def _nested_then(nb: Nb, world: World, **cols: Any) -> None:
    """A trunk's subport on vm1 (VLAN 101); then updated in `cols`, or deleted."""
    nb.lsp_add("sw0", "sub1", addresses=["00:00:00:00:00:31 10.0.0.31"], parent_name="vm1",
               tag_request=101)
    world.settled()
    uuid = nb.uuid("Logical_Switch_Port", "sub1")
    if cols:
        nb.db.update("Logical_Switch_Port", uuid, **cols)
    else:
        nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                         "where": [["name", "==", "sw0"]],
                         "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}])


def _any_vlan(nb: Nb, world: World) -> None:
    """A subport of vm1 asking for any free VLAN (given 1, written back); then a second
    one, which takes 2."""
    nb.lsp_add("sw0", "sub1", addresses=["00:00:00:00:00:31 10.0.0.31"], parent_name="vm1",
               tag_request=0)
    world.settled()
    assert nb.db.tables["Logical_Switch_Port"].rows[nb.uuid("Logical_Switch_Port",
                                                            "sub1")].tag == 1
    nb.lsp_add("sw0", "sub2", addresses=["00:00:00:00:00:32 10.0.0.32"], parent_name="vm1",
               tag_request=0)


def _vif_read_by_switch(nb: Nb, world: World, how: str) -> None:
    """sw0 snooping multicast (settled); then a VIF flooding multicast added ("add") or
    vm2 made one ("set"), or a VIF with unknown addresses added ("unknown"): the
    switch's own flows read these VIFs (`lflow_ports.read_by_switch`)."""
    _dp_set(nb, "Logical_Switch", "sw0", other_config={"mcast_snoop": "true"})
    world.settled()
    if how == "set":
        nb.set("Logical_Switch_Port", "vm2", options={"mcast_flood": "true"})
    else:
        nb.lsp_add("sw0", "vm9", addresses=["unknown"] if how == "unknown"
                   else ["00:00:00:00:00:09 10.0.0.19"],
                   options={} if how == "unknown" else {"mcast_flood": "true"})


def _relay_set(nb: Nb, world: World) -> None:
    """sw0 snooping multicast, vm1 flooding reports; then lr0 relaying multicast."""
    _dp_set(nb, "Logical_Switch", "sw0", other_config={"mcast_snoop": "true"})
    nb.set("Logical_Switch_Port", "vm1", options={"mcast_flood_reports": "true"})
    world.settled()
    _dp_set(nb, "Logical_Router", "lr0", options={"mcast_relay": "true"})


def _pinned_then(nb: Nb, world: World) -> None:
    """lr0 a gateway router on ch0 (with a SNAT rule), moved to ch1; then its chassis
    dropped (counted: the last change)."""
    _dp_set(nb, "Logical_Router", "lr0", options={"chassis": "ch0"})
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="snat",
                 external_ip="10.0.0.100", logical_ip="10.1.0.0/24")
    world.northd.settle()
    _dp_set(nb, "Logical_Router", "lr0", options={"chassis": "ch1"})
    world.settled()
    _dp_set(nb, "Logical_Router", "lr0", options={})


def _asked_twice(nb: Nb, sb: LocalDb, world: World) -> None:
    """sw1 asks for lr0's key and takes it (lr0 moved); then lr0 asks for it back, which
    sw1 still asks for (a recompute keeps it sw1's: not told in place)."""
    _dp_set(nb, "Logical_Switch", "sw1", other_config={"requested-tnl-key": "3"})
    world.settled()
    _dp_set(nb, "Logical_Router", "lr0", options={"requested-tnl-key": _key_of(sb, "sw1")})


def _asked_held(nb: Nb, world: World) -> None:
    """sw0 asks for the key it holds; then a router asks for it too (sw0 keeps it, the
    router takes the lowest free: a recompute's)."""
    _dp_set(nb, "Logical_Switch", "sw0", other_config={"requested-tnl-key": "1"})
    world.settled()
    nb.lr_add("lr9", options={"requested-tnl-key": "1"})


def _named_as_group(nb: Nb, world: World) -> None:
    """An NB address set named as pgs's IPv4 set; then deleted."""
    uuid = nb.db.insert("Address_Set", name="pgs_ip4", addresses=["10.0.0.99"])
    world.settled()
    nb.db.transact([{"op": "delete", "table": "Address_Set",
                     "where": [["_uuid", "==", ["uuid", uuid]]]}])


def _dgp_pinned(nb: Nb, sb: LocalDb, world: World, back: bool = False) -> None:
    """lr0 given a distributed gateway port; then made a gateway router (its
    chassisredirect port goes: 23.03's bad configuration); `back`: then made a plain
    router again (the port a distributed gateway port again). The port is on sw1 (its
    peer's binding and sw1's groups follow; vm1 on sw0 claimed: the group's
    `ref_chassis`)."""
    _claim(nb, sb, world)
    nb.connect("sw1", "lr0", "lr0-gw", "00:00:00:00:ff:fe", "172.16.0.1/24")
    nb.add_child("Logical_Router_Port", "lr0-gw", "gateway_chassis", "Gateway_Chassis",
                 name="lr0-gw-ch0", chassis_name="ch0", priority=10)
    if back:
        world.northd.settle()
        _dp_set(nb, "Logical_Router", "lr0", options={"chassis": "ch0"})
    world.settled()
    _dp_set(nb, "Logical_Router", "lr0", options={} if back else {"chassis": "ch0"})


def _flooding_router(nb: Nb, world: World, how: str) -> None:
    """lr1 on sw0 with a port flooding multicast (`mcast_flood`: a router multicast
    group of its own); then disabled, or deleted with its port."""
    nb.lr_add("lr1")
    nb.connect("sw0", "lr1", "lr1-sw0", "00:00:00:00:02:01", "10.0.0.5/24")
    nb.set("Logical_Router_Port", "lr1-sw0", options={"mcast_flood": "true"})
    world.settled()
    if how == "disable":
        _dp_set(nb, "Logical_Router", "lr1", enabled=[False])
    else:
        nb.db.transact([{"op": "delete", "table": "Logical_Router",
                         "where": [["name", "==", "lr1"]]}])


def _disabled_then(nb: Nb, world: World, key: str = "") -> None:
    """lr0 (with a SNAT rule) disabled; then enabled again (asking for tunnel key
    `key` if given)."""
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="snat",
                 external_ip="10.0.0.100", logical_ip="10.1.0.0/24")
    world.northd.settle()
    _dp_set(nb, "Logical_Router", "lr0", enabled=[False])
    if key:
        world.northd.settle()
        _dp_set(nb, "Logical_Router", "lr0", options={"requested-tnl-key": key})
    if key != "1":
        world.settled()
        _dp_set(nb, "Logical_Router", "lr0", enabled=[True])


def _routers_peered(nb: Nb, world: World) -> None:
    """lr1 made; lr0 and lr1 connected by a port each naming the other (one
    transaction); then lr1's port deleted (lr0's loses its peer)."""
    nb.lr_add("lr1")
    world.northd.settle()
    lr = {n: nb.uuid("Logical_Router", n) for n in ("lr0", "lr1")}
    nb.db.transact([op for name, here, there, net in (("a", "lr0", "b", "10.77.0.1/30"),
                                                     ("b", "lr1", "a", "10.77.0.2/30"))
                    for op in (
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": name,
         "row": {"name": f"lrp-{name}", "mac": f"00:00:00:00:77:0{'1' if name == 'a' else '2'}",
                 "networks": net, "peer": f"lrp-{there}"}},
        {"op": "mutate", "table": "Logical_Router", "where": [["_uuid", "==", ["uuid", lr[here]]]],
         "mutations": [["ports", "insert", ["named-uuid", name]]]})])
    world.settled()
    nb.db.transact([{"op": "mutate", "table": "Logical_Router",
                     "where": [["_uuid", "==", ["uuid", lr["lr1"]]]],
                     "mutations": [["ports", "delete",
                                    ["uuid", nb.uuid("Logical_Router_Port", "lrp-b")]]]}])


def _renumbered_router(nb: Nb, world: World) -> None:
    """lr0 given a load balancer (its VIPs' address sets are named by its key); then
    asking for tunnel key 88."""
    uuid = nb.db.insert("Load_Balancer", name="lb8", protocol="tcp",
                        vips={"10.0.0.200:80": "10.0.0.11:80"})
    nb.db.add_to("Logical_Router", nb.uuid("Logical_Router", "lr0"), "load_balancer", uuid)
    world.settled()
    _dp_set(nb, "Logical_Router", "lr0", options={"requested-tnl-key": "88"})


def _virtual_then(nb: Nb, world: World, **cols: Any) -> None:
    """vm2 made a virtual port with vm1 as its parent (Neutron's port whose IP others
    list in their allowed address pairs); then updated in `cols`."""
    nb.set("Logical_Switch_Port", "vm2", type="virtual", options={
        "virtual-ip": "10.0.0.12", "virtual-parents": "vm1"})
    world.settled()
    nb.set("Logical_Switch_Port", "vm2", **cols)


def _external(nb: Nb, world: World, how: str) -> None:
    """HA chassis groups g1 (ch0) and g2 (ch0, ch1) made first; then an external port
    on sw0 using g1 (`how`: "add"), or that port made first and then (`how`) a
    second one of g1 added, it deleted, or it moved to g2."""
    for name, members in (("g1", ["ch0"]), ("g2", ["ch0", "ch1"])):
        nb.db.transact([
            *({"op": "insert", "table": "HA_Chassis", "uuid-name": f"h{i}",
               "row": {"chassis_name": ch, "priority": 10 - i}}
              for i, ch in enumerate(members)),
            {"op": "insert", "table": "HA_Chassis_Group", "uuid-name": "g",
             "row": {"name": name, "ha_chassis": ["set", [["named-uuid", f"h{i}"]
                                                          for i in range(len(members))]]}}])
    g1 = nb.uuid("HA_Chassis_Group", "g1")
    if how != "add":
        nb.lsp_add("sw0", "bm1", type="external", addresses=["00:00:00:00:00:51 10.0.0.51"],
                   ha_chassis_group=g1)
        world.settled()
    if how in ("add", "second"):
        nb.lsp_add("sw0", f"bm{2 if how == 'second' else 1}", type="external",
                   addresses=["00:00:00:00:00:52 10.0.0.52"], ha_chassis_group=g1)
    elif how == "del":
        nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                         "where": [["name", "==", "sw0"]], "mutations": [[
                             "ports", "delete",
                             ["set", [["uuid", nb.uuid("Logical_Switch_Port", "bm1")]]]]]}])
    else:
        nb.set("Logical_Switch_Port", "bm1",
               ha_chassis_group=nb.uuid("HA_Chassis_Group", "g2"))


def _gateway_ops(router: str, ip: str, bfd: bool = False) -> list[dict[str, Any]]:
    """Neutron's gateway of `router`, as rows named for its router to list: its gateway
    port on sw1 with address `ip` (gateway chassis ch0; the switch port advertising NAT
    addresses, inserted here), its SNAT rule and default route (`bfd`: watched by BFD)."""
    gw = f"{router}-gw"
    watch: list[dict[str, Any]] = [
        {"op": "insert", "table": "BFD", "uuid-name": "bfd",
         "row": {"logical_port": gw, "dst_ip": "172.16.0.254"}}] if bfd else []
    return [
        *watch,
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
         "row": {"name": f"{gw}-ch0", "chassis_name": "ch0", "priority": 10}},
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": gw, "mac": "00:00:00:00:ff:99", "networks": f"{ip}/24",
                 "gateway_chassis": ["named-uuid", "gc"]}},
        {"op": "insert", "table": "NAT", "uuid-name": "snat",
         "row": {"type": "snat", "external_ip": ip, "logical_ip": "10.0.0.0/24"}},
        {"op": "insert", "table": "Logical_Router_Static_Route", "uuid-name": "dflt",
         "row": {"ip_prefix": "0.0.0.0/0", "nexthop": "172.16.0.254",
                 **({"bfd": ["named-uuid", "bfd"]} if bfd else {})}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "pub",
         "row": {"name": f"sw1-{gw}", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", gw], ["nat-addresses", "router"]]]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "insert", ["named-uuid", "pub"]]]}]


def _gateway_with_snat(nb: Nb, world: World, nat_before: bool) -> None:
    """Neutron's router-gateway-set on lr0 (`_gateway_ops`) in one transaction;
    `nat_before`: a floating IP already on lr0 (counted from after it)."""
    if nat_before:
        nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat",
                     external_ip="172.16.0.50", logical_ip="10.0.0.11")
        world.settled()
    nb.db.transact([
        *_gateway_ops("lr0", "172.16.0.1"),
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "insert", ["named-uuid", "gw"]],
                       ["nat", "insert", ["named-uuid", "snat"]],
                       ["static_routes", "insert", ["named-uuid", "dflt"]]]}])


def _gateway_cleared(nb: Nb, world: World, keep_fip: bool) -> None:
    """Neutron's router-gateway-set on lr0 (with a floating IP), counted from after it;
    then router-gateway-clear in one transaction: its gateway port, switch port, SNAT
    rule and default route deleted (`keep_fip`: the floating IP stays)."""
    _gateway_with_snat(nb, world, True)
    world.settled()
    nat = nb.db.tables["NAT"].rows
    doomed = [u for u, r in nat.items() if r.type == "snat" or not keep_fip]
    routes = list(nb.db.tables["Logical_Router_Static_Route"].rows)
    nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "delete", ["uuid", nb.uuid("Logical_Router_Port", "lr0-gw")]],
                       ["nat", "delete", ["set", [["uuid", u] for u in doomed]]],
                       ["static_routes", "delete", ["set", [["uuid", u] for u in routes]]]]},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "delete",
                        ["uuid", nb.uuid("Logical_Switch_Port", "sw1-lr0-gw")]]]}])


def _router_with_gateway(nb: Nb, bfd: bool = False) -> None:
    """Neutron's router lr9 created with its gateway (`_gateway_ops`) in one
    transaction (`bfd`: its default route watched by BFD)."""
    nb.db.transact([
        *_gateway_ops("lr9", "172.16.0.9", bfd),
        {"op": "insert", "table": "Logical_Router",
         "row": {"name": "lr9", "ports": ["named-uuid", "gw"], "nat": ["named-uuid", "snat"],
                 "static_routes": ["named-uuid", "dflt"]}}])


def _template_var(nb: Nb, world: World, how: str) -> None:
    """Template variables of chassis ch0 added (a node joining an ovn-kubernetes
    cluster that uses load balancer templates); then (`how`) a value changed, or the
    row deleted."""
    row = nb.db.insert("Chassis_Template_Var", chassis="ch0",
                       variables={"NODEIP": "192.0.2.1", "NODEPORT": "30080"})
    if how == "add":
        return
    world.settled()
    if how == "update":
        nb.db.update("Chassis_Template_Var", row, variables={"NODEIP": "192.0.2.9"})
    else:
        nb.db.transact([{"op": "delete", "table": "Chassis_Template_Var",
                         "where": [["_uuid", "==", ["uuid", row]]]}])


def _mirror(nb: Nb, world: World, how: str) -> None:
    """A mirror m0 added; with `how` other than "add", vm1's rules name it, then its
    sink changes ("update") or it is renamed ("rename")."""
    mirror = nb.db.insert("Mirror", name="m0", filter="to-lport", sink="192.0.2.50",
                          type="gre", index=1)
    if how == "add":
        return
    nb.db.update("Logical_Switch_Port", nb.uuid("Logical_Switch_Port", "vm1"),
                 mirror_rules=[mirror])
    world.settled()
    if how == "update":
        nb.db.update("Mirror", mirror, sink="192.0.2.51")
    else:
        nb.db.update("Mirror", mirror, name="m1")


def _bfd(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """A static route on lr0 through a BFD session to its next hop; then (`how`)
    ovn-controller reports the session "up", or "up" and then "down" (the route leaves
    the flows), or NB changes the session's `min_tx`."""
    bfd = nb.db.insert("BFD", logical_port="lrp0", dst_ip="10.0.0.253")
    nb.add_child("Logical_Router", "lr0", "static_routes", "Logical_Router_Static_Route",
                 ip_prefix="192.168.9.0/24", nexthop="10.0.0.253", bfd=bfd)
    world.settled()
    session = next(iter(sb.tables["BFD"].rows))
    if how == "min_tx":
        nb.db.update("BFD", bfd, min_tx=[500])
        return
    sb.update("BFD", session, status="up")
    if how == "down":
        world.settled()
        sb.update("BFD", session, status="down")


def _igmp(nb: Nb, sb: LocalDb, world: World, how: str) -> None:
    """sw0 snooping multicast (and, with `how` "relay", lr0 relaying it); then vm1
    joins 239.0.1.1 (ovn-controller's IGMP_Group row), or ("leave") joins and then
    leaves, or ("second") vm1 joins and then vm2 joins another group."""
    nb.db.update("Logical_Switch", nb.uuid("Logical_Switch", "sw0"),
                 other_config={"mcast_snoop": "true", "mcast_querier": "false"})
    if how == "relay":
        nb.db.update("Logical_Router", nb.uuid("Logical_Router", "lr0"),
                     options={"mcast_relay": "true"})
    world.settled()
    dp = next(u for u, r in sb.tables["Datapath_Binding"].rows.items()
              if dict(r.data["external_ids"]).get("name") == "sw0")

    def join(port: str, address: str) -> str:
        return sb.insert("IGMP_Group", address=address, datapath=dp, chassis=world.chassis,
                         ports=[_pb(sb, port)])

    row = join("vm1", "239.0.1.1")
    if how == "leave":
        world.settled()
        sb.transact([{"op": "delete", "table": "IGMP_Group",
                      "where": [["_uuid", "==", ["uuid", row]]]}])
    elif how == "second":
        world.settled()
        join("vm2", "239.0.1.2")


def _ipam_switch_gone(nb: Nb, world: World) -> None:
    """A switch with a subnet (counted from after it), a static VIF added to it, then
    the switch deleted with it."""
    nb.ls_add("sw9", other_config={"subnet": "10.9.0.0/24"})
    world.settled()
    nb.lsp_add("sw9", "vm9", addresses=["00:00:00:00:09:09 10.9.0.9"])
    world.northd.settle()
    nb.db.transact([
        {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw9"]]}])


def _dvr(nb: Nb, world: World, delete: bool) -> None:
    """lr0 given a gateway port on sw1 (sw1 its external network, with a localnet
    port); then a distributed
    floating IP for vm2 added, or (`delete`) added and then deleted."""
    nb.db.transact([
        {"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
         "row": {"name": "lr0-gw-ch0", "chassis_name": "ch0", "priority": 10}},
        {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
         "row": {"name": "lr0-gw", "mac": "00:00:00:00:ff:99", "networks": "172.16.0.1/24",
                 "gateway_chassis": ["named-uuid", "gc"]}},
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "insert", ["named-uuid", "gw"]]]},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "pub",
         "row": {"name": "sw1-lr0", "type": "router", "addresses": "router",
                 "options": ["map", [["router-port", "lr0-gw"],
                                     ["nat-addresses", "router"]]]}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ln",
         "row": {"name": "sw1-ln", "type": "localnet", "addresses": "unknown",
                 "options": ["map", [["network_name", "phys"]]]}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw1"]],
         "mutations": [["ports", "insert", ["set", [["named-uuid", "pub"],
                                                    ["named-uuid", "ln"]]]]]}])
    world.settled()
    nb.add_child("Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat",
                 external_ip="172.16.0.8", logical_ip="10.0.0.12", logical_port="vm2",
                 external_mac="00:00:00:00:aa:02")
    if delete:
        world.settled()
        uuid = next(u for u, r in nb.db.tables["NAT"].rows.items()
                    if r.data["external_ip"] == "172.16.0.8")
        nb.db.transact([
            {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
             "mutations": [["nat", "delete", ["set", [["uuid", uuid]]]]]}])


def _claimed_notif(sb: LocalDb, world: World) -> None:
    """vm1 claimed on ch0, not yet up; ch0 then announces port-up-notif (vm1's NB
    `up` goes from true, for the claim, to false, for the binding's `up`)."""
    sb.update("Port_Binding", _pb(sb, "vm1"), chassis=world.chassis, up=False)
    world.northd.settle()
    sb.update("Chassis", world.chassis, other_config={"port-up-notif": "true"})


def _learn(nb: Nb, sb: LocalDb, world: World) -> None:
    dp = next(iter(sb.tables["Datapath_Binding"].rows))
    sb.insert("MAC_Binding", logical_port="lrp0", ip="10.0.0.50",
              mac="00:00:00:00:00:50", datapath=dp)


# (change kind, the change, the nodes that recompute). Nodes not named are computed by
# their handlers, or untouched.
CONTRACT: list[tuple[str, Callable[..., Any], frozenset[str]]] = [
    ("lsp-add VIF", lambda nb, sb, w: nb.lsp_add("sw0", "vm3",
                                               addresses=["00:00:00:00:00:03 10.0.0.13"]),
     IN_PLACE),
    ("lsp-add VIF flooding multicast on a switch snooping it",
     lambda nb, sb, w: _vif_read_by_switch(nb, w, "add"), IN_PLACE),
    ("VIF made to flood multicast on a switch snooping it",
     lambda nb, sb, w: _vif_read_by_switch(nb, w, "set"), IN_PLACE),
    ("lsp-add VIF with unknown addresses",
     lambda nb, sb, w: _vif_read_by_switch(nb, w, "unknown"), IN_PLACE),
    ("lsp-add VIF asking IPAM for addresses (the echo of its dynamic_addresses too)",
     lambda nb, sb, w: _ipam_vif(nb, w, "dynamic"), IN_PLACE),
    ("lsp-add VIF asking for a dynamic address on a switch without IPAM settings",
     lambda nb, sb, w: nb.lsp_add("sw1", "dyn9", addresses=["dynamic"]), IN_PLACE),
    ("lsp-add asking for a tunnel key", lambda nb, sb, w: nb.lsp_add(
        "sw1", "vm9", addresses=["00:00:00:00:00:09 10.1.0.9"],
        options={"requested-tnl-key": "7"}), IN_PLACE),
    ("lsp-add asking for the tunnel key another port holds (that one takes a new key)",
     lambda nb, sb, w: nb.lsp_add("sw0", "vm9", addresses=["00:00:00:00:00:09 10.0.0.19"],
                                  options={"requested-tnl-key": _port_key(sb, "vm2")}),
     IN_PLACE),
    ("lsp-add asking for the tunnel key a router-type port holds (that one moves)",
     lambda nb, sb, w: nb.lsp_add("sw0", "vm9", addresses=["00:00:00:00:00:09 10.0.0.19"],
                                  options={"requested-tnl-key": _port_key(sb, "sw0-lrp0")}),
     IN_PLACE),
    ("port asking for another tunnel key", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm1", options={"requested-tnl-key": "9"}), IN_PLACE),
    ("lsp-add beside a port asking for its tunnel key",
     lambda nb, sb, w: _port_asking(nb, sb, w, "add"), IN_PLACE),
    ("lsp-add asking for the tunnel key a port asks for and holds (it takes a new one)",
     lambda nb, sb, w: _port_asking(nb, sb, w, "race"), IN_PLACE),
    ("lsp-del of a port holding a key another asks for (that one takes it)",
     lambda nb, sb, w: _port_asking(nb, sb, w, "del"), IN_PLACE),
    ("lrp-add asking for a tunnel key", lambda nb, sb, w: nb.lrp_add(
        "lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24",
        options={"requested-tnl-key": "7"}), IN_PLACE),
    ("lrp-add asking for the tunnel key another router port holds (that one moves)",
     lambda nb, sb, w: nb.lrp_add("lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24",
                                  options={"requested-tnl-key": _port_key(sb, "lrp0")}),
     IN_PLACE),
    ("router port asking for another tunnel key",
     lambda nb, sb, w: _lrp_asking(nb, sb, w, "free"), IN_PLACE),
    ("router port asking for the tunnel key another router port holds (that one moves)",
     lambda nb, sb, w: _lrp_asking(nb, sb, w, "held"), IN_PLACE),
    ("router port asking for the tunnel key of a port symmetric ECMP replies leave by",
     lambda nb, sb, w: _lrp_asking(nb, sb, w, "ecmp"), IN_PLACE),
    *((f"router port's peer: {how}", lambda nb, sb, w, h=how: _lrp_peer(nb, w, h), IN_PLACE)
      for how in ("one way", "both", "nowhere", "drop")),
    ("router port no longer asking for a tunnel key",
     lambda nb, sb, w: _lrp_asking(nb, sb, w, "drop"), IN_PLACE),
    ("lsp-add static VIF beside one holding a dynamic address",
     lambda nb, sb, w: _ipam_vif(nb, w, "static"), IN_PLACE),
    ("lsp-del of a VIF holding a dynamic address",
     lambda nb, sb, w: _ipam_vif(nb, w, "del"), IN_PLACE),
    ("lsp-add VIF asking IPAM on another switch, its first MAC held there",
     lambda nb, sb, w: _ipam_vif(nb, w, "elsewhere"), IN_PLACE),
    ("lsp-add VIF asking IPAM on another switch, after that MAC's holder went",
     lambda nb, sb, w: _ipam_vif(nb, w, "freed"), IN_PLACE),
    ("switch given a subnet, its port asking IPAM taking a MAC other than one held",
     lambda nb, sb, w: _ipam_vif(nb, w, "later"), IN_PLACE),
    ("lsp-set-addresses VIF", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm2", addresses=["00:00:00:00:00:22 10.0.0.22"]),
     IN_PLACE),
    ("lsp-del VIF", lambda nb, sb, w: nb.db.transact([
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Switch_Port", "vm2")]]]]]}]),
     IN_PLACE),
    ("lsp-set-type: a VIF made a localport", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm2", type="localport"), IN_PLACE),
    ("lsp-set-type: a VIF made an l2gateway port", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm2", type="l2gateway",
        options={"network_name": "phys", "l2gateway-chassis": "ch0"}), IN_PLACE),
    ("lsp-set-type: a VIF made a localnet port", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm2", type="localnet", addresses=["unknown"],
        options={"network_name": "phys"}), IN_PLACE),
    ("lsp-set-type: a VIF made a virtual port (its binding inserted again)",
     lambda nb, sb, w: nb.set("Logical_Switch_Port", "vm2", type="virtual", options={
         "virtual-ip": "10.0.0.12", "virtual-parents": "vm1"}), IN_PLACE),
    ("lsp-set-type: a virtual port made a VIF again", lambda nb, sb, w: _virtual_then(
        nb, w, type="", options={}), IN_PLACE),
    ("a VIF given a parent (its binding inserted again)", lambda nb, sb, w: nb.set(
        "Logical_Switch_Port", "vm2", parent_name="vm1", tag_request=7), IN_PLACE),
    ("external port added (a baremetal port, its NB HA chassis group)",
     lambda nb, sb, w: _external(nb, w, "add"), IN_PLACE),
    ("external port added beside another of the same group",
     lambda nb, sb, w: _external(nb, w, "second"), IN_PLACE),
    ("external port deleted (its group's last)", lambda nb, sb, w: _external(nb, w, "del"),
     IN_PLACE),
    ("external port moved to another group", lambda nb, sb, w: _external(nb, w, "move"),
     IN_PLACE),
    ("nested port added (a trunk's subport: its parent, the VLAN it asks for)",
     lambda nb, sb, w: nb.lsp_add("sw0", "sub1", addresses=["00:00:00:00:00:31 10.0.0.31"],
                                  parent_name="vm1", tag_request=101), IN_PLACE),
    ("nested port's addresses changed", lambda nb, sb, w: _nested_then(
        nb, w, addresses=["00:00:00:00:00:32 10.0.0.32"]), IN_PLACE),
    ("nested port deleted", lambda nb, sb, w: _nested_then(nb, w), IN_PLACE),
    ("nested port asking its parent for any free VLAN (tag_request 0)",
     lambda nb, sb, w: nb.lsp_add("sw0", "sub1", addresses=["00:00:00:00:00:31 10.0.0.31"],
                                  parent_name="vm1", tag_request=0), IN_PLACE),
    ("nested port asking for any free VLAN beside one holding VLAN 1 (it takes 2)",
     lambda nb, sb, w: _any_vlan(nb, w), IN_PLACE),
    ("lsp-add vtep (a hardware VTEP gateway's port)", lambda nb, sb, w: nb.lsp_add(
        "sw0", "vtep0", type="vtep", options={"vtep-physical-switch": "ps0",
                                              "vtep-logical-switch": "ls0"}), IN_PLACE),
    ("lsp-add localnet", lambda nb, sb, w: nb.lsp_add("sw1", "ln1", type="localnet",
                                                   addresses=["unknown"],
                                                   options={"network_name": "phys"}),
     IN_PLACE),
    ("lsp-add localnet with a VLAN (its tag written back)", lambda nb, sb, w: nb.lsp_add(
        "sw1", "ln1", type="localnet", addresses=["unknown"], tag_request=101,
        options={"network_name": "phys"}), IN_PLACE),
    ("lsp-add localnet on a switch with a router port", lambda nb, sb, w: nb.lsp_add(
        "sw0", "ln0", type="localnet", addresses=["unknown"],
        options={"network_name": "phys"}), IN_PLACE),
    ("lsp-add localnet on a switch with a distributed gateway port's peer",
     lambda nb, sb, w: _localnet_by_gateway(nb, w, False), IN_PLACE),
    ("lsp-add localnet on a switch with a gateway router's port",
     lambda nb, sb, w: _localnet_by_gateway(nb, w, True), IN_PLACE),
    ("lsp-del localnet on a switch with a gateway router's port",
     lambda nb, sb, w: _localnet_by_gateway(nb, w, True, then_del=True), IN_PLACE),
    ("lsp-del localnet", lambda nb, sb, w: _localnet_del(nb, w), IN_PLACE),
    ("ls-add with a localnet port (a provider network)", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ln",
         "row": {"name": "ln9", "type": "localnet", "addresses": "unknown",
                 "tag_request": 102, "options": ["map", [["network_name", "phys"]]]}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "sw9", "ports": ["named-uuid", "ln"]}}]), IN_PLACE),
    ("ls-add", lambda nb, sb, w: nb.ls_add("sw9"), IN_PLACE),
    ("ls-add with 2 VIFs", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a",
         "row": {"name": "vm9a", "addresses": "00:00:00:00:09:0a 10.9.0.10"}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "b",
         "row": {"name": "vm9b"}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "sw9", "ports": ["set", [["named-uuid", "a"], ["named-uuid", "b"]]]}}]),
     IN_PLACE),
    ("ls-add with a subnet (IPAM)", lambda nb, sb, w: nb.ls_add(
        "sw9", other_config={"subnet": "10.9.0.0/24"}), IN_PLACE),
    ("ls-add with a subnet, excluded IPs and two static VIFs (an ovn-kubernetes node's)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a",
          "row": {"name": "vm9a", "addresses": "00:00:00:00:09:0a 10.9.0.10"}},
         {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "b",
          "row": {"name": "vm9b", "addresses": "00:00:00:00:09:0b 10.9.0.11"}},
         {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw9", "other_config": ["map", [["subnet", "10.9.0.0/24"],
                                                           ["exclude_ips", "10.9.0.2"]]],
                  "ports": ["set", [["named-uuid", "a"], ["named-uuid", "b"]]]}}]),
     IN_PLACE),
    ("lsp-add of a static VIF on a switch with a subnet, then ls-del of that switch",
     lambda nb, sb, w: _ipam_switch_gone(nb, w), IN_PLACE),
    ("ls-add with a subnet and a port asking for a dynamic address",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a",
          "row": {"name": "vm9a", "addresses": "dynamic"}},
         {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw9", "other_config": ["map", [["subnet", "10.9.0.0/24"]]],
                  "ports": ["named-uuid", "a"]}}]), IN_PLACE),
    ("ls-del", lambda nb, sb, w: nb.db.transact([
        {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw1"]]}]),
     IN_PLACE),
    ("lr-del of a router with a port and lr-add at once (the new one takes its key)",
     lambda nb, sb, w: (nb.db.transact([{"op": "delete", "table": "Logical_Router",
                                         "where": [["name", "==", "lr0"]]}]),
                        nb.lr_add("lr9")), IN_PLACE),
    ("ls-del and lr-add at once (the router takes the key the switch frees)",
     lambda nb, sb, w: (nb.db.transact([{"op": "delete", "table": "Logical_Switch",
                                         "where": [["name", "==", "sw1"]]}]),
                        nb.lr_add("lr9")), IN_PLACE),
    *((f"ls-{then} of a switch with a VIF and {holds}",
       lambda nb, sb, w, h=holds, t=then: _switch_with(nb, w, h, t), IN_PLACE)
      for holds in SWITCH_HOLDS for then in ("add", "del")),
    ("ls-del of a switch with VIFs, an ACL, a router port, a port in a port group",
     lambda nb, sb, w: nb.db.transact([{"op": "delete", "table": "Logical_Switch",
                                        "where": [["name", "==", "sw0"]]}]), IN_PLACE),
    *((f"lr-{then} of a router with {holds}",
       lambda nb, sb, w, h=holds, t=then: _router_with(nb, w, h, t), IN_PLACE)
      for holds in ROUTER_HOLDS for then in ("add", "del")),
    ("lr-add of a disabled router", lambda nb, sb, w: nb.lr_add("lr9", enabled=[False]),
     frozenset()),
    ("lr-del of a disabled router", lambda nb, sb, w: (
        nb.lr_add("lr9", enabled=[False]), w.settled(), nb.db.transact([
            {"op": "delete", "table": "Logical_Router", "where": [["name", "==", "lr9"]]}])),
     frozenset()),
    ("ls-del and ls-add at once (the new switch takes the key the gone one frees)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw1"]]},
         {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw9"}}]), IN_PLACE),
    ("lr-add", lambda nb, sb, w: nb.lr_add("lr9"), IN_PLACE),
    ("lr-del and lr-add at once (the new router takes the key the gone one frees)",
     lambda nb, sb, w: _router_swap(nb, w), IN_PLACE),
    ("lr-add with options", lambda nb, sb, w: nb.lr_add(
        "lr9", options={"chassis": "ch1", "always_learn_from_arp_request": "false"}),
     IN_PLACE),
    ("ls renamed", lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw1", name="a-sw1"),
     IN_PLACE),
    ("switch's external_ids set (Neutron's network name and revision)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw0", external_ids={
         "neutron:network_name": "net0", "neutron:revision_number": "4"}), IN_PLACE),
    ("switch's multicast snooping turned on (its IP_Multicast row, its flows)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw0", other_config={
         "mcast_snoop": "true", "mcast_eth_src": "00:00:00:00:00:fe"}), IN_PLACE),
    ("switch's subnet set (IPAM, no port asking for a dynamic address)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw0", other_config={
         "subnet": "10.0.0.0/24"}), IN_PLACE),
    ("switch's subnet changed, a port of it holding a dynamic address",
     lambda nb, sb, w: _dynamic_then(nb, w, {"subnet": "10.1.0.0/24"}), IN_PLACE),
    ("switch's IPAM made MAC-only, a port of it holding a dynamic address",
     lambda nb, sb, w: _dynamic_then(nb, w, {"mac_only": "true"}), IN_PLACE),
    ("switch's IPAM settings dropped, a port of it holding a dynamic address",
     lambda nb, sb, w: _dynamic_then(nb, w, {}), IN_PLACE),
    ("switch made a transit switch (interconn-ts)", lambda nb, sb, w: _dp_set(
        nb, "Logical_Switch", "sw1", other_config={"interconn-ts": "ts1"}), IN_PLACE),
    ("switch asking for the tunnel key it holds", lambda nb, sb, w: _dp_set(
        nb, "Logical_Switch", "sw0", other_config={"requested-tnl-key": _key_of(sb, "sw0")}),
     IN_PLACE),
    ("switch asking for another tunnel key (its port groups' SB rows renamed)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw0",
                               other_config={"requested-tnl-key": "77"}), IN_PLACE),
    ("router asking for another tunnel key (its load balancer address sets renamed)",
     lambda nb, sb, w: _renumbered_router(nb, w), IN_PLACE),
    ("switch asking for the tunnel key another holds (that one takes the lowest free)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw0",
                               other_config={"requested-tnl-key": _key_of(sb, "sw1")}),
     IN_PLACE),
    ("switch asking for the tunnel key a router holds (its LB address sets renamed)",
     lambda nb, sb, w: _dp_set(nb, "Logical_Switch", "sw1",
                               other_config={"requested-tnl-key": _key_of(sb, "lr0")}),
     IN_PLACE),
    ("router asking for the tunnel key a switch holds, which asks for another",
     lambda nb, sb, w: _asked_twice(nb, sb, w), IN_PLACE),
    ("switch's vlan-passthru set (its ports' bindings)", lambda nb, sb, w: _dp_set(
        nb, "Logical_Switch", "sw1", other_config={"vlan-passthru": "true"}), IN_PLACE),
    ("switch's vlan-passthru set, a router port on it", lambda nb, sb, w: _dp_set(
        nb, "Logical_Switch", "sw0", other_config={"vlan-passthru": "true"}), IN_PLACE),
    ("lr renamed", lambda nb, sb, w: _dp_set(nb, "Logical_Router", "lr0", name="lr9"),
     IN_PLACE),
    ("router's external_ids set (Neutron's router name)", lambda nb, sb, w: _dp_set(
        nb, "Logical_Router", "lr0", external_ids={"neutron:router_name": "r0"}), IN_PLACE),
    ("router's options set (flows, and its binding's SNAT zone)", lambda nb, sb, w: _dp_set(
        nb, "Logical_Router", "lr0", options={"lb_force_snat_ip": "router_ip",
                                              "snat-ct-zone": "5"}), IN_PLACE),
    ("router's MAC binding age threshold set", lambda nb, sb, w: _dp_set(
        nb, "Logical_Router", "lr0", options={"mac_binding_age_threshold": "30"}),
     frozenset(("mac_binding_aging",))),
    ("router's multicast relay set", lambda nb, sb, w: _dp_set(
        nb, "Logical_Router", "lr0", options={"mcast_relay": "true"}), IN_PLACE),
    ("router's multicast relay set, its switch snooping and a port flooding reports",
     lambda nb, sb, w: _relay_set(nb, w), IN_PLACE),
    ("router made a gateway router (options:chassis)", lambda nb, sb, w: _dp_set(
        nb, "Logical_Router", "lr0", options={"chassis": "ch0"}), IN_PLACE),
    ("gateway router moved to another chassis, then made a plain router again",
     lambda nb, sb, w: _pinned_then(nb, w), IN_PLACE),
    ("router with a distributed gateway port made a gateway router",
     lambda nb, sb, w: _dgp_pinned(nb, sb, w), IN_PLACE),
    ("gateway router with a port with gateway chassis made a plain router (a DGP again)",
     lambda nb, sb, w: _dgp_pinned(nb, sb, w, back=True), IN_PLACE),
    ("router disabled", lambda nb, sb, w: _dp_set(nb, "Logical_Router", "lr0",
                                                  enabled=[False]), IN_PLACE),
    ("router disabled, its port flooding multicast (its _MC_static group goes)",
     lambda nb, sb, w: _flooding_router(nb, w, "disable"), IN_PLACE),
    ("lr-del of a router whose port floods multicast (its _MC_static group goes)",
     lambda nb, sb, w: _flooding_router(nb, w, "delete"), IN_PLACE),
    ("router enabled again (its ports paired with the switch ports naming them)",
     lambda nb, sb, w: _disabled_then(nb, w), IN_PLACE),
    ("router disabled, then its options set", lambda nb, sb, w: _disabled_then(nb, w, "1"),
     IN_PLACE),
    ("router enabled again asking for the key a switch holds (that one moves)",
     lambda nb, sb, w: _disabled_then(nb, w, _key_of(sb, "sw1")), IN_PLACE),
    ("lr-add with a requested tunnel key", lambda nb, sb, w: nb.lr_add(
        "lr9", options={"requested-tnl-key": "77"}), IN_PLACE),
    ("lr-add requesting the key a switch holds (that one takes the lowest free)",
     lambda nb, sb, w: nb.lr_add("lr9", options={"requested-tnl-key": "1"}), IN_PLACE),
    ("two lr-adds, one requesting the key a switch holds (that one takes a key first)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Router", "row": {"name": "lr8"}},
         {"op": "insert", "table": "Logical_Router",
          "row": {"name": "lr9", "options": ["map", [["requested-tnl-key", "1"]]]}}]),
     IN_PLACE),
    ("ls-del of a switch holding the key another asks for (that one takes it)",
     lambda nb, sb, w: _freed(nb, sb, w, "ls-del"), IN_PLACE),
    ("lr-del of a router with a port, holding the key another asks for (it takes it)",
     lambda nb, sb, w: _freed(nb, sb, w, "lr-del"), IN_PLACE),
    ("router disabled, holding the key another asks for (that one takes it)",
     lambda nb, sb, w: _freed(nb, sb, w, "disable"), IN_PLACE),
    ("lr-add requesting the key a switch holds and asks for",
     lambda nb, sb, w: _asked_held(nb, w), IN_PLACE),
    ("ls-add of two switches, one requesting a key (an interconnected node's)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw8", "other_config": ["map", [["requested-tnl-key", "5"]]]}},
         {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw9"}}]), IN_PLACE),
    ("ls-add with a VIF, requesting the key a router holds (that one moves)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a",
          "row": {"name": "vm9a", "addresses": "00:00:00:00:09:0a 10.9.0.10"}},
         {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw9", "ports": ["named-uuid", "a"], "other_config": [
              "map", [["requested-tnl-key", _key_of(sb, "lr0")]]]}}]), IN_PLACE),
    ("ls-add of a transit switch (interconn-ts, requested key)", lambda nb, sb, w: nb.ls_add(
        "ts0", other_config={"interconn-ts": "ts0", "requested-tnl-key": "40"}), IN_PLACE),
    ("lr-add and ls-add at once", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Logical_Router", "row": {"name": "lr9"}},
        {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw9"}}]), IN_PLACE),
    ("two lr-adds and two ls-adds at once (with VIFs)", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Logical_Router", "row": {"name": "lr8"}},
        {"op": "insert", "table": "Logical_Router", "row": {"name": "lr9"}},
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "a",
         "row": {"name": "vm9a", "addresses": "00:00:00:00:09:0a 10.9.0.10"}},
        {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw8"}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "sw9", "ports": ["named-uuid", "a"]}}]), IN_PLACE),
    ("lr-add and ls-add at once, the switch requesting a key", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Logical_Router", "row": {"name": "lr9"}},
        {"op": "insert", "table": "Logical_Switch",
         "row": {"name": "sw9", "other_config": ["map", [["requested-tnl-key", "7"]]]}}]),
     IN_PLACE),
    ("lr-add and ls-add at once, the router requesting the lowest free key",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Router",
          "row": {"name": "lr9", "options": ["map", [["requested-tnl-key", "4"]]]}},
         {"op": "insert", "table": "Logical_Switch", "row": {"name": "sw9"}}]), IN_PLACE),
    ("lr-add and ls-add at once, both requesting one key (the switch wins)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "insert", "table": "Logical_Router",
          "row": {"name": "lr9", "options": ["map", [["requested-tnl-key", "9"]]]}},
         {"op": "insert", "table": "Logical_Switch",
          "row": {"name": "sw9", "other_config": ["map", [["requested-tnl-key", "9"]]]}}]),
     IN_PLACE),
    ("lr-del (of a router with a port; its peer on the switch stays)",
     lambda nb, sb, w: nb.db.transact([
         {"op": "delete", "table": "Logical_Router", "where": [["name", "==", "lr0"]]}]),
     IN_PLACE),
    ("lrp-del of a distributed gateway port", lambda nb, sb, w: _gateway_gone(nb, w, False),
     IN_PLACE),
    ("lr-del of a router with a gateway port and a route, with its switch port",
     lambda nb, sb, w: _gateway_gone(nb, w, True), IN_PLACE),
    ("lrp-add", lambda nb, sb, w: nb.lrp_add("lr0", "lrp9", "00:00:00:00:ff:09",
                                          "10.9.0.1/24"), IN_PLACE),
    ("router interface add: lrp-add and the router-type lsp-add naming it, at once",
     lambda nb, sb, w: nb.connect("sw1", "lr0", "lrp1", "00:00:00:00:ff:02", "10.1.0.1/24"),
     IN_PLACE),
    ("router-type lsp-add naming a router port added before",
     lambda nb, sb, w: _pair_later(nb, w), IN_PLACE),
    ("router interface del: lrp-del and its router-type lsp-del, at once",
     lambda nb, sb, w: _unpair(nb), IN_PLACE),
    ("router-type lsp-add on a switch that has a router port", lambda nb, sb, w: nb.connect(
        "sw0", "lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24"), IN_PLACE),
    ("router interface add on a switch another router is on", lambda nb, sb, w: _share(nb, w),
     IN_PLACE),
    ("router interface del on a switch another router is on",
     lambda nb, sb, w: _unshare(nb, w), IN_PLACE),
    ("router with a gateway port added, its port on a switch another router is on",
     lambda nb, sb, w: _gateway_router(nb), IN_PLACE),
    ("router with a gateway port on an unregistered chassis, on a switch of its own",
     lambda nb, sb, w: _gateway_router(nb, "sw1", "nosuch"), IN_PLACE),
    ("router-type lsp-add naming a gateway router's port", lambda nb, sb, w: _pair_gateway(nb),
     IN_PLACE),
    ("router with a gateway port added, its switch port advertising its NAT addresses",
     lambda nb, sb, w: _gateway_router(nb, "sw1", "ch0", {"nat-addresses": "router"}),
     IN_PLACE),
    ("router created with its gateway (Neutron: gateway port, SNAT, default route)",
     lambda nb, sb, w: _router_with_gateway(nb), IN_PLACE),
    ("router created with its gateway, its default route watched by BFD",
     lambda nb, sb, w: _router_with_gateway(nb, bfd=True), IN_PLACE),
    ("router gateway set (Neutron: the gateway port, its SNAT rule and default route)",
     lambda nb, sb, w: _gateway_with_snat(nb, w, False), IN_PLACE),
    ("router gateway set on a router with a floating IP",
     lambda nb, sb, w: _gateway_with_snat(nb, w, True), IN_PLACE),
    ("router gateway cleared (Neutron: the gateway port, its SNAT rule, route deleted)",
     lambda nb, sb, w: _gateway_cleared(nb, w, False), IN_PLACE),
    ("gateway port deleted while a floating IP stays",
     lambda nb, sb, w: _gateway_cleared(nb, w, True), IN_PLACE),
    ("lsp-del of the switch port peering a distributed gateway port",
     lambda nb, sb, w: _gateway_peer_gone(nb, w, "lsp-del"), IN_PLACE),
    ("ls-del of the switch a distributed gateway port peers on",
     lambda nb, sb, w: _gateway_peer_gone(nb, w, "ls-del"), IN_PLACE),
    ("external switch made with a localnet port and a gateway router's port",
     lambda nb, sb, w: _external_switch(nb, w), IN_PLACE),
    ("gateway router's port and its switch port deleted", lambda nb, sb, w: _unpair_gateway(
        nb, w), IN_PLACE),
    ("lrp-add with a peer", lambda nb, sb, w: nb.lrp_add(
        "lr0", "lrp9", "00:00:00:00:ff:09", "10.9.0.1/24", peer="lrp8"), IN_PLACE),
    ("two routers connected directly (each port naming the other), then one port gone",
     lambda nb, sb, w: _routers_peered(nb, w), IN_PLACE),
    ("lrp-add of a port another router port names as its peer",
     lambda nb, sb, w: _named_before(nb, w, "peer"), IN_PLACE),
    ("router-type lsp-add naming no router port, then that lrp-add (a CMS making the "
     "switch's port first)", lambda nb, sb, w: _named_before(nb, w, "lsp"), IN_PLACE),
    ("lrp-add of a port a static MAC binding names", lambda nb, sb, w: _named_before(
        nb, w, "static"), IN_PLACE),
    ("lrp-set-gateway-chassis on a router interface (its first: a gateway port now)",
     lambda nb, sb, w: nb.add_child("Logical_Router_Port", "lrp0", "gateway_chassis",
                                    "Gateway_Chassis", name="lrp0-ch0", chassis_name="ch0",
                                    priority=10), IN_PLACE),
    ("lrp-del-gateway-chassis of a gateway port's last (a router interface again)",
     lambda nb, sb, w: _gateway_set(nb, sb, w, "last"), IN_PLACE),
    ("gateway chassis priority changed", lambda nb, sb, w: _gateway_set(
        nb, sb, w, "priority"), IN_PLACE),
    ("gateway chassis added to a gateway port (HA from then on)",
     lambda nb, sb, w: _gateway_set(nb, sb, w, "add"), IN_PLACE),
    ("HA gateway's chassis priorities swapped", lambda nb, sb, w: _gateway_set(
        nb, sb, w, "ha-swap"), IN_PLACE),
    ("gateway chassis taken from an HA gateway port (one left)",
     lambda nb, sb, w: _gateway_set(nb, sb, w, "ha-drop"), IN_PLACE),
    ("NB HA chassis priority changed (an external port's group)",
     lambda nb, sb, w: _nb_ha_group(nb, sb, w, "external", "priority"), IN_PLACE),
    ("NB HA chassis added to a group (an external port's)",
     lambda nb, sb, w: _nb_ha_group(nb, sb, w, "external", "add"), IN_PLACE),
    ("NB HA chassis priority changed (a gateway port's group)",
     lambda nb, sb, w: _nb_ha_group(nb, sb, w, "gateway", "priority"), IN_PLACE),
    ("NB HA chassis added to a group (a gateway port's)",
     lambda nb, sb, w: _nb_ha_group(nb, sb, w, "gateway", "add"), IN_PLACE),
    ("lrp-set-enabled lrp0 disabled", lambda nb, sb, w: _lrp_set(
        nb, w, False, enabled=[False]), IN_PLACE),
    ("router port's gateway_mtu set", lambda nb, sb, w: _lrp_set(
        nb, w, False, options={"gateway_mtu": "1400"}), IN_PLACE),
    ("gateway port's gateway_mtu set (Neutron's MTU)", lambda nb, sb, w: _lrp_set(
        nb, w, True, options={"gateway_mtu": "1400"}), IN_PLACE),
    ("gateway port disabled", lambda nb, sb, w: _lrp_set(nb, w, True, enabled=[False]),
     IN_PLACE),
    ("lsp-set-enabled vm1 disabled (a Neutron port's admin state down)",
     lambda nb, sb, w: nb.db.update("Logical_Switch_Port", nb.uuid("Logical_Switch_Port", "vm1"),
                                    enabled=[False]), IN_PLACE),
    ("l2gateway port added (a bridge to a physical network on one chassis)",
     lambda nb, sb, w: nb.lsp_add("sw0", "l2gw0", type="l2gateway", addresses=["unknown"],
                                  options={"network_name": "phys",
                                           "l2gateway-chassis": "ch0"}), IN_PLACE),
    ("remote port added (an interconnection's port on another zone's chassis)",
     lambda nb, sb, w: nb.lsp_add("sw0", "rem0", type="remote",
                                  addresses=["00:00:00:00:00:62 10.0.0.62"],
                                  options={"requested-chassis": "ch0"}), IN_PLACE),
    ("localport added (an OpenStack network's metadata port)",
     lambda nb, sb, w: nb.lsp_add("sw0", "meta0", type="localport",
                                  addresses=["00:00:00:00:00:60 10.0.0.60"]), IN_PLACE),
    ("virtual port added (a VIP two VIFs may claim)",
     lambda nb, sb, w: nb.lsp_add("sw0", "vip0", type="virtual",
                                  addresses=["00:00:00:00:00:61 10.0.0.61"],
                                  options={"virtual-ip": "10.0.0.61",
                                           "virtual-parents": "vm1,vm2"}), IN_PLACE),
    ("virtual port claimed (SB virtual_parent and chassis)",
     lambda nb, sb, w: _virtual_claim(nb, sb, w, "vm1"), IN_PLACE),
    ("lrp-add of a port flooding multicast (mcast_flood: the router's _MC_static)",
     lambda nb, sb, w: nb.lrp_add("lr0", "lr0-mc", "00:00:00:00:ff:31", "10.9.0.1/24",
                                  options={"mcast_flood": "true"}), IN_PLACE),
    ("downlink set to reside on the redirect chassis (its switch port's GARP entry)",
     lambda nb, sb, w: _lrp_set(nb, w, True, "lrp0",
                                options={"reside-on-redirect-chassis": "true"}), IN_PLACE),
    ("router port's IPv6 RA configs set", lambda nb, sb, w: _lrp_set(
        nb, w, False, ipv6_ra_configs={"address_mode": "slaac", "send_periodic": "true"}),
     IN_PLACE),
    ("router port's networks changed (a subnet added, IPv4 and IPv6)",
     lambda nb, sb, w: _renumber(nb, w, ""), IN_PLACE),
    ("router port's networks changed, another router on its switch",
     lambda nb, sb, w: _renumber(nb, w, "router"), IN_PLACE),
    ("gateway port's networks changed, its switch port advertising NAT addresses",
     lambda nb, sb, w: _renumber(nb, w, "gateway"), IN_PLACE),
    ("router port's networks changed on a router with a load balancer",
     lambda nb, sb, w: _renumber(nb, w, "lb"), IN_PLACE),
    ("router port's MAC changed", lambda nb, sb, w: _lrp_set(
        nb, w, False, mac="00:00:00:00:ff:55"), IN_PLACE),
    ("router port's MAC changed to one IPAM handed out (on another switch)",
     lambda nb, sb, w: _dynamic_then(nb, w, {"subnet": "10.9.0.0/24"}, lrp_mac=True),
     IN_PLACE),
    ("router port's networks changed on a switch doing IPAM for a dynamic address",
     lambda nb, sb, w: _renumber(nb, w, "ipam"), IN_PLACE),
    ("router port given the address a port on its switch holds from IPAM (that one moves)",
     lambda nb, sb, w: _renumber(nb, w, "ipam-taken"), IN_PLACE),
    ("router port's external_ids set", lambda nb, sb, w: _lrp_set(
        nb, w, False, external_ids={"neutron:revision_number": "2"}), IN_PLACE),
    ("lrp-del of a switch's router port", lambda nb, sb, w: nb.db.transact([
        {"op": "mutate", "table": "Logical_Router", "where": [["name", "==", "lr0"]],
         "mutations": [["ports", "delete",
                        ["set", [["uuid", nb.uuid("Logical_Router_Port", "lrp0")]]]]]}]),
     IN_PLACE),
    ("lrp-del of a switch's router port, then its switch port's lsp-del",
     lambda nb, sb, w: _unpair_in_turn(nb, w), IN_PLACE),
    ("acl-add", _acl, frozenset()),
    ("acl update", lambda nb, sb, w: nb.db.update(
        "ACL", next(iter(nb.db.tables["ACL"].rows)), match="ip4.src == 10.0.0.11"),
     frozenset()),
    ("lb-add + ls-lb-add", _lb, IN_PLACE),
    ("lb-add alone", lambda nb, sb, w: nb.db.insert(
        "Load_Balancer", name="lb9", vips={"10.9.0.1": "10.0.0.11"}), IN_PLACE),
    ("lr-lb-add", lambda nb, sb, w: _lb_on(nb, "Logical_Router", "lr0"), IN_PLACE),
    ("lb VIP update", _lb_vip_set, IN_PLACE),
    ("lb-del", lambda nb, sb, w: _lb_del(nb, w), IN_PLACE),
    ("lb group on a switch and a router", _lb_group, IN_PLACE),
    ("lb-add with a health check", _lb_health_check, IN_PLACE),
    ("lb-add with a health check and backends probed through vm1 and vm2",
     lambda nb, sb, w: _monitor_status(nb, sb, w, ""), IN_PLACE),
    ("health check options changed", lambda nb, sb, w: _monitor_status(
        nb, sb, w, "options"), IN_PLACE),
    ("ip_port_mappings changed (a backend probed through a port on another switch, "
     "the other no longer probed)",
     lambda nb, sb, w: _monitor_status(nb, sb, w, "mappings"), IN_PLACE),
    ("lb-del of a health-checked load balancer", lambda nb, sb, w: _monitor_status(
        nb, sb, w, "del"), IN_PLACE),
    ("lsp-add VIF beside a health-checked load balancer's probed ports",
     lambda nb, sb, w: _monitor_status(nb, sb, w, "vif"), IN_PLACE),
    ("VIF a health check probes through disabled (its monitor goes)",
     lambda nb, sb, w: _monitor_status(nb, sb, w, "probed"), IN_PLACE),
    ("lsp-del of a VIF a health check probes through",
     lambda nb, sb, w: _monitor_status(nb, sb, w, "probed-del"), IN_PLACE),
    ("lsp-add of the VIF a health check's mapping names, on another switch",
     lambda nb, sb, w: _monitor_status(nb, sb, w, "probed-add"), IN_PLACE),
    ("SB service monitor status: a backend offline", lambda nb, sb, w: _monitor_status(
        nb, sb, w, "offline"), IN_PLACE),
    ("SB service monitor status: a backend online", lambda nb, sb, w: _monitor_status(
        nb, sb, w, "online"), IN_PLACE),
    ("lr-nat-add", _nat, IN_PLACE),
    ("lr-nat-add dnat_and_snat", lambda nb, sb, w: nb.add_child(
        "Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat", external_ip="172.16.0.9",
        logical_ip="10.0.0.11"), IN_PLACE),
    ("NAT update", _nat_set, IN_PLACE),
    ("lr-nat-del", _nat_del, IN_PLACE),
    ("lr-nat-add distributed", lambda nb, sb, w: nb.add_child(
        "Logical_Router", "lr0", "nat", "NAT", type="dnat_and_snat", external_ip="172.16.0.8",
        logical_ip="10.0.0.12", logical_port="vm2", external_mac="00:00:00:00:aa:02"),
     IN_PLACE),
    ("lr-nat-add distributed (a DVR floating IP) on a router with a gateway port",
     lambda nb, sb, w: _dvr(nb, w, False), IN_PLACE),
    ("lr-nat-del of the last distributed rule (the redirect port always redirects again)",
     lambda nb, sb, w: _dvr(nb, w, True), IN_PLACE),
    ("lr-route-add", _route, frozenset()),
    ("lr-policy-add", _policy, frozenset()),
    ("lr-policy-add reroute with two next hops (ECMP), before the first",
     lambda nb, sb, w: _policies(nb, w, False), frozenset()),
    ("policy updated", lambda nb, sb, w: _policies(nb, w, True), frozenset()),
    ("lr-route-add with BFD", lambda nb, sb, w: nb.add_child(
        "Logical_Router", "lr0", "static_routes", "Logical_Router_Static_Route",
        ip_prefix="192.168.9.0/24", nexthop="10.0.0.253", bfd=nb.db.insert(
            "BFD", logical_port="lrp0", dst_ip="10.0.0.253")), IN_PLACE),
    ("SB BFD session up (ovn-controller)", lambda nb, sb, w: _bfd(nb, sb, w, "up"),
     IN_PLACE),
    ("SB BFD session down (its route leaves the flows)", lambda nb, sb, w: _bfd(
        nb, sb, w, "down"), IN_PLACE),
    ("NB BFD session's min_tx changed", lambda nb, sb, w: _bfd(nb, sb, w, "min_tx"),
     IN_PLACE),
    ("meter-add (nothing names it)", lambda nb, sb, w: _meter(nb), IN_PLACE),
    ("meter-add of the fair meter an ACL logs through", lambda nb, sb, w: _meters(
        nb, w, "fair-after"), IN_PLACE),
    ("acl-add logging through a fair meter (its own copy)", lambda nb, sb, w: _meters(
        nb, w, "acl"), IN_PLACE),
    ("meter band rate changed (of a fair meter an ACL logs through)",
     lambda nb, sb, w: _meters(nb, w, "band"), IN_PLACE),
    ("meter-del of the meter a router's Copp names", lambda nb, sb, w: _meters(
        nb, w, "copp-del"), IN_PLACE),
    ("Copp updated (a router's control-plane meters)", lambda nb, sb, w: _meters(
        nb, w, "copp-set"), IN_PLACE),
    ("static MAC binding added", lambda nb, sb, w: _static_mac(nb, w, "add"), IN_PLACE),
    ("static MAC binding's MAC changed", lambda nb, sb, w: _static_mac(nb, w, "update"),
     IN_PLACE),
    ("static MAC binding deleted", lambda nb, sb, w: _static_mac(nb, w, "del"), IN_PLACE),
    ("template variables added", lambda nb, sb, w: _template_var(nb, w, "add"), IN_PLACE),
    ("template variable changed", lambda nb, sb, w: _template_var(nb, w, "update"),
     IN_PLACE),
    ("template variables deleted", lambda nb, sb, w: _template_var(nb, w, "del"), IN_PLACE),
    ("mirror added", lambda nb, sb, w: _mirror(nb, w, "add"), IN_PLACE),
    ("mirror's sink changed (a port's rules name it)", lambda nb, sb, w: _mirror(
        nb, w, "update"), IN_PLACE),
    ("mirror renamed while a port's rules name it", lambda nb, sb, w: _mirror(
        nb, w, "rename"), IN_PLACE),
    ("DHCP options added (a subnet; no port names them yet)", lambda nb, sb, w: nb.db.insert(
        "DHCP_Options", cidr="10.0.0.0/24", options=DHCP), IN_PLACE),
    ("DHCP options updated (a port names them)", lambda nb, sb, w: _dhcp(nb, w), IN_PLACE),
    ("DNS records updated (a switch lists the row)", lambda nb, sb, w: _dns(nb, w, "vm9"),
     IN_PLACE),
    ("DNS records emptied (the switch's DNS flows go)", lambda nb, sb, w: _dns(nb, w, ""),
     IN_PLACE),
    ("DNS row added to a switch", lambda nb, sb, w: _dns(nb, w, None), IN_PLACE),
    ("DNS row created and listed by two switches at once", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "DNS", "uuid-name": "d",
         "row": {"records": ["map", [["vm1", "10.0.0.11"]]]}},
        *({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", ls]],
           "mutations": [["dns_records", "insert", ["named-uuid", "d"]]]}
          for ls in ("sw0", "sw1"))]), IN_PLACE),
    ("DNS row unlisted and deleted", lambda nb, sb, w: _dns_gone(nb, w), IN_PLACE),
    ("qos-add", lambda nb, sb, w: nb.add_child(
        "Logical_Switch", "sw0", "qos_rules", "QoS", priority=100, direction="from-lport",
        match="ip4.src == 10.0.0.11", action={"dscp": 12}), IN_PLACE),
    ("QoS rule updated", lambda nb, sb, w: _qos_set(nb, w), IN_PLACE),
    ("forwarding group added", lambda nb, sb, w: nb.add_child(
        "Logical_Switch", "sw0", "forwarding_groups", "Forwarding_Group", name="fg0",
        vip="10.0.0.200", vmac="00:00:00:00:00:c8", child_port=["vm1", "vm2"]), IN_PLACE),
    ("NB connection added (the database's own)", lambda nb, sb, w: nb.db.transact([
        {"op": "insert", "table": "Connection", "uuid-name": "c",
         "row": {"target": "ptcp:6641"}},
        {"op": "mutate", "table": "NB_Global", "where": [],
         "mutations": [["connections", "insert", ["named-uuid", "c"]]]}]), CFG),
    ("pg-add", _port_group, IN_PLACE),
    ("pg ports changed", lambda nb, sb, w: nb.db.update(
        "Port_Group", nb.uuid("Port_Group", "pgs"),
        ports=[nb.uuid("Logical_Switch_Port", "vm1"), nb.uuid("Logical_Switch_Port", "vm2")]),
     IN_PLACE),
    ("pg renamed", lambda nb, sb, w: nb.db.update(
        "Port_Group", nb.uuid("Port_Group", "pgs"), name="pgt"), IN_PLACE),
    ("pg-del", lambda nb, sb, w: nb.db.transact([
        {"op": "delete", "table": "Port_Group", "where": [["name", "==", "pgs"]]}]), IN_PLACE),
    ("address set added", lambda nb, sb, w: nb.db.insert(
        "Address_Set", name="as0", addresses=["10.0.0.11", "10.0.0.12"]), IN_PLACE),
    ("address set named as a port group's (it wins)", lambda nb, sb, w: nb.db.insert(
        "Address_Set", name="pgs_ip4", addresses=["10.0.0.99"]), IN_PLACE),
    ("address set named as a port group's deleted (the group's back)",
     lambda nb, sb, w: _named_as_group(nb, w), IN_PLACE),
    ("acl-add on a port group", lambda nb, sb, w: nb.add_child(
        "Port_Group", "pgs", "acls", "ACL", priority=1001, direction="to-lport",
        match="outport == @pgs && ip4", action="allow-related"), IN_PLACE),
    ("NB_Global options replaced: one only flows read set, northd's write-backs dropped",
     lambda nb, sb, w: nb.db.update(
         "NB_Global", next(iter(nb.db.tables["NB_Global"].rows)),
         options={"mac_prefix": "0a:00:00", "svc_monitor_mac": "0a:00:00:00:00:fe",
                  "ignore_lsp_down": "false"}), EVERY_FLOW),
    ("NB_Global option a builder reads (mac_prefix changed: IPAM's MACs)",
     lambda nb, sb, w: _nb_option(nb, "mac_prefix", "0a:00:01"), CFG),
    ("mac_prefix changed: dynamic MACs move, a static one of the new prefix held",
     lambda nb, sb, w: _ipam_vif(nb, w, "prefix"), CFG),
    ("mac_prefix dropped: a random one (the NB_Global UUID's), written back",
     lambda nb, sb, w: _ipam_vif(nb, w, "no prefix"), CFG),
    ("NB_Global option only flows read (ignore_lsp_down)",
     lambda nb, sb, w: _nb_option(nb, "ignore_lsp_down", "false"), EVERY_FLOW),
    ("NB_Global option only flows read (debug_drop_collector_set)",
     lambda nb, sb, w: _nb_option(nb, "debug_drop_collector_set", "7"), EVERY_FLOW),
    ("NB_Global option the daemon alone reads (northd-backoff-interval-ms)",
     lambda nb, sb, w: _nb_option(nb, "northd-backoff-interval-ms", "200"),
     frozenset(("sync_cfg",))),
    ("NB_Global option no builder reads (another release's: use_logical_dp_groups)",
     lambda nb, sb, w: _nb_option(nb, "use_logical_dp_groups", "false"),
     frozenset(("sync_cfg", "mac_binding_aging"))),
    ("NB_Global option a builder of load balancers reads (install_ls_lb_from_router)",
     lambda nb, sb, w: _nb_option(nb, "install_ls_lb_from_router", "true"),
     frozenset(("sync_cfg", "mac_binding_aging"))),
    ("NB_Global option the service monitor MAC (svc_monitor_mac)",
     lambda nb, sb, w: _nb_option(nb, "svc_monitor_mac", "0a:00:00:00:00:fd"), CFG),
    ("nb_cfg bump", lambda nb, sb, w: nb.db.update(
        "NB_Global", next(iter(nb.db.tables["NB_Global"].rows)), nb_cfg=5),
     frozenset(("sync_cfg",))),
    ("SB claim", _claim, frozenset()),
    ("SB claim beside a router with an HA gateway port (its group's ref_chassis)",
     lambda nb, sb, w: _ha_claim(nb, sb, w, False), frozenset()),
    ("SB release beside a router with an HA gateway port",
     lambda nb, sb, w: _ha_claim(nb, sb, w, True), frozenset()),
    ("SB MAC_Binding learned", _learn, frozenset(("mac_binding_aging",))),
    ("SB MAC_Binding learned after a VIF came and went", lambda nb, sb, w: _learn_after(
        nb, sb, w), frozenset(("mac_binding_aging",))),
    ("SB binding of no port made by another client, a MAC learned on it (both deleted)",
     lambda nb, sb, w: _learn_beside_stale(sb, w), frozenset(("mac_binding_aging",))),
    ("SB binding of no port made by another client (deleted)",
     lambda nb, sb, w: sb.insert("Port_Binding", logical_port="gone", tunnel_key=77,
                                 datapath=next(iter(sb.tables["Datapath_Binding"].rows))),
     IN_PLACE),
    ("SB IGMP group joined (a receiver on a snooping switch)", lambda nb, sb, w: _igmp(
        nb, sb, w, "join"), IN_PLACE),
    ("SB IGMP group joined on a switch whose router relays multicast",
     lambda nb, sb, w: _igmp(nb, sb, w, "relay"), IN_PLACE),
    ("SB IGMP group left", lambda nb, sb, w: _igmp(nb, sb, w, "leave"), IN_PLACE),
    ("SB IGMP group joined beside another", lambda nb, sb, w: _igmp(nb, sb, w, "second"),
     IN_PLACE),
    ("SB FDB learned for a live port", lambda nb, sb, w: _fdb(sb, "vm1"), IN_PLACE),
    ("SB FDB learned for no port (deleted)", lambda nb, sb, w: _fdb(sb, "vm1", 99),
     IN_PLACE),
    # Chassis: `sync_cfg` recomputes (hv_cfg is a minimum over every chassis).
    ("SB chassis-add", lambda nb, sb, w: add_chassis(sb, "ch1", "192.0.2.2"), CFG),
    ("SB chassis-add named by a gateway chassis (its HA chassis row finds it)",
     lambda nb, sb, w: _chassis_named(sb, w, "gateway"), CFG),
    # A chassis a switch port asks for by a name it changes: the port is bound again.
    ("SB chassis-add a switch port asked for (requested-chassis)",
     lambda nb, sb, w: _chassis_named(sb, w, "port"), CFG),
    ("SB chassis-add by the hostname a switch port asked for",
     lambda nb, sb, w: _chassis_named(sb, w, "hostname"), CFG),
    ("SB chassis-add a migrating port asked for second",
     lambda nb, sb, w: _chassis_named(sb, w, "migrating"), CFG),
    ("SB chassis-add a port with QoS options asked for (its queue is the build's)",
     lambda nb, sb, w: _chassis_named(sb, w, "qos"), CFG),
    ("SB chassis-add a deleted port had asked for",
     lambda nb, sb, w: _chassis_named(sb, w, "gone"), CFG),
    ("SB chassis given the hostname a switch port asked for",
     lambda nb, sb, w: _chassis_renamed(sb, w), CFG),
    ("SB chassis-del of a chassis a switch port asked for",
     lambda nb, sb, w: _chassis_del(sb, w, "port"), CFG),
    ("SB chassis-del", lambda nb, sb, w: _chassis_del(sb, w), CFG),
    ("a VIF live-migrating: asking for two chassis (chassis-add first)",
     lambda nb, sb, w: _migration(nb, sb, w, "start"), CFG),
    ("a VIF live-migrating: activated on the target (SB options)",
     lambda nb, sb, w: _migration(nb, sb, w, "activated"), CFG),
    ("a VIF live-migrated: asking for the target alone (chassis-add first)",
     lambda nb, sb, w: _migration(nb, sb, w, "done"), CFG),
    ("SB chassis-del of a gateway chassis", lambda nb, sb, w: _chassis_del(sb, w, "gateway"),
     CFG),
    ("SB chassis update a builder does not read", lambda nb, sb, w: sb.update(
        "Chassis", w.chassis, external_ids={"ovn-bridge-mappings": "phys:br-ex"},
        other_config={"iface-types": "geneve"}), CFG),
    ("SB chassis update: port-up-notif", lambda nb, sb, w: _claimed_notif(sb, w),
     CFG | {"sync_from_sb"}),
    ("SB chassis update: every chassis now has the features",
     lambda nb, sb, w: sb.update("Chassis", w.chassis, other_config=FEATURES),
     EVERY_FLOW | {"mac_binding_aging"}),
    # The first vxlan chassis: the key ranges narrow and `max_tunid` with them, in place
    # (new keys come from the narrow ranges: the self-check says); a datapath's request
    # or a port's, refused or granted by the move moves it, in place.
    ("SB chassis-add with a vxlan encap, then a switch and a VIF added",
     lambda nb, sb, w: _vxlan(nb, sb, w, "add"), CFG),
    ("SB chassis-add with a vxlan encap, a switch asking for a key above its range",
     lambda nb, sb, w: _vxlan(nb, sb, w, "switch"), CFG),
    ("SB chassis-add with a vxlan encap, a port asking for a key above its range",
     lambda nb, sb, w: _vxlan(nb, sb, w, "port"), CFG),
    ("SB chassis-add with a vxlan encap, a transit switch asking for a key above",
     lambda nb, sb, w: _vxlan(nb, sb, w, "transit"), CFG),
    ("SB chassis-del of the last vxlan chassis", lambda nb, sb, w: _vxlan(nb, sb, w, "del"),
     CFG),
    ("SB vxlan encap made geneve", lambda nb, sb, w: _vxlan(nb, sb, w, "encap"), CFG),
    ("SB chassis-del of the last vxlan chassis, a switch asking for a key above (granted)",
     lambda nb, sb, w: _vxlan(nb, sb, w, "del asked"), CFG),
    ("SB chassis-del of the last vxlan chassis, a port asking for a key above (granted)",
     lambda nb, sb, w: _vxlan(nb, sb, w, "del port"), CFG),
    ("SB chassis-del of the last vxlan chassis, a router port asking for a key above",
     lambda nb, sb, w: _vxlan(nb, sb, w, "del router port"), CFG),
]


@pytest.mark.parametrize(("change", "recomputes"),
                         [(c[1], c[2]) for c in CONTRACT], ids=[c[0] for c in CONTRACT])
def test_contract(nb: Nb, sb: LocalDb, change: Callable[..., Any],
                  recomputes: frozenset[str]) -> None:
    world = World(nb, sb)
    world.baseline = world.counts()
    with world.change():
        change(nb, sb, world)
    world.northd.settle()
    before, after = world.baseline, world.counts()
    got = {n for n in COMPUTING if after[n][0] > before[n][0]}
    assert got == recomputes, {n: (after[n][0] - before[n][0], after[n][1] - before[n][1])
                               for n in COMPUTING}


def test_the_table_sees_a_handler_lost(nb: Nb, sb: LocalDb,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A row fails when a node recomputes that the table says does not: `northd`'s
    switch-port handler made to give up turns the VIF row's recompute set wrong."""
    from pyovsdb.engine import Handled
    from pyovsdb.northd.nodes.northd import NorthdNode

    monkeypatch.setattr(NorthdNode, "on_nb_lsp", lambda self, change: Handled.UNHANDLED)
    world = World(nb, sb)
    before = world.counts()
    with world.change():
        CONTRACT[0][1](nb, sb, world)
    world.northd.settle()
    after = world.counts()
    assert {n for n in COMPUTING if after[n][0] > before[n][0]} != CONTRACT[0][2]


def test_aging_reads_the_removal_limit_whatever_northd_does(
        nb: Nb, sb: LocalDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mac_binding_aging` takes an NB_Global change of `options` itself (it reads
    `mac_binding_removal_limit`), not only through `northd`: with `northd` made to take
    every NB_Global change in place (so no self-check: northd is wrong on purpose), an
    options change still recomputes the aging, while an `nb_cfg` bump does not."""
    from pyovsdb.engine import Handled
    from pyovsdb.northd.nodes.northd import NorthdNode

    monkeypatch.setattr(NorthdNode, "on_nb_global",
                        lambda self, change: Handled.HANDLED_UNCHANGED)
    world = World(nb, sb, self_check=False)
    row = next(iter(nb.db.tables["NB_Global"].rows))
    options = {"mac_prefix": "0a:00:00", "svc_monitor_mac": "0a:00:00:00:00:fe"}
    for cols, recomputes in (({"nb_cfg": 7}, False),
                             ({"options": {**options, "mac_binding_removal_limit": "3"}},
                              True)):
        before = world.counts()["mac_binding_aging"][0]
        with world.change():
            nb.db.update("NB_Global", row, **cols)
        world.northd.settle()
        assert (world.counts()["mac_binding_aging"][0] > before) is recomputes, cols


def test_northd_s_own_options_coming_back_recompute_nothing(nb: Nb, sb: LocalDb) -> None:
    """The options northd writes back to NB_Global on its first run (`max_tunid`,
    `northd_internal_version`), coming back as an NB change, are what it has: no node
    recomputes (each did once, at start)."""
    world = World(nb, sb)
    options = dict(next(iter(nb.db.tables["NB_Global"].rows.values())).data["options"])
    assert "max_tunid" in options and "northd_internal_version" in options
    assert world.counts()["northd"][0] == 1


def test_routers_joining_a_switch_take_its_walk_order(nb: Nb, sb: LocalDb) -> None:
    """A virtual port's VIP is resolved on the first router of its switch, in the order
    a build walks the switch's router ports (hash buckets): routers joining the switch
    one by one, in place, each land where a build puts them (the self-check compares
    every run with a recompute), whichever bucket their port falls in: one sharing a
    bucket with another port of the switch moves in the walk when its binding comes
    back, and the switch's router ports are sorted again, in place too."""
    world = World(nb, sb)
    with world.change():
        nb.lsp_add("sw0", "vip", type="virtual", addresses=["00:00:00:00:00:50 10.0.0.50"],
                   options={"virtual-ip": "10.0.0.50", "virtual-parents": "vm1"})
    world.northd.settle()
    shared = 0
    for i in range(1, 9):
        with world.change():
            nb.lr_add(f"lr{i}")
        world.northd.settle()
        before = world.counts()
        with world.change():
            nb.connect("sw0", f"lr{i}", f"lr{i}-sw0", f"00:00:00:00:fe:{i:02x}",
                       f"10.0.0.{100 + i}/24")
        world.northd.settle()
        ports = world.northd.driver.engine.node_data("northd").core.ports
        shared += not alone_in_bucket(ports.ports[f"sw0-lr{i}-sw0"], ports)
        assert world.counts()["northd"][0] == before["northd"][0]
    order = [p.name for p in ports.router_ports[nb.uuid("Logical_Switch", "sw0")]]
    assert order != sorted(order)  # (some router landed before one that came earlier)
    assert 0 < shared < 8


def test_router_ports_follow_the_walk_as_the_port_table_grows(nb: Nb, sb: LocalDb) -> None:
    """The order a build walks a switch's router ports follows the port table's mask:
    VIFs added one by one grow the table past a mask or two, and the routers' order
    on sw0 moves with it, in place (no recompute), each run equal to a recompute (the
    self-check), the virtual port's VIP resolved on the first router."""
    world = World(nb, sb)
    with world.change():
        nb.lsp_add("sw0", "vip", type="virtual", addresses=["00:00:00:00:00:50 10.0.0.50"],
                   options={"virtual-ip": "10.0.0.50", "virtual-parents": "vm1"})
        for i in range(1, 7):
            nb.lr_add(f"lr{i}")
    world.northd.settle()
    for i in range(1, 7):
        with world.change():
            nb.connect("sw0", f"lr{i}", f"lr{i}-sw0", f"00:00:00:00:fe:{i:02x}",
                       f"10.0.0.{100 + i}/24")
        world.northd.settle()
    sw0 = nb.uuid("Logical_Switch", "sw0")

    def order() -> list[str]:
        ports = world.northd.driver.engine.node_data("northd").core.ports
        return [p.name for p in ports.router_ports[sw0]]

    seen = [order()]
    before = world.counts()
    for i in range(40):
        with world.change():
            nb.lsp_add("sw1", f"grow{i}", addresses=[f"00:00:00:00:a1:{i:02x}"])
        world.northd.settle()
        if order() != seen[-1]:
            seen.append(order())
    assert world.counts()["northd"][0] == before["northd"][0]
    assert len(seen) > 1  # (the walk moved at least once: the case is exercised)


def test_a_datapath_group_gains_a_datapath_in_place(nb: Nb, sb: LocalDb) -> None:
    """Issue 17 item 3: the flows both switches have share one datapath group; a new
    switch joins that group's row (updated in place, its UUID kept: no group deleted),
    and the flows naming it are not rewritten; the switch going leaves the row in
    place again. (Flows of switches without a router port, on sw1 alone before, get a
    group of their own with sw9: a new group, as it should be.)"""
    world = World(nb, sb)
    groups = sb.tables["Logical_DP_Group"].rows
    flows = sb.tables["Logical_Flow"].rows
    before = set(groups)
    naming = {u: r.value("logical_dp_group") for u, r in flows.items()
              if r.value("logical_dp_group")}
    assert len(before) == 1 and naming
    with world.change():
        nb.ls_add("sw9")
    world.northd.settle()
    assert before <= set(groups)
    sw9 = next(r.uuid for r in sb.tables["Datapath_Binding"].rows.values()
               if r.external_ids.get("name") == "sw9")
    (kept,) = before
    assert sw9 in {str(d) for d in groups[kept].value("datapaths")}
    assert {u: flows[u].value("logical_dp_group") for u in naming if u in flows} == naming
    with world.change():
        nb.db.transact([{"op": "delete", "table": "Logical_Switch",
                         "where": [["name", "==", "sw9"]]}])
    world.northd.settle()
    assert set(groups) == before
    assert {u: flows[u].value("logical_dp_group") for u in naming if u in flows} == naming


def test_the_ports_asking_for_a_chassis_are_the_live_ones(nb: Nb, sb: LocalDb) -> None:
    """Pods come and go asking for their node's chassis (ovn-kubernetes sets
    `requested-chassis` on each): what northd keeps of who asks for what holds the
    ports there now, no more (it does not grow with every pod ever made), whether or
    not the chassis is registered; and a chassis registering rebinds them alone."""
    world = World(nb, sb)

    def asking() -> dict[str, set[str]]:
        ports = world.northd.driver.engine.node_data("northd").core.ports
        return ports.chassis_asked.by_name

    for i in range(6):
        with world.change():
            nb.lsp_add("sw1", f"pod{i}", addresses=[f"00:00:00:00:01:{i:02x} 10.1.0.{20 + i}"],
                       options={"requested-chassis": "ch1" if i % 2 else "host1"})
        world.northd.settle()
        if i >= 2:
            with world.change():
                nb.db.transact([{"op": "mutate", "table": "Logical_Switch",
                                 "where": [["name", "==", "sw1"]], "mutations": [[
                                     "ports", "delete",
                                     ["uuid", nb.uuid("Logical_Switch_Port", f"pod{i - 2}")]]]}])
            world.northd.settle()
    assert asking() == {"ch1": {"pod5"}, "host1": {"pod4"}}
    before = world.counts()
    with world.change():
        add_chassis(sb, "ch1", "192.0.2.2", hostname="host1")
    world.northd.settle()
    assert world.counts()["northd"][0] == before["northd"][0]
    bound = {r.logical_port: r.requested_chassis for r in sb.tables["Port_Binding"].rows.values()
             if r.logical_port.startswith("pod")}
    assert {p: getattr(c, "name", None) for p, c in bound.items()} == {
        "pod4": "ch1", "pod5": "ch1"}


def test_an_fdb_entry_of_no_port_is_deleted_in_place(nb: Nb, sb: LocalDb) -> None:
    """ovn-controller learning on a port as it goes: the entry names a port key no port
    holds, and northd deletes it without a recompute; one of a live port stays."""
    world = World(nb, sb)
    world.baseline = world.counts()
    with world.change():
        _fdb(sb, "vm1", 99)
        pb = sb.tables["Port_Binding"].rows[_pb(sb, "vm2")]
        sb.insert("FDB", mac="00:00:00:00:cc:02", dp_key=pb.datapath.tunnel_key,
                  port_key=pb.tunnel_key)
    world.northd.settle()
    assert sorted(r.port_key for r in sb.tables["FDB"].rows.values()) == [
        sb.tables["Port_Binding"].rows[_pb(sb, "vm2")].tunnel_key]
    assert world.counts()["northd"][0] == world.baseline["northd"][0]


def test_a_port_made_virtual_and_back_in_place(nb: Nb, sb: LocalDb) -> None:
    """Neutron's VIP port: a VIF made virtual (its IP in others' allowed address
    pairs), then a VIF again, then virtual again. Each time its binding is deleted and
    inserted again, as 23.03 does, without a recompute; once the new row is back,
    nothing is left to recreate."""
    world = World(nb, sb)
    virtual = {"type": "virtual", "options": {"virtual-ip": "10.0.0.12",
                                              "virtual-parents": "vm1"}}
    with world.change():  # (claimed: up; its new binding is not)
        sb.update("Port_Binding", _pb(sb, "vm2"), chassis=world.chassis, up=True)
    world.northd.settle()
    lsp = nb.uuid("Logical_Switch_Port", "vm2")
    assert nb.db.tables["Logical_Switch_Port"].rows[lsp].value("up") == (True,)
    rows = [_pb(sb, "vm2")]
    for cols in (virtual, {"type": "", "options": {}}, virtual):
        world.settled()
        with world.change():
            nb.set("Logical_Switch_Port", "vm2", **cols)
        world.northd.settle()
        assert world.counts()["northd"][0] == world.baseline["northd"][0], cols
        rows.append(_pb(sb, "vm2"))
        assert sb.tables["Port_Binding"].rows[rows[-1]].type == cols["type"]
        assert nb.db.tables["Logical_Switch_Port"].rows[lsp].value("up") == (False,)
    assert len(set(rows)) == 4
    engine = world.northd.driver.engine
    assert engine is not None
    data = engine.node_data("northd")
    assert not data.core.ports.recreated and not data.core.ports.replaced
    assert not data.sb.tables["Port_Binding"].replace


@pytest.mark.parametrize(("then", "mac"), [("elsewhere", "0a:00:00:09:00:04"),
                                           ("freed", "0a:00:00:09:00:03"),
                                           ("later", "0a:00:00:09:00:04")])
def test_a_port_asking_ipam_on_one_switch_sees_the_macs_held_on_others(
        nb: Nb, sb: LocalDb, then: str, mac: str) -> None:
    """IPAM planned over the changed switch alone still takes the MACs other switches'
    ports hold (dyn1 on sw1 holds the one dyn2's address on sw0 points at first), and
    no more once their holder is gone; planned in place, as the self-check confirms."""
    world = World(nb, sb)
    with world.change():
        _ipam_vif(nb, world, then)
    world.northd.settle()
    row = nb.db.tables["Logical_Switch_Port"].rows[nb.uuid("Logical_Switch_Port", "dyn2")]
    assert row.dynamic_addresses == f"{mac} 11.9.0.2"
    assert world.counts()["northd"][0] == world.baseline["northd"][0]
