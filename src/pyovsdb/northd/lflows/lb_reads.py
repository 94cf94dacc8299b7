"""What flows other than a load balancer's own read of it: where a load balancer
changed, which datapaths must be built again whole, and where its own flows alone
(those asked for on its behalf, `("lb", key)`, and its VIPs', `("lb", key, vip)`) are
built again; and which of its own (`lb_owners`).

Rules kept here:
- A switch's flows read of its load balancers only whether one of them has NB `vips`
  (`has_lb_vip`: the pre-LB, stateful and hairpin stages).
- A router's flows, and those its ports ask for on their peer switches, read of its
  load balancers: whether one has NB `vips` (`has_lb_vip`); whether it reaches VIPs
  of each family (the `$_rtr_lb_*` ARP/ND responders exist while it does: the sets'
  addresses are rows, not flows; `options:neighbor_responder` decides which VIPs
  count); and each VIP that is one of its ports' addresses (the drops of its own
  destinations), in one of its ports' networks (the ARP/ND requests the peer switch
  sends to that port alone) or a NAT external IP. A VIP that appears or goes on a
  router is checked against those; one that another load balancer of the router
  still has counts as changed too (a needless rebuild, never a missed one).
- A load balancer's own flows on a datapath read it and that datapath's facts alone:
  one that only comes to or leaves some datapaths (a switch or a router that lists
  it or its group made, deleted or changed) has them built again on those alone.
- Load balancers that are routable (`add_route`), templated or health checked never
  reach here: `build.lb_incremental` refuses them (their VIPs reach other routers,
  ovn-controller expands them, their backends follow the SB).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ...idl.tracking import changed_columns
from ...ovsdb.changeset import RowChange
from ..build.datapaths import Datapath, DatapathsData
from ..build.lb import LbData, LoadBalancer
from ..build.ports import PortsData
from .context import ref_rows
from .ls_lb import switch_vips
from .table import Owner


def lb_rebuilds(old: LbData, new: LbData, keys: Iterable[str], datapaths: DatapathsData,
                ports: PortsData) -> tuple[set[str], set[str]]:
    """For the load balancers `keys` (changed from `old` to `new`): the datapaths to
    build again whole, and every datapath where their own flows may change (where they
    ask for flows, before or after; of one that only moved, where it came or went)."""
    touched: set[str] = set()
    flipped: set[tuple[str, str]] = set()  # (attribute, datapath): `has_lb_vip` may move
    candidates: dict[str, set[str]] = {}  # router -> VIPs that came or went on it
    for key in keys:
        was, now = old.lbs.get(key), new.lbs.get(key)
        moved = _moved_only(was, now)
        for attr in ("switches", "routers"):
            dps = _on(was, attr) ^ _on(now, attr) if moved else _on(was, attr) | _on(now, attr)
            touched |= dps
            flipped.update((attr, dp) for dp in dps
                           if _has_vips(was, attr, dp) != _has_vips(now, attr, dp))
        for dp in _on(was, "routers") | _on(now, "routers"):
            candidates.setdefault(dp, set()).update(_ips(was, dp) ^ _ips(now, dp))
    whole = {dp for attr, dp in flipped
             if _has_lb_vip(old, attr, dp) != _has_lb_vip(new, attr, dp)}
    empty: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    for key, ips in candidates.items():
        router = datapaths.routers.get(key)
        reach_was, reach_now = old.reachable.get(key, empty), new.reachable.get(key, empty)
        if key not in whole and (
                router is None or (ips and _read_by_router(ips, router, ports))
                or [bool(f) for f in reach_was] != [bool(f) for f in reach_now]):
            whole.add(key)
    return whole, touched


def lb_owners(old: LoadBalancer | None, new: LoadBalancer | None
              ) -> tuple[frozenset[Owner], frozenset[str] | None]:
    """The owners of a changed load balancer's own flows to build again, and the keys
    of the VIPs whose flows alone those are (None: every flow of it). Only its VIPs
    changed (its other columns, switches and routers are the same): the VIPs added,
    taken away or whose backends changed; else all of them."""
    key = (new or old).key  # type: ignore[union-attr]
    was = {v.key: v for v in switch_vips(old)} if old is not None else {}
    now = {v.key: v for v in switch_vips(new)} if new is not None else {}
    if old is None or new is None or (old.switches, old.routers) != (new.switches, new.routers) \
            or set(changed_columns(RowChange(key, old.nb, new.nb))) - {"vips"}:
        return frozenset({("lb", key), *(("lb", key, v) for v in was.keys() | now.keys())}), None
    vips = frozenset(v for v in was.keys() | now.keys() if was.get(v) != now.get(v))
    return frozenset(("lb", key, v) for v in vips), vips


def _moved_only(old: LoadBalancer | None, new: LoadBalancer | None) -> bool:
    """Whether a load balancer changed in the datapaths it is on alone (its row and its
    VIPs as they were): its flows on the others stay as they are."""
    return old is not None and new is not None \
        and not set(changed_columns(RowChange(new.key, old.nb, new.nb))) \
        and switch_vips(old) == switch_vips(new)


def _on(lb: LoadBalancer | None, attr: str) -> frozenset[str]:
    return getattr(lb, attr) if lb is not None else frozenset()


def _has_vips(lb: LoadBalancer | None, attr: str, dp: str) -> bool:
    return lb is not None and dp in getattr(lb, attr) and bool(lb.nb.vips)


def _has_lb_vip(data: LbData, attr: str, dp: str) -> bool:
    return any(_has_vips(lb, attr, dp) for lb in data.lbs.values())


def _ips(lb: LoadBalancer | None, router: str) -> set[str]:
    if lb is None or router not in lb.routers:
        return set()
    return {vip.vip.ip_str for vip in lb.vips}


def _read_by_router(ips: set[str], router: Datapath, ports: PortsData) -> bool:
    """Whether a flow other than a load balancer's own reads any of `ips` on `router`
    or through its ports (see the module rules)."""
    if ips & {str(nat.external_ip) for nat in ref_rows(router.nb.nat)}:
        return True
    addresses = [ipaddress.ip_address(ip) for ip in ips]
    for port in ports.of_datapath(router.key):
        networks = port.networks
        if not port.is_lrp or networks is None:
            continue
        nets: list[tuple[int, int, int]] = [  # (version, host bits, an address in it)
            *((4, 32 - n.plen, int(n.addr)) for n in networks.ipv4),
            *((6, 128 - n.plen, int(n.addr)) for n in networks.ipv6)]
        if any(a.version == version and int(a) >> bits == addr >> bits
               for version, bits, addr in nets for a in addresses):
            return True  # (its own addresses are in its networks)
    return False
