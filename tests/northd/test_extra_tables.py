"""The smaller SB tables without a server: port groups and their address sets, NB
address sets, meters with the fair copies ACL logging uses, IP multicast settings,
DNS, RBAC and the DHCP option tables."""

from __future__ import annotations

from pyovsdb.northd.build.address_sets import build_address_sets, split_addresses
from pyovsdb.northd.build.datapaths import build_datapaths
from pyovsdb.northd.build.dhcp import build_dhcp
from pyovsdb.northd.build.dns import build_dns
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.build.ip_mcast import build_ip_mcast, mcast_settings
from pyovsdb.northd.build.lb import LbData
from pyovsdb.northd.build.meters import build_meters
from pyovsdb.northd.build.port_groups import build_port_groups
from pyovsdb.northd.build.rbac import build_rbac
from pyovsdb.northd.desired import DesiredDb, Ref
from pyovsdb.northd.testing import Nb


def test_split_addresses() -> None:
    assert split_addresses("00:00:00:00:00:01 10.0.0.1 fd00::1/64 10.0.0.2/24") == \
        (("10.0.0.1", "10.0.0.2"), ("fd00::1",))
    assert split_addresses("00:00:00:00:00:01 10.0.0.1 junk 10.0.0.9") == (("10.0.0.1",), ())
    assert split_addresses("router") == ((), ())
    assert split_addresses("dynamic") == ((), ())
    assert split_addresses("00:00:00:00:00:01 dynamic") == ((), ())
    assert split_addresses("00:00:00:00:00:01 FD00:0::1") == ((), ("fd00::1",))


def test_port_groups_per_switch_and_their_address_sets(nb: Nb, inp: BuildInput) -> None:
    nb.ls_add("sw0")
    nb.ls_add("sw1")
    a = nb.lsp_add("sw0", "a", addresses=["00:00:00:00:00:01 10.0.0.1", "unknown"])
    b = nb.lsp_add("sw0", "b", addresses=["00:00:00:00:00:02 dynamic"],
                   dynamic_addresses=["00:00:00:00:00:02 10.0.0.2 fd00::2"])
    c = nb.lsp_add("sw1", "c", addresses=["00:00:00:00:00:03 10.0.0.1"])
    nb.db.insert("Port_Group", name="pg", ports=[a, b, c])
    nb.db.insert("Port_Group", name="empty")
    nb.db.insert("Address_Set", name="as", addresses=["2.2.2.2", "1.1.1.1"])
    nb.db.insert("Address_Set", name="empty_ip4", addresses=["3.3.3.3"])  # NB wins
    dps = build_datapaths(inp)
    sb = DesiredDb()
    build_port_groups(inp.nb, dps, sb)
    assert sb["Port_Group"].rows == {"1_pg": {"name": "1_pg", "ports": ["a", "b"]},
                                     "2_pg": {"name": "2_pg", "ports": ["c"]}}
    build_address_sets(inp.nb, dps, LbData(), "0a:00:00:00:00:fe", sb)
    sets = {k: v["addresses"] for k, v in sb["Address_Set"].rows.items()}
    assert sets == {"svc_monitor_mac": ["0a:00:00:00:00:fe"],
                    "pg_ip4": ["10.0.0.1", "10.0.0.2"], "pg_ip6": ["fd00::2"],
                    "empty_ip4": ["3.3.3.3"], "empty_ip6": [],
                    "as": ["1.1.1.1", "2.2.2.2"]}


