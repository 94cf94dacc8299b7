"""Globals: the NB_Global and SB_Global rows, the options northd adds to them, and the
nb_cfg -> sb_cfg -> hv_cfg handshake that `ovn-nbctl --wait=sb|hv` waits on.

Rules kept here (OVN 23.03, `ovnnb_db_run` in northd.c, `update_sequence_numbers` in
ovn-northd.c):
- NB_Global and SB_Global are singletons. SB_Global's desired row is keyed by `()` and
  created if missing; NB_Global is a write-back (not owned), keyed by its row's UUID:
  with no NB_Global row nothing is written to NB (`ovn-nbctl init` makes it).
- NB_Global.options are written back with `mac_prefix` (always normalized to three
  lower-case hex octets), `svc_monitor_mac` (added only when NB has no valid one),
  `max_tunid` and `northd_internal_version`; SB_Global.options are the same map plus
  `lb_hairpin_use_ct_mark=false` while some local chassis lacks `ct-no-masked-label`.
- What 23.03 picks at random (the MAC prefix, the service monitor MAC) comes from a
  caller-given source of 48-bit numbers; the default derives them from the NB_Global
  row's UUID, so a run is a pure function of its inputs. Once written to NB the choice
  is read back and never made again.
- The cfg handshake is a pure function of NB_Global, SB_Global, Chassis_Private (and
  their chassis), the nb_cfg value whose SB transaction last committed (the daemon's
  `committed_sb_cfg`, 23.03's `sb_loop->cur_cfg`) and the loop's wall-clock start.
  Every value it returns is the column's full desired value (unchanged columns keep
  the value the row has), so the sync writes only what moved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb
from .alloc import DP_KEY_MAX, DP_KEY_MAX_VXLAN
from .datapaths import is_vxlan_mode, smap_bool
from .delta import PortsDelta
from .inputs import singleton

# ovn_get_internal_version(): "<package>-<SB schema version>-<N_OVNACTS>.<minor>", as the
# installed 23.03.1 northd writes it (ovn-controller compares it with its own).
OVN_INTERNAL_VERSION = "23.03.1-20.27.0-70.6"
INT32_MAX = (1 << 31) - 1

NB_GLOBAL_COLUMNS = ("options", "nb_cfg_timestamp", "sb_cfg", "sb_cfg_timestamp",
                     "hv_cfg", "hv_cfg_timestamp")
SB_GLOBAL_COLUMNS = ("nb_cfg", "options", "ipsec")

Rand48 = Callable[[str], int]
"""A source of random 48-bit numbers; the argument names what the number is for."""


def uuid_rand48(seed: str) -> Rand48:
    """The default source: numbers derived from `seed` (the NB_Global UUID) and purpose."""
    def rand(purpose: str) -> int:
        digest = hashlib.sha256(f"{seed}/{purpose}".encode()).digest()
        return int.from_bytes(digest[:6], "big")
    return rand



def _random_mac(bits: int) -> tuple[int, ...]:
    """`eth_addr_random`: random bytes, unicast, locally administered."""
    octets = [(bits >> (8 * (5 - i))) & 0xFF for i in range(6)]
    octets[0] = (octets[0] & ~1) | 2
    return tuple(octets)


def _fmt_mac(octets: Iterable[int]) -> str:
    return ":".join(f"{o:02x}" for o in octets)


_HEX = re.compile(r"[0-9a-fA-F]{1,2}")


def _scan_prefix(text: str) -> tuple[int, int, int] | None:
    """`ovs_scan(prefix, "%x:%x:%x")` with SCNx8: three hex numbers, extra text ignored."""
    parts: list[int] = []
    pos = 0
    for i in range(3):
        if i:
            if pos >= len(text) or text[pos] != ":":
                return None
            pos += 1
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        m = re.match(r"(?:0[xX])?([0-9a-fA-F]+)", text[pos:])
        if not m:
            return None
        parts.append(int(m.group(1), 16) & 0xFF)
        pos += m.end()
    return parts[0], parts[1], parts[2]


def mac_prefix(nb_options: Mapping[str, str], rand: Rand48) -> str:
    """`set_mac_prefix`: NB's `mac_prefix` if it scans and is not zero, else random."""
    given = nb_options.get("mac_prefix")
    scanned = _scan_prefix(given) if given is not None else None
    if scanned is None or scanned == (0, 0, 0):
        scanned = _random_mac(rand("mac_prefix"))[:3]  # type: ignore[assignment]
    assert scanned is not None
    return _fmt_mac(scanned)


