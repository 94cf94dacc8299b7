"""The `mac_binding_aging` node (OVN's en-mac-binding-aging): MAC_Binding rows past
their router's age threshold, gated on every local chassis stamping its bindings.

Rules kept here:
- It reads `northd` (the routers and the chassis features), NB_Global, SB MAC_Binding
  and Datapath_Binding, the time (`now`, whose change is never reported) and its
  waker leaf, which the driver fires at the next expiry the last pass found.
- Switch ports `northd` changed in place (a `PortsDelta`) move no router and no
  chassis feature: nothing this node reads of `northd`. Nor do datapath bindings
  coming and going: no MAC binding names a binding being inserted, nor one deleted
  (a strong reference); a binding updated moves nothing unless the datapath its
  `external_ids` name (which router it is) changed. A router's age threshold changed
  in place (`PortsDelta.aging`) has it look again. Of NB_Global it reads `options` alone
  (`mac_binding_removal_limit`): `ovn-nbctl --wait` bumping `nb_cfg`, or an option
  only the daemon reads, moves nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...engine import Change, Group, Handled, Input, Leaf, Node
from ...idl.replica import ReplicaTable
from ..build.datapaths import datapath_key
from ..build.delta import PortsDelta
from ..build.global_cfg import COPIED_OPTIONS, WRITTEN_BACK, options_only
from ..build.mac_binding_aging import AgingResult, mac_binding_aging
from .northd import NorthdData, NorthdNode
from .tables import TableChange, TableLeaf, only, table_inputs


class MacBindingAgingNode(Node[AgingResult, None]):
    def __init__(self, northd: NorthdNode, waker: Leaf[int, int], now: Leaf[int, int],
                 nb: Mapping[str, TableLeaf], sb: Mapping[str, TableLeaf]) -> None:
        super().__init__(
            "mac_binding_aging", northd=Input(northd, self.on_northd),
            mac_binding_aging_waker=Input(waker),
            now=Input(now), nb=Group(table_inputs(nb, ("NB_Global",),
                                                  {"NB_Global": self.on_nb_global})),
            sb=Group(table_inputs(sb, ("MAC_Binding", "Datapath_Binding"),
                                  {"Datapath_Binding": self.on_datapath_binding})))

    def on_northd(self, change: Change[NorthdData, PortsDelta]) -> Handled:
        if change.delta is None or not self.has_data or change.delta.aging:
            return Handled.UNHANDLED
        return Handled.HANDLED_UNCHANGED

    def on_nb_global(self, change: TableChange) -> Handled:
        return only(change, lambda rc: rc.old is not None and rc.new is not None
                    and options_only(rc.old.options, rc.new.options,
                                     COPIED_OPTIONS | WRITTEN_BACK))

    def on_datapath_binding(self, change: TableChange) -> Handled:
        return only(change, lambda rc: rc.old is None or rc.new is None
                    or datapath_key(rc.old) == datapath_key(rc.new))

    def run(self, *, northd: NorthdData, mac_binding_aging_waker: int, now: int,
            nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> AgingResult:
        if not northd.extra.config.features.mac_binding_timestamp:
            return AgingResult((), None)
        return mac_binding_aging(northd.core.datapaths, nb, sb, now_ms=now)
