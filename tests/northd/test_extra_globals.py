"""Globals without a server: the options northd adds, the random MACs drawn from the
given source, and the nb_cfg -> sb_cfg -> hv_cfg handshake case by case."""

from __future__ import annotations

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build.global_cfg import (
    OVN_INTERNAL_VERSION,
    build_globals,
    cfg_handshake,
    global_config,
    hv_cfg,
    mac_prefix,
    svc_monitor_mac,
    uuid_rand48,
)
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.desired import DesiredDb
from pyovsdb.northd.testing import LocalDb, Nb


def _fixed(value: int) -> object:
    return lambda purpose: value


def chassis(sb: LocalDb, name: str, encap: str = "geneve", **other_config: str) -> str:
    """A Chassis with its one Encap (a chassis has at least one; encaps are not roots)."""
    sb.transact([
        {"op": "insert", "table": "Encap", "uuid-name": "e",
         "row": {"type": encap, "ip": f"127.0.0.{len(sb.tables['Chassis'].rows) + 1}",
                 "chassis_name": name}},
        {"op": "insert", "table": "Chassis", "row": {
            "name": name, "encaps": ["named-uuid", "e"],
            "other_config": ["map", [list(kv) for kv in sorted(other_config.items())]]}}])
    return str(sb.last_results[1]["uuid"][1])


def _row(db: LocalDb, table: str, uuid: str) -> IdlRow:
    return db.tables[table].rows[uuid]