def parse_mac(text: str) -> tuple[int, ...] | None:
    """`eth_addr_from_string`: six hex octets separated by colons."""
    parts = text.split(":")
    if len(parts) != 6 or not all(_HEX.fullmatch(p) for p in parts):
        return None
    return tuple(int(p, 16) for p in parts)


def svc_monitor_mac(nb_options: Mapping[str, str], rand: Rand48) -> tuple[str, bool]:
    """The service monitor MAC as northd formats it, and whether NB had a valid one."""
    given = nb_options.get("svc_monitor_mac")
    if given is not None:
        parsed = parse_mac(given)
        if parsed is not None:
            return _fmt_mac(parsed), True
    return _fmt_mac(_random_mac(rand("svc_monitor_mac"))), False


def max_tunid(sb: Mapping[str, ReplicaTable]) -> int:
    """`get_ovn_max_dp_key_local`: the local datapath key range's top."""
    return DP_KEY_MAX_VXLAN if is_vxlan_mode(sb) else DP_KEY_MAX


@dataclass(frozen=True, slots=True)
class ChassisFeatures:
    """What every local (not `is-remote`) chassis supports (`build_chassis_features`)."""

    ct_no_masked_label: bool = True
    mac_binding_timestamp: bool = True
    ct_lb_related: bool = True


def chassis_features(sb: Mapping[str, ReplicaTable]) -> ChassisFeatures:
    table = sb.get("Chassis")
    rows = [] if table is None else list(table.rows.values())
    local = [ch.other_config for ch in rows
             if not smap_bool(ch.other_config, "is-remote", False)]
    return ChassisFeatures(
        ct_no_masked_label=all(smap_bool(o, "ct-no-masked-label") for o in local),
        mac_binding_timestamp=all(smap_bool(o, "mac-binding-timestamp") for o in local),
        ct_lb_related=all(smap_bool(o, "ovn-ct-lb-related") for o in local))


# NB_Global options the daemon reads (its loop and connections) and no builder does:
# changed, they move only the options northd copies to NB_Global and SB_Global.
DAEMON_OPTIONS = frozenset(("northd-backoff-interval-ms", "northd_probe_interval",
                            "northd_trim_timeout"))
# NB_Global options only the logical flows read (through `GlobalConfig.nb_options`):
# changed, they move those copies and the flows (every datapath's, potentially).
FLOW_OPTIONS = frozenset(("controller_event", "ignore_lsp_down", "use_ct_inv_match",
                          "default_acl_drop", "debug_drop_collector_set",
                          "debug_drop_domain_id"))
# Options no builder of the core reads: changed in place.
COPIED_OPTIONS = DAEMON_OPTIONS | FLOW_OPTIONS
# Options northd writes back: changed (or dropped), they move nothing but the
# write-back itself where the settings they make stay (`GlobalConfig.mac_prefix`...).
WRITTEN_BACK = frozenset(("mac_prefix", "svc_monitor_mac", "max_tunid",
                          "northd_internal_version"))


# NB_Global options a builder of the core or the extra tables reads (besides those it
# writes back): changed, they recompute. Any other option changed is copied alone (to
# the write-back and SB_Global), in place, with the flows where `FLOW_OPTIONS` moved.
BUILDER_OPTIONS = frozenset(("install_ls_lb_from_router",))


