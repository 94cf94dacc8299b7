"""The logical flows of one build, as data: each flow once, with the datapaths it is on
and the NB objects that asked for it; then the SB `Logical_Flow` and
`Logical_DP_Group` rows they become.

Rules kept here:
- A flow is (stage, priority, match, actions, controller meter): the same flow asked for
  on several datapaths is one flow on a set of datapaths, as in 23.03 (one SB row with
  `logical_datapath` if the set has one member, else a `logical_dp_group`).
- The first request of a flow fixes what is not its identity: `tags:in_out_port`, the
  `external_ids:stage-hint` (the first 8 hex digits of the NB row's UUID) and `source`;
  and, as in 23.03, those two columns are written only when the SB row is inserted (a
  flow that another owner asks for later keeps the hint it was written with).
- Every request is made on behalf of an owner (`owned_by`): the datapath, port, load
  balancer or group whose NB rows produced it, kept per datapath (`by_dp`), so the
  flows of some datapaths can be built again alone and `replace`d, the rest kept.
- A stage's datapath type must be the datapath's: a switch stage on a router is a bug
  in a builder, caught at once.
- Requests (`add`) build a table; a table that has taken a rebuild's flows (`replace`,
  `replace_owned`) takes no more requests: an owner's flows on one datapath are a set
  it may share with the other datapaths where they are the same (a load balancer's on
  every datapath of its group), so none is changed in place.
- Pure and deterministic: rows come out in the order flows were first asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...idl.row import IdlRow
from ..build.datapaths import Datapath, DatapathKind
from ..build.dp_groups import dp_group_ref, group_ref
from ..desired import DesiredDb, DesiredTable, Ref
from .stages import Stage

LOGICAL_FLOW_COLUMNS = ("logical_datapath", "logical_dp_group", "pipeline", "table_id",
                        "priority", "match", "actions", "tags", "controller_meter",
                        "external_ids")

Owner = Hashable
GLOBAL: Owner = ("global",)
# Owners whose requests are also kept by owner (`LflowTable.owned_on`), so that
# `replace_owned` walks their flows alone: those asked for on many datapaths at once
# (a load balancer of every node, a port group's ACL), or many on one (a router's
# policies), or few among many on one (a router-type port's lookups on a switch of
# many routers, a router's NAT flows, a port's own: a VIF's few requests on its switch
# and on that switch's routers, among those of every VIF there, `rebuild_vifs` and
# `rebuild_owned`), or few on many (a router's static routes, on it and on the routers
# their output ports are on), rebuilt on their own. A datapath's own flows are not kept
# by owner.
INDEXED = frozenset(("lb", "acl", "policy", "rport", "nat", "port", "routes"))
# Owners of three elements that `owners_under` finds by their first two (a load
# balancer's VIPs are rebuilt by naming them: not kept there, on every datapath of its
# group).
EXTENDED = INDEXED - {"lb"}


def nat_owner(dp: Datapath) -> Owner:
    """The owner of what a router's NAT rules derive on it (its NAT stages, the
    replies and drops for its NAT and SNAT addresses, the gateway redirects of its
    rules), rebuilt alone when its NAT rules change (`lflows.rebuild_router_nat`).
    What the rules of one external IP derive alone is that IP's (`nat_ip_owner`)."""
    return ("nat", dp.key)


def nat_port_owner(key: str, name: str) -> Owner:
    """The owner of what the NAT rules (and VIPs) of router `key` derive on its port
    `name` alone (the drops of its own addresses, which read the router's SNAT IPs and
    VIPs): built again with the router's NAT (`nat_owner`, of which it is one), and
    alone when the router gains or loses the port (`lflows.rebuild_router_ports`)."""
    return ("nat", key, ("port", name))


def routes_owner(key: str) -> Owner:
    """The owner of the flows router `key`'s static routes ask for, on it and on the
    routers their output ports are on (with their IPv6 next hops' solicitations),
    built again alone when its routes change (`lflows.rebuild_routes`)."""
    return ("routes", key)


def policy_owner(key: str, uuid: str) -> Owner:
    """The owner of the flows router `key`'s policy `uuid` asks for: a policy added,
    taken away or updated, or whose next hop a router port gained or lost moves,
    rebuilds them alone (`lflows.rebuild_policies`), under the router's
    `("policy", key)` (the policy stages' own flows)."""
    return ("policy", key, uuid)


