"""Every SB table northd fills besides the core ones (datapaths, port bindings,
multicast groups, HA chassis groups) and logical flows: globals and the cfg handshake,
RBAC, DHCP option tables, load balancers and their datapath groups, template
variables, service monitors, meters, IP multicast, DNS, port groups and address sets.

Rules kept here:
- Pure: `build_extra` reads the NB and SB replicas and the core builders' result and
  fills the desired NB and SB databases; the clock (`now_ms`), the nb_cfg of the last
  committed SB transaction and the source of 23.03's random MACs are parameters.
- Builders run in 23.03's order where one feeds another: globals first (the service
  monitor MAC feeds service monitors and address sets), load balancers before service
  monitors and address sets (router VIP sets).
- MAC_Binding aging deletes rows northd does not own: it is a separate pure function
  (`build.mac_binding_aging.mac_binding_aging`) the daemon runs on its own timer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..desired import DesiredDb
from .address_sets import build_address_sets
from .datapaths import DatapathsData
from .dhcp import build_dhcp
from .dns import build_dns
from .global_cfg import CfgHandshake, GlobalConfig, Rand48, build_globals, global_config
from .inputs import BuildInput
from .ip_mcast import build_ip_mcast
from .lb import LbData, build_lb_data, build_sb_load_balancers
from .lb_templates import build_template_vars
from .meters import build_meters
from .port_groups import build_port_groups
from .rbac import build_rbac
from .service_monitor import build_service_monitors


class CoreLike(Protocol):
    """What the extra builders read of the core builders' result."""

    @property
    def datapaths(self) -> DatapathsData: ...


@dataclass(frozen=True, slots=True)
class ExtraData:
    config: GlobalConfig
    cfg: CfgHandshake  # `cfg.next_cfg`: what the daemon records once the SB txn commits
    lbs: LbData


def build_extra(inp: BuildInput, core: CoreLike, sb: DesiredDb, nb: DesiredDb, *,
                now_ms: int, committed_sb_cfg: int = 0, rand48: Rand48 | None = None,
                config: GlobalConfig | None = None) -> ExtraData:
    """`config`: the run's `global_config(inp.nb, inp.sb, rand48)` if the caller made it
    first (to give IPAM the same MAC prefix: `build_core(..., mac_prefix=...)`)."""
    dps = core.datapaths
    if config is None:
        config = global_config(inp.nb, inp.sb, rand48)
    cfg = build_globals(inp.nb, inp.sb, config, sb, nb, committed_sb_cfg=committed_sb_cfg,
                        now_ms=now_ms)
    build_rbac(sb)
    build_dhcp(sb)
    lbs = build_lb_data(inp.nb, dps)
    build_sb_load_balancers(lbs, sb)
    build_template_vars(inp.nb, sb)
    build_service_monitors(lbs, dps, config.svc_monitor_mac, sb)
    build_meters(inp.nb, sb)
    build_ip_mcast(dps, sb)
    build_dns(dps, sb)
    build_port_groups(inp.nb, dps, sb)
    build_address_sets(inp.nb, dps, lbs, config.svc_monitor_mac, sb)
    return ExtraData(config=config, cfg=cfg, lbs=lbs)
