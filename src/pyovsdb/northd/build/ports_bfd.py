"""SB BFD sessions from NB BFD, and the status both sides exchange (OVN 23.03,
`build_bfd_table`).

Rules kept here:
- Sessions are named by (logical_port, dst_ip). An SB session without an NB one goes.
- A new session gets the lowest UDP source port from 49152 that no SB session holds,
  min_tx/min_rx 1000 and detect_mult 5 unless NB sets them, and a discriminator. 23.03
  draws the discriminator at random; here it is 1 plus the OVS string hash of the name,
  so that a build is a function of its input (an existing session keeps its own).
- Statuses, in 23.03's order within one run: an NB session without a status is set to
  "admin_down"; where NB and SB differ, an "admin_down" on either side wins for SB,
  otherwise the SB status (ovn-controller's "up", "down", "init") is written back to
  NB; SB gets the resulting NB status. Then a session a static route of an enabled
  router uses (its `bfd`, with the route's nexthop as dst_ip) goes from "admin_down"
  to "down" in NB, and one that had an SB session but no route using it goes to
  "admin_down" in NB. (23.03 also requires the route to be valid, which the logical
  flow builders check; a route is taken as it is here.)
- New sessions are made in order of their names (23.03: hash order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...idl.replica import ReplicaTable
from ...idl.row import IdlRow
from ...ovsdb.hashorder import hash_string
from ..desired import DesiredDb, DesiredTable

COLUMNS = ("logical_port", "dst_ip", "src_port", "disc", "status", "min_tx", "min_rx",
           "detect_mult")
NB_COLUMNS = ("status",)
SRC_PORT_START = 49152
SRC_PORT_LEN = 65535 - SRC_PORT_START
DEF_MIN_TX = 1000
DEF_MIN_RX = 1000
DEF_DETECT_MULT = 5


def _opt(value: Any, default: int) -> int:
    return int(value) if value is not None else default


def _referenced(nb: Mapping[str, ReplicaTable]) -> set[str]:
    """UUIDs of the NB BFD sessions static routes of enabled routers use."""
    out: set[str] = set()
    routers = nb.get("Logical_Router")
    for router in routers.rows.values() if routers is not None else ():
        if router.enabled is False:
            continue
        for route in router.static_routes:
            bfd = route.bfd if isinstance(route, IdlRow) else None
            if isinstance(bfd, IdlRow) and bfd.dst_ip == route.nexthop:
                out.add(bfd.uuid)
    return out


def build_bfd(nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
              desired_sb: DesiredDb, desired_nb: DesiredDb) -> set[str]:
    """Fill the desired BFD tables; the logical ports that have a session."""
    table = desired_sb.add(DesiredTable("BFD", COLUMNS))
    sb_table = sb.get("BFD")
    existing: dict[tuple[str, str], IdlRow] = {}
    used: set[int] = set()
    for row in sorted(sb_table.rows.values() if sb_table is not None else (),
                      key=lambda r: r.uuid):
        existing.setdefault((row.logical_port, row.dst_ip), row)
        used.add(row.src_port - SRC_PORT_START)
    nb_table = nb.get("BFD")
    nb_rows = sorted(nb_table.rows.values() if nb_table is not None else (),
                     key=lambda r: (r.logical_port, r.dst_ip, r.uuid))
    referenced = _referenced(nb) if nb_rows else set()
    ports: set[str] = set()
    for row in nb_rows:
        key = (row.logical_port, row.dst_ip)
        if key in table.rows:
            continue
        nb_status = row.status if row.status is not None else "admin_down"
        conf = {"min_tx": _opt(row.min_tx, DEF_MIN_TX), "min_rx": _opt(row.min_rx, DEF_MIN_RX),
                "detect_mult": _opt(row.detect_mult, DEF_DETECT_MULT)}
        current = existing.get(key)
        if current is None:
            free = next((i for i in range(SRC_PORT_LEN) if i not in used), None)
            if free is None:
                continue
            used.add(free)
            name = row.dst_ip + row.logical_port
            table.put(key, logical_port=row.logical_port, dst_ip=row.dst_ip,
                      src_port=SRC_PORT_START + free, disc=1 + hash_string(name),
                      status=nb_status, **conf)
        else:
            sb_status = current.status
            if sb_status != nb_status and "admin_down" not in (nb_status, sb_status):
                nb_status = sb_status
            table.put(key, logical_port=row.logical_port, dst_ip=row.dst_ip,
                      src_port=current.src_port, disc=current.disc, status=nb_status, **conf)
        if row.uuid in referenced:
            if nb_status == "admin_down":
                nb_status = "down"
        elif current is not None and nb_status != "admin_down":
            nb_status = "admin_down"
        if nb_status != row.status:
            desired_nb.table("BFD", NB_COLUMNS, owned=False).set(row.uuid, status=[nb_status])
        ports.add(row.logical_port)
    return ports
