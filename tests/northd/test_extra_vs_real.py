"""The extra builders against the real ovn-northd 23.03: an NB script is run through
the real northd on real servers, both databases are loaded (same UUIDs) into in-memory
replicas, and what `build_extra` wants for every table it owns must equal what the real
northd wrote, rows compared by content with references named by their keys."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build.datapaths import DatapathsData, build_datapaths
from pyovsdb.northd.build.extra import build_extra
from pyovsdb.northd.build.global_cfg import chassis_features
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.build.mac_binding_aging import mac_binding_aging
from pyovsdb.northd.build.service_monitor import offline_monitors
from pyovsdb.northd.desired import DesiredDb, Ref
from pyovsdb.northd.testing import LocalDb
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hypervisor import ControlPlane

SCRIPT = r"""
ls-add sw0
ls-add sw1
ls-add sw2
lsp-add sw0 p1 -- lsp-set-addresses p1 "00:00:00:00:00:01 10.0.0.11 fd00::11"
lsp-add sw0 p2 -- lsp-set-addresses p2 "00:00:00:00:00:02 10.0.0.12"
lsp-add sw1 p3 -- lsp-set-addresses p3 "00:00:00:00:00:03 20.0.0.13/24"
lsp-add sw2 p4 -- lsp-set-addresses p4 "00:00:00:00:00:04 30.0.0.14" unknown
lr-add r0
lrp-add r0 r0-sw0 00:00:00:00:ff:01 10.0.0.1/24 fd00::1/64
lrp-add r0 r0-sw1 00:00:00:00:ff:02 20.0.0.1/24
lsp-add sw0 sw0-r0 \
    -- set Logical_Switch_Port sw0-r0 type=router options:router-port=r0-sw0 addresses=router
lr-add r1
lrp-add r1 r1-sw2 00:00:00:00:ff:03 30.0.0.1/24
lb-add lb0 10.0.0.100:80 10.0.0.11:8080,10.0.0.12:8080 tcp
lb-add lb1 30.0.0.1 20.0.0.13
lb-add lb2 [fd00::100]:80 [fd00::11]:8080 udp
lb-add lb3 40.0.0.1:53 10.0.0.11:53 udp
lb-add lb4 50.0.0.1:80 10.0.0.11:80 tcp
set Load_Balancer lb4 options:neighbor_responder=all options:reject=true
--id=@lb create Load_Balancer name=lb5 'vips={"60.0.0.1:80"="10.0.0.12:80,bad"}' protocol=tcp \
    -- add Logical_Switch sw2 load_balancer @lb
ls-lb-add sw0 lb0
ls-lb-add sw1 lb0
ls-lb-add sw1 lb1
lr-lb-add r0 lb0
lr-lb-add r0 lb2
lr-lb-add r1 lb4
--id=@lb3 get Load_Balancer lb3 \
    -- --id=@g create Load_Balancer_Group name=g1 load_balancer=@lb3 \
    -- add Logical_Switch sw2 load_balancer_group @g
set Load_Balancer lb0 ip_port_mappings:10.0.0.11=p1:10.0.0.2 ip_port_mappings:10.0.0.12=p2:10.0.0.2
--id=@hc create Load_Balancer_Health_Check vip="10.0.0.100\:80" options:interval=5 \
    options:timeout=20 \
    -- add Load_Balancer lb0 health_check @hc
set Load_Balancer lb2 ip_port_mappings:\"[fd00::11]\"=\"p1:[fd00::2]\"
--id=@hc create Load_Balancer_Health_Check vip="\[fd00\:\:100\]\:80" options:interval=7 \
    -- add Load_Balancer lb2 health_check @hc
pg-add pg1 p1 p3
pg-add pg2 p2
pg-add pg3
create Address_Set name=as1 addresses=10.0.0.2,10.0.0.1
meter-add m1 drop 100 kbps
meter-add m2 drop 200 pktps 10
set Meter m2 fair=true
acl-add sw0 to-lport 1000 "ip4" allow-related
-- --log --meter=m2 --name=aclA acl-add sw0 from-lport 900 "ip4" allow
-- --log --meter=m1 acl-add sw1 from-lport 900 "ip4" allow
-- --log --meter=m2 acl-add sw2 from-lport 800 "ip4" allow
set Logical_Switch sw0 other_config:mcast_snoop=true other_config:mcast_querier=false
set Logical_Switch sw1 other_config:mcast_idle_timeout=10 other_config:mcast_table_size=100 \
    other_config:mcast_eth_src=00:00:00:00:aa:01
