"""Fan-out against the real server: chassis monitoring the Southbound as ovn-controller
23.03 does (conditions by type, chassis, options, local ports and datapaths; a datapath
group clause every chassis holds; conditions changed as ports come and go), the same
changes on ours and on the real ovsdb-server, and each chassis must receive the same
updates from both. Our server finds the monitors a change concerns through its fan-out
index (`server/fanout.py`) instead of asking each; a monitor it missed, or one it woke
for nothing it should see, shows up here as a difference.

Rows are named by their key columns (uuids differ between the servers), and after each
change a marker that every chassis sees closes the change's updates, so nothing depends
on timing."""

from __future__ import annotations

from typing import Any

from pyovsdb.jsonrpc.client import Client
from pyovsdb.scale.chassis import local_conditions

N = 6


def _ops(n: int) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [{"op": "insert", "table": "SB_Global", "row": {}}]
    for key, name in enumerate(["router", *(f"ls{i}" for i in range(n))], start=1):
        ops.append({"op": "insert", "table": "Datapath_Binding", "uuid-name": name,
                    "row": {"tunnel_key": key, "external_ids": ["map", [["name", name]]]}})
    ops.append({"op": "insert", "table": "Logical_DP_Group", "uuid-name": "grp", "row": {
        "datapaths": ["set", [["named-uuid", f"ls{i}"] for i in range(n)]]}})
    ops.append(_flow("logical_dp_group", ["named-uuid", "grp"], "group0"))
    for i in range(n):
        ops += [
            {"op": "insert", "table": "Encap", "uuid-name": f"e{i}", "row": {
                "type": "geneve", "ip": f"192.0.2.{i + 1}", "chassis_name": f"ch{i}"}},
            {"op": "insert", "table": "Chassis", "uuid-name": f"c{i}", "row": {
                "name": f"ch{i}", "encaps": ["named-uuid", f"e{i}"]}},
            {"op": "insert", "table": "Port_Binding", "row": {
                "logical_port": f"vif{i}", "datapath": ["named-uuid", f"ls{i}"],
                "tunnel_key": 1, "chassis": ["named-uuid", f"c{i}"]}},
            {"op": "insert", "table": "Port_Binding", "row": {
                "logical_port": f"patch{i}", "type": "patch", "tunnel_key": 2,
                "datapath": ["named-uuid", f"ls{i}"]}},
        ]
    return ops


def _flow(col: str, ref: list[str], match: str) -> dict[str, Any]:
    return {"op": "insert", "table": "Logical_Flow", "row": {
        col: ref, "pipeline": "ingress", "table_id": 1, "priority": 10, "match": match,
        "actions": "next;"}}


def _uuids(c: Client, table: str, column: str) -> dict[str, str]:
    rows = c.call("transact", ["OVN_Southbound", {"op": "select", "table": table,
                                                  "where": [], "columns": ["_uuid", column]}])
    out = {}
    for r in rows[0]["rows"]:
        v = r[column]
        out[v[1][0][1] if column == "external_ids" else v] = r["_uuid"][1]
    return out


def _conditions(i: int, ch: str, dps: list[str], ports: list[str]) -> dict[str, Any]:
    """ovn-controller's Port_Binding and Logical_Flow conditions (the scale harness's
    `local_conditions`), and SB_Global for the markers."""
    cond = local_conditions(f"ch{i}", ch, ports, dps, monitor_all=False)
    return {"Port_Binding": [{"where": cond["Port_Binding"]}],
            "Logical_Flow": [{"where": cond["Logical_Flow"]}],
            "SB_Global": [{"columns": ["nb_cfg", "external_ids"]}]}