def copied_only(old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    """Whether options `old` and `new` differ in options no builder reads alone."""
    return all(old.get(k) == new.get(k) for k in BUILDER_OPTIONS)


def options_only(old: Mapping[str, str], new: Mapping[str, str],
                 keys: frozenset[str] = COPIED_OPTIONS) -> bool:
    """Whether options `old` and `new` differ in `keys` alone."""
    return all(old.get(k) == new.get(k) for k in old.keys() | new.keys() if k not in keys)


@dataclass(frozen=True, slots=True)
class GlobalConfig:
    """The global settings of one run, as the other builders read them."""

    nb_options: dict[str, str]  # NB_Global.options as northd writes them back
    sb_options: dict[str, str]
    mac_prefix: str
    svc_monitor_mac: str
    features: ChassisFeatures
    ipsec: bool


def global_config(inp_nb: Mapping[str, ReplicaTable], inp_sb: Mapping[str, ReplicaTable],
                  rand: Rand48 | None = None) -> GlobalConfig:
    nb = singleton(inp_nb.get("NB_Global"))
    options: dict[str, str] = dict(nb.options) if nb is not None else {}
    if rand is None:
        rand = uuid_rand48(nb.uuid if nb is not None else "")
    original = dict(options)
    prefix = mac_prefix(original, rand)
    options["mac_prefix"] = prefix
    monitor_mac, valid = svc_monitor_mac(original, rand)
    if not valid:
        options["svc_monitor_mac"] = monitor_mac
    options["max_tunid"] = str(max_tunid(inp_sb))
    options["northd_internal_version"] = OVN_INTERNAL_VERSION
    features = chassis_features(inp_sb)
    return GlobalConfig(nb_options=options, sb_options=_sb_options(options, features),
                        mac_prefix=prefix, svc_monitor_mac=monitor_mac, features=features,
                        ipsec=bool(nb.ipsec) if nb is not None else False)


def _sb_options(nb_options: Mapping[str, str], features: ChassisFeatures) -> dict[str, str]:
    """SB_Global's options: NB's as written back, and the hairpin setting the chassis
    features ask for (by key: the same map whichever order NB's came in)."""
    sb_options = dict(nb_options)
    if not features.ct_no_masked_label:
        sb_options["lb_hairpin_use_ct_mark"] = "false"
    else:
        sb_options.pop("lb_hairpin_use_ct_mark", None)
    return dict(sorted(sb_options.items()))


def put_options(cfg: GlobalConfig, nb_desired: DesiredDb, sb_desired: DesiredDb,
                delta: PortsDelta) -> None:
    """NB_Global's and SB_Global's desired options made `cfg`'s, in place."""
    nb_global = nb_desired.tables.get("NB_Global")
    if nb_global is not None:
        for key in nb_global.rows:
            nb_global.set(key, options=cfg.nb_options)
            delta.touch("nb", "NB_Global", key)
    sb_global = sb_desired.tables.get("SB_Global")
    if sb_global is not None and () in sb_global.rows:
        sb_global.set((), options=cfg.sb_options)
        delta.touch("sb", "SB_Global", ())


def with_options(cfg: GlobalConfig, nb_options: dict[str, str]) -> GlobalConfig:
    """`cfg` with NB_Global's options `nb_options` (and SB_Global's as they make them)."""
    return dataclasses.replace(cfg, nb_options=nb_options,
                               sb_options=_sb_options(nb_options, cfg.features))


def with_features(cfg: GlobalConfig, features: ChassisFeatures) -> GlobalConfig:
    """`cfg` with the chassis features `features` (and SB_Global's options as they
    ask)."""
    return dataclasses.replace(cfg, features=features,
                               sb_options=_sb_options(cfg.nb_options, features))


# -- the cfg handshake -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CfgHandshake:
    """The handshake columns one run wants, and `next_cfg`: the value NB `sb_cfg` takes
    once this run's SB transaction commits (the daemon passes it back as
    `committed_sb_cfg` from then on)."""

    sb_nb_cfg: int
    nb_cfg_timestamp: int
    sb_cfg: int
    sb_cfg_timestamp: int
    hv_cfg: int
    hv_cfg_timestamp: int
    next_cfg: int


def _int(row: IdlRow | None, column: str) -> int:
    return int(row[column]) if row is not None else 0


def hv_cfg(nb_cfg: int, chassis_private: Iterable[IdlRow]) -> tuple[int, int]:
    """The minimum `nb_cfg` over chassis not `other_config:is-remote=true` (wrapping
    counters detected as 23.03 does), and the newest timestamp among those at it; with
    no chassis, `(nb_cfg, 0)`."""
    cfg, ts = nb_cfg, 0
    for cp in sorted(chassis_private, key=lambda r: r.uuid):
        chassis = cp.chassis
        if isinstance(chassis, IdlRow) and smap_bool(chassis.other_config, "is-remote"):
            continue
        value, stamp = int(cp.nb_cfg), int(cp.nb_cfg_timestamp)
        if value < cfg or value - cfg > INT32_MAX:
            cfg, ts = value, stamp
        elif value == cfg and stamp > ts:
            ts = stamp
    return cfg, ts


def cfg_handshake(nb_global: IdlRow | None, sb_global: IdlRow | None,
                  chassis_private: Iterable[IdlRow], *, committed_sb_cfg: int,
                  now_ms: int) -> CfgHandshake:
    nb_cfg = _int(nb_global, "nb_cfg")
    nb_cfg_ts = _int(nb_global, "nb_cfg_timestamp")
    if nb_cfg != _int(sb_global, "nb_cfg"):
        nb_cfg_ts = now_ms
    sb_cfg, sb_cfg_ts = _int(nb_global, "sb_cfg"), _int(nb_global, "sb_cfg_timestamp")
    if committed_sb_cfg and sb_cfg != committed_sb_cfg:
        sb_cfg, sb_cfg_ts = committed_sb_cfg, now_ms
    hv, hv_ts = hv_cfg(nb_cfg, chassis_private)
    if hv == _int(nb_global, "hv_cfg"):
        hv_ts = _int(nb_global, "hv_cfg_timestamp")
    return CfgHandshake(sb_nb_cfg=nb_cfg, nb_cfg_timestamp=nb_cfg_ts, sb_cfg=sb_cfg,
                        sb_cfg_timestamp=sb_cfg_ts, hv_cfg=hv, hv_cfg_timestamp=hv_ts,
                        next_cfg=nb_cfg)


def build_globals(nb_tables: Mapping[str, ReplicaTable], sb_tables: Mapping[str, ReplicaTable],
                  cfg: GlobalConfig, sb: DesiredDb, nb: DesiredDb, *, committed_sb_cfg: int,
                  now_ms: int) -> CfgHandshake:
    """The desired NB_Global (by UUID) and SB_Global (key `()`) rows; the handshake they
    carry."""
    nb_row = singleton(nb_tables.get("NB_Global"))
    sb_row = singleton(sb_tables.get("SB_Global"))
    cp_table = sb_tables.get("Chassis_Private")
    hs = cfg_handshake(nb_row, sb_row, [] if cp_table is None else cp_table.rows.values(),
                       committed_sb_cfg=committed_sb_cfg, now_ms=now_ms)
    values: dict[str, Any] = {"options": cfg.nb_options,
                              "nb_cfg_timestamp": hs.nb_cfg_timestamp,
                              "sb_cfg": hs.sb_cfg, "sb_cfg_timestamp": hs.sb_cfg_timestamp,
                              "hv_cfg": hs.hv_cfg, "hv_cfg_timestamp": hs.hv_cfg_timestamp}
    if nb_row is not None:
        nb.table("NB_Global", NB_GLOBAL_COLUMNS, owned=False).set(nb_row.uuid, **values)
    # SB_Global is owned: a second row (never made by northd) is deleted.
    sb.table("SB_Global", SB_GLOBAL_COLUMNS).put(
        (), nb_cfg=hs.sb_nb_cfg, options=cfg.sb_options, ipsec=cfg.ipsec)
    return hs
