"""BFD sessions: SB rows from NB, source ports, and the status exchange between NB,
SB and the static routes that use a session, as the real ovn-northd 23.03 did it."""

from __future__ import annotations

from pyovsdb.northd.testing import LocalDb, Nb, run_core


def status(db: LocalDb) -> dict[str, str | None]:
    return {r.dst_ip: r.status for r in db.tables["BFD"].rows.values()}


def test_bfd_sessions_equal_real_northd(nb: Nb, sb: LocalDb) -> None:
    nb.lr_add("lr0")
    nb.lrp_add("lr0", "lr0-a", "00:00:00:00:ff:01", "10.0.0.1/24")
    run_core(nb.db, sb)
    b2 = nb.db.insert("BFD", logical_port="lr0-a", dst_ip="10.0.0.2", min_tx=250)
    nb.db.insert("BFD", logical_port="lr0-a", dst_ip="10.0.0.3", status="down",
                 detect_mult=3)
    nb.db.insert("BFD", logical_port="nope", dst_ip="10.0.0.4")
    for _ in range(3):
        run_core(nb.db, sb)
    rows = sorted((r.logical_port, r.dst_ip, r.src_port, r.status, r.min_tx, r.min_rx,
                   r.detect_mult) for r in sb.tables["BFD"].rows.values())
    # Observed with the three rows made in one go: every session admin_down (the one
    # asked "down" has no route using it), source ports from 49152.
    assert rows == [("lr0-a", "10.0.0.2", 49152, "admin_down", 250, 1000, 5),
                    ("lr0-a", "10.0.0.3", 49153, "admin_down", 1000, 1000, 3),
                    ("nope", "10.0.0.4", 49154, "admin_down", 1000, 1000, 5)]
    assert status(nb.db) == {"10.0.0.2": "admin_down", "10.0.0.3": "admin_down",
                             "10.0.0.4": "admin_down"}
    discs = {r.dst_ip: r.disc for r in sb.tables["BFD"].rows.values()}
    assert len(set(discs.values())) == 3 and all(d > 0 for d in discs.values())
    # ovn-controller reports a session up: admin_down in NB wins.
    sb3 = next(r for r in sb.tables["BFD"].rows.values() if r.dst_ip == "10.0.0.3")
    sb.update("BFD", sb3.uuid, status="up")
    run_core(nb.db, sb)
    assert status(sb)["10.0.0.3"] == "admin_down"
    # A static route uses 10.0.0.2: down in NB and SB; then the controller's up wins.
    nb.add_child("Logical_Router", "lr0", "static_routes", "Logical_Router_Static_Route",
                 ip_prefix="10.9.0.0/24", nexthop="10.0.0.2", bfd=b2)
    for _ in range(2):
        run_core(nb.db, sb)
    assert status(sb)["10.0.0.2"] == status(nb.db)["10.0.0.2"] == "down"
    sb2 = next(r for r in sb.tables["BFD"].rows.values() if r.dst_ip == "10.0.0.2")
    sb.update("BFD", sb2.uuid, status="up")
    run_core(nb.db, sb)
    assert status(sb)["10.0.0.2"] == status(nb.db)["10.0.0.2"] == "up"
    assert {r.dst_ip: r.disc for r in sb.tables["BFD"].rows.values()} == discs
    assert run_core(nb.db, sb) == [0]