def route_owner(key: str, uuid: str) -> Owner:
    """The owner of the flows router `key`'s static route `uuid` asks for alone (one
    in no ECMP group), on it or on the router of its output port: built with the
    router's routes (`routes_owner`, of which it is one), and alone when the route
    comes, goes or changes, or a router port gained or lost moves it."""
    return ("routes", key, uuid)


def pair_owner(lsp: str, lrp: str) -> Owner:
    """The owner of what router-type switch port `lsp` asks for on its router about
    router port `lrp` of the same switch (its addresses resolved, its routables
    routed): a router port joining or leaving a switch of many routers rebuilds these
    pairs alone (`lflows.rebuild_pairs`), with the port's `("port", lsp)` requests."""
    return ("port", lsp, lrp)


def nat_ip_owner(dp: Datapath, ip: str) -> Owner:
    """The owner of the flows the NAT rules of external IP `ip` (as NB writes it)
    derive on router `dp`, each rule's own: those rules' change rebuilds them alone,
    with the router's `nat_owner` flows (those that read all its rules)."""
    return ("nat", dp.key, ip)


def rport_ip_owner(name: str, ip: str) -> Owner:
    """The owner of what router-type switch port `name` asks for on its switch for one
    NAT external IP of its router (`ls_rport_arp`): those rules' change rebuilds them
    alone, with the port's `("rport", name)` requests."""
    return ("rport", name, ip)


def _indexed(owner: Owner) -> bool:
    return isinstance(owner, tuple) and bool(owner) and owner[0] in INDEXED


class FlowKey(NamedTuple):
    """What a flow is (a tuple: made and hashed once per request, the hot path)."""

    stage: Stage
    priority: int
    match: str
    actions: str
    meter: str | None = None


@dataclass(slots=True)
class Flow:
    key: FlowKey
    datapaths: dict[str, Datapath] = field(default_factory=dict)  # by key, insertion order
    io_port: str | None = None
    hint: str | None = None
    source: str | None = None


# A flow key made without `FlowKey.__new__`'s Python frame (one per request).
_new_key = tuple.__new__


class _OwnedBy:
    """`LflowTable.owned_by`'s block (a class, not a generator: entered per request
    group, tens of thousands of times in a full build)."""

    __slots__ = ("owner", "previous", "table")

    def __init__(self, table: LflowTable, owner: Owner) -> None:
        self.table = table
        self.owner = owner
        self.previous: tuple[Owner, tuple[Owner, ...], bool] | None = None

    def __enter__(self) -> None:
        t = self.table
        self.previous = t._owner, t._alone, t._owner_indexed
        t._owner, t._alone, t._owner_indexed = \
            self.owner, (self.owner,), _indexed(self.owner)

    def __exit__(self, *exc: object) -> None:
        assert self.previous is not None
        t = self.table
        t._owner, t._alone, t._owner_indexed = self.previous


def stage_hint(row: IdlRow | str | None) -> str | None:
    """23.03's `stage-hint`: the first 32 bits of the NB row's UUID, in hex."""
    if row is None:
        return None
    uuid = row if isinstance(row, str) else row.uuid
    return uuid[:8]


