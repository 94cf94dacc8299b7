"""Projects of an OpenStack-like cloud, as Neutron writes them (the scale harness's
`scale/cloud.py`: a router, a network, a subnet, a security group, the router's
interface and its gateway on three chassis, VMs bound and up, floating IPs), are
handled in place: no change of a project recomputes the `northd` node, one change per
run or a whole project in one run, and every run is self-checked against a recompute
from scratch. This is where 26.03 recomputes (a router interface, a gateway), and
what the harness's openstack scenario measures."""

from __future__ import annotations

from typing import Any

import pytest

from pyovsdb.northd.testing import LocalDb, LocalNorthd, add_chassis
from pyovsdb.scale import cloud
from pyovsdb.scale.topology import chassis_name, global_ops, node_name
from pyovsdb.storage.schemafile import load_schema
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA

NODES, VMS = 4, 3


class Cloud:
    def __init__(self) -> None:
        self.nb, self.sb = LocalDb(load_schema(NB_SCHEMA)), LocalDb(load_schema(SB_SCHEMA))
        self.chassis = [add_chassis(self.sb, chassis_name(n), f"192.168.0.{n + 1}",
                                    hostname=node_name(n)) for n in range(NODES)]
        self.northd = LocalNorthd(self.nb, self.sb)  # (self-checked: the default)
        self.write(global_ops() + cloud.external_network_ops())
        self.northd.settle()

    def write(self, ops: list[dict[str, Any]]) -> list[Any]:
        self.northd.nb_changed(self.nb.transact(ops))
        return list(self.nb.last_results)

    def claim(self, port: str, node: int) -> None:
        """What the chassis does: the VM's port bound to it, and up."""
        self.northd.sb_changed(self.sb.transact([
            {"op": "update", "table": "Port_Binding", "where": [["logical_port", "==", port]],
             "row": {"chassis": ["uuid", self.chassis[node]], "up": ["set", [True]]}}]))

    def step(self, ops: list[dict[str, Any]], one_run_each: bool) -> list[Any]:
        """`ops` written, and run at once if `one_run_each`; their results."""
        got = self.write(ops)
        if one_run_each:
            self.northd.settle()
        return got

    def project(self, p: int, one_run_each: bool, batched: bool = False) -> None:
        """Project `p`'s changes, a run after each (`one_run_each`), or a run after the
        project's NB writes; `batched`: its NB writes alone, no run (the caller runs
        once for several projects, as under load, then `claim_and_float`)."""
        def step(ops: list[dict[str, Any]]) -> list[Any]:
            return self.step(ops, one_run_each)

        step(cloud.router_ops(p))
        step(cloud.network_ops(p))
        dhcp = step(cloud.subnet_ops(p))[0]["uuid"][1]
        step(cloud.security_group_ops(p))
        step(cloud.interface_ops(p))
        step(cloud.gateway_ops(p, NODES))
        for v in range(VMS):
            step(cloud.vm_ops(p, v, v % NODES, dhcp))
        if batched:
            return
        self.northd.settle()
        self.claim_and_float(p, one_run_each)

    def claim_and_float(self, p: int, one_run_each: bool) -> None:
        """Project `p`'s VMs claimed and up, then their floating IPs."""
        for v in range(VMS):
            self.claim(cloud.vm_port(p, v), v % NODES)
            if one_run_each:
                self.northd.settle()
        for v in range(VMS):
            self.step(cloud.floating_ip_ops(p, v), one_run_each)
        self.northd.settle()


@pytest.mark.parametrize("one_run_each", [True, False], ids=["a-run-per-change",
                                                              "a-project-per-run"])
def test_projects_are_handled_in_place(one_run_each: bool) -> None:
    c = Cloud()
    cold = c.northd.stat("northd")
    for p in range(3):
        c.project(p, one_run_each)
    _check_projects(c, cold)


