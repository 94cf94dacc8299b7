"""Where each load balancer applies: the switches and the routers that list it, or one
of its groups (`build_lb_data`'s memberships), found again after a change from the
rows that changed alone.

Rules kept here:
- What a datapath applies is its own `load_balancer` and the load balancers of each
  group in its `load_balancer_group` (`Members.dp_lbs`), found again only for a
  datapath whose NB row changed (rows are immutable: a changed row is a new object)
  or that lists a group whose row changed; a group's load balancers likewise
  (`Members.groups`). Where the groups that changed only gained load balancers, a
  datapath whose row is the same adds those to what it applied (one new set per
  distinct earlier set, shared by the datapaths that had it), not found again.
- A load balancer's switches and routers are the earlier ones with the datapaths whose
  applied set changed taken out or put in, so a change costs the datapaths it touches
  and a walk of every datapath's row identity, not a rebuild of every set. A
  load balancer not applied before starts from none: whatever lists it now changed.
- With `NB_Global` `install_ls_lb_from_router` (a router's load balancers reach its
  switches) the memberships are built whole (`whole`), as they are without an earlier
  build or after one made with the option.
- Pure: reads the NB rows and the datapaths, returns new data; the earlier data is
  not changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from .datapaths import DatapathsData

EMPTY: frozenset[str] = frozenset()

# A datapath's NB row, with the load balancers and the groups it lists (UUIDs as the
# row holds them: those of no row are never applied, `lbs` and `groups` lack them).
DpRefs = tuple[IdlRow, tuple[str, ...], tuple[str, ...]]


@dataclass(slots=True)
class Members:
    """Per load balancer, the switches and the routers it applies to (keys of those
    listed in `switches`/`routers` only where it applies to some), and what they were
    found from."""
    switches: dict[str, frozenset[str]] = field(default_factory=dict)
    routers: dict[str, frozenset[str]] = field(default_factory=dict)
    dp_refs: dict[str, DpRefs] = field(default_factory=dict)
    dp_lbs: dict[str, frozenset[str]] = field(default_factory=dict)
    groups: dict[str, tuple[IdlRow, frozenset[str]]] = field(default_factory=dict)
    peers: bool = False  # (built with `install_ls_lb_from_router`)
    # Per datapath whose applied set is the earlier one and these load balancers
    # (`changed`: its groups only gained), so a reader skips comparing the sets.
    gained: dict[str, frozenset[str]] = field(default_factory=dict)


def group_lbs(nb: Mapping[str, ReplicaTable], earlier: Members | None
              ) -> dict[str, tuple[IdlRow, frozenset[str]]]:
    """Every load balancer group's row and load balancers (an earlier one's kept while
    its row is the same)."""
    table = nb.get("Load_Balancer_Group")
    before = earlier.groups if earlier is not None else {}
    out: dict[str, tuple[IdlRow, frozenset[str]]] = {}
    for uuid, row in (table.rows.items() if table is not None else ()):
        was = before.get(uuid)
        out[uuid] = was if was is not None and was[0] is row else \
            (row, frozenset(row.value("load_balancer")))
    return out


def _dp_refs(dp_nb: IdlRow, was: DpRefs | None) -> DpRefs:
    if was is not None and was[0] is dp_nb:
        return was
    return dp_nb, dp_nb.value("load_balancer"), dp_nb.value("load_balancer_group")


def _applied(dp_refs: DpRefs, groups: Mapping[str, tuple[IdlRow, frozenset[str]]]
             ) -> frozenset[str]:
    own, listed = dp_refs[1], dp_refs[2]
    if not listed:
        return frozenset(own) if own else EMPTY
    out = set(own)
    for g in listed:
        group = groups.get(g)
        if group is not None:
            out |= group[1]
    return frozenset(out)


def whole(dps: DatapathsData, lbs: Mapping[str, object],
          groups: dict[str, tuple[IdlRow, frozenset[str]]], earlier: Members | None,
          peers: Mapping[str, set[str]] | None = None) -> Members:
    """The memberships of the load balancers `lbs` (by key) built from every datapath;
    `peers` (with `install_ls_lb_from_router`): per router, the switches attached to
    it, which its load balancers reach too."""
    out = Members(groups=groups, peers=peers is not None)
    before = earlier.dp_refs if earlier is not None else {}
    for target, dpmap in ((out.switches, dps.switches), (out.routers, dps.routers)):
        sets: dict[str, set[str]] = {}
        for key, dp in dpmap.items():
            mine = out.dp_refs[key] = _dp_refs(dp.nb, before.get(key))
            applied = out.dp_lbs[key] = _applied(mine, groups)
            for lb in applied:
                if lb in lbs:
                    sets.setdefault(lb, set()).add(key)
        target.update((lb, frozenset(keys)) for lb, keys in sets.items())
    if peers is not None:
        for lb, routers in out.routers.items():
            reached = set(out.switches.get(lb, EMPTY))
            for r in routers:
                reached.update(peers.get(r, ()))
            out.switches[lb] = frozenset(reached)
    return out


def changed(dps: DatapathsData, lbs: Mapping[str, object],
            groups: dict[str, tuple[IdlRow, frozenset[str]]], earlier: Members) -> Members:
    """The memberships of the load balancers `lbs`, from `earlier` (built without
    `install_ls_lb_from_router`) and the datapaths and groups whose rows changed since
    (see the rules)."""
    moved_groups = {g for g, v in groups.items() if earlier.groups.get(g) is not v}
    moved_groups.update(earlier.groups.keys() - groups.keys())
    gained = _gained(moved_groups, earlier.groups, groups)
    # (hash(was), what it gains) -> (was, what it applies now)
    grown: dict[tuple[int, frozenset[str]], tuple[frozenset[str], frozenset[str]]] = {}
    out = Members(groups=groups)
    before_refs, before_lbs = earlier.dp_refs, earlier.dp_lbs
    edits: dict[tuple[int, str], set[str]] = {}  # ((0 switch, 1 router), load balancer)
    bases = (earlier.switches, earlier.routers)
    for kind, dpmap in enumerate((dps.switches, dps.routers)):
        for key, dp in dpmap.items():
            was_refs = before_refs.get(key)
            was = before_lbs.get(key)
            if was is not None and was_refs is not None and was_refs[0] is dp.nb:
                if not moved_groups or moved_groups.isdisjoint(was_refs[2]):
                    out.dp_refs[key] = was_refs
                    out.dp_lbs[key] = was
                    continue
                if gained is not None:
                    # Its moved groups only gained load balancers: what it applied and
                    # those (one new set per distinct earlier one, shared).
                    more = frozenset().union(*(gained.get(g, EMPTY) for g in was_refs[2]))
                    out.dp_refs[key] = was_refs
                    found = grown.get((hash(was), more))
                    if found is None or (found[0] is not was and found[0] != was):
                        found = grown[(hash(was), more)] = (was, was | more)
                    out.dp_lbs[key] = found[1]
                    out.gained[key] = more
                    for lb in more - was:
                        _edit(edits, bases, kind, lb).add(key)
                    continue
            mine = out.dp_refs[key] = _dp_refs(dp.nb, was_refs)
            now = out.dp_lbs[key] = _applied(mine, groups)
            was = was or EMPTY
            if now == was:
                continue
            for lb in was - now:
                _edit(edits, bases, kind, lb).discard(key)
            for lb in now - was:
                _edit(edits, bases, kind, lb).add(key)
    for key in before_lbs.keys() - out.dp_lbs.keys():  # (datapaths gone)
        for lb in before_lbs[key]:
            for kind in (0, 1):
                _edit(edits, bases, kind, lb).discard(key)
    for kind, (target, base) in enumerate(((out.switches, earlier.switches),
                                           (out.routers, earlier.routers))):
        target.update((lb, keys) for lb, keys in base.items() if lb in lbs)
        for (k, lb), keys in edits.items():
            if k != kind or lb not in lbs:
                continue
            if keys:
                target[lb] = frozenset(keys)
            else:
                target.pop(lb, None)
    return out


def _gained(moved: set[str], before: Mapping[str, tuple[IdlRow, frozenset[str]]],
            now: Mapping[str, tuple[IdlRow, frozenset[str]]]) -> dict[str, frozenset[str]] | None:
    """Per moved group, the load balancers it gained; None if one lost any (or went)."""
    out: dict[str, frozenset[str]] = {}
    for g in moved:
        was, is_ = before.get(g), now.get(g)
        if is_ is None or (was is not None and not was[1] <= is_[1]):
            return None
        out[g] = is_[1] - was[1] if was is not None else is_[1]
    return out


def _edit(edits: dict[tuple[int, str], set[str]],
          bases: tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]],
          kind: int, lb: str) -> set[str]:
    """The datapaths of one kind load balancer `lb` applies to, being edited."""
    found = edits.get((kind, lb))
    if found is None:
        found = edits[(kind, lb)] = set(bases[kind].get(lb, EMPTY))
    return found
