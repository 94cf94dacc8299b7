"""The desired SB rows of the `lflow` node's flows: the `Logical_Flow` rows and the
`Logical_DP_Group` rows they share, built whole or again for the flows a rebuild
changed.

Rules kept here:
- The desired `Logical_DP_Group` table is northd's (the load balancers' groups) with
  the flows' groups added, in a copy: the table `northd` built is not changed.
- The flows using each group are counted, so a rebuild updates the groups of the
  flows it changed and never walks the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from ..build.dp_groups import TABLE as DP_GROUP_TABLE
from ..build.dp_groups import dp_group_key, group_ref
from ..desired import DesiredDb, DesiredTable, Ref
from ..lflows import LflowTable
from ..lflows.table import FlowKey, flow_row_key
from .northd import NorthdData


def desired_rows(northd: NorthdData, flows: LflowTable, last: DesiredDb | None,
             changed: set[FlowKey], users: Counter[tuple[str, ...]], groups_kept: bool = False
             ) -> tuple[DesiredDb, Counter[tuple[str, ...]], set[Hashable] | None]:
    """The desired tables of `flows`, the users of each datapath group and the groups
    whose users changed (None: every group desired again): every row
    built (`last` None), or the last tables (`last`, whose Logical_Flow rows are
    changed in place) with the rows of `changed` built again and the groups' users
    (`users`, the last ones) counted again for those alone. The groups desired are
    northd's and those a flow uses: with `groups_kept` (northd's unchanged) the last
    ones with the groups whose users changed added or taken away, else all again."""
    sb = DesiredDb()
    groups = northd.sb.tables.get(DP_GROUP_TABLE)
    previous = last.tables.get(DP_GROUP_TABLE) if last is not None and groups_kept else None
    base = previous if previous is not None else groups
    if base is not None:
        sb.add(DesiredTable(base.name, base.columns, base.owned, dict(base.rows), base.fill))
    if last is None:
        flows.put_desired(sb)
        return sb, Counter(dp_group_key(f.datapaths) for f in flows.flows.values()
                           if len(f.datapaths) > 1), None
    users = users.copy()
    touched: set[tuple[str, ...]] = set()
    keys: dict[frozenset[str], tuple[str, ...]] = {}
    table = sb.add(last.tables["Logical_Flow"])
    rows = table.rows
    for key in changed:
        row_key = flow_row_key(key)
        was = rows.get(row_key)
        group = was.get("logical_dp_group") if was is not None else None
        if isinstance(group, Ref) and isinstance(group.key, tuple):
            users[group.key] -= 1
            touched.add(group.key)
        flow = flows.flows.get(key)
        if flow is None:
            rows.pop(row_key, None)
            continue
        if len(flow.datapaths) > 1:
            # (flows on the same datapaths share one key: sorted once)
            members = frozenset(flow.datapaths)
            group_key = keys.get(members)
            if group_key is None:
                group_key = keys[members] = dp_group_key(members)
            users[group_key] += 1
            touched.add(group_key)
            rows[row_key] = flows.row(flow, sb, group_key)
        else:
            rows[row_key] = flows.row(flow, sb)
    kept = groups.rows if groups is not None else {}
    for group_key in touched if previous is not None else list(users):
        if users[group_key] > 0:
            group_ref(sb, group_key)
        else:
            del users[group_key]
            if previous is not None and group_key not in kept:
                sb.tables[DP_GROUP_TABLE].rows.pop(group_key, None)
    left = sb.tables.get(DP_GROUP_TABLE)
    if left is not None and not left.rows and groups is None:
        del sb.tables[DP_GROUP_TABLE]  # (as a build leaves it: no table, none desired)
    return sb, users, set(touched) if previous is not None else None