def test_projects_written_together_are_handled_in_place() -> None:
    """The NB writes of three projects in one run (each router's gateway on the one
    external switch: three router-type ports join it at once), then their claims."""
    c = Cloud()
    cold = c.northd.stat("northd")
    for p in range(3):
        c.project(p, one_run_each=False, batched=True)
    c.northd.settle()
    for p in range(3):
        c.claim_and_float(p, one_run_each=False)
    _check_projects(c, cold)


def test_a_router_leaving_and_joining_the_external_network_is_counted_in_place() -> None:
    """Every project's router is on the external network, so all are one router group
    and its groups of three chassis are referenced by every chassis with a VM. A
    project's gateway leaving the network splits its router off (its VMs' chassis
    count for its own group alone), and coming back joins it again: the claims of
    the switches whose router group moved are counted again, in place (self-checked
    against a recompute after each run)."""
    c = Cloud()
    for p in range(3):
        c.project(p, one_run_each=False)
        for v in range(VMS):  # (project p's VMs all on chassis p)
            c.claim(cloud.vm_port(p, v), p)
    c.northd.settle()
    everyone = {chassis_name(p) for p in range(3)}
    assert all(refs == everyone for refs in _ref_chassis(c).values()), _ref_chassis(c)
    cold = {node: c.northd.stat(node) for node in ("northd", "sync_from_sb")}
    for leaving in (0, 2):  # (the first router of the group, then another)
        gateway = next(r for r in c.nb.tables["Logical_Switch_Port"].rows.values()
                       if r.options.get("router-port") == _gateway_port(leaving))
        c.step([{"op": "mutate", "table": "Logical_Switch",
                 "where": [["name", "==", cloud.EXT_NET]],
                 "mutations": [["ports", "delete", ["set", [["uuid", gateway.uuid]]]]]}],
               True)
        refs = _ref_chassis(c)
        assert refs[_gateway_port(leaving)] == {chassis_name(leaving)}, refs
        stay = next(p for p in range(3) if p != leaving)
        assert refs[_gateway_port(stay)] == everyone - {chassis_name(leaving)}, refs
        c.step([op for op in cloud.gateway_ops(leaving, NODES)  # (its port made again)
                if op["table"] in ("Logical_Switch_Port", "Logical_Switch")], True)
        assert all(refs == everyone for refs in _ref_chassis(c).values()), _ref_chassis(c)
    assert {node: c.northd.stat(node) for node in cold} == cold, \
        "a router moving between router groups recomputed"


def _gateway_port(p: int) -> str:
    """Project `p`'s gateway router port (its HA chassis group's name)."""
    return str(next(op["row"]["name"] for op in cloud.gateway_ops(p, NODES)
                    if op.get("table") == "Logical_Router_Port"))


def _ref_chassis(c: Cloud) -> dict[str, set[str]]:
    """SB `ref_chassis` of each HA chassis group, by chassis name."""
    return {g.name: {ch.name for ch in g.ref_chassis}
            for g in c.sb.tables["HA_Chassis_Group"].rows.values()}


def _check_projects(c: Cloud, cold: int) -> None:
    assert c.northd.stat("northd") == cold, "a project's change recomputed northd"
    # what the projects made is there: every VM up in the Northbound, its gateway port
    # redirected, its floating IPs in the flows
    ups = {r.name: r.up for r in c.nb.tables["Logical_Switch_Port"].rows.values()
           if r.name.startswith("lp-")}
    assert len(ups) == 3 * VMS and all(up in (True, [True]) for up in ups.values()), ups
    redirects = [r for r in c.sb.tables["Port_Binding"].rows.values()
                 if r.type == "chassisredirect"]
    assert len(redirects) == 3
    matches = " ".join(r.match for r in c.sb.tables["Logical_Flow"].rows.values())
    assert all(f"ip4.dst == {cloud.floating_ip(p, v)}" in matches
               for p in range(3) for v in range(VMS))