class _Side:
    """One server, its chassis and the names of the rows they have seen."""

    def __init__(self, remote: str) -> None:
        self.northd = Client(remote, timeout=30)
        res = self.northd.call("transact", ["OVN_Southbound", *_ops(N)])
        assert not any(r is not None and "error" in r for r in res), res
        self.dps = _uuids(self.northd, "Datapath_Binding", "external_ids")
        self.chassis = _uuids(self.northd, "Chassis", "name")
        self.group = self.northd.call("transact", ["OVN_Southbound", {
            "op": "select", "table": "Logical_DP_Group", "where": []}])[0]["rows"][0]["_uuid"][1]
        self.names: dict[str, str] = {}
        self.clients = [Client(remote, timeout=30) for _ in range(N)]
        self.initial = []
        for i, c in enumerate(self.clients):
            cond = _conditions(i, self.chassis[f"ch{i}"], [self.dps[f"ls{i}"]], [f"vif{i}"])
            res = c.call("monitor_cond_since", ["OVN_Southbound", ["monid", "OVN_Southbound"],
                                                cond, "00000000-0000-0000-0000-000000000000"])
            self.initial.append(self.describe(res[2]))
        self.marker = 0

    def describe(self, updates: dict[str, Any]) -> list[tuple[str, str, str]]:
        """An update as (table, row name, kind) triples, sorted."""
        out = []
        for table, rows in updates.items():
            for uuid, change in rows.items():
                (kind, row), = change.items()
                if row:
                    name = row.get("logical_port") or row.get("match")
                    if name is not None:
                        self.names[uuid] = name
                name = self.names.get(uuid, "SB_Global" if table == "SB_Global" else uuid)
                if table == "SB_Global" and row and "external_ids" in row:
                    kind += ":" + str(row["external_ids"])
                out.append((table, name, kind))
        return sorted(out)

    def step(self, ops: list[dict[str, Any]]) -> list[list[Any]]:
        """Run `ops`, then the marker; each chassis's updates in between."""
        if ops:
            res = self.northd.call("transact", ["OVN_Southbound", *ops])
            assert not any(r is not None and "error" in r for r in res), res
        self.marker += 1
        self.northd.call("transact", ["OVN_Southbound", {
            "op": "update", "table": "SB_Global", "where": [],
            "row": {"external_ids": ["map", [["marker", str(self.marker)]]]}}])
        seen = []
        for c in self.clients:
            got: list[Any] = []
            while True:
                note = c.next_notification()
                assert note["method"] == "update3", note
                updates = note["params"][2]
                marker = updates.get("SB_Global")
                if marker and any("marker" in str(v) for v in marker.values()):
                    break
                got.append(self.describe(updates))
            seen.append(got)
        return seen

    def change_condition(self, i: int, ports: list[str], dps: list[str]) -> list[Any]:
        cond = _conditions(i, self.chassis[f"ch{i}"], [self.dps[d] for d in dps], ports)
        c = self.clients[i]
        reply = c.wait(c.send("monitor_cond_change", [
            ["monid", "OVN_Southbound"], ["monid", "OVN_Southbound"],
            {t: [{"where": r[0]["where"]}] for t, r in cond.items() if "where" in r[0]}]))
        assert reply.get("error") is None, reply
        return self.step([])

    def close(self) -> None:
        for c in [self.northd, *self.clients]:
            c.close()


def _script(side: _Side) -> list[Any]:
    d, out = side.dps, []
    out.append(side.initial)
    out.append(side.step([{"op": "update", "table": "Port_Binding",  # one chassis
                           "where": [["logical_port", "==", "vif2"]],
                           "row": {"external_ids": ["map", [["k", "v"]]]}}]))
    out.append(side.step([_flow("logical_datapath", ["uuid", d["ls3"]], "local3")]))
    out.append(side.step([_flow("logical_datapath", ["uuid", d["router"]], "nobody")]))
    out.append(side.step([_flow("logical_dp_group", ["uuid", side.group], "everyone")]))
    out.append(side.step([{"op": "mutate", "table": "SB_Global", "where": [],
                           "mutations": [["nb_cfg", "+=", 1]]}]))
    # chassis 1 gains a port on ls4 (its datapath joins its condition), then loses vif1
    out.append(side.step([{"op": "insert", "table": "Port_Binding", "row": {
        "logical_port": "vif1b", "datapath": ["uuid", d["ls4"]], "tunnel_key": 7}}]))
    out.append(side.change_condition(1, ["vif1", "vif1b"], ["ls1", "ls4"]))
    out.append(side.step([_flow("logical_datapath", ["uuid", d["ls4"]], "local4")]))
    out.append(side.step([{"op": "update", "table": "Port_Binding",  # moved to ls4's chassis
                           "where": [["logical_port", "==", "vif2"]],
                           "row": {"chassis": ["set", [["uuid", side.chassis["ch1"]]]]}}]))
    out.append(side.change_condition(1, ["vif1b"], ["ls4"]))
    out.append(side.step([{"op": "delete", "table": "Logical_Flow",
                           "where": [["match", "==", "local4"]]}]))
    out.append(side.step([{"op": "update", "table": "Port_Binding",  # l3 gateway by options
                           "where": [["logical_port", "==", "vif3"]],
                           "row": {"options": ["map", [["l3gateway-chassis", "ch5"]]]}}]))
    return out


def test_each_chassis_gets_what_the_real_server_sends_it(server_pair: Any) -> None:
    from procs import SB_SCHEMA

    servers = server_pair(SB_SCHEMA)
    sides = {kind: _Side(srv.unix) for kind, srv in servers.items()}
    try:
        got = {kind: _script(side) for kind, side in sides.items()}
    finally:
        for side in sides.values():
            side.close()
    steps = list(zip(got["real"], got["ours"], strict=True))
    for n, (real, ours) in enumerate(steps):
        assert ours == real, f"step {n}"
    # The scenario means something: some changes reach one chassis, some every one,
    # some none.
    reached = [sum(1 for per in step if per) for step in got["real"][1:]]
    assert 1 in reached and N in reached and 0 in reached, reached