def test_meters_and_fair_copies(nb: Nb, inp: BuildInput) -> None:
    nb.db.transact([
        {"op": "insert", "table": "Meter_Band", "uuid-name": "b1",
         "row": {"action": "drop", "rate": 10, "burst_size": 2}},
        {"op": "insert", "table": "Meter_Band", "uuid-name": "b2",
         "row": {"action": "drop", "rate": 20}},
        {"op": "insert", "table": "Meter", "row": {
            "name": "fair", "unit": "pktps", "fair": True,
            "bands": ["set", [["named-uuid", "b1"], ["named-uuid", "b2"]]]}},
        {"op": "insert", "table": "Meter", "row": {
            "name": "plain", "unit": "kbps", "bands": ["named-uuid", "b2"]}}])
    nb.ls_add("sw0")
    acl = {"direction": "to-lport", "priority": 1, "match": "1", "action": "allow",
           "log": True}
    nb.db.transact([  # ACLs are not roots: inserted with their switch's reference
        *({"op": "insert", "table": "ACL", "uuid-name": m, "row": {**acl, "meter": m}}
          for m in ("fair", "plain")),
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw0"]],
         "mutations": [["acls", "insert", ["set", [["named-uuid", "fair"],
                                                   ["named-uuid", "plain"]]]]]}])
    acls = [str(r["uuid"][1]) for r in nb.db.last_results[:2]]
    sb = DesiredDb()
    build_meters(inp.nb, sb)
    def bands(meter: str, *which: tuple[int, int]) -> list[Ref]:
        return [Ref("Meter_Band", (meter, "drop", rate, burst)) for rate, burst in which]

    copy = f"fair__{acls[0]}"
    assert sb["Meter"].rows == {
        "fair": {"name": "fair", "unit": "pktps", "bands": bands("fair", (10, 2), (20, 0))},
        "plain": {"name": "plain", "unit": "kbps", "bands": bands("plain", (20, 0))},
        copy: {"name": copy, "unit": "pktps", "bands": bands(copy, (10, 2), (20, 0))}}
    # Each meter has band rows of its own (23.03 writes one set per meter).
    assert len(sb["Meter_Band"].rows) == 5


def test_ip_multicast_settings(nb: Nb, inp: BuildInput) -> None:
    assert mcast_settings({}) == {
        "enabled": False, "querier": True, "table_size": 2048, "idle_timeout": 300,
        "query_interval": 150, "query_max_resp": 1}
    s = mcast_settings({"mcast_snoop": "true", "mcast_idle_timeout": "5",
                        "mcast_query_max_response": "3", "mcast_ip4_src": "1.1.1.1"})
    assert (s["enabled"], s["idle_timeout"], s["query_interval"]) == (True, 15, 7)
    assert (s["query_max_resp"], s["ip4_src"]) == (3, "1.1.1.1")
    s = mcast_settings({"mcast_idle_timeout": "99999", "mcast_query_interval": "0",
                        "mcast_table_size": "junk"})
    assert (s["idle_timeout"], s["query_interval"], s["table_size"]) == (3600, 1, 2048)
    sw = nb.ls_add("sw0", other_config={"mcast_snoop": "true"})
    nb.lr_add("r0")  # routers have none
    sb = DesiredDb()
    build_ip_mcast(build_datapaths(inp), sb)
    assert list(sb["IP_Multicast"].rows) == [sw]
    assert sb["IP_Multicast"].rows[sw]["datapath"] == Ref("Datapath_Binding", sw)


def test_dns_rows(nb: Nb, inp: BuildInput) -> None:
    dns = nb.db.insert("DNS", records={"Host": "10.0.0.1 AB::CD"})
    nb.db.insert("DNS", records={"unused": "1.1.1.1"})
    sw0 = nb.ls_add("sw0", dns_records=[dns])
    sw1 = nb.ls_add("sw1", dns_records=[dns])
    sb = DesiredDb()
    build_dns(build_datapaths(inp), sb)
    assert sb["DNS"].rows == {dns: {
        "records": {"Host": "10.0.0.1 ab::cd"},
        "datapaths": sorted([Ref("Datapath_Binding", sw0), Ref("Datapath_Binding", sw1)],
                            key=lambda r: str(r.key)),
        "external_ids": {"dns_id": dns}}}


def test_rbac_and_dhcp_constants() -> None:
    sb = DesiredDb()
    build_rbac(sb)
    build_dhcp(sb)
    role = sb["RBAC_Role"].rows["ovn-controller"]
    assert set(role["permissions"]) == set(sb["RBAC_Permission"].rows)
    assert all(ref == Ref("RBAC_Permission", t) for t, ref in role["permissions"].items())
    assert sb["RBAC_Permission"].rows["Port_Binding"] == {
        "table": "Port_Binding", "authorization": [""], "insert_delete": False,
        "update": ["chassis", "additional_chassis", "encap", "additional_encap", "up",
                   "virtual_parent", "options"]}
    assert sb["DHCP_Options"].rows["classless_static_route"] == {
        "name": "classless_static_route", "code": 121, "type": "static_routes"}
    assert len(sb["DHCP_Options"]) == 38 and len(sb["DHCPv6_Options"]) == 4
