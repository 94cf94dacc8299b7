"""`pyovsdb scale` at a small size: the real C stack and ours run density-light side by
side, every measured pod goes through every stage in order, each simulated chassis
claims exactly the pods its node is asked for (read back from the Southbound file with
the real ovsdb-tool), follows its local datapaths, and the report holds its plots.
Bad options are one line of error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyovsdb.scale.report import STAGES, percentile
from pyovsdb.testing import run

NODES, STARTUP, PODS = 2, 1, 4


def _bindings(db: Path) -> dict[str, tuple[str, bool]]:
    """Each VIF's chassis name and up, from a Southbound database file."""
    query = json.dumps([
        "OVN_Southbound",
        {"op": "select", "table": "Port_Binding", "where": [["type", "==", ""]],
         "columns": ["logical_port", "chassis", "up"]},
        {"op": "select", "table": "Chassis", "where": [], "columns": ["_uuid", "name"]}])
    pbs, chassis = json.loads(run(["ovsdb-tool", "query", str(db), query]).stdout)
    names = {c["_uuid"][1]: c["name"] for c in chassis["rows"]}
    out = {}
    for r in pbs["rows"]:
        ch = r["chassis"]
        out[r["logical_port"]] = (names.get(ch[1]) if ch[0] == "uuid" else None,
                                  r["up"] is True)
    return out


def test_density_light_on_the_c_stack_and_ours(tmp_path: Path) -> None:
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "pyovsdb", "scale", "--stacks", "c,ours",
                        f"--nodes={NODES}", f"--startup-pods={STARTUP}", f"--pods={PODS}",
                        "--wake-delay-ms=5", "--server-update-delay-ms=5", f"--out={out}"],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    runs = json.loads((out / "runs.json").read_text())
    assert [s["stack"] for s in summary["stacks"]] == ["c", "ours"]
    for s, r in zip(summary["stacks"], runs, strict=True):
        pods = r["scenario"]["pods"]
        assert len(pods) == PODS
        for pod in pods:
            assert list(pod) != [] and set(pod) == set(STAGES), pod
            # the Southbound row exists before it is claimed, claimed before it is up
            # (seen through one Southbound monitor: in order, also when our server
            # holds its updates for --update-delay-ms)
            assert pod["sb"] <= pod["claim"] <= pod["up_sb"], pod
            assert pod["nb"] <= pod["up"]
            if s["stack"] == "c":
                # Across the two databases the order holds where nothing delays the
                # Southbound observer's updates; ours may send them up to 5 ms late,
                # after the Northbound's `up`.
                assert pod["up_sb"] <= pod["up"], pod
        assert s["latency_ms"]["up"]["n"] == PODS
        # our servers coalesce their updates, as asked (the real one has no such option)
        servers = [r["commands"][f"{db} server"] for db in ("nb", "sb")]
        assert all(("--update-delay-ms=5.0" in cmd) == (s["stack"] == "ours")
                   for cmd in servers), servers
        assert s["wait_hv_ms"]["hv_cfg"] >= s["wait_hv_ms"]["sb_cfg"] > 0
        # every process was sampled, and spent CPU
        assert set(s["processes"]) == {"nb server", "sb server", "northd", "chassis"}
        assert all(p["peak_mib"] > 0 for p in s["processes"].values())
        assert s["processes"]["northd"]["cpu_s"] > 0
        chassis = r["chassis"]
        assert [c["name"] for c in chassis] == [f"chassis-{n}" for n in range(NODES)]
        total = NODES * (STARTUP + 1) + PODS  # pods and management ports
        assert sum(c["claims"] for c in chassis) == total
        # every node switch through the cluster router, the cluster router, the join
        # switch, and its own gateway router and external switch (23.03's walk)
        assert all(c["local_datapaths"] == NODES + 4 for c in chassis), chassis
        assert all(c["flows"] > 0 for c in chassis)
        # what the Southbound server sent each chassis, and the stack's total
        assert all(c["updates"] > 0 and c["bytes_in"] > 1000 for c in chassis), chassis
        assert s["chassis"]["bytes_in_total"] == sum(c["bytes_in"] for c in chassis)
        # each chassis holds its node's ports alone, all up
        bindings = _bindings(out / s["stack"] / "sb.db")
        assert len(bindings) == total
        for port, (chassis_name, up) in bindings.items():
            node = port.split("-")[1] if port.startswith("pod-") else port[len("k8s-node"):]
            assert chassis_name == f"chassis-{node}" and up, (port, chassis_name, up)
    page = (out / "report.html").read_text()
    assert page.count("<svg") == 3 and "<polyline" in page
    assert "ours / c" in page


def test_bad_options_are_one_line(tmp_path: Path) -> None:
    for args, words in ((["--stacks", "c,rust"], "unknown stack 'rust'"),
                        (["--nodes", "0"], "--nodes must be at least 1"),
                        (["--nodes", "1", "--pods", "300"], "at most 250 pods per node"),
                        (["--stacks", "c-newest", "--upstream", str(tmp_path)],
                         "the c-newest stack needs --upstream DIR"),
                        (["--stacks", "ours,ours-servers-newest"],
                         "the ours-servers-newest stack needs --upstream DIR"),
                        (["--server-update-delay-ms", "-1"],
                         "--server-update-delay-ms takes milliseconds from 0 to 60000")):
        p = subprocess.run([sys.executable, "-m", "pyovsdb", "scale", *args,
                            f"--out={tmp_path / 'x'}"], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and words in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "x").exists()


def test_percentiles_are_nearest_rank() -> None:
    values: list[Any] = list(range(1, 101))
    assert [percentile(values, q) for q in (50, 90, 99, 100)] == [50, 90, 99, 100]
    assert percentile([7.0], 99) == 7.0


def test_sigterm_stops_everything_it_started(tmp_path: Path) -> None:
    """A run stopped by SIGTERM stops its servers, northd and chassis by pid."""
    import os
    import signal
    import time

    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "pyovsdb", "scale", "--stacks", "ours",
                          "--nodes=2", "--startup-pods=1", "--pods=200", "--rate=1",
                          f"--out={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        pidfiles = [out / "ours" / f"{n}.pid" for n in ("nb", "sb", "northd", "chassis")]
        deadline = time.monotonic() + 60
        while not all(f.exists() for f in pidfiles):
            assert p.poll() is None and time.monotonic() < deadline, p.stderr
            time.sleep(0.1)
        pids = [int(f.read_text()) for f in pidfiles]
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if p.stderr is not None:
            p.stderr.close()
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"process {pid} outlived the run")


def test_a_relative_out_directory(tmp_path: Path) -> None:
    """`--out` relative to the working directory: the servers, which run in their own
    directories, still find their files."""
    p = subprocess.run([sys.executable, "-m", "pyovsdb", "scale", "--stacks", "c",
                        "--nodes=1", "--startup-pods=0", "--pods=1", "--out=rel"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "rel" / "report.html").exists()
