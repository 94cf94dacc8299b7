"""IP multicast: one SB IP_Multicast row per logical switch, the IGMP/MLD snooping
settings ovn-controller applies to it.

Rules kept here (OVN 23.03, `init_mcast_info_for_switch_datapath`,
`store_mcast_info_for_switch_datapath` and `build_ip_mcast` in northd.c,
lib/ip-mcast-index.h):
- Keyed by the switch's datapath key; every switch has one, snooping on or off.
- From the switch's other_config: `mcast_snoop` (false), `mcast_querier` (true),
  `mcast_table_size` (2048), `mcast_idle_timeout` (300, clamped to 15..3600),
  `mcast_query_interval` (half the idle timeout, clamped to 1..3600),
  `mcast_query_max_response` (1), `mcast_eth_src`/`mcast_ip4_src`/`mcast_ip6_src`
  (written only while the switch has them: a removed key leaves the last value).
- `seq_no` is ovn-controller's and never managed here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..desired import DesiredDb, DesiredTable, Ref
from .datapaths import DatapathsData, smap_bool, smap_ullong

COLUMNS = ("datapath", "enabled", "querier", "table_size", "idle_timeout", "query_interval",
           "query_max_resp", "eth_src", "ip4_src", "ip6_src")
DEFAULT_MAX_ENTRIES = 2048
DEFAULT_IDLE_TIMEOUT_S = 300
MIN_IDLE_TIMEOUT_S, MAX_IDLE_TIMEOUT_S = 15, 3600
MIN_QUERY_INTERVAL_S, MAX_QUERY_INTERVAL_S = 1, MAX_IDLE_TIMEOUT_S
DEFAULT_QUERY_MAX_RESPONSE_S = 1
# The querier's sources: set only from a key the switch has, so a key taken away leaves
# the row's last value (23.03 sets these columns only `if (mcast_sw_info->eth_src)`).
SOURCES = (("eth_src", "mcast_eth_src"), ("ip4_src", "mcast_ip4_src"),
           ("ip6_src", "mcast_ip6_src"))


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF  # 23.03 keeps timeouts and intervals in uint32_t


def mcast_settings(other_config: Mapping[str, str]) -> dict[str, object]:
    idle = _u32(smap_ullong(other_config, "mcast_idle_timeout", DEFAULT_IDLE_TIMEOUT_S))
    idle = min(max(idle, MIN_IDLE_TIMEOUT_S), MAX_IDLE_TIMEOUT_S)
    query = _u32(smap_ullong(other_config, "mcast_query_interval", idle // 2))
    query = min(max(query, MIN_QUERY_INTERVAL_S), MAX_QUERY_INTERVAL_S)
    table_size = smap_ullong(other_config, "mcast_table_size", DEFAULT_MAX_ENTRIES)
    return {
        "enabled": smap_bool(other_config, "mcast_snoop", False),
        "querier": smap_bool(other_config, "mcast_querier", True),
        "table_size": table_size if table_size < (1 << 63) else table_size - (1 << 64),
        "idle_timeout": idle,
        "query_interval": query,
        "query_max_resp": _u32(smap_ullong(other_config, "mcast_query_max_response",
                                           DEFAULT_QUERY_MAX_RESPONSE_S)),
        **{column: other_config[key] for column, key in SOURCES if key in other_config},
    }


def build_ip_mcast(dps: DatapathsData, sb: DesiredDb) -> None:
    table = sb.add(DesiredTable("IP_Multicast", COLUMNS, keep=tuple(c for c, _ in SOURCES)))
    for key, dp in dps.switches.items():
        table.put(key, datapath=Ref("Datapath_Binding", key), **mcast_settings(
            dp.nb.other_config))
