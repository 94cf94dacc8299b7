"""northd's engine graph without a server: the daemon's loop in miniature (run the
graph on the replicas' changesets, commit its ops into in-memory NB and SB, feed the
commits' changesets back), checking which nodes recompute, that the incremental result
is what a fresh recompute wants, and that builders read only the SB tables declared."""

from __future__ import annotations

import random

import pytest

from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.nodes.tables import leaf_name
from pyovsdb.northd.testing import LocalDb, LocalNorthd, Nb
from pyovsdb.ovsdb.changeset import Changeset


class Loop(LocalNorthd):
    """The daemon's run/commit cycle over LocalDbs (`LocalNorthd`), 10 ms per run."""

    def __init__(self, nb: Nb, sb: LocalDb) -> None:
        super().__init__(nb.db, sb, step_ms=10)
        self.nb_did = self.nb_changed
        self.sb_did = self.sb_changed

    def run(self) -> int:
        """One run and its commits; the number of operations committed."""
        step = self.run_once()
        assert not step.out.canceled
        return len(step.sb_ops) + len(step.nb_ops)


def fresh_plan(loop: Loop) -> tuple[int, int]:
    """Operations a graph built from scratch on the same replicas would commit."""
    _, out = loop.fresh()
    return len(out.sb_ops), len(out.nb_ops)


def test_ls_and_lsp_add_and_claims_recompute_nothing(nb: Nb, sb: LocalDb) -> None:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                       "svc_monitor_mac": "0a:00:00:00:00:fe"})
    loop = Loop(nb, sb)
    loop.settle()
    # The first run; the NB_Global options it writes back come back as what it has.
    assert loop.stat("northd") == 1
    loop.nb_did(_ls_add(nb, "sw0"))
    loop.settle()
    assert loop.stat("northd") == 1  # a switch created is applied in place too
    for name in ("p1", "p2"):
        before = loop.stat("northd")
        loop.nb_did(_lsp_add(nb, "sw0", name))
        loop.settle()
        # The port is handled in place, and its binding and the `up` written back
        # come back without a recompute.
        assert loop.stat("northd") == before
    pbs = {r.logical_port: r for r in sb.tables["Port_Binding"].rows.values()}
    assert sorted(pbs) == ["p1", "p2"]
    assert sorted(r.tunnel_key for r in pbs.values()) == [1, 2]
    lsps = {r.name: r for r in nb.db.tables["Logical_Switch_Port"].rows.values()}
    assert lsps["p1"].up is False and lsps["p2"].up is False
    # A chassis registers (northd reads Chassis: one recompute), then claims p1.
    loop.sb_did(sb.transact([
        {"op": "insert", "table": "Encap", "uuid-name": "e",
         "row": {"type": "geneve", "ip": "192.0.2.1", "chassis_name": "ch1"}},
        {"op": "insert", "table": "Chassis",
         "row": {"name": "ch1", "hostname": "h1", "encaps": ["named-uuid", "e"]}}]))
    ch = str(sb.last_results[1]["uuid"][1])
    loop.settle()
    before = loop.stat("northd")
    feedback = loop.stat("sync_from_sb", "compute")
    loop.sb_did(sb.update("Port_Binding", pbs["p1"].uuid, chassis=ch))
    loop.settle()
    assert loop.stat("northd") == before
    assert loop.stat("sync_from_sb", "compute") > feedback
    lsps = {r.name: r for r in nb.db.tables["Logical_Switch_Port"].rows.values()}
    assert lsps["p1"].up is True and lsps["p2"].up is False
    # What the increments reached is what a recompute from scratch wants.
    assert fresh_plan(loop) == (0, 0)


def test_cfg_handshake_reports_sb_cfg_after_the_commit(nb: Nb, sb: LocalDb) -> None:
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                       "svc_monitor_mac": "0a:00:00:00:00:fe"})
    loop = Loop(nb, sb)
    loop.settle()
    before = loop.stat("northd")
    uuid = next(iter(nb.db.tables["NB_Global"].rows))
    loop.nb_did(nb.db.update("NB_Global", uuid, nb_cfg=7))
    assert loop.run() > 0                     # SB_Global.nb_cfg = 7
    assert next(iter(sb.tables["SB_Global"].rows.values())).nb_cfg == 7
    # NB sb_cfg reported at once once the SB commit is done (`Driver.report_cfg`)
    assert next(iter(nb.db.tables["NB_Global"].rows.values())).sb_cfg == 7
    loop.settle()                             # then hv_cfg (no chassis)
    row = next(iter(nb.db.tables["NB_Global"].rows.values()))
    assert (row.sb_cfg, row.hv_cfg) == (7, 7)
    assert row.sb_cfg_timestamp > 0 and row.nb_cfg_timestamp > 0
    assert loop.stat("northd") == before     # the handshake alone recomputes sync_cfg


def test_leaf_names_are_ovns() -> None:
    assert leaf_name("NB", "Logical_Switch_Port") == "NB_logical_switch_port"
    assert leaf_name("SB", "Logical_DP_Group") == "SB_logical_DP_group"
    assert leaf_name("SB", "SB_Global") == "SB_sb_global"