class LflowTable:
    """Flows by key, and per datapath which flows each owner asked for there."""

    def __init__(self, source: str = "northd", only: frozenset[str] | None = None,
                 owners: frozenset[Owner] | None = None) -> None:
        self.flows: dict[FlowKey, Flow] = {}
        # datapath key -> flow key -> the owners that asked for it on that datapath (a
        # flow's own key object, and one tuple shared by the requests of an `owned_by`
        # block: a flow on every switch is one entry per switch, and the largest part of
        # the table)
        self.by_dp: dict[str, dict[FlowKey, tuple[Owner, ...]]] = {}
        # datapath key -> indexed owner (`INDEXED`) -> the flows it asked for there
        self.owned_on: dict[str, dict[Owner, set[FlowKey]]] = {}
        # datapath key -> owner pair -> the indexed owners there that extend it by one
        # element (`owners_under`: a router of many owners is not walked for them)
        self.extended: dict[str, dict[Owner, set[Owner]]] = {}
        self._owner: Owner = GLOBAL
        self._alone: tuple[Owner, ...] = (GLOBAL,)
        self._owner_indexed = False  # (`_indexed(self._owner)`, asked once per block)
        self._taken = False  # (took a rebuild's flows: its owned sets may be shared)
        self.source = source  # `external_ids:source` of the flows asked for from now on
        self.only = only  # requests on other datapaths are ignored (a partial rebuild)
        self.only_owners = owners  # (with `only`) and those of other owners

    def owned_by(self, owner: Owner) -> _OwnedBy:
        """Requests made in this block are `owner`'s."""
        return _OwnedBy(self, owner)

    @property
    def owners(self) -> dict[Owner, list[tuple[FlowKey, str]]]:
        """Owner -> the (flow, datapath) pairs it asked for (tests and debugging)."""
        out: dict[Owner, list[tuple[FlowKey, str]]] = {}
        for dp, flows in self.by_dp.items():
            for key, owners in flows.items():
                for owner in owners:
                    out.setdefault(owner, []).append((key, dp))
        return out

    def wants(self, dp_key: str) -> bool:
        """Whether a request made now on datapath `dp_key` would be kept (a partial
        rebuild ignores the others): a builder about to make many there may skip them."""
        return self.only is None or (dp_key in self.only and (
            self.only_owners is None or self._owner in self.only_owners))

    def add(self, dp: Datapath, stage: Stage, priority: int, match: str, actions: str, *,
            hint: IdlRow | str | None = None, io_port: str | None = None,
            meter: str | None = None) -> None:
        """Ask for one flow on `dp` (23.03's `ovn_lflow_add*`)."""
        on_router = dp.kind is DatapathKind.ROUTER
        if on_router is stage.is_switch:
            raise ValueError(f"stage {stage.stage_name} on {dp.kind.value} {dp.name}")
        dp_key = dp.key
        if self.only is not None and not self.wants(dp_key):  # (a full build: no call)
            return
        key = _new_key(FlowKey, (stage, priority, match, actions, meter))
        flow = self.flows.get(key)
        if flow is None:
            flow = self.flows[key] = Flow(key, io_port=io_port, hint=stage_hint(hint),
                                          source=self.source)
        self._place(flow, dp_key, dp)

    def add_group(self, dps: Iterable[Datapath], stage: Stage, priority: int, match: str,
                  actions: str, *, hint: IdlRow | str | None = None,
                  meter: str | None = None) -> None:
        """One flow on every datapath of `dps` (23.03's `ovn_lflow_add_with_dp_group`):
        `add` on each, the flow made or found once."""
        key = _new_key(FlowKey, (stage, priority, match, actions, meter))
        flow = None
        only = self.only
        for dp in dps:
            if (dp.kind is DatapathKind.ROUTER) is stage.is_switch:
                raise ValueError(f"stage {stage.stage_name} on {dp.kind.value} {dp.name}")
            dp_key = dp.key
            if only is not None and not self.wants(dp_key):
                continue
            if flow is None:
                flow = self.flows.get(key)
                if flow is None:
                    flow = self.flows[key] = Flow(key, hint=stage_hint(hint),
                                                  source=self.source)
            self._place(flow, dp_key, dp)

    def _place(self, flow: Flow, dp_key: str, dp: Datapath) -> None:
        """The current owner's request of `flow` on `dp` recorded."""
        key = flow.key
        flow.datapaths.setdefault(dp_key, dp)
        on_dp = self.by_dp.get(dp_key)
        if on_dp is None:
            on_dp = self.by_dp[dp_key] = {}
        owner = self._owner
        owners = on_dp.get(key)
        on_dp[key] = self._alone if owners is None else (*owners, owner)
        if self._owner_indexed:
            if self._taken:
                raise RuntimeError("a table that took a rebuild's flows takes no requests")
            owned = self.owned_on.get(dp_key)
            if owned is None:
                owned = self.owned_on[dp_key] = {}
            keys = owned.get(owner)
            if keys is None:
                keys = owned[owner] = set()
                self._extend(dp_key, owner)
            keys.add(key)

    def _extend(self, dp_key: str, owner: Owner) -> None:
        if isinstance(owner, tuple) and len(owner) == 3 and owner[0] in EXTENDED:
            pair = owner[:2]
            ext = self.extended.get(dp_key)
            if ext is None:
                ext = self.extended[dp_key] = {}
            found = ext.get(pair)
            if found is None:
                found = ext[pair] = set()
            found.add(owner)

    def _unextend(self, dp_key: str, owner: Owner) -> None:
        if isinstance(owner, tuple) and len(owner) == 3 and owner[0] in EXTENDED:
            ext = self.extended.get(dp_key)
            found = ext.get(owner[:2]) if ext is not None else None
            if ext is None or found is None:
                return
            found.discard(owner)
            if not found:
                del ext[owner[:2]]
                if not ext:
                    del self.extended[dp_key]

    def replace(self, dps: Iterable[str], new: LflowTable) -> set[FlowKey]:
        """Every flow on `dps` replaced by `new`'s (a rebuild of those datapaths alone);
        the flows whose datapaths changed, or that came or went, or whose SB row
        changed (a flow that went and came back with another first request). `new` is
        consumed (its sets are taken, not copied), as in `replace_owned`."""
        removed: dict[FlowKey, set[str]] = {}
        dropped: dict[FlowKey, Flow] = {}
        for dp in dps:
            self.owned_on.pop(dp, None)
            self.extended.pop(dp, None)
            for key in self.by_dp.pop(dp, {}):
                flow = self.flows[key]
                del flow.datapaths[dp]
                removed.setdefault(key, set()).add(dp)
                if not flow.datapaths:
                    dropped[key] = self.flows.pop(key)
        added: dict[FlowKey, set[str]] = {}
        self._taken = True
        self.owned_on.update(new.owned_on)  # (taken: `new` is consumed)
        self.extended.update(new.extended)
        for dp, flows in new.by_dp.items():
            mine = self.by_dp.setdefault(dp, {})
            for key, owners in flows.items():
                theirs = new.flows[key]
                mine_flow = self.flows.get(key)
                if mine_flow is None:
                    mine_flow = self.flows[key] = Flow(key, io_port=theirs.io_port,
                                                       hint=theirs.hint, source=theirs.source)
                mine_flow.datapaths[dp] = theirs.datapaths[dp]
                mine[mine_flow.key] = owners
                added.setdefault(key, set()).add(dp)
        changed = {key for key in removed.keys() | added.keys()
                   if removed.get(key) != added.get(key)}
        for key, was in dropped.items():
            now = self.flows.get(key)
            if now is not None and (now.io_port, now.hint, now.source) != \
                    (was.io_port, was.hint, was.source):
                changed.add(key)
        return changed

    def replace_owned(self, dps: Iterable[str], owners: frozenset[Owner], new: LflowTable
                      ) -> set[FlowKey]:
        """On each of `dps`, what `owners` asked for replaced by what they ask for in
        `new` (a rebuild of those owners' flows alone; others' requests are kept); the
        flows whose datapaths changed, or that came or went. `new` is consumed: what
        it holds is taken, not copied, and it is not to be used again."""
        removed: dict[FlowKey, set[str]] = {}
        added: dict[FlowKey, set[str]] = {}
        restated: set[FlowKey] = set()  # (asked for again alone, by other rows)
        self._taken = True
        # An owner's flows, one set per distinct set: a load balancer's on the
        # datapaths of its group are mostly the same (the rules above).
        shared: dict[frozenset[FlowKey], set[FlowKey]] = {}
        for dp in dps:
            mine = self.by_dp.setdefault(dp, {})
            owned = self.owned_on.setdefault(dp, {})
            indexed = all(map(_indexed, owners))
            keys: set[FlowKey] = set()
            for owner in owners:
                found = owned.pop(owner, None)
                if found is not None:
                    keys |= found
                    self._unextend(dp, owner)
            walked = [(key, mine[key]) for key in keys] if indexed else list(mine.items())
            new_owned = new.owned_on.get(dp, {})
            for owner in owners:
                theirs_on = new_owned.get(owner)
                if theirs_on:  # (taken: `new` is consumed)
                    owned[owner] = shared.setdefault(frozenset(theirs_on), theirs_on)
                    self._extend(dp, owner)
            if not owned:
                del self.owned_on[dp]
            new_on = new.by_dp.get(dp, {})
            disjoint = owners.isdisjoint
            for key, asked in walked:
                if disjoint(asked):  # (most flows of a walked datapath: others')
                    continue
                kept = tuple(o for o in asked if o not in owners)
                if kept:
                    mine[key] = kept
                    continue
                del mine[key]
                flow = self.flows[key]
                again = new_on.get(key)
                if again is not None and any(o in owners for o in again):
                    # Asked for again: the flow stays on `dp` (its requests go back
                    # below). Alone there, it takes the new first request's row, as a
                    # flow that went and came back would.
                    if len(flow.datapaths) == 1:
                        made = new.flows[key]
                        if (flow.io_port, flow.hint, flow.source) != \
                                (made.io_port, made.hint, made.source):
                            flow.io_port, flow.hint, flow.source = \
                                made.io_port, made.hint, made.source
                            restated.add(key)
                    continue
                del flow.datapaths[dp]
                removed.setdefault(key, set()).add(dp)
                if not flow.datapaths:
                    del self.flows[key]
            for key, asked in new_on.items():
                # (shared with the new table's block where all of them are `owners`)
                theirs = asked if all(o in owners for o in asked) else \
                    tuple(o for o in asked if o in owners)
                if not theirs:
                    continue
                if key in mine:
                    mine[key] += theirs
                    continue
                made = new.flows[key]
                target = self.flows.get(key)
                if target is None:
                    target = self.flows[key] = Flow(key, io_port=made.io_port, hint=made.hint,
                                                    source=made.source)
                mine[target.key] = theirs
                if dp in target.datapaths:
                    continue  # (asked for again)
                target.datapaths[dp] = made.datapaths[dp]
                added.setdefault(key, set()).add(dp)
        return restated | {key for key in removed.keys() | added.keys()
                           if removed.get(key) != added.get(key)}

    def __len__(self) -> int:
        return len(self.flows)

    def owners_under(self, dp_key: str, owners: Collection[Owner]) -> set[Owner]:
        """The indexed owners on `dp_key` that extend one of `owners` (pairs) by one
        element: `nat_ip_owner`s and `nat_port_owner`s of a `nat_owner`,
        `rport_ip_owner`s of a router-type port's `("rport", name)`, `pair_owner`s of
        its `("port", name)`, `policy_owner`s of a router's `("policy", key)`,
        `route_owner`s of a `routes_owner`."""
        ext = self.extended.get(dp_key)
        if not ext:
            return set()
        if len(owners) > len(ext):
            return {o for pair, found in ext.items() if pair in owners for o in found}
        return {o for pair in owners for o in ext.get(pair, ())}

    def on(self, dp_key: str) -> list[Flow]:
        """The flows on one datapath (tests and debugging)."""
        return [f for f in self.flows.values() if dp_key in f.datapaths]

    def put_desired(self, sb: DesiredDb) -> DesiredTable:
        """The SB Logical_Flow rows (and the datapath groups they refer to) of `sb`."""
        table = sb.add(DesiredTable("Logical_Flow", LOGICAL_FLOW_COLUMNS,
                                    fill=("external_ids", "tags")))
        for flow in self.flows.values():
            table.put(flow_row_key(flow.key), **self.row(flow, sb))
        return table

    def row(self, flow: Flow, sb: DesiredDb, group: tuple[str, ...] | None = None
            ) -> dict[str, Any]:
        """The desired SB row of one flow (its datapath group desired in `sb`; `group`:
        the group's key, if the caller has it)."""
        key = flow.key
        values: dict[str, Any] = {
            "pipeline": key.stage.pipeline.value, "table_id": key.stage.table,
            "priority": key.priority, "match": key.match, "actions": key.actions}
        if len(flow.datapaths) == 1:
            values["logical_datapath"] = Ref("Datapath_Binding", next(iter(flow.datapaths)))
        else:
            values["logical_dp_group"] = dp_group_ref(sb, flow.datapaths) if group is None \
                else group_ref(sb, group)
        if flow.io_port is not None:
            values["tags"] = {"in_out_port": flow.io_port}
        if key.meter is not None:
            values["controller_meter"] = key.meter
        ids = {"stage-name": key.stage.stage_name}
        if flow.source:
            ids["source"] = flow.source
        if flow.hint is not None:
            ids["stage-hint"] = flow.hint
        values["external_ids"] = ids
        return values


def flow_row_key(key: FlowKey) -> tuple[str, str, int, int, str, str, str]:
    """The sync key of a flow's SB row: unique per flow, whatever datapaths it is on
    (so a flow that gains a datapath is updated in place, not deleted and inserted)."""
    st = key.stage
    return (st.dp_type.value, st.pipeline.value, st.table, key.priority, key.match,
            key.actions, key.meter or "")
