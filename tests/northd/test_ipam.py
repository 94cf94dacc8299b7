"""IPAM: NB dynamic_addresses as the real ovn-northd 23.03 assigned them for the same
NB transactions, in the same order (values observed on that run)."""

from __future__ import annotations

import ipaddress

from pyovsdb.northd.build.ipam import eui64, parse_mac_prefix, switch_ipam
from pyovsdb.northd.testing import LocalDb, Nb, run_core


def dynamic(nb: Nb) -> dict[str, str | None]:
    return {r.name: r.dynamic_addresses
            for r in nb.db.tables["Logical_Switch_Port"].rows.values()}


def test_dynamic_addresses_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    def step() -> None:
        run_core(nb.db, sb)

    nb.db.insert("NB_Global", options={"mac_prefix": "0a:11:22"})
    nb.ls_add("sw0", other_config={"subnet": "10.0.0.0/24",
                                   "exclude_ips": "10.0.0.2 10.0.0.5..10.0.0.7"})
    step()
    for name, addresses in (("p1", "dynamic"), ("p2", "0a:11:22:00:00:99 10.0.0.8"),
                            ("p3", "dynamic"), ("p4", "00:00:00:00:00:44 dynamic"),
                            ("p5", "dynamic 10.0.0.50")):
        nb.lsp_add("sw0", name, addresses=[addresses])
        step()
    nb.lr_add("lr0")
    step()
    nb.lrp_add("lr0", "lr0-sw0", "00:00:00:00:ff:00", "10.0.0.1/24")
    step()
    nb.lsp_add("sw0", "sw0-lr0", type="router", addresses=["router"],
               options={"router-port": "lr0-sw0"})
    step()
    nb.lsp_add("sw0", "p6", addresses=["dynamic"])
    step()
    nb.ls_add("sw6", other_config={"ipv6_prefix": "fd00:1234::"})
    step()
    nb.lsp_add("sw6", "q1", addresses=["dynamic"])
    step()
    nb.lsp_add("sw6", "q2", addresses=["dynamic fd00:1234::99"])
    step()
    nb.ls_add("swd", other_config={"subnet": "192.168.1.0/29", "ipv6_prefix": "fd00:9::/64"})
    step()
    for name in ("d1", "d2"):
        nb.lsp_add("swd", name, addresses=["dynamic"])
        step()
    nb.ls_add("swm", other_config={"mac_only": "true"})
    step()
    nb.lsp_add("swm", "m1", addresses=["dynamic"])
    step()
    nb.ls_add("swn")
    step()
    nb.lsp_add("swn", "n1", addresses=["dynamic"])
    step()
    assert dynamic(nb)["m1"] == "0a:11:22:00:00:03"  # no IPv4: the first free suffix
    nb.set("Logical_Switch_Port", "p5", addresses=["dynamic 10.0.0.60"])
    step()
    nb.set("Logical_Switch", "sw0", other_config={"subnet": "10.0.0.0/24",
                                                  "exclude_ips": "10.0.0.4"})
    step()
    nb.set("Logical_Switch_Port", "p3", addresses=["00:00:00:00:00:33 dynamic"])
    step()
    nb.set("Logical_Switch", "swd", other_config={"subnet": "192.168.2.0/29",
                                                  "ipv6_prefix": "fd00:9::/64"})
    step()
    for name in ("d3", "d4", "d5", "d6", "d7"):
        nb.lsp_add("swd", name, addresses=["dynamic"])
        step()
    nb.set("Logical_Switch", "swm", other_config={})
    step()
    assert dynamic(nb) == {
        "d1": "0a:11:22:a8:01:03 192.168.2.2 fd00:9::811:22ff:fea8:103",
        "d2": "0a:11:22:a8:01:04 192.168.2.3 fd00:9::811:22ff:fea8:104",
        "d3": "0a:11:22:a8:02:05 192.168.2.4 fd00:9::811:22ff:fea8:205",
        "d4": "0a:11:22:a8:02:06 192.168.2.5 fd00:9::811:22ff:fea8:206",
        "d5": "0a:11:22:a8:02:07 192.168.2.6 fd00:9::811:22ff:fea8:207",
        # the /29 is full: MAC and IPv6 only
        "d6": "0a:11:22:00:00:05 fd00:9::811:22ff:fe00:5",
        "d7": "0a:11:22:00:00:06 fd00:9::811:22ff:fe00:6",
        "m1": None,  # mac_only removed: cleared
        "n1": None,  # no IPAM on swn
        "p1": "0a:11:22:00:00:04 10.0.0.3",
        "p2": None,
        "p3": "00:00:00:00:00:33 10.0.0.2",
        "p4": "00:00:00:00:00:44 10.0.0.9",
        "p5": "0a:11:22:00:00:33 10.0.0.60",  # the requested IPv4 moved, the MAC kept
        "p6": "0a:11:22:00:00:0b 10.0.0.10",
        "q1": "0a:11:22:00:00:01 fd00:1234::811:22ff:fe00:1",
        "q2": "0a:11:22:00:00:02 fd00:1234::99",
        "sw0-lr0": None,
    }
    # Nothing left to do: a further run writes nothing to either database.
    assert run_core(nb.db, sb) == [0]


def test_without_prefix_no_mac_is_assigned_until_one_is_given(nb: Nb, sb: LocalDb) -> None:
    from pyovsdb.northd import sync, sync_apply
    from pyovsdb.northd.build.core import build_core
    from pyovsdb.northd.build.inputs import BuildInput
    from pyovsdb.northd.desired import DesiredDb

    nb.ls_add("sw", other_config={"subnet": "10.1.0.0/24"})
    nb.lsp_add("sw", "p", addresses=["dynamic"])
    run_core(nb.db, sb)
    assert dynamic(nb) == {"p": None}
    sbd, nbd = DesiredDb(), DesiredDb()
    core = build_core(BuildInput(nb=nb.db.tables, sb=sb.tables), sbd, nbd,
                      mac_prefix="0a:bc:de")
    assert core.dynamic_addresses == {"p": "0a:bc:de:01:00:03 10.1.0.2"}
    txn = nb.db.transaction()
    sync_apply.apply(sync.plan(nbd, nb.db.tables), txn)
    nb.db.commit(txn)
    assert dynamic(nb) == {"p": "0a:bc:de:01:00:03 10.1.0.2"}
    assert [str(a.ipv4[0].addr) for a in core.ports.ports["p"].lsp_addrs] == ["10.1.0.2"]


def test_parsing_helpers() -> None:
    assert parse_mac_prefix("0a:11:22") == 0x0A1122 << 24
    assert parse_mac_prefix("00:00:00") is None
    assert parse_mac_prefix("zz") is None
    info = switch_ipam({"subnet": "10.0.0.0/30", "exclude_ips": "10.0.0.9"})
    assert (info.start, info.total, info.taken) == (int(ipaddress.IPv4Address("10.0.0.1")),
                                                    3, {0})
    assert info.unused() == int(ipaddress.IPv4Address("10.0.0.2"))
    assert not switch_ipam({"subnet": "10.0.0.1"}).active  # no mask: bad subnet
    assert switch_ipam({"ipv6_prefix": "fd00::/48"}).ipv6_prefix is None
    assert str(eui64(0x0A1122000001, ipaddress.IPv6Address("fd00::"))) == \
        "fd00::811:22ff:fe00:1"
