"""Load balancers without a server: VIP and backend parsing as OVS parses them, where
an LB applies, the SB rows, service monitors and router VIP address sets."""

from __future__ import annotations

import itertools
import random

import pytest

from pyovsdb.northd.build.datapaths import build_datapaths
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.build.lb import (
    build_lb_data,
    build_sb_load_balancers,
    init_vip,
    parse_endpoint,
)
from pyovsdb.northd.build.service_monitor import build_service_monitors
from pyovsdb.northd.desired import DesiredDb, Ref
from pyovsdb.northd.testing import Nb


@pytest.mark.parametrize("text, expected", [
    ("10.0.0.1", ("10.0.0.1", 0)),
    ("10.0.0.1:80", ("10.0.0.1", 80)),
    ("[fd00::1]:8080", ("fd00::1", 8080)),
    ("[FD00:0::1]", ("fd00::1", 0)),
    ("fd00::1", ("fd00::1", 0)),  # more than one colon outside brackets: all host
    ("fd00::1:80", ("fd00::1:80", 0)),
    ("10.0.0.1:", ("10.0.0.1", 0)),
    ("10.0.0.1:65536", None),
    ("10.0.0.256", None),
    ("bad", None),
    ("010.0.0.1", None),
])
def test_parse_endpoint(text: str, expected: tuple[str, int] | None) -> None:
    ep = parse_endpoint(text)
    assert (None if ep is None else (ep.ip_str, ep.port)) == expected


def test_init_vip_drops_the_vip_on_a_bad_backend() -> None:
    ok = init_vip("10.0.0.1:80", "10.0.0.2:80,,10.0.0.3:81")
    assert not isinstance(ok, str) and [b.ip_str for b in ok[1]] == ["10.0.0.2", "10.0.0.3"]
    # what 23.03 logs after "Failed to initialize LB VIP: "
    port = "should be an IP address and a port number with : as a separator"
    assert init_vip("10.0.0.1:80", "10.0.0.2:80,bad") == f"bad: {port}."
    assert init_vip("10.0.0.1:80", "10.0.0.2") == f"10.0.0.2: {port}."  # VIP has a port
    assert init_vip("10.0.0.1", "10.0.0.2:80") == "10.0.0.2:80: should be an IP address."
    assert init_vip("10.0.0.1", "[fd00::2],x") == (
        "[fd00::2]: IP address family is different from VIP 10.0.0.1, "
        "x: should be an IP address.")
    assert init_vip("10.0.0.1", "") == (parse_endpoint("10.0.0.1"), ())


def _lb(nb: Nb, name: str, vips: dict[str, str], **cols: object) -> str:
    return nb.db.insert("Load_Balancer", name=name, vips=vips, **cols)


def test_where_lbs_apply_and_sb_rows(nb: Nb, inp: BuildInput) -> None:
    sw0, sw1 = nb.ls_add("sw0"), nb.ls_add("sw1")
    r0 = nb.lr_add("r0")
    nb.connect("sw1", "r0", "r0-sw1", "00:00:00:00:ff:01", "20.0.0.1/24")
    direct = _lb(nb, "direct", {"10.0.0.1:80": "10.0.0.2:80"}, protocol=["udp"],
                 options={"foo": "bar"})
    grouped = _lb(nb, "grouped", {"20.0.0.9": "20.0.0.2"})
    routed = _lb(nb, "routed", {"20.0.0.10": "20.0.0.3"})
    group = nb.db.insert("Load_Balancer_Group", name="g", load_balancer=[grouped])
    nb.db.add_to("Logical_Switch", sw0, "load_balancer", direct)
    nb.db.add_to("Logical_Switch", sw1, "load_balancer_group", group)
    nb.db.add_to("Logical_Router", r0, "load_balancer", routed, direct)
    data = build_lb_data(inp.nb, build_datapaths(inp))
    assert data.lbs[direct].switches == {sw0} and data.lbs[direct].routers == {r0}
    assert data.lbs[grouped].switches == {sw1}
    assert data.lbs[routed].switches == frozenset()
    # Reachable from r0: inside 20.0.0.0/24 (10.0.0.1 is not).
    assert data.reachable[r0] == ({"20.0.0.10"}, frozenset())
    sb = DesiredDb()
    build_sb_load_balancers(data, sb)
    assert sorted(r["name"] for r in sb["Load_Balancer"].rows.values()) == \
        ["direct", "grouped"]
    assert sb["Load_Balancer"].rows[direct] == {
        "name": "direct", "vips": {"10.0.0.1:80": "10.0.0.2:80"}, "protocol": "udp",
        "datapaths": [], "datapath_group": Ref("Logical_DP_Group", (sw0,)),
        "options": {"foo": "bar", "hairpin_orig_tuple": "true"},
        "external_ids": {"lb_id": direct}}
    assert sb["Logical_DP_Group"].rows[(sw0,)] == {
        "datapaths": [Ref("Datapath_Binding", sw0)]}
    # install_ls_lb_from_router: the router's LBs on its switches too.
    nb.db.insert("NB_Global", options={"install_ls_lb_from_router": "true"})
    data = build_lb_data(inp.nb, build_datapaths(inp))
    assert data.lbs[routed].switches == {sw1}
    assert data.lbs[direct].switches == {sw0, sw1}


