"""Load balancers: NB Load_Balancer rows parsed once (VIPs, backends, health checks,
where each one applies), and the SB Load_Balancer rows of those applied to switches.

Rules kept here (OVN 23.03, `ovn_northd_lb_create` in lib/lb.c, `build_lbs`,
`build_lrouter_lb_reachable_ips`, `build_lswitch_lbs_from_lrouter` and `sync_lbs` in
northd.c):
- A VIP or backend is "IP", "IP:port" or "[IPv6]:port", parsed as OVS's
  `inet_parse_active` does (a host with more than one colon outside brackets has no
  port) and formatted back without brackets; a VIP with a backend that does not parse,
  is of the other family or disagrees on having a port is dropped from the parsed
  model (the SB row still copies NB's `vips` as they are) and reported with 23.03's
  error text.
- An LB applies to the switches that list it or one of its groups, and to the enabled
  routers likewise; with `NB_Global.options:install_ls_lb_from_router=true` also to
  the switches attached to those routers.
- SB Load_Balancer: one row per LB applied to at least one switch, keyed by the NB UUID
  (`external_ids:lb_id`), with `options` plus `hairpin_orig_tuple=true`, the
  switches as a Logical_DP_Group and `datapaths` empty.
- A router's reachable VIPs (for its `_rtr_lb_<key>_ip4/6` address sets): every VIP
  with `neighbor_responder=all`, none with `none`, else those inside one of its ports'
  networks (the IPv6 link-local network included).
- Order: LBs by name, then NB UUID, wherever 23.03 walks a hash map.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..desired import DesiredDb, DesiredTable
from ..diagnostics import LB_VIP, report
from . import lb_members
from .datapaths import DatapathsData, smap_bool
from .dp_groups import dp_group_ref
from .inputs import singleton
from .lb_members import EMPTY
from .ports_addresses import lrp_networks

LB_COLUMNS = ("name", "vips", "protocol", "datapaths", "datapath_group", "options",
              "external_ids")
NEIGH_MODES = ("reachable", "all", "none")
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Endpoint:
    ip: IpAddress
    ip_str: str  # formatted without brackets
    port: int  # 0: none

    @property
    def family(self) -> int:
        return self.ip.version


def _unbracket(s: str) -> str:
    if s.startswith("["):
        s = s[1:]
        if s.endswith("]"):
            s = s[:-1]
    return s


def parse_endpoint(text: str) -> Endpoint | None:
    """`ip_address_and_port_from_lb_key`: "IP", "IP:port", "[IP6]" or "[IP6]:port"."""
    colons, last, in_brackets = 0, -1, False
    for i, ch in enumerate(text):
        if ch == "[":
            in_brackets = True
        elif ch == "]":
            in_brackets = False
        elif ch == ":" and not in_brackets:
            colons += 1
            last = i
    port_s: str | None = None
    if colons > 1:
        host = text
    elif last >= 0:
        host, port_s = _unbracket(text[:last]), _unbracket(text[last + 1:])
    else:
        host = _unbracket(text)
    port = 0
    if port_s:
        if not port_s.lstrip("+-").isdigit() or not 0 <= int(port_s) <= 65535:
            return None
        port = int(port_s)
    try:
        if ":" in host:
            ip: IpAddress = ipaddress.IPv6Address(host.split("%", 1)[0])
        else:
            ip = ipaddress.IPv4Address(host)
    except ValueError:
        return None
    return Endpoint(ip, str(ip), port)


def parse_address(text: str) -> IpAddress | None:
    """`inet_parse_address`: an IP, IPv6 possibly in brackets, no port."""
    host = _unbracket(text)
    try:
        if ":" in host:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        return ipaddress.IPv4Address(host)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Vip:
    key: str  # as NB has it (health checks name it so)
    backends_str: str
    vip: Endpoint
    backends: tuple[Endpoint, ...]
    health_check: IdlRow | None


def init_vip(key: str, value: str) -> tuple[Endpoint, tuple[Endpoint, ...]] | str:
    """`ovn_lb_vip_init_explicit`: the VIP and its backends, or the error 23.03 logs
    ("Failed to initialize LB VIP: ...")."""
    vip = parse_endpoint(key)
    if vip is None:
        return (f"{key}: should be an IP address (or an IP address and a port number "
                "with : as a separator).")
    with_port = ("should be an IP address and a port number with : as a separator"
                 if vip.port else "should be an IP address")
    backends: list[Endpoint] = []
    errors: list[str] = []
    for token in (t for t in value.split(",") if t):
        be = parse_endpoint(token)
        if be is None:
            errors.append(f"{token}: {with_port}")
        elif be.family != vip.family:
            errors.append(f"{token}: IP address family is different from VIP "
                          f"{vip.ip_str}")
        elif bool(vip.port) != bool(be.port):
            errors.append(f"{token}: {with_port}")
        else:
            backends.append(be)
    if errors:
        return ", ".join(errors) + "."
    return vip, tuple(backends)


@dataclass(frozen=True, slots=True)
class LoadBalancer:
    key: str  # NB UUID
    nb: IdlRow
    name: str
    protocol: str | None
    template: bool
    routable: bool
    neigh_mode: str
    vips: tuple[Vip, ...]
    switches: frozenset[str] = frozenset()  # datapath keys
    routers: frozenset[str] = frozenset()

    @property
    def proto(self) -> str:
        return self.protocol if self.protocol in ("udp", "sctp") else "tcp"


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


NO_VIPS: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())

# A router's ports, its load balancers' rows by UUID and its ports' networks (in the
# ports' order): what its reachable VIPs were found from.
RouterInputs = tuple[tuple[IdlRow, ...], dict[str, IdlRow], tuple[list[Network], ...]]


@dataclass(slots=True)
class LbData:
    lbs: dict[str, LoadBalancer] = field(default_factory=dict)  # in build order
    # Per router datapath key: its reachable VIPs (strings), IPv4 and IPv6.
    reachable: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    # Per router with load balancers: the rows its reachable VIPs were found from (its
    # ports', its load balancers' by UUID) and its ports' networks; a later build
    # keeps them while they are the same, or adds those of load balancers it gained
    # alone. (A router without any reaches none: `NO_VIPS`, its ports unread.)
    router_inputs: dict[str, RouterInputs] = field(default_factory=dict)
    # Where each load balancer applies, and what that was found from (a later build
    # finds it again from the rows that changed alone).
    members: lb_members.Members = field(default_factory=lb_members.Members)


def _health_check(row: IdlRow, key: str, template: bool) -> IdlRow | None:
    if not row.health_check or row.protocol == "sctp" or template:
        return None
    checks = [hc for hc in row.health_check if isinstance(hc, IdlRow)]
    for hc in sorted(checks, key=lambda r: r.uuid):
        if hc.vip == key:
            return hc
    return None


def parse_lb(row: IdlRow) -> LoadBalancer:
    options: Mapping[str, str] = row.options
    template = smap_bool(options, "template")
    routable = smap_bool(options, "add_route") and not template
    default_mode = "none" if template else "reachable"
    mode = options.get("neighbor_responder", default_mode)
    if mode not in NEIGH_MODES or (template and mode == "reachable"):
        mode = default_mode
    vips: list[Vip] = []
    if not template:  # template VIPs are expanded by ovn-controller, not parsed here
        for key, value in sorted(row.vips.items()):
            parsed = init_vip(key, value)
            if isinstance(parsed, str):
                report(LB_VIP, parsed)
                continue
            vips.append(Vip(key, value, parsed[0], parsed[1],
                            _health_check(row, key, template)))
    return LoadBalancer(key=row.uuid, nb=row, name=row.name, protocol=row.protocol,
                        template=template, routable=routable, neigh_mode=mode,
                        vips=tuple(vips))


def _rows(table: ReplicaTable | None) -> list[IdlRow]:
    if table is None:
        return []
    return sorted(table.rows.values(), key=lambda r: (r.name, r.uuid))


def _parsed(table: ReplicaTable | None, earlier: Mapping[str, LoadBalancer],
            reparse: Collection[str]) -> dict[str, LoadBalancer]:
    """Every load balancer parsed, in build order: an earlier parse taken again while
    its row is the same (and in the same order, while every row is)."""
    rows = table.rows if table is not None else {}
    if not reparse and len(rows) == len(earlier) and all(
            (was := earlier.get(uuid)) is not None and was.nb is row
            for uuid, row in rows.items()):
        return dict(earlier)
    out: dict[str, LoadBalancer] = {}
    for row in _rows(table):
        was = earlier.get(row.uuid)
        out[row.uuid] = was if was is not None and was.nb is row \
            and row.uuid not in reparse else parse_lb(row)
    return out


def switch_router_peers(nb: Mapping[str, ReplicaTable], dps: DatapathsData
                        ) -> dict[str, set[str]]:
    """Per router datapath key, the switches attached to it by router-type ports."""
    lrp_router: dict[str, str] = {}
    for key, dp in dps.routers.items():
        for lrp in dp.nb.ports:
            if isinstance(lrp, IdlRow):
                lrp_router[lrp.name] = key
    peers: dict[str, set[str]] = {k: set() for k in dps.routers}
    for key, dp in dps.switches.items():
        for lsp in dp.nb.ports:
            if isinstance(lsp, IdlRow) and lsp.type == "router":
                router = lrp_router.get(lsp.options.get("router-port", ""))
                if router is not None:
                    peers[router].add(key)
    return peers


def _networks(lrp: IdlRow) -> list[Network]:
    """The networks of a router port 23.03 has a port for (none with a bad MAC), its
    link-local one included, parsed as `extract_lrp_networks` parses them."""
    addrs = lrp_networks(lrp.mac, lrp.networks)
    if addrs is None:
        return []
    return [*(n.network for n in addrs.ipv4), *(n.network for n in addrs.ipv6)]


def _reachable(lb: LoadBalancer, nets: list[Network],
               v4: set[str], v6: set[str]) -> None:
    if lb.neigh_mode == "none":
        return
    for vip in lb.vips:
        if lb.neigh_mode == "all" or any(vip.vip.ip in n for n in nets
                                         if n.version == vip.vip.family):
            (v4 if vip.vip.family == 4 else v6).add(vip.vip.ip_str)


def build_lb_data(nb: Mapping[str, ReplicaTable], dps: DatapathsData,
                  reuse: LbData | None = None, reparse: Collection[str] = ()) -> LbData:
    """`reuse`: an earlier result whose parse of a load balancer is taken again while
    its NB row is the same (rows are immutable: a changed row is a new object), but
    for those `reparse` names, and whose memberships are brought up to date from the
    rows that changed (`lb_members`)."""
    earlier = reuse.lbs if reuse is not None else {}
    parsed = _parsed(nb.get("Load_Balancer"), earlier, reparse)
    groups = lb_members.group_lbs(nb, reuse.members if reuse is not None else None)
    nbg = singleton(nb.get("NB_Global"))
    nb_options = nbg.options if nbg is not None else {}
    if smap_bool(nb_options, "install_ls_lb_from_router"):
        members = lb_members.whole(dps, parsed, groups, None, switch_router_peers(nb, dps))
    elif reuse is None or reuse.members.peers:
        members = lb_members.whole(dps, parsed, groups,
                                   reuse.members if reuse is not None else None)
    else:
        members = lb_members.changed(dps, parsed, groups, reuse.members)
    data = LbData(members=members)
    for key, one in parsed.items():
        switches = members.switches.get(key, EMPTY)
        routers = members.routers.get(key, EMPTY)
        if one.switches is switches and one.routers is routers:
            data.lbs[key] = one
            continue
        data.lbs[key] = LoadBalancer(
            key=one.key, nb=one.nb, name=one.name, protocol=one.protocol,
            template=one.template, routable=one.routable, neigh_mode=one.neigh_mode,
            vips=one.vips, switches=switches, routers=routers)
    _reachable_vips(nb, dps, data, reuse, reparse)
    return data


def _reachable_vips(nb: Mapping[str, ReplicaTable], dps: DatapathsData, data: LbData,
                    reuse: LbData | None, reparse: Collection[str]) -> None:
    """Each router's reachable VIPs in `data`: those of `reuse` kept for a router whose
    row, load balancers, their rows and its ports' rows are the same objects; for the
    rest found again, adding those of load balancers a router gained alone where
    nothing else changed (`_added`)."""
    lrp_table = nb.get("Logical_Router_Port")
    lrp_rows = lrp_table.rows if lrp_table is not None else {}
    members, earlier = data.members, reuse.lbs if reuse is not None else {}
    before = reuse.members if reuse is not None else None
    moved = {key for key, lb in data.lbs.items()
             if key in reparse or (prev := earlier.get(key)) is None or prev.nb is not lb.nb}
    moved.update(earlier.keys() - data.lbs.keys())
    grown: dict[tuple[int, frozenset[str]], tuple[dict[str, IdlRow], dict[str, IdlRow]]] = {}
    for rkey, dp in dps.routers.items():
        applied = members.dp_lbs.get(rkey, EMPTY)
        was = reuse.router_inputs.get(rkey) if reuse is not None else None
        more = members.gained.get(rkey)  # (None: not known to have only gained)
        if was is not None and reuse is not None and before is not None \
                and rkey in reuse.reachable \
                and members.dp_refs.get(rkey) is before.dp_refs.get(rkey) \
                and (old := before.dp_lbs.get(rkey)) is not None \
                and (applied is old or more is not None or applied >= old) \
                and moved.isdisjoint(old) \
                and all(lrp_rows.get(lrp.uuid) is lrp for lrp in was[0]):
            # Its row, ports and earlier load balancers the same: what it reached is
            # kept, with what those it gained alone reach (a load balancer joining a
            # group on every router costs each router one, not all of its own).
            gained = [] if applied is old else [
                data.lbs[k] for k in (more if more is not None else applied) - old
                if k in data.lbs]
            if not gained:
                data.router_inputs[rkey] = was
                data.reachable[rkey] = reuse.reachable[rkey]
                continue
            data.router_inputs[rkey] = (was[0], _with(was[1], gained, grown), was[2])
            nets = [n for mine in was[2] for n in mine]
            more4, more6 = set(reuse.reachable[rkey][0]), set(reuse.reachable[rkey][1])
            for lb in gained:
                _reachable(lb, nets, more4, more6)
            data.reachable[rkey] = (frozenset(more4), frozenset(more6))
            continue
        on_it = [data.lbs[k] for k in applied if k in data.lbs]
        if not on_it:  # (no VIPs to reach: its ports not read, nor kept)
            data.reachable[rkey] = NO_VIPS
            continue
        lrps = tuple(lrp for lrp in dp.nb.ports if isinstance(lrp, IdlRow))
        parsed = {lrp.uuid: (lrp, nets) for lrp, nets in zip(was[0], was[2], strict=True)} \
            if was is not None else {}
        nets_of = tuple(cached[1] if (cached := parsed.get(lrp.uuid)) is not None
                        and cached[0] is lrp else _networks(lrp) for lrp in lrps)
        inputs = data.router_inputs[rkey] = (lrps, {lb.key: lb.nb for lb in on_it}, nets_of)
        nets = [n for mine in nets_of for n in mine]
        v4: set[str] = set()
        v6: set[str] = set()
        added = _added(reuse, rkey, inputs)
        if added is None:
            added = set(inputs[1])
        else:
            v4, v6 = set(reuse.reachable[rkey][0]), set(reuse.reachable[rkey][1])  # type: ignore[union-attr]
        for lb in on_it:
            if lb.key in added:
                _reachable(lb, nets, v4, v6)
        data.reachable[rkey] = (frozenset(v4), frozenset(v6))


def _with(lbs_of: dict[str, IdlRow], gained: list[LoadBalancer],
          grown: dict[tuple[int, frozenset[str]], tuple[dict[str, IdlRow], dict[str, IdlRow]]]
          ) -> dict[str, IdlRow]:
    """A router's load balancer rows with those it `gained`: one new mapping per
    distinct earlier one (the routers of one group share it; none is changed later)."""
    key = (len(lbs_of), frozenset(lb.key for lb in gained))
    found = grown.get(key)
    if found is None or (found[0] is not lbs_of and found[0] != lbs_of):
        now = dict(lbs_of)
        now.update((lb.key, lb.nb) for lb in gained)
        found = grown[key] = (lbs_of, now)
    return found[1]


def _added(reuse: LbData | None, router: str, inputs: RouterInputs) -> set[str] | None:
    """The load balancers a router gained since `reuse`, where that is all that changed
    of what its reachable VIPs depend on (its ports' rows, its load balancers' rows);
    None where its reachable VIPs must be found again from all of them."""
    was = reuse.router_inputs.get(router) if reuse is not None else None
    if reuse is None or was is None or router not in reuse.reachable \
            or len(was[0]) != len(inputs[0]) \
            or any(a is not b for a, b in zip(was[0], inputs[0], strict=True)) \
            or any(inputs[1].get(key) is not row for key, row in was[1].items()):
        return None
    return set(inputs[1].keys() - was[1].keys())


def _sb_vips(lb: LoadBalancer) -> dict[str, str]:
    """`ovn_northd_lb_get_vips`: NB's vips, but an IPv6 template LB's keys bracketed the
    way ovn-controller expects them."""
    vips: dict[str, str] = dict(lb.nb.vips)
    if not (lb.template and lb.nb.options.get("address-family") == "ipv6"):
        return vips
    out: dict[str, str] = {}
    for key, value in vips.items():
        parts = [p for p in key.split(":") if p]  # strtok: empty atoms skipped
        if not parts or len(parts) > 2:
            continue
        ip = f"[{parts[0]}]" if parts[0].startswith("^") else parts[0]
        out[f"{ip}:{parts[1]}" if len(parts) == 2 else ip] = value
    return out


def build_sb_load_balancers(data: LbData, sb: DesiredDb) -> None:
    sb.add(DesiredTable("Load_Balancer", LB_COLUMNS))
    for lb in data.lbs.values():
        put_sb_load_balancer(lb, sb)


def put_sb_load_balancer(lb: LoadBalancer, sb: DesiredDb) -> None:
    """The SB row of one load balancer, if it applies to a switch (its datapath group
    desired with it)."""
    if not lb.switches:
        return
    options = dict(lb.nb.options)
    options["hairpin_orig_tuple"] = "true"
    sb.tables["Load_Balancer"].put(
        lb.key, name=lb.name, vips=_sb_vips(lb), protocol=lb.protocol, datapaths=[],
        datapath_group=dp_group_ref(sb, lb.switches), options=options,
        external_ids={"lb_id": lb.key})