def _ls_add(nb: Nb, name: str) -> Changeset[IdlRow]:
    return nb.db.transact([{"op": "insert", "table": "Logical_Switch",
                            "row": {"name": name}}])


def _lsp_add(nb: Nb, ls: str, name: str) -> Changeset[IdlRow]:
    return nb.db.transact([
        {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
         "row": {"name": name}},
        {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", ls]],
         "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}])


def _step(rng: random.Random, nb: Nb, sb: LocalDb, i: int) -> tuple[str, Changeset[IdlRow]]:
    """One random change to NB or SB (by ovn-nbctl, or by a chassis); its changeset."""
    switches = sorted(r.name for r in nb.db.tables["Logical_Switch"].rows.values())
    lsps = sorted(nb.db.tables["Logical_Switch_Port"].rows.values(), key=lambda r: r.name)
    pbs = sorted(sb.tables["Port_Binding"].rows.values(), key=lambda r: r.logical_port)
    chassis = sorted(sb.tables["Chassis"].rows.values(), key=lambda r: r.name)
    kind = rng.choice(["ls", "lsp", "lsp", "lsp", "del", "set", "set", "claim", "claim",
                       "up", "chassis", "cfg", "router"])
    if kind == "ls" or not switches:
        return "ls", _ls_add(nb, f"sw{i}")
    if kind == "lsp":
        return "lsp", _lsp_add(nb, rng.choice(switches), f"p{i}")
    if kind == "del" and lsps:
        lsp = rng.choice(lsps)
        return "del", nb.db.transact([
            {"op": "mutate", "table": "Logical_Switch", "where": [],
             "mutations": [["ports", "delete", ["set", [["uuid", lsp.uuid]]]]]}])
    if kind == "set" and lsps:
        lsp = rng.choice(lsps)
        if rng.random() < 0.5:
            return "set", nb.db.update("Logical_Switch_Port", lsp.uuid,
                                       addresses=[f"0a:00:00:01:00:{i % 256:02x} 10.9.0.{i}"])
        key = rng.choice(sorted(k for k in lsp.data["options"]) or [None])
        return "set", nb.db.update("Logical_Switch_Port", lsp.uuid, options={
            "requested-tnl-key": str(100 + i)} if key is None else {})
    if kind in ("claim", "up") and pbs and chassis:
        pb = rng.choice(pbs)
        if kind == "up":
            return "up", sb.update("Port_Binding", pb.uuid, up=[rng.random() < 0.5])
        ch = rng.choice([*chassis, None])
        return "claim", sb.update("Port_Binding", pb.uuid,
                                  chassis=[] if ch is None else [ch.uuid])
    if kind == "chassis" or (kind in ("claim", "up") and not chassis):
        notif = {"port-up-notif": "true"} if rng.random() < 0.5 else {}
        return "chassis", sb.transact([
            {"op": "insert", "table": "Encap", "uuid-name": "e",
             "row": {"type": "geneve", "ip": f"192.0.2.{i % 250}", "chassis_name": f"ch{i}"}},
            {"op": "insert", "table": "Chassis",
             "row": {"name": f"ch{i}", "hostname": f"h{i}", "encaps": ["named-uuid", "e"],
                     "other_config": ["map", [[k, v] for k, v in notif.items()]]}}])
    if kind == "router":
        ls = rng.choice(switches)
        return "router", nb.db.transact([
            {"op": "insert", "table": "Logical_Router_Port", "uuid-name": "lrp",
             "row": {"name": f"lrp{i}", "mac": f"0a:00:00:00:{i % 256:02x}:01",
                     "networks": f"10.{i % 250}.0.1/24"}},
            {"op": "insert", "table": "Logical_Router",
             "row": {"name": f"lr{i}", "ports": ["named-uuid", "lrp"]}},
            {"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "lsp",
             "row": {"name": f"{ls}-lrp{i}", "type": "router", "addresses": "router",
                     "options": ["map", [["router-port", f"lrp{i}"]]]}},
            {"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", ls]],
             "mutations": [["ports", "insert", ["set", [["named-uuid", "lsp"]]]]]}])
    uuid = next(iter(nb.db.tables["NB_Global"].rows))
    return "cfg", nb.db.update("NB_Global", uuid, nb_cfg=i)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_equals_recompute(nb: Nb, sb: LocalDb, seed: int) -> None:
    """Random NB and SB changes, each settled incrementally: after each, a graph built
    from scratch wants nothing more, (a table read undeclared raises)."""
    rng = random.Random(seed)
    nb.db.insert("NB_Global", options={"mac_prefix": "0a:00:00",
                                       "svc_monitor_mac": "0a:00:00:00:00:fe"})
    loop = Loop(nb, sb)
    loop.settle()
    for i in range(1, 41):
        kind, cs = _step(rng, nb, sb, i)
        if kind in ("claim", "up", "chassis"):
            loop.sb_did(cs)
        else:
            loop.nb_did(cs)
        loop.settle()
        assert fresh_plan(loop) == (0, 0), f"step {i} ({kind})"