def test_neighbor_responder_modes(nb: Nb, inp: BuildInput) -> None:
    r0 = nb.lr_add("r0")
    nb.lrp_add("r0", "lrp", "00:00:00:00:ff:01", "20.0.0.1/24", "fd00::1/64")
    lbs = [_lb(nb, "all", {"30.0.0.1": "", "[fd01::1]:80": "[fd01::2]:80"},
               options={"neighbor_responder": "all"}),
           _lb(nb, "none", {"20.0.0.5": ""}, options={"neighbor_responder": "none"}),
           _lb(nb, "reach", {"20.0.0.6": "", "fd00::6": "", "fe80::9": "", "40.0.0.1": ""}),
           _lb(nb, "bogus", {"20.0.0.7": ""}, options={"neighbor_responder": "x"})]
    nb.db.add_to("Logical_Router", r0, "load_balancer", *lbs)
    data = build_lb_data(inp.nb, build_datapaths(inp))
    v4, v6 = data.reachable[r0]
    assert v4 == {"30.0.0.1", "20.0.0.6", "20.0.0.7"}  # an unknown mode is "reachable"
    assert v6 == {"fd01::1", "fd00::6", "fe80::9"}  # link-local is on every port


def test_template_lb_vips(nb: Nb, inp: BuildInput) -> None:
    sw = nb.ls_add("sw0")
    lb = _lb(nb, "t6", {"^vip:^port": "^backends", "^vip2": "^b2"},
             options={"template": "true", "address-family": "ipv6"})
    lb4 = _lb(nb, "t4", {"^vip:80": "^backends"}, options={"template": "true"})
    nb.db.add_to("Logical_Switch", sw, "load_balancer", lb, lb4)
    data = build_lb_data(inp.nb, build_datapaths(inp))
    assert data.lbs[lb].template and data.lbs[lb].vips == ()
    sb = DesiredDb()
    build_sb_load_balancers(data, sb)
    assert sb["Load_Balancer"].rows[lb]["vips"] == {"[^vip]:^port": "^backends",
                                                    "[^vip2]": "^b2"}
    assert sb["Load_Balancer"].rows[lb4]["vips"] == {"^vip:80": "^backends"}


def _lb_checked(nb: Nb, name: str, vips: dict[str, str], check_vip: str,
                check_options: dict[str, str], **cols: object) -> None:
    """An LB with one health check (checks are not roots: inserted with their LB)."""
    row = nb.db.json_row("Load_Balancer", {"name": name, "vips": vips, **cols})
    row["health_check"] = ["named-uuid", "hc"]
    nb.db.transact([
        {"op": "insert", "table": "Load_Balancer_Health_Check", "uuid-name": "hc",
         "row": nb.db.json_row("Load_Balancer_Health_Check",
                               {"vip": check_vip, "options": check_options})},
        {"op": "insert", "table": "Load_Balancer", "row": row}])


