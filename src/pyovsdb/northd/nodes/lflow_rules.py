"""The `lflow` node's routers whose policies changed: which policies to build again,
alone where that is equal to building the router's policies whole.

Rules kept here:
- A policy's flows read no other policy but for its ECMP group id: its rank among the
  router's ECMP policies (reroutes to several next hops) in the `policies` column's
  order. A policy added, taken away or updated can be built alone as long as none of
  them joins or leaves that rank (an ECMP policy listed before and after, or a policy
  that is neither); otherwise the router's policies are built whole (None).
- What a policy was is read from the policy table's change in this run (its old row),
  else from the table (a row this run left as it was); a policy that was listed and
  is found nowhere is taken as one that may have been ECMP.
- Pure: reads the replica tables and the changes it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..lflows.lr_policy import policy_ecmp
from .tables import TableChanges

# Router key -> the UUIDs of the policies to build again alone, or None: all of them.
PolicyRebuilds = dict[str, frozenset[str] | None]


def policies_added_or_gone(routers: TableChanges, policies: ReplicaTable | None,
                           changes: TableChanges | None) -> PolicyRebuilds:
    """Of the routers updated in `routers` whose `policies` column changed, the policies
    that came or went (see the module rules)."""
    out: PolicyRebuilds = {}
    for key, rc in routers.items():
        if rc.old is None or rc.new is None:
            continue
        before, after = _listed(rc.old), _listed(rc.new)
        if before == after:
            continue
        moved = before ^ after
        out[key] = moved if _alone(moved, before, after, policies, changes) else None
    return out


def policies_updated(listing: Iterable[IdlRow], policies: ReplicaTable | None,
                     changes: TableChanges) -> PolicyRebuilds:
    """Of the routers `listing`, those that list a policy updated in `changes`, and
    those policies."""
    updated = {u for u, rc in changes.items() if rc.old is not None and rc.new is not None}
    out: PolicyRebuilds = {}
    for router in listing:
        listed = _listed(router)
        mine = frozenset(listed & updated)
        if mine:
            out[router.uuid] = mine if _alone(mine, listed, listed, policies, changes) \
                else None
    return out


def _listed(router: IdlRow) -> frozenset[str]:
    return frozenset(r.uuid if isinstance(r, IdlRow) else str(r)
                     for r in router.value("policies"))


def _alone(uuids: Iterable[str], before: frozenset[str], after: frozenset[str],
           policies: ReplicaTable | None, changes: TableChanges | None) -> bool:
    rows: Mapping[str, IdlRow] = policies.rows if policies is not None else {}
    for uuid in uuids:
        rc = changes.get(uuid) if changes is not None else None
        old = rc.old if rc is not None else rows.get(uuid)
        new = rows.get(uuid)
        if uuid in before and old is None:
            return False  # (listed, and found nowhere: it may have been ECMP)
        was = uuid in before and old is not None and policy_ecmp(old)
        now = uuid in after and new is not None and policy_ecmp(new)
        if was != now:
            return False
    return True
