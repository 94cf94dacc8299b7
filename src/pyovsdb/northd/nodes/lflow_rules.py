"""The `lflow` node's routers whose policies or static routes changed: which of them to
build again, alone where that is equal to building the router's whole.

Rules kept here:
- A policy's flows read no other policy but for its ECMP group id: its rank among the
  router's ECMP policies (reroutes to several next hops) in the `policies` column's
  order. A policy added, taken away or updated can be built alone as long as none of
  them joins or leaves that rank (an ECMP policy listed before and after, or a policy
  that is neither); otherwise the router's policies are built whole (None).
- A static route can be built alone where no version of it is in a route table or
  shares its key with another route (`lflows.rules_moved.routes_alone`).
- What a rule was is read from its table's change in this run (its old row), else
  from the table (a row this run left as it was); a rule that was listed and is found
  nowhere is taken as one that may not be built alone.
- Pure: reads the replica tables and the changes it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ..lflows.lr_policy import policy_ecmp
from ..lflows.rules_moved import routes_alone
from .tables import TableChanges

# Router key -> the UUIDs of the rules to build again alone, or None: all of them.
RuleRebuilds = dict[str, frozenset[str] | None]


class Rules:
    """One kind of a router's rules: the router column that lists them, their table and
    this run's change of it."""

    def __init__(self, column: str, table: ReplicaTable | None,
                 changes: TableChanges | None) -> None:
        self.column = column
        self.rows: Mapping[str, IdlRow] = table.rows if table is not None else {}
        self.changes = changes or {}

    def listed(self, router: IdlRow) -> frozenset[str]:
        return frozenset(router.value(self.column))  # (UUIDs, as the replica keeps them)

    def versions(self, uuid: str, before: frozenset[str], after: frozenset[str]
                 ) -> tuple[IdlRow | None, IdlRow | None] | None:
        """The rule as listed before and after (None where it was not); None where it
        was listed and is found nowhere."""
        rc = self.changes.get(uuid)
        old = rc.old if rc is not None else self.rows.get(uuid)
        if uuid in before and old is None:
            return None
        return (old if uuid in before else None,
                self.rows.get(uuid) if uuid in after else None)


# Whether the rules `moved` of a router (now `router`; listed in `before`, then
# `after`) can be built alone.
AloneTest = Callable[[Rules, IdlRow, frozenset[str], frozenset[str], frozenset[str]], bool]


def added_or_gone(routers: TableChanges, rules: Rules, alone: AloneTest) -> RuleRebuilds:
    """Of the routers updated in `routers` whose column of `rules` changed, the rules
    that came or went (see the module rules)."""
    out: RuleRebuilds = {}
    for key, rc in routers.items():
        if rc.old is None or rc.new is None:
            continue
        before, after = rules.listed(rc.old), rules.listed(rc.new)
        if before != after:
            moved = before ^ after
            out[key] = moved if alone(rules, rc.new, moved, before, after) else None
    return out


def updated(listing: Iterable[IdlRow], rules: Rules, alone: AloneTest) -> RuleRebuilds:
    """Of the routers `listing`, those that list a rule updated in this run, and those
    rules."""
    changed = {u for u, rc in rules.changes.items()
               if rc.old is not None and rc.new is not None}
    out: RuleRebuilds = {}
    for router in listing:
        listed = rules.listed(router)
        mine = frozenset(listed & changed)
        if mine:
            out[router.uuid] = mine if alone(rules, router, mine, listed, listed) else None
    return out


def policies_alone(rules: Rules, router: IdlRow, moved: frozenset[str],
                   before: frozenset[str], after: frozenset[str]) -> bool:
    for uuid in moved:
        found = rules.versions(uuid, before, after)
        if found is None:
            return False
        old, new = found
        if (old is not None and policy_ecmp(old)) != (new is not None and policy_ecmp(new)):
            return False
    return True


def routes_alone_now(rules: Rules, router: IdlRow, moved: frozenset[str],
                     before: frozenset[str], after: frozenset[str]) -> bool:
    chosen: dict[str, list[IdlRow]] = {}
    for uuid in moved:
        found = rules.versions(uuid, before, after)
        if found is None:
            return False
        chosen[uuid] = [row for row in found if row is not None]
    current = [row for uuid in rules.listed(router) if (row := rules.rows.get(uuid))]
    return routes_alone(current, chosen)