set Logical_Switch sw2 other_config:mcast_idle_timeout=1000 other_config:mcast_query_interval=5000
--id=@d create DNS records:vm1=10.0.0.11 records:VM2=AB::CD external_ids:foo=bar \
    -- add Logical_Switch sw0 dns_records @d \
    -- add Logical_Switch sw2 dns_records @d
--id=@d create DNS records:lonely=1.2.3.4
set Logical_Router r0 options:mac_binding_age_threshold=300
set NB_Global . options:foo=bar
sync
sb set Service_Monitor \
    $(ovn-sbctl --bare --columns=_uuid find Service_Monitor logical_port=p1 ip=10.0.0.11) \
    status=online
"""

# Chassis (one in VXLAN mode, one remote, features on some), a fixed cfg on each
# Chassis_Private, LBs installed on routers' switches, NB MACs in odd spellings, and
# MAC bindings to age.
CHASSIS = r"""
ls-add sw0
ls-add sw1
lsp-add sw0 p1 -- lsp-set-addresses p1 "00:00:00:00:00:01 10.0.0.11"
lr-add r0
lrp-add r0 r0-sw0 00:00:00:00:ff:01 10.0.0.1/24
lsp-add sw0 sw0-r0 \
    -- set Logical_Switch_Port sw0-r0 type=router options:router-port=r0-sw0 addresses=router
lrp-add r0 r0-sw1 00:00:00:00:ff:02 20.0.0.1/24
lsp-add sw1 sw1-r0 \
    -- set Logical_Switch_Port sw1-r0 type=router options:router-port=r0-sw1 addresses=router
lb-add lb0 10.0.0.100:80 10.0.0.11:8080 tcp
lr-lb-add r0 lb0
set NB_Global . options:install_ls_lb_from_router=true options:mac_prefix="0A:1:2" \
    options:svc_monitor_mac="0A:00:00:00:00:FF"
set Logical_Router r0 options:mac_binding_age_threshold=60
sb chassis-add ch1 vxlan 127.0.0.1
sb chassis-add ch2 geneve 127.0.0.2
sb chassis-add ch3 geneve 127.0.0.3
sb set Chassis ch3 other_config:is-remote=true
sb set Chassis ch1 other_config:ct-no-masked-label=true other_config:mac-binding-timestamp=true
sb set Chassis ch2 other_config:mac-binding-timestamp=true
sb --id=@c get Chassis ch1 \
    -- create Chassis_Private name=ch1 chassis=@c nb_cfg=7 nb_cfg_timestamp=1000
sb --id=@c get Chassis ch2 \
    -- create Chassis_Private name=ch2 chassis=@c nb_cfg=1 nb_cfg_timestamp=2000
sb --id=@c get Chassis ch3 \
    -- create Chassis_Private name=ch3 chassis=@c nb_cfg=0 nb_cfg_timestamp=3000
sync
sb create MAC_Binding logical_port=r0-sw0 ip=10.0.0.50 mac='"00:00:00:00:00:50"' timestamp=1 \
    datapath=$(ovn-sbctl --bare --columns=_uuid find Datapath_Binding external_ids:name=r0)
sb create MAC_Binding logical_port=r0-sw0 ip=10.0.0.51 mac='"00:00:00:00:00:51"' \
    timestamp=99999999999999 \
    datapath=$(ovn-sbctl --bare --columns=_uuid find Datapath_Binding external_ids:name=r0)
"""
# Template and SCTP load balancers, groups on routers, a disabled router, two-band
# meters, odd spellings copied as they are.
EDGES = r"""
ls-add sw0
lsp-add sw0 p1 -- lsp-set-addresses p1 "00:00:00:00:00:01 10.0.0.11 FD00::11"
lsp-add sw0 p2 -- lsp-set-addresses p2 "00:00:00:00:00:02 10.0.0.12" \
    -- lsp-set-enabled p2 disabled
lr-add r0
lrp-add r0 r0-sw0 00:00:00:00:ff:01 10.0.0.1/24 fd00::1/64
lr-add r1 -- set Logical_Router r1 enabled=false
lrp-add r1 r1-x 00:00:00:00:ff:09 10.0.0.2/24
--id=@lb create Load_Balancer name=t4 'vips={"^vip:^port"="^backends"}' protocol=tcp \
    options:template=true -- add Logical_Switch sw0 load_balancer @lb