def test_service_monitors(nb: Nb, inp: BuildInput) -> None:
    nb.ls_add("sw0")
    nb.lsp_add("sw0", "p1")
    nb.lsp_add("sw0", "off", enabled=[False])
    mappings = {"10.0.0.2": "p1:10.0.0.254", "10.0.0.3": "off:10.0.0.254",
                "10.0.0.4": "nowhere:10.0.0.254", "10.0.0.5": "p1:bad",
                "10.0.0.6": "p1"}
    backends = "10.0.0.2:80,10.0.0.3:80,10.0.0.4:80,10.0.0.5:80,10.0.0.6:80,10.0.0.7:80"
    # Not applied to any datapath: monitored all the same.
    _lb_checked(nb, "lb", {"10.0.0.1:80": backends, "10.0.0.9:80": "10.0.0.2:81"},
                "10.0.0.1:80", {"interval": "3"}, ip_port_mappings=mappings)
    _lb_checked(nb, "sctp", {"10.0.0.1:80": "10.0.0.2:80"}, "10.0.0.1:80", {},
                protocol=["sctp"], ip_port_mappings=mappings)
    dps = build_datapaths(inp)
    sb = DesiredDb()
    build_service_monitors(build_lb_data(inp.nb, dps), dps, "0a:00:00:00:00:fe", sb)
    assert sb["Service_Monitor"].rows == {("10.0.0.2", 80, "tcp", "p1"): {
        "ip": "10.0.0.2", "port": 80, "protocol": "tcp", "logical_port": "p1",
        "options": {"interval": "3"}, "src_mac": "0a:00:00:00:00:fe",
        "src_ip": "10.0.0.254"}}


def test_a_build_reusing_an_earlier_one_finds_what_a_fresh_build_finds(
        nb: Nb, inp: BuildInput) -> None:
    """`build_lb_data(reuse=...)` takes an earlier build's parsed load balancers, router
    port networks and reachable VIPs (adding those of load balancers a router gained):
    after each change it equals a build from scratch."""
    r0 = nb.lr_add("r0")
    nb.lrp_add("r0", "lrp", "00:00:00:00:ff:01", "20.0.0.1/24")
    first = _lb(nb, "first", {"20.0.0.5": "", "30.0.0.5": ""})
    nb.db.add_to("Logical_Router", r0, "load_balancer", first)
    lrp = nb.uuid("Logical_Router_Port", "lrp")
    data = build_lb_data(inp.nb, build_datapaths(inp))
    for change, reached in (
            (lambda: nb.db.add_to("Logical_Router", r0, "load_balancer",
                                  _lb(nb, "gained", {"20.0.0.6": ""})),
             {"20.0.0.5", "20.0.0.6"}),
            (lambda: nb.db.update("Logical_Router_Port", lrp, networks=["30.0.0.1/24"]),
             {"30.0.0.5"}),
            (lambda: nb.db.update("Load_Balancer", first, vips={"30.0.0.7": ""}), {"30.0.0.7"}),
            (lambda: nb.db.update("Load_Balancer", first,
                                  options={"neighbor_responder": "none"}), set())):
        change()
        dps = build_datapaths(inp)
        data = build_lb_data(inp.nb, dps, reuse=data)
        assert data.reachable == build_lb_data(inp.nb, dps).reachable
        assert data.reachable[r0] == (reached, frozenset())


