"""The `northd` node's handler of NB_Global, kept apart for size: `nodes.northd.
NorthdNode` inherits it.

Rules kept here:
- The handshake columns alone are `sync_cfg`'s (it recomputes on them); the
  database's own connections are nobody's.
- Options no builder reads (the daemon's, the backoff and the probe interval; those of
  other releases; any a CMS adds: `global_cfg.copied_only`) move only the options
  copied to NB_Global and SB_Global, in place; of those, the ones only flows read
  (`FLOW_OPTIONS`) also have every flow built again (`PortsDelta.every_flow`).
- Options northd writes back (`WRITTEN_BACK`: its first run's `mac_prefix`,
  `max_tunid`...) changed or dropped move only the write-back, where the settings
  they make stay. A new MAC prefix moves IPAM's dynamic MACs
  (`datapaths_updated.prefix_again`).
- A new service monitor MAC moves its address set and the monitors and ARP/ND
  responders of the health-checked load balancers (`service_monitor.
  monitor_mac_moved`; the load balancers found again, those parsed again);
  `install_ls_lb_from_router` moves where the routers' load balancers apply (the load
  balancers found again). Both through `_lbs`, in place.
- The chassis features moving with an option in one run recompute (the SB handlers
  take them alone); so does a row made or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ...engine import Handled, Node
from ...idl.tracking import changed_columns
from ..build.datapaths_updated import prefix_again
from ..build.delta import PortsDelta
from ..build.global_cfg import FLOW_OPTIONS, copied_only, global_config, put_options
from ..build.service_monitor import monitor_mac_moved
from .tables import TableChange, Tables, either

if TYPE_CHECKING:
    from .northd import NorthdData  # noqa: F401  (the base's type argument)

# NB_Global columns only the handshake reads.
CFG_COLUMNS = frozenset(("nb_cfg", "nb_cfg_timestamp", "sb_cfg", "sb_cfg_timestamp",
                         "hv_cfg", "hv_cfg_timestamp"))
# NB_Global columns no builder reads (the database's own connections).
UNREAD_GLOBAL = frozenset(("connections", "ssl"))


class GlobalHandlers(Node["NorthdData", PortsDelta]):
    """The NB_Global handler of `NorthdNode` (see the module rules)."""

    def sb_tables(self) -> Tables:
        raise NotImplementedError  # (`NorthdNode`'s)

    def nb_tables(self) -> Tables:
        raise NotImplementedError  # (`NorthdNode`'s)

    def _lbs(self, reparse: set[str] | None = None, *, again: bool = False) -> Handled:
        raise NotImplementedError  # (`NorthdNode`'s)

    def on_nb_global(self, change: TableChange) -> Handled:
        if change.delta is None or not self.has_data:
            return Handled.UNHANDLED
        options: Mapping[str, str] | None = None
        lbs_moved = False  # (`install_ls_lb_from_router`: found again by `_lbs`)
        for rc in change.delta.values():
            if rc.old is None or rc.new is None:
                return Handled.UNHANDLED
            columns = set(changed_columns(rc))
            if "options" in columns and dict(rc.new.options) == self.data.extra.config.nb_options:
                columns.discard("options")  # (northd's own write-back, come back)
            columns -= UNREAD_GLOBAL
            if not columns <= CFG_COLUMNS | {"options"}:
                return Handled.UNHANDLED
            if "options" in columns:
                options = rc.new.options
                lbs_moved |= not copied_only(rc.old.options, rc.new.options)
        if options is None:
            return Handled.HANDLED_UNCHANGED
        data = self.data
        old = data.extra.config
        cfg = global_config(self.nb_tables(), self.sb_tables())  # (as a build makes it)
        if cfg.features != old.features:
            return Handled.UNHANDLED
        was = old.nb_options
        data.extra = replace(data.extra, config=cfg)
        delta = self.track()
        if cfg.mac_prefix != old.mac_prefix and not prefix_again(
                cfg.mac_prefix, data.core, self.sb_tables(), data.sb, data.nb, delta):
            return Handled.UNHANDLED
        delta.every_flow |= any(was.get(k) != cfg.nb_options.get(k) for k in FLOW_OPTIONS)
        put_options(cfg, data.nb, data.sb, delta)
        reparse: set[str] = set()
        if cfg.svc_monitor_mac != old.svc_monitor_mac:
            reparse = monitor_mac_moved(cfg.svc_monitor_mac, self.nb_tables(),
                                        data.extra.lbs, data.sb, delta)
        if not (lbs_moved or reparse):
            return Handled.HANDLED_UPDATED
        return either(Handled.HANDLED_UPDATED, self._lbs(reparse, again=True))