--id=@lb create Load_Balancer name=t6 'vips={"^vip6:80"="^backends6"}' protocol=udp \
    options:template=true options:address-family=ipv6 \
    -- add Logical_Switch sw0 load_balancer @lb
lb-add s0 10.0.0.200:80 10.0.0.11:80 sctp
set Load_Balancer s0 ip_port_mappings:10.0.0.11=p1:10.0.0.2
--id=@hc create Load_Balancer_Health_Check vip="10.0.0.200\:80" \
    -- add Load_Balancer s0 health_check @hc
ls-lb-add sw0 s0
lb-add d0 10.0.0.201:80 10.0.0.11:80,10.0.0.12:80 tcp
set Load_Balancer d0 ip_port_mappings:10.0.0.11=p1:10.0.0.2 ip_port_mappings:10.0.0.12=p2:10.0.0.2
--id=@hc create Load_Balancer_Health_Check vip="10.0.0.201\:80" options:failure_count=9 \
    -- add Load_Balancer d0 health_check @hc
lb-add g0 10.0.0.150 10.0.0.11
lb-add g1 [fe80::150]:80 [fe80::11]:80
--id=@a get Load_Balancer g0 -- --id=@b get Load_Balancer g1 \
    -- --id=@g create Load_Balancer_Group name=lbg load_balancer=@a,@b \
    -- add Logical_Router r0 load_balancer_group @g -- add Logical_Router r1 load_balancer_group @g
lb-add off 10.0.0.160 10.0.0.11
lr-lb-add r1 off
--id=@b1 create Meter_Band action=drop rate=10 burst_size=1 \
    -- --id=@b2 create Meter_Band action=drop rate=20 \
    -- create Meter name=two unit=kbps bands=@b1,@b2
create Address_Set name=v6 addresses='"FD00::0001","10.0.0.1"'
pg-add pgx p1 p2
--id=@d create DNS records:UPPER=A.B.C -- add Logical_Switch sw0 dns_records @d
create Chassis_Template_Var chassis=hv1 variables:vip=10.0.0.99 variables:port=80 \
    external_ids:x=y
