"""HA_Chassis_Group and HA_Chassis rows: gateway chassis of distributed gateway ports
and NB HA chassis groups, kept in step with NB, and ref_chassis from the claims."""

from __future__ import annotations

from typing import Any

from pyovsdb.northd.build.core import build_core, sb_feedback
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.desired import DesiredDb, DesiredTable
from pyovsdb.northd.testing import LocalDb, Nb, add_chassis, run_core


def groups(sb: LocalDb) -> dict[str, Any]:
    """Groups by name: members as (chassis-name, chassis or None, priority), ref_chassis."""
    out = {}
    for g in sb.tables["HA_Chassis_Group"].rows.values():
        members = sorted((h.external_ids["chassis-name"],
                          h.chassis.name if h.chassis is not None else None, h.priority)
                         for h in g.ha_chassis)
        out[g.name] = (members, sorted(c.name for c in g.ref_chassis))
    return out


def topology(nb: Nb, sb: LocalDb) -> None:
    add_chassis(sb, "gw1", "192.168.0.2")
    add_chassis(sb, "hv1", "192.168.0.1")
    nb.ls_add("sw")
    nb.lsp_add("sw", "vm", addresses=["00:00:00:00:00:01 10.0.0.2"])
    nb.lr_add("lr")
    nb.connect("sw", "lr", "lr-sw", "00:00:00:00:ff:01", "10.0.0.1/24")
    nb.ls_add("pub")
    nb.connect("pub", "lr", "lr-pub", "00:00:00:00:ff:02", "172.16.0.1/24")
    for chassis, prio in (("gw1", 20), ("gw2", 10)):
        nb.add_child("Logical_Router_Port", "lr-pub", "gateway_chassis", "Gateway_Chassis",
                     name=f"lr-pub-{chassis}", chassis_name=chassis, priority=prio)
    run_core(nb.db, sb)


def test_gateway_chassis_become_a_group_named_after_the_port(nb: Nb, sb: LocalDb) -> None:
    topology(nb, sb)
    # gw2 is not registered: its member has no chassis, only the name.
    assert groups(sb) == {"lr-pub": ([("gw1", "gw1", 20), ("gw2", None, 10)], [])}
    cr = next(r for r in sb.tables["Port_Binding"].rows.values()
              if r.logical_port == "cr-lr-pub")
    assert cr.ha_chassis_group.name == "lr-pub" and cr.type == "chassisredirect"
    add_chassis(sb, "gw2", "192.168.0.3")
    run_core(nb.db, sb)
    assert groups(sb)["lr-pub"][0] == [("gw1", "gw1", 20), ("gw2", "gw2", 10)]
    nb.set("Gateway_Chassis", "lr-pub-gw2", priority=30)
    run_core(nb.db, sb)
    assert groups(sb)["lr-pub"][0] == [("gw1", "gw1", 20), ("gw2", "gw2", 30)]


def test_group_goes_with_the_last_gateway_chassis(nb: Nb, sb: LocalDb) -> None:
    topology(nb, sb)
    nb.set("Logical_Router_Port", "lr-pub", gateway_chassis=[])
    run_core(nb.db, sb)
    assert groups(sb) == {}
    assert len(sb.tables["HA_Chassis"].rows) == 0  # collected with their group
    names = {r.logical_port for r in sb.tables["Port_Binding"].rows.values()}
    assert "cr-lr-pub" not in names


def test_nb_group_wins_over_gateway_chassis(nb: Nb, sb: LocalDb) -> None:
    topology(nb, sb)
    g = nb.db.insert("HA_Chassis_Group", name="grp")
    nb.add_child("HA_Chassis_Group", "grp", "ha_chassis", "HA_Chassis",
                 chassis_name="hv1", priority=5)
    nb.set("Logical_Router_Port", "lr-pub", ha_chassis_group=g)
    run_core(nb.db, sb)
    assert groups(sb) == {"grp": ([("hv1", "hv1", 5)], [])}


def test_ref_chassis_from_claims_behind_the_router(nb: Nb, sb: LocalDb) -> None:
    topology(nb, sb)
    pbs = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    hv1 = next(c.uuid for c in sb.tables["Chassis"].rows.values() if c.name == "hv1")
    sb.update("Port_Binding", pbs["vm"].uuid, chassis=hv1, up=True)
    run_core(nb.db, sb)
    assert groups(sb)["lr-pub"][1] == ["hv1"]
    # The same from the feedback pass alone, on a core built without it.
    sbd, nbd = DesiredDb(), DesiredDb()
    inp = BuildInput(nb=nb.db.tables, sb=sb.tables)
    core = build_core(inp, sbd, nbd, from_sb=False)
    built = sbd["HA_Chassis_Group"]
    assert built.rows["lr-pub"]["ref_chassis"] == []
    sb_feedback(inp, core, sbd, nbd)
    assert built.rows["lr-pub"]["ref_chassis"] == []  # the node's own table untouched
    assert [r.key for r in sbd["HA_Chassis_Group"].rows["lr-pub"]["ref_chassis"]] == ["hv1"]
    vm = nb.uuid("Logical_Switch_Port", "vm")
    assert nbd["Logical_Switch_Port"].rows[vm] == {"up": [True]}


def test_feedback_on_a_core_built_before_the_claim(nb: Nb, sb: LocalDb) -> None:
    """An engine node runs `sb_feedback` on a claim without rebuilding the core: it
    must read the bindings as they are now, not as the core saw them."""
    topology(nb, sb)
    inp = BuildInput(nb=nb.db.tables, sb=sb.tables)
    core = build_core(inp, DesiredDb(), DesiredDb(), from_sb=False)
    pbs = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    hv1 = next(c.uuid for c in sb.tables["Chassis"].rows.values() if c.name == "hv1")
    sb.update("Port_Binding", pbs["vm"].uuid, chassis=hv1, up=True)
    sbd, nbd = DesiredDb(), DesiredDb()
    sbd.add(_groups_of(inp))  # the groups as the (older) northd node holds them
    sb_feedback(inp, core, sbd, nbd)
    vm = nb.uuid("Logical_Switch_Port", "vm")
    assert nbd["Logical_Switch_Port"].rows[vm] == {"up": [True]}
    assert [r.key for r in sbd["HA_Chassis_Group"].rows["lr-pub"]["ref_chassis"]] == ["hv1"]


def _groups_of(inp: BuildInput) -> DesiredTable:
    sbd = DesiredDb()
    build_core(inp, sbd, DesiredDb(), from_sb=False)
    return sbd["HA_Chassis_Group"]