def test_options_added_and_normalized(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    nb.db.insert("NB_Global", options={"mac_prefix": "0A:B:0c:99", "foo": "bar"})
    cfg = global_config(inp.nb, inp.sb, lambda purpose: 0xFFFFFFFFFFFF)
    assert cfg.mac_prefix == "0a:0b:0c"
    # No svc_monitor_mac in NB: random, unicast and locally administered (fe, not ff).
    assert cfg.svc_monitor_mac == "fe:ff:ff:ff:ff:ff"
    assert cfg.nb_options == {"mac_prefix": "0a:0b:0c", "foo": "bar",
                              "svc_monitor_mac": "fe:ff:ff:ff:ff:ff",
                              "max_tunid": "16711680",
                              "northd_internal_version": OVN_INTERNAL_VERSION}
    assert cfg.sb_options == cfg.nb_options  # no chassis: every feature holds


def test_random_choices_come_from_the_source() -> None:
    assert mac_prefix({}, lambda p: 0x123456789ABC) == "12:34:56"
    assert mac_prefix({"mac_prefix": "00:00:00"}, lambda p: 0x013456789ABC) == "02:34:56"
    assert mac_prefix({"mac_prefix": "junk"}, lambda p: 0) == "02:00:00"
    assert svc_monitor_mac({"svc_monitor_mac": "0A:00:00:00:00:FE"}, lambda p: 0) == \
        ("0a:00:00:00:00:fe", True)
    assert svc_monitor_mac({"svc_monitor_mac": "nope"}, lambda p: 0) == \
        ("02:00:00:00:00:00", False)
    # The default source: stable per NB_Global UUID, different per purpose.
    rand = uuid_rand48("2b6d5341-9c4b-4d1a-9465-9ebac3026ce0")
    assert rand("mac_prefix") == uuid_rand48("2b6d5341-9c4b-4d1a-9465-9ebac3026ce0")(
        "mac_prefix")
    assert rand("mac_prefix") != rand("svc_monitor_mac")
    assert 0 <= rand("mac_prefix") < 1 << 48


def test_chassis_features_and_vxlan(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    chassis(sb, "ch1", "vxlan", **{"ct-no-masked-label": "true"})
    chassis(sb, "ch2", **{"is-remote": "true"})
    cfg = global_config(inp.nb, inp.sb, lambda p: 0)
    assert cfg.nb_options["max_tunid"] == "4095"
    assert "lb_hairpin_use_ct_mark" not in cfg.sb_options  # ch2 is remote
    chassis(sb, "ch3")
    cfg = global_config(inp.nb, inp.sb, lambda p: 0)
    assert cfg.sb_options["lb_hairpin_use_ct_mark"] == "false"
    assert "lb_hairpin_use_ct_mark" not in cfg.nb_options
    assert not cfg.features.ct_no_masked_label and not cfg.features.mac_binding_timestamp


def test_nb_cfg_copied_to_sb_with_timestamp(nb: Nb, sb: LocalDb) -> None:
    n = nb.db.insert("NB_Global", nb_cfg=5, nb_cfg_timestamp=10, sb_cfg=4,
                     sb_cfg_timestamp=20, hv_cfg=4, hv_cfg_timestamp=30)
    s = sb.insert("SB_Global", nb_cfg=4)
    hs = cfg_handshake(_row(nb.db, "NB_Global", n), _row(sb, "SB_Global", s), [],
                       committed_sb_cfg=4, now_ms=1000)
    assert (hs.sb_nb_cfg, hs.nb_cfg_timestamp, hs.next_cfg) == (5, 1000, 5)
    # sb_cfg waits for the commit of the transaction that carries 5.
    assert (hs.sb_cfg, hs.sb_cfg_timestamp) == (4, 20)
    # No chassis: hv_cfg follows nb_cfg at once, stamped 0 as 23.03 does.
    assert (hs.hv_cfg, hs.hv_cfg_timestamp) == (5, 0)
    sb.update("SB_Global", s, nb_cfg=5)
    hs = cfg_handshake(_row(nb.db, "NB_Global", n), _row(sb, "SB_Global", s), [],
                       committed_sb_cfg=5, now_ms=2000)
    assert (hs.nb_cfg_timestamp, hs.sb_cfg, hs.sb_cfg_timestamp) == (10, 5, 2000)


def test_no_commit_yet_leaves_sb_cfg(nb: Nb, sb: LocalDb) -> None:
    n = nb.db.insert("NB_Global", nb_cfg=3, sb_cfg=2, sb_cfg_timestamp=7)
    hs = cfg_handshake(_row(nb.db, "NB_Global", n), None, [], committed_sb_cfg=0,
                       now_ms=99)
    assert (hs.sb_cfg, hs.sb_cfg_timestamp) == (2, 7)
    assert hs.nb_cfg_timestamp == 99  # no SB_Global yet: its nb_cfg is 0


def test_hv_cfg_minimum_over_local_chassis(sb: LocalDb) -> None:
    local = chassis(sb, "local")
    remote = chassis(sb, "remote", **{"is-remote": "true"})
    rows = [sb.insert("Chassis_Private", name="a", chassis=local, nb_cfg=4,
                      nb_cfg_timestamp=100),
            sb.insert("Chassis_Private", name="b", nb_cfg=4, nb_cfg_timestamp=300),
            sb.insert("Chassis_Private", name="c", chassis=local, nb_cfg=6,
                      nb_cfg_timestamp=500),
            sb.insert("Chassis_Private", name="r", chassis=remote, nb_cfg=1,
                      nb_cfg_timestamp=900)]
    cps = [_row(sb, "Chassis_Private", u) for u in rows]
    # "b" has no Chassis row: counted (23.03 warns and counts it).
    assert hv_cfg(6, cps) == (4, 300)
    assert hv_cfg(3, cps) == (3, 0)  # every chassis ahead of nb_cfg
    # A counter that wrapped: 2^31 + 10 is "behind" 5.
    wrapped = sb.insert("Chassis_Private", name="w", nb_cfg=(1 << 31) + 10,
                        nb_cfg_timestamp=7)
    assert hv_cfg(5, [_row(sb, "Chassis_Private", wrapped)]) == ((1 << 31) + 10, 7)


def test_hv_cfg_timestamp_kept_while_hv_cfg_holds(nb: Nb, sb: LocalDb) -> None:
    n = nb.db.insert("NB_Global", nb_cfg=2, hv_cfg=1, hv_cfg_timestamp=55)
    cp = sb.insert("Chassis_Private", name="a", nb_cfg=1, nb_cfg_timestamp=77)
    hs = cfg_handshake(_row(nb.db, "NB_Global", n), None,
                       [_row(sb, "Chassis_Private", cp)], committed_sb_cfg=0, now_ms=1)
    assert (hs.hv_cfg, hs.hv_cfg_timestamp) == (1, 55)
    sb.update("Chassis_Private", cp, nb_cfg=2, nb_cfg_timestamp=88)
    hs = cfg_handshake(_row(nb.db, "NB_Global", n), None,
                       [_row(sb, "Chassis_Private", cp)], committed_sb_cfg=0, now_ms=1)
    assert (hs.hv_cfg, hs.hv_cfg_timestamp) == (2, 88)


def test_build_globals_desired_rows(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    n = nb.db.insert("NB_Global", nb_cfg=1, ipsec=True,
                     options={"mac_prefix": "0a:00:00", "svc_monitor_mac": "0a:0:0:0:0:1"})
    cfg = global_config(inp.nb, inp.sb)
    sbd, nbd = DesiredDb(), DesiredDb()
    hs = build_globals(inp.nb, inp.sb, cfg, sbd, nbd, committed_sb_cfg=0, now_ms=42)
    assert sbd["SB_Global"].rows[()] == {"nb_cfg": 1, "options": cfg.sb_options,
                                         "ipsec": True}
    assert cfg.nb_options["svc_monitor_mac"] == "0a:0:0:0:0:1"  # valid: kept as spelt
    assert cfg.svc_monitor_mac == "0a:00:00:00:00:01"
    assert not nbd["NB_Global"].owned
    assert nbd["NB_Global"].rows[n] == {
        "options": cfg.nb_options, "nb_cfg_timestamp": 42, "sb_cfg": 0,
        "sb_cfg_timestamp": 0, "hv_cfg": 1, "hv_cfg_timestamp": 0}
    assert hs.next_cfg == 1


def test_no_nb_global_writes_only_sb(sb: LocalDb, inp: BuildInput) -> None:
    cfg = global_config(inp.nb, inp.sb)
    sbd, nbd = DesiredDb(), DesiredDb()
    build_globals(inp.nb, inp.sb, cfg, sbd, nbd, committed_sb_cfg=0, now_ms=1)
    assert "NB_Global" not in nbd.tables
    assert sbd["SB_Global"].rows[()]["nb_cfg"] == 0