create Chassis_Template_Var chassis=hv2 variables:vip=10.0.0.98
"""
SCENARIOS = {"tables": SCRIPT, "chassis": CHASSIS, "edges": EDGES}


def _schema(path: str) -> dict[str, Any]:
    with open(path) as f:
        return dict(json.load(f))


def _select_all(remote: str, db: str, schema: dict[str, Any]) -> dict[str, list[Any]]:
    tables = sorted(schema["tables"])
    ops = [db] + [{"op": "select", "table": t, "where": []} for t in tables]
    out = subprocess.run(["ovsdb-client", "transact", remote, json.dumps(ops)],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return {t: r["rows"] for t, r in zip(tables, json.loads(out), strict=True)}


def _load(schema: dict[str, Any], dump: dict[str, list[Any]]) -> LocalDb:
    db = LocalDb(schema)
    ops = []
    for table, rows in dump.items():
        for row in rows:
            row = dict(row)
            uuid = row.pop("_uuid")[1]
            row.pop("_version", None)
            ops.append({"op": "insert", "table": table, "uuid": uuid, "row": row})
    db.transact(ops)
    return db


def run_script(cp: ControlPlane, script: str) -> None:
    """Each line an ovn-nbctl command (`sb ...`: ovn-sbctl; `sync`: wait for northd)."""
    env = dict(cp.env, OVN_NB_DB=cp.nb_remote, OVN_SB_DB=cp.sb_remote)
    for line in script.replace(" \\\n", " ").strip().splitlines():
        if line == "sync":
            cp.nbctl("--wait=sb", "sync")
            continue
        tool, args = ("ovn-sbctl", line[3:]) if line.startswith("sb ") else ("ovn-nbctl", line)
        p = subprocess.run(f"{tool} {args}", shell=True, capture_output=True, text=True,
                           timeout=60, env=env)
        assert p.returncode == 0, f"{line}: {p.stderr}"
    cp.nbctl("--wait=sb", "sync")


@dataclass(frozen=True)
class Real:
    scenario: str
    nb: LocalDb
    sb: LocalDb


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def real(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Real:
    """NB and SB as the real ovn-northd left them after a scenario (loaded in memory)."""
    cp = ControlPlane("real", tmp_path_factory.mktemp("real"))
    cp.start()
    try:
        run_script(cp, SCENARIOS[request.param])
        nb_schema, sb_schema = _schema(NB_SCHEMA), _schema(SB_SCHEMA)
        nb = _load(nb_schema, _select_all(cp.nb_remote, "OVN_Northbound", nb_schema))
        sb = _load(sb_schema, _select_all(cp.sb_remote, "OVN_Southbound", sb_schema))
    finally:
        cp.stop()
    return Real(request.param, nb, sb)


def _built(real: Real, now_ms: int = 0) -> tuple[DesiredDb, DesiredDb, DatapathsData]:
    nb_db, sb_db = real.nb, real.sb
    inp = BuildInput(nb=nb_db.tables, sb=sb_db.tables)
    dps = build_datapaths(inp)

    class Core:
        datapaths = dps

    sb, nb = DesiredDb(), DesiredDb()
    # committed_sb_cfg as the real northd had it: its last transaction carried nb_cfg.
    nbg = next(iter(nb_db.tables["NB_Global"].rows.values()))
    build_extra(inp, Core(), sb, nb, now_ms=now_ms, committed_sb_cfg=nbg.nb_cfg)
    return sb, nb, dps


def _name(table: str, row: IdlRow) -> Hashable:
    """The key our desired tables give the SB row `row` of `table`."""
    if table == "Datapath_Binding":
        ids = row.external_ids
        return ids.get("logical-switch") or ids.get("logical-router")
    if table == "Logical_DP_Group":
        return tuple(sorted(str(_name("Datapath_Binding", d)) for d in row.datapaths))
    if table == "Meter_Band":
        return (row.action, row.rate, row.burst_size)
    if table == "RBAC_Permission":
        return row["table"]  # `row.table` is the row's replica table
    raise AssertionError(f"no name for {table}")


def _norm(value: Any) -> Any:
    """SB typed values with references replaced by the keys of what they refer to."""
    if isinstance(value, IdlRow):
        return ("ref", value.table.name, _name(value.table.name, value))
    if isinstance(value, Ref):
        if value.table == "Meter_Band":  # keyed (meter name, content); named by content
            return ("ref", value.table, value.key[1:])
        return ("ref", value.table, value.key)
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_norm(v) for v in value), key=repr)
    return value


def _compare(table: str, sb: DesiredDb, sb_db: LocalDb) -> None:
    desired = sb[table]
    ours = sorted((_norm({c: row.get(c, _default(sb_db, table, c)) for c in desired.columns})
                   for row in desired.rows.values()), key=_order)
    theirs = [_norm({c: r[c] for c in desired.columns})
              for r in sb_db.tables[table].rows.values()]
    assert ours == sorted(theirs, key=_order)


def _order(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


def _default(db: LocalDb, table: str, column: str) -> Any:
    codec = db.schema.tables[table].columns[column].type.codec
    if codec.is_map:
        return {}
    if codec.max != 1:
        return []
    return None if codec.min == 0 else codec.default


@pytest.mark.parametrize("table", [
    "RBAC_Role", "RBAC_Permission", "DHCP_Options", "DHCPv6_Options", "Load_Balancer",
    "Service_Monitor", "Meter", "Meter_Band", "IP_Multicast", "DNS", "Port_Group",
    "Address_Set", "SB_Global", "Chassis_Template_Var"])
def test_table_equals_real_northd(real: Real, table: str) -> None:
    sb, _, _ = _built(real)
    if real.scenario == "tables" and table != "Chassis_Template_Var":
        assert sb[table].rows, f"{table}: the script makes rows, the builders none"
    if real.scenario == "edges" and table == "Chassis_Template_Var":
        assert len(sb[table].rows) == 2
    _compare(table, sb, real.sb)


def test_nb_global_written_back_as_real_northd(real: Real) -> None:
    _, nb, _ = _built(real)
    theirs = next(iter(real.nb.tables["NB_Global"].rows.values()))
    row = nb["NB_Global"].rows[theirs.uuid]
    assert row["options"] == theirs.options
    assert row["options"]["northd_internal_version"] == "23.03.1-20.27.0-70.6"
    for col in ("sb_cfg", "hv_cfg", "hv_cfg_timestamp", "nb_cfg_timestamp"):
        assert row[col] == theirs[col], col


def test_lb_datapath_groups_name_the_switches(real: Real) -> None:
    sb, _, dps = _built(real)
    names = {dp.key: dp.name for dp in dps.all()}
    groups = {sb["Load_Balancer"].rows[k]["name"]:
              sorted(names[d] for d in sb["Load_Balancer"].rows[k]["datapath_group"].key)
              for k in sb["Load_Balancer"].rows}
    assert groups == {
        # lb2 and lb4 are on routers only: no SB row; lb3 via sw2's group.
        "tables": {"lb0": ["sw0", "sw1"], "lb1": ["sw1"], "lb3": ["sw2"], "lb5": ["sw2"]},
        # install_ls_lb_from_router: the router's LB on both its switches.
        "chassis": {"lb0": ["sw0", "sw1"]},
        "edges": {"s0": ["sw0"], "t4": ["sw0"], "t6": ["sw0"]},
    }[real.scenario]


@pytest.mark.parametrize("real", ["chassis"], indirect=True)
def test_chassis_scenario_globals(real: Real) -> None:
    sb, nb, _ = _built(real)
    nbg = next(iter(nb["NB_Global"].rows.values()))
    # ch2 (local) is at 1 since 2000, behind nb_cfg; ch3 (at 0) is remote and ignored.
    assert (nbg["hv_cfg"], nbg["hv_cfg_timestamp"]) == (1, 2000)
    nb_cfg = next(iter(real.nb.tables["NB_Global"].rows.values())).nb_cfg
    assert nb_cfg > 1 and nbg["sb_cfg"] == nb_cfg
    options = sb["SB_Global"].rows[()]["options"]
    assert options["max_tunid"] == "4095"  # ch1 has a vxlan encap
    assert options["lb_hairpin_use_ct_mark"] == "false"  # ch2 lacks ct-no-masked-label
    assert options["mac_prefix"] == "0a:01:02"
    assert options["svc_monitor_mac"] == "0A:00:00:00:00:FF"  # kept as NB spells it
    assert sb["Address_Set"].rows["svc_monitor_mac"]["addresses"] == ["0a:00:00:00:00:ff"]


@pytest.mark.parametrize("real", ["chassis"], indirect=True)
def test_mac_binding_aging_as_real_northd(real: Real) -> None:
    """23.03 deleted the binding stamped at 1 ms and kept the one from the future; the
    same rows given to our aging pass give the same verdict."""
    left = {r.ip for r in real.sb.tables["MAC_Binding"].rows.values()}
    assert left == {"10.0.0.51"}
    dps = build_datapaths(BuildInput(nb=real.nb.tables, sb=real.sb.tables))
    assert chassis_features(real.sb.tables).mac_binding_timestamp
    dp = next(r.uuid for r in real.sb.tables["Datapath_Binding"].rows.values()
              if r.external_ids.get("name") == "r0")
    real.sb.insert("MAC_Binding", logical_port="r0-sw0", ip="10.0.0.50",
                   mac="00:00:00:00:00:50", timestamp=1, datapath=dp)
    now = int(time.time() * 1000)
    result = mac_binding_aging(dps, real.nb.tables, real.sb.tables, now_ms=now)
    by_uuid = real.sb.tables["MAC_Binding"].rows
    assert [by_uuid[u].ip for u in result.delete] == ["10.0.0.50"]
    assert result.wake_in_ms is None  # the future binding is skipped, not scheduled


@pytest.mark.parametrize("real", ["tables"], indirect=True)
def test_online_monitor_of_a_down_port_set_offline(real: Real) -> None:
    """23.03 set p1's monitor (set `online` by the script) back to `offline`: p1 is not
    bound; our pass names the same row once it is online again."""
    rows = real.sb.tables["Service_Monitor"].rows
    p1 = [r for r in rows.values() if r.logical_port == "p1" and r.ip == "10.0.0.11"]
    assert [r.status for r in p1] == ["offline"]
    sb, _, _ = _built(real)
    assert offline_monitors(sb["Service_Monitor"], real.sb.tables) == ()
    real.sb.update("Service_Monitor", p1[0].uuid, status=["online"])
    try:
        assert offline_monitors(sb["Service_Monitor"], real.sb.tables) == (p1[0].uuid,)
    finally:
        real.sb.update("Service_Monitor", p1[0].uuid, status=["offline"])
