"""MAC_Binding aging without a server: expiry against the router's threshold, rows from
the future skipped, the next wake-up, the removal limit and its 5 s pause."""

from __future__ import annotations

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.build.datapaths import DatapathsData, build_datapaths
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.build.mac_binding_aging import (
    BULK_REMOVAL_DELAY_MS,
    age_mac_bindings,
    mac_binding_aging,
    router_thresholds,
)
from pyovsdb.northd.testing import LocalDb, Nb


def _setup(nb: Nb, sb: LocalDb, inp: BuildInput, thresholds: dict[str, str]
           ) -> tuple[DatapathsData, dict[str, str]]:
    """Routers named after `thresholds` (seconds, "" for none), their SB datapaths."""
    for name, seconds in thresholds.items():
        options = {"mac_binding_age_threshold": seconds} if seconds else {}
        nb.lr_add(name, options=options)
    dps = build_datapaths(inp)
    sb_dps = {}
    for dp in dps.routers.values():
        sb_dps[dp.name] = sb.insert("Datapath_Binding", tunnel_key=dp.tunnel_key,
                                    external_ids={"logical-router": dp.key,
                                                  "name": dp.name})
    return dps, sb_dps


def _mb(sb: LocalDb, dp: str, ip: str, timestamp: int) -> str:
    return sb.insert("MAC_Binding", logical_port="lrp", ip=ip, mac="00:00:00:00:00:01",
                     timestamp=timestamp, datapath=dp)


def _ips(sb: LocalDb, uuids: tuple[str, ...]) -> list[str]:
    rows: dict[str, IdlRow] = sb.tables["MAC_Binding"].rows
    return [rows[u].ip for u in uuids]


def test_expired_rows_and_next_wake(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    dps, dp = _setup(nb, sb, inp, {"r0": "60", "r1": ""})
    now = 1_000_000
    _mb(sb, dp["r0"], "10.0.0.1", now - 60_000)  # exactly at the threshold: expired
    _mb(sb, dp["r0"], "10.0.0.2", now - 90_000)
    _mb(sb, dp["r0"], "10.0.0.3", now - 45_000)  # 15 s left
    _mb(sb, dp["r0"], "10.0.0.4", now - 50_000)  # 10 s left
    _mb(sb, dp["r0"], "10.0.0.5", now + 5_000)  # from the future: skipped
    _mb(sb, dp["r1"], "10.0.0.6", 0)  # r1 does not age
    result = mac_binding_aging(dps, inp.nb, inp.sb, now_ms=now)
    assert _ips(sb, result.delete) == ["10.0.0.2", "10.0.0.1"]  # oldest first
    assert result.wake_in_ms == 10_000


def test_threshold_is_read_and_scaled_as_23_03_does(nb: Nb, sb: LocalDb,
                                                    inp: BuildInput) -> None:
    """`smap_get_uint` (a whole number from 0 to UINT_MAX, leading blanks and a sign
    taken), times 1000 in 32-bit unsigned arithmetic."""
    values = {"r0": " +60", "r1": "60 ", "r2": "-5", "r3": "4294968", "r4": "4294967296",
              "r5": "1_0"}
    dps, dp = _setup(nb, sb, inp, values)
    got = router_thresholds(dps, inp.sb)
    assert got == {dp["r0"]: 60_000, dp["r3"]: 4294968000 - (1 << 32)}


def test_nothing_to_age(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    dps, dp = _setup(nb, sb, inp, {"r0": "", "r1": "30"})
    _mb(sb, dp["r0"], "10.0.0.1", 0)
    result = mac_binding_aging(dps, inp.nb, inp.sb, now_ms=10**9)
    assert result.delete == () and result.wake_in_ms is None


def test_removal_limit_pauses_five_seconds(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    dps, dp = _setup(nb, sb, inp, {"r0": "1", "r1": "1"})
    nb.db.insert("NB_Global", options={"mac_binding_removal_limit": "3"})
    for i in range(4):
        _mb(sb, dp["r0"], f"10.0.0.{i}", i)
        _mb(sb, dp["r1"], f"10.1.0.{i}", i)
    result = mac_binding_aging(dps, inp.nb, inp.sb, now_ms=100_000)
    assert len(result.delete) == 3
    assert result.wake_in_ms == BULK_REMOVAL_DELAY_MS
    # The limit counts across routers, walked in tunnel key order.
    result = age_mac_bindings(sb.tables["MAC_Binding"].rows.values(),
                              {dp["r0"]: 1000, dp["r1"]: 1000}, now_ms=100_000,
                              removal_limit=5)
    assert len(result.delete) == 5 and result.wake_in_ms == BULK_REMOVAL_DELAY_MS
    assert _ips(sb, result.delete)[4] == "10.1.0.0"  # r0's four, then r1's oldest


def test_no_limit_deletes_everything_expired(nb: Nb, sb: LocalDb, inp: BuildInput) -> None:
    dps, dp = _setup(nb, sb, inp, {"r0": "1"})
    for i in range(10):
        _mb(sb, dp["r0"], f"10.0.0.{i}", i)
    result = mac_binding_aging(dps, inp.nb, inp.sb, now_ms=100_000)
    assert len(result.delete) == 10 and result.wake_in_ms is None
