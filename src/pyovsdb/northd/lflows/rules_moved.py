"""Which of a router's policies a change of its ports moves: those a router port gained
or lost may send elsewhere, built again alone (`lflows.rebuild_router_ports`).

Rules kept here:
- A reroute policy's flows read the router's ports only through its next hops: each is
  sent by the first port (NB order) on a network that holds it. A port gained moves
  the policies with a next hop on one of its networks; a port lost, those that sent by
  it (their flows name it as their `outport`). No other policy's flows change.
- Reads the flow table as it is (before the rebuild) and the context as the run left
  it; pure.
"""

from __future__ import annotations

from collections.abc import Collection

from ..build.datapaths import Datapath
from ..build.ports import Port, quoted
from ..build.ports_addresses import find_lrp_member_ip
from .context import LflowContext, ref_rows
from .lr_policy import policy_nexthops
from .table import LflowTable


def policies_reaching(table: LflowTable, ctx: LflowContext, dp: Datapath,
                      names: Collection[str]) -> frozenset[str]:
    """The UUIDs of router `dp`'s policies whose flows the router ports `names` (gained
    or lost) may move (see the module rules)."""
    gained = [port for name in names if (port := ctx.ports.ports.get(name)) is not None
              and port.dp.key == dp.key and port.networks is not None]
    out: set[str] = set()
    if gained:
        for rule in ref_rows(ctx.current(dp).policies):
            if any(_on(port, hop) for hop in policy_nexthops(rule) for port in gained):
                out.add(rule.uuid)
    sends = tuple(f"outport = {quoted(name)};" for name in names)
    for owner, keys in table.owned_on.get(dp.key, {}).items():
        if isinstance(owner, tuple) and len(owner) == 3 and owner[0] == "policy" \
                and owner[1] == dp.key and owner[2] not in out \
                and any(s in key.actions for key in keys for s in sends):
            out.add(str(owner[2]))
    return frozenset(out)


def _on(port: Port, hop: str) -> bool:
    return find_lrp_member_ip(port.networks, hop) is not None