@pytest.mark.parametrize("seed", range(4))
def test_memberships_found_from_the_rows_that_changed_equal_a_fresh_build(
        nb: Nb, inp: BuildInput, seed: int) -> None:
    """`build_lb_data(reuse=...)` brings each load balancer's switches and routers up
    to date from the datapaths and groups whose rows changed (`lb_members.changed`):
    after each of a random sequence of changes (datapaths made and deleted, their
    load balancers and groups set, groups and load balancers made, changed and
    deleted, router ports renumbered, `install_ls_lb_from_router` toggled) it equals a
    build from scratch, in content and in order, and so do the routers' reachable
    VIPs (some reached on each step)."""
    rng = random.Random(seed)
    nbg = nb.db.insert("NB_Global")
    lbs = [_lb(nb, f"lb{i}", {f"10.0.{i}.1": ""}) for i in range(4)]
    nb.db.transact([  # (groups are not roots: a switch keeps them)
        *({"op": "insert", "table": "Load_Balancer_Group", "uuid-name": f"g{i}",
           "row": nb.db.json_row("Load_Balancer_Group",
                                 {"name": f"g{i}", "load_balancer": lbs[i:i + 2]})}
          for i in range(2)),
        {"op": "insert", "table": "Logical_Switch", "row": {
            "name": "anchor", "load_balancer_group": ["set", [["named-uuid", "g0"],
                                                              ["named-uuid", "g1"]]]}}])
    groups = [nb.uuid("Load_Balancer_Group", f"g{i}") for i in range(2)]
    dps: list[tuple[str, str]] = []  # (table, uuid)
    names = itertools.count()

    def some(rows: list[str]) -> list[str]:
        return rng.sample(rows, rng.randrange(len(rows) + 1))

    def made() -> None:
        table, n = rng.choice(("Logical_Switch", "Logical_Router")), next(names)
        dps.append((table, nb.db.insert(table, name=f"dp{n}", load_balancer=some(lbs),
                                        load_balancer_group=some(groups))))
        if table == "Logical_Router":
            nb.lrp_add(f"dp{n}", f"lrp{n}", "00:00:00:00:ff:01",
                       rng.choice(("10.0.0.0/16", "10.1.0.0/16", "10.2.0.0/16")))

    def renumbered() -> None:  # (a router port's networks: the VIPs its router reaches)
        ports = list(nb.db.tables["Logical_Router_Port"].rows)
        if ports:
            nb.db.update("Logical_Router_Port", rng.choice(ports), networks=[rng.choice(
                ("10.0.0.1/16", "10.1.0.1/16", "10.2.0.1/16"))])

    def gone() -> None:
        if dps:
            nb.db.delete(*dps.pop(rng.randrange(len(dps))))

    def listed() -> None:
        if dps:
            table, uuid = rng.choice(dps)
            column, rows = rng.choice((("load_balancer", lbs), ("load_balancer_group", groups)))
            nb.db.update(table, uuid, **{column: some(rows)})

    def grouped() -> None:
        nb.db.update("Load_Balancer_Group", rng.choice(groups), load_balancer=some(lbs))

    def lb_made() -> None:
        lbs.append(_lb(nb, f"lb{len(lbs)}", {f"10.1.{len(lbs)}.1": ""}))

    def lb_changed() -> None:
        if lbs:
            nb.db.update("Load_Balancer", rng.choice(lbs),
                         vips={f"10.2.{rng.randrange(9)}.1": ""})

    def lb_gone() -> None:  # (taken from every list first: it is referenced strongly)
        if not lbs:
            return
        lb = lbs.pop(rng.randrange(len(lbs)))
        for table, uuid in dps:
            row = nb.db.tables[table].rows[uuid]
            nb.db.update(table, uuid, load_balancer=[u for u in row.value("load_balancer")
                                                     if u != lb])
        for g in groups:
            row = nb.db.tables["Load_Balancer_Group"].rows[g]
            nb.db.update("Load_Balancer_Group", g,
                         load_balancer=[u for u in row.value("load_balancer") if u != lb])
        nb.db.delete("Load_Balancer", lb)

    def peers() -> None:
        nb.db.update("NB_Global", nbg, options={"install_ls_lb_from_router": rng.choice(
            ("true", "false"))})

    steps = [made] * 4 + [gone, listed, listed, grouped, lb_made, lb_changed, lb_gone, peers,
                          renumbered, renumbered]
    data = build_lb_data(inp.nb, build_datapaths(inp))
    reached = 0
    for _ in range(60):
        rng.choice(steps)()
        now = build_datapaths(inp)
        data = build_lb_data(inp.nb, now, reuse=data)
        fresh = build_lb_data(inp.nb, now)
        assert [(k, lb.nb, lb.switches, lb.routers) for k, lb in data.lbs.items()] == \
            [(k, lb.nb, lb.switches, lb.routers) for k, lb in fresh.lbs.items()]
        assert data.reachable == fresh.reachable
        reached += sum(bool(v4) for v4, _ in data.reachable.values())
    assert reached > 20
