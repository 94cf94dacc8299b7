"""MAC_Binding aging: which SB MAC_Binding rows of routers with
`options:mac_binding_age_threshold` have expired, and when to look again.

Rules kept here (OVN 23.03, mac-binding-aging.c):
- Pure: the caller passes the rows, `now_ms` (wall clock, as the rows' `timestamp`)
  and the removal limit (`NB_Global.options:mac_binding_removal_limit`, 0 = none); the
  result names the rows to delete and the delay until the next expiry. Deleting is the
  daemon's, in its SB transaction.
- Aging runs only when every local chassis reports `mac-binding-timestamp` (older
  controllers write no timestamps); the caller checks `ChassisFeatures`.
- A row expires when `now - timestamp >= threshold` (seconds in the option, read as
  `smap_get_uint`; ms here, computed in 32 bits as 23.03 does, so it wraps);
  rows stamped in the future are skipped. When the limit is reached the run stops and
  the next one is due in 5 s (MAC_BINDING_BULK_REMOVAL_DELAY_MSEC).
- Deterministic: routers in datapath tunnel key order, rows in (timestamp, logical_port,
  ip, UUID) order, oldest first, where 23.03 walks a hash index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...util.cnum import UINT_MAX
from .datapaths import DatapathsData, smap_uint
from .inputs import singleton

BULK_REMOVAL_DELAY_MS = 5000


@dataclass(frozen=True, slots=True)
class AgingResult:
    delete: tuple[str, ...]  # MAC_Binding row UUIDs
    wake_in_ms: int | None  # None: nothing left to age


def age_mac_bindings(bindings: Iterable[IdlRow], thresholds_ms: Mapping[str, int], *,
                     now_ms: int, removal_limit: int) -> AgingResult:
    """`thresholds_ms`: SB Datapath_Binding UUID -> threshold, in the order to walk."""
    by_dp: dict[str, list[IdlRow]] = {}
    for mb in bindings:
        dp = mb.data["datapath"]
        if dp in thresholds_ms:
            by_dp.setdefault(dp, []).append(mb)
    delete: list[str] = []
    wake: int | None = None
    for dp, threshold in thresholds_ms.items():
        if not threshold:
            continue
        rows = sorted(by_dp.get(dp, ()), key=lambda r: (r.timestamp, r.logical_port, r.ip,
                                                       r.uuid))
        for mb in rows:
            elapsed = now_ms - int(mb.timestamp)
            if elapsed < 0:
                continue
            if elapsed >= threshold:
                delete.append(mb.uuid)
                if removal_limit and len(delete) == removal_limit:
                    return AgingResult(tuple(delete), BULK_REMOVAL_DELAY_MS)
            else:
                wake = threshold - elapsed if wake is None else min(wake, threshold - elapsed)
    return AgingResult(tuple(delete), wake)


def router_thresholds(dps: DatapathsData, sb: Mapping[str, ReplicaTable]) -> dict[str, int]:
    """SB Datapath_Binding UUID -> age threshold in ms, for routers with one, in
    tunnel key order."""
    table = sb.get("Datapath_Binding")
    by_router: dict[str, IdlRow] = {}
    for row in sorted([] if table is None else table.rows.values(), key=lambda r: r.uuid):
        key = row.external_ids.get("logical-router")
        if key and key in dps.routers:
            by_router.setdefault(key, row)
    out: dict[str, int] = {}
    for key, dp in sorted(dps.routers.items(), key=lambda kv: kv[1].tunnel_key):
        # seconds * 1000 in C's unsigned int: it wraps at 2^32 ms (49.7 days)
        threshold = smap_uint(dp.nb.options, "mac_binding_age_threshold") * 1000 & UINT_MAX
        if threshold and key in by_router:
            out[by_router[key].uuid] = threshold
    return out


def mac_binding_aging(dps: DatapathsData, nb: Mapping[str, ReplicaTable],
                      sb: Mapping[str, ReplicaTable], *, now_ms: int) -> AgingResult:
    """One aging pass over the replicas (the daemon gates it on chassis features)."""
    nbg = singleton(nb.get("NB_Global"))
    options = nbg.options if nbg is not None else {}
    mbs = sb.get("MAC_Binding")
    return age_mac_bindings([] if mbs is None else mbs.rows.values(),
                            router_thresholds(dps, sb), now_ms=now_ms,
                            removal_limit=smap_uint(options, "mac_binding_removal_limit"))
