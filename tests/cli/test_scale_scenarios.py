"""`pyovsdb scale`'s ovn-heater scenarios beyond density-light, small, on the real C
stack and ours side by side: each leaves in the Southbound exactly the logical flows
and bindings on ours as on the real one (the same Northbound writes, two northds), what
the scenario wrote is there (load balancers, policies) and what it deleted is gone, and
the report carries the scenario's own figures and northd's engine counters."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pyovsdb.scale import cloud
from pyovsdb.scale.scenarios import netpol_pods
from pyovsdb.testing import run

NODES = 3


def _sb(db: Path, table: str, columns: list[str]) -> list[dict[str, Any]]:
    query = json.dumps(["OVN_Southbound", {"op": "select", "table": table, "where": [],
                                           "columns": columns}])
    return list(json.loads(run(["ovsdb-tool", "query", str(db), query]).stdout)[0]["rows"])


def _flows(db: Path) -> Counter[str]:
    cols = ["pipeline", "table_id", "priority", "match", "actions"]
    return Counter(json.dumps([r[c] for c in cols])
                   for r in _sb(db, "Logical_Flow", ["_uuid", *cols]))


def _scale(out: Path, scenario: str, *args: str, sb: str = "sb.db"
           ) -> tuple[list[Any], list[Any]]:
    p = subprocess.run([sys.executable, "-m", "pyovsdb", "scale", "--stacks", "c,ours",
                        f"--scenario={scenario}", f"--nodes={NODES}", "--startup-pods=1",
                        *args, f"--out={out}"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    runs = json.loads((out / "runs.json").read_text())
    assert [s["stack"] for s in summary["stacks"]] == ["c", "ours"]
    flows = [_flows(_standalone(out / stack / sb)) for stack in ("c", "ours")]
    assert sum(flows[0].values()) > 100
    assert flows[0] == flows[1], (flows[0] - flows[1], flows[1] - flows[0])
    for s in summary["stacks"]:
        # both northds answered inc-engine/show-stats: their engines built everything
        # at least once (the cold start)
        assert s["engine"]["northd_recompute"] >= 1 and s["engine"]["lflow_recompute"] >= 1
        assert s["wait_hv_ms"]["hv_cfg"] >= s["wait_hv_ms"]["sb_cfg"] > 0
    return summary["stacks"], runs


def _standalone(db: Path) -> Path:
    """The file itself, or a standalone copy of a clustered one (to query it)."""
    if run(["ovsdb-tool", "db-is-clustered", str(db)], check=False).returncode != 0:
        return db
    copy = db.with_name(f"{db.stem}-standalone.db")
    run(["ovsdb-tool", "cluster-to-standalone", str(copy), str(db)])
    return copy


def _ports(db: Path) -> set[str]:
    return {r["logical_port"] for r in _sb(db, "Port_Binding", ["logical_port", "type"])
            if r["type"] == ""}


@pytest.mark.parametrize("scenario", ["density-heavy", "cluster-density"])
def test_load_balancer_scenarios(tmp_path: Path, scenario: str) -> None:
    if scenario == "density-heavy":
        args, pods, iterations, lbs = ["--pods=4"], 4, 2, NODES + 2  # one per 2 pods
    else:
        args, pods, iterations, lbs = ["--iterations=2", "--startup-iterations=1"], 20, 2, 3
    summaries, runs = _scale(tmp_path, scenario, *args)
    for s, r in zip(summaries, runs, strict=True):
        assert s["latency_ms"]["up"]["n"] == pods
        assert s["iteration_ms"]["n"] == iterations
        assert all(p["sb"] <= p["claim"] <= p["up_sb"] for p in r["scenario"]["pods"])
        db = tmp_path / s["stack"] / "sb.db"
        # a load balancer is a row per protocol, northd copies each (a select of
        # some columns gives distinct rows: the uuid keeps them apart)
        got = Counter(row["name"] for row in _sb(db, "Load_Balancer", ["_uuid", "name"]))
        assert len(got) == lbs and set(got.values()) == {3}, got
        ports = _ports(db)
        if scenario == "cluster-density":
            # 1 startup pod per node and 4 per iteration stay; the 6 build pods of each
            # measured iteration came up (measured) and are gone
            assert len([p for p in ports if p.startswith("pod-")]) == NODES + 4 * 3
        vips = [v for row in _sb(db, "Load_Balancer", ["_uuid", "vips"])
                for v in row["vips"][1]]
        assert all(v[1].endswith(":8080") for v in vips)


def test_netpol_multitenant(tmp_path: Path) -> None:
    namespaces = 5
    summaries, runs = _scale(tmp_path, "netpol-multitenant", f"--iterations={namespaces}")
    pods = sum(netpol_pods(i, namespaces) for i in range(namespaces))
    for s, r in zip(summaries, runs, strict=True):
        assert s["latency_ms"]["up"]["n"] == pods
        assert s["iteration_ms"]["n"] == namespaces
        # two policies per namespace, each acknowledged by northd, then every chassis
        assert s["policy_ms"]["hv_cfg"]["n"] == 2 * namespaces
        assert all(p["hv_cfg"] >= p["sb_cfg"] > 0 for p in r["scenario"]["policies"])
        db = tmp_path / s["stack"] / "sb.db"
        groups = {row["name"] for row in _sb(db, "Port_Group", ["name"])}
        for i in range(namespaces):
            ns = f"ns_netpol_multitenant_{i}"
            # the namespace's three port groups hold its pods (per datapath in SB)
            assert {g for g in groups if g.endswith(f"_{ns}")}, (ns, groups)
        flows = [row["match"] for row in _sb(db, "Logical_Flow", ["match"])]
        assert any("43.43.43.20" in m and "pg_ns_netpol_multitenant_4" in m for m in flows)
        sets = {row["name"]: row["addresses"] for row in
                _sb(db, "Address_Set", ["name", "addresses"])}
        assert len(sets["as_ns_netpol_multitenant_4"][1]) == netpol_pods(4, namespaces)


def test_clustered_stacks(tmp_path: Path) -> None:
    """Each database a 3-member cluster, over TCP: the same flows from the two stacks,
    every pod up, each server sampled, the chassis spread over the Southbound members."""
    summaries, runs = _scale(tmp_path, "density-heavy", "--pods=4", "--clustered",
                             "--transport=tcp", sb="sb/s1.db")
    for s, r in zip(summaries, runs, strict=True):
        assert s["latency_ms"]["up"]["n"] == 4
        servers = {f"{db} server {i}" for db in ("nb", "sb") for i in (1, 2, 3)}
        assert set(s["processes"]) == servers | {"northd", "chassis"}
        assert all(s["processes"][role]["peak_mib"] > 0 for role in servers)
        # northd is given every member of both clusters
        northd = " ".join(r["commands"]["northd"])
        members = {db: [r["commands"][f"{db} server {i}"] for i in (1, 2, 3)]
                   for db in ("nb", "sb")}
        assert northd.count("tcp:127.0.0.1:") == 6, northd
        remotes = [c["remote"] for c in r["chassis"]]
        assert len(set(remotes)) == NODES and all(x.startswith("tcp:") for x in remotes)
        assert all(any(x.rpartition(":")[2] in " ".join(cmd) for cmd in members["sb"])
                   for x in remotes), (remotes, members["sb"])
        assert s["db_bytes"]["sb"] > 0


def test_openstack(tmp_path: Path) -> None:
    """Projects as Neutron writes them: every VM up, the same flows from both stacks,
    each router's gateway port bound to its first-priority gateway chassis, each
    floating IP in the flows."""
    summaries, _ = _scale(tmp_path, "openstack", "--nodes=4", "--iterations=2",
                          "--startup-iterations=1", "--vms-per-project=3")
    for s in summaries:
        assert s["latency_ms"]["up"]["n"] == 2 * 3
        assert s["policy_ms"]["hv_cfg"]["n"] == 2 and s["iteration_ms"]["n"] == 2
        db = tmp_path / s["stack"] / "sb.db"
        chassis = {c["_uuid"][1]: c["name"] for c in _sb(db, "Chassis", ["_uuid", "name"])}
        bindings = _sb(db, "Port_Binding", ["_uuid", "logical_port", "type", "chassis", "up"])
        vms = [b for b in bindings if b["logical_port"].startswith("lp-")]
        assert len(vms) == 3 * 3 and all(b["up"] is True for b in vms)
        redirects = sorted((b["logical_port"], chassis.get(b["chassis"][1])
                            if b["chassis"][0] == "uuid" else None)
                           for b in bindings if b["type"] == "chassisredirect")
        # project p's gateway chassis are p*3, p*3+1, p*3+2 (mod 4), the first ranked
        # highest (cloud.gateway_ops)
        assert len(redirects) == 3 and all(c is not None for _, c in redirects), redirects
        assert {c for _, c in redirects} == {f"chassis-{p * 3 % 4}" for p in range(3)}
        flows = " ".join(row["match"] for row in _sb(db, "Logical_Flow", ["_uuid", "match"]))
        assert all(f"ip4.dst == {cloud.floating_ip(p, v)}" in flows
                   for p in range(3) for v in range(3))
