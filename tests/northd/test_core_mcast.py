"""Multicast_Group rows of IGMP groups (SB IGMP_Group written by ovn-controller) and
their relay to multicast routers, as the real ovn-northd 23.03 wrote them."""

from __future__ import annotations

from pyovsdb.northd.testing import (
    LocalDb,
    Nb,
    add_chassis,
    multicast_groups,
    run_core,
)


def test_igmp_groups_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    hv1 = add_chassis(sb, "hv1", "192.168.0.1")
    nb.ls_add("sw1", other_config={"mcast_snoop": "true"})
    for name in ("a", "b"):
        nb.lsp_add("sw1", name)
    nb.lsp_add("sw1", "c", options={"mcast_flood": "true"})
    nb.lsp_add("sw1", "ln", type="localnet", options={"network_name": "phys"})
    nb.lr_add("lr1", options={"mcast_relay": "true"})
    nb.connect("sw1", "lr1", "lr1-sw1", "00:00:00:00:ff:01", "10.1.0.1/24")
    nb.ls_add("sw2", other_config={"mcast_snoop": "true"})
    nb.lsp_add("sw2", "d")
    nb.connect("sw2", "lr1", "lr1-sw2", "00:00:00:00:ff:02", "10.2.0.1/24")
    run_core(nb.db, sb)
    dps = {r.external_ids["name"]: r.uuid for r in sb.tables["Datapath_Binding"].rows.values()}
    pbs = {r.logical_port: r.uuid for r in sb.tables["Port_Binding"].rows.values()}
    for address, dp, ports in (("239.1.1.1", "sw1", "abc"), ("ff0e::1", "sw1", "a"),
                               ("ff02::1", "sw1", "b"), ("mrouters", "sw2", "d"),
                               ("239.2.2.2", "sw2", "d"), ("239.3.3.3", "sw1", "c")):
        sb.insert("IGMP_Group", address=address, datapath=dps[dp], chassis=hv1,
                  ports=[pbs[p] for p in ports])
        run_core(nb.db, sb)
    nb.set("Logical_Switch_Port", "b", options={"mcast_flood_reports": "true"})
    run_core(nb.db, sb)
    assert multicast_groups(sb) == {
        "lr1 239.1.1.1": [32774, ["lr1-sw1"]],
        "lr1 239.2.2.2": [32776, ["lr1-sw2"]],
        "lr1 ff0e::1": [32775, ["lr1-sw1"]],  # ff02::1 is link-local: not relayed
        "sw1 239.1.1.1": [32774, ["a", "b", "ln"]],  # c floods anyway (239.3.3.3: none)
        "sw1 ff0e::1": [32775, ["a", "ln"]],
        "sw1 ff02::1": [32776, ["b", "ln"]],
        "sw2 239.2.2.2": [32774, ["d"]],
        "sw1 _MC_flood": [32768, ["a", "b", "c", "ln", "sw1-lr1-sw1"]],
        "sw1 _MC_flood_l2": [32772, ["a", "b", "c", "ln"]],
        "sw1 _MC_mrouter_flood": [32770, ["b", "sw1-lr1-sw1"]],
        "sw1 _MC_static": [32771, ["c"]],
        "sw2 _MC_flood": [32768, ["d", "sw2-lr1-sw2"]],
        "sw2 _MC_flood_l2": [32772, ["d"]],
        "sw2 _MC_mrouter_flood": [32770, ["d", "sw2-lr1-sw2"]],
    }


def test_stale_igmp_groups_are_deleted(nb: Nb, sb: LocalDb) -> None:
    """Observed: a group without chassis goes at once."""
    hv1 = add_chassis(sb, "hv1", "192.168.0.1")
    nb.ls_add("sw")
    nb.lsp_add("sw", "p")
    run_core(nb.db, sb)
    dp = next(iter(sb.tables["Datapath_Binding"].rows))
    pb = next(iter(sb.tables["Port_Binding"].rows))
    sb.insert("IGMP_Group", address="239.1.1.1", datapath=dp)
    kept = sb.insert("IGMP_Group", address="239.1.1.2", datapath=dp, chassis=hv1, ports=[pb])
    run_core(nb.db, sb)
    assert set(sb.tables["IGMP_Group"].rows) == {kept}
    assert "sw 239.1.1.2" in multicast_groups(sb)
