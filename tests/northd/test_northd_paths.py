"""Where `pyovsdb northd` puts its files by default, beside the real ovn-northd 23.03:
with only the OVS_* directory variables set, only the OVN_* ones, and neither.

Each northd runs with `--pidfile --log-file` and no `--unixctl` in a private mount
namespace (`unshare -m`) whose /run, /var/log/ovn and /var/log/openvswitch are empty
tmpfs mounts, so the defaults under /var are used for real without touching the
machine's; the test lists what each one created, in those places and in the
directories the variables name, while it runs (the pid written as PID), and the
databases it tries first (its log's "connecting..." lines).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from procs import require, stop_process

pytestmark = pytest.mark.interop

# Runs inside the namespace: mounts the scratch places, starts the northd, waits for
# its pidfile, control socket and log, lists the files, stops it.
HELPER = r"""
import ctypes, glob, json, os, signal, subprocess, sys, time
cmd, places = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for d in ("/run", "/var/log/ovn", "/var/log/openvswitch"):
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", d], check=True)
os.makedirs("/run/ovn")
os.makedirs("/run/openvswitch")
libc = ctypes.CDLL(None)
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))
signal.signal(signal.SIGTERM, lambda *a: (p.kill(), sys.exit(1)))
def files():
    return sorted(f for d in places for f in glob.glob(d + "/*"))
def remotes():
    logs = [f for f in files() if f.endswith(".log")]
    text = open(logs[0]).read() if logs else ""
    return sorted(line.split("|")[4] for line in text.splitlines()
                  if line.endswith(": connecting..."))
deadline = time.monotonic() + 15
while time.monotonic() < deadline and p.poll() is None:
    found = files()
    if all(any(f.endswith(e) for f in found) for e in (".pid", ".ctl", ".log")) \
            and len(remotes()) == 2:
        break
    time.sleep(0.05)
found = [f.replace(str(p.pid), "PID") for f in files()] + remotes()
p.kill()
p.wait()
print(json.dumps(found))
"""


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                       capture_output=True, check=False)
    return r.returncode == 0


def _files(kind: str, env: dict[str, str], places: list[str]) -> list[str]:
    base = ["ovn-northd"] if kind == "real" else [sys.executable, "-m", "pyovsdb", "northd"]
    cmd = [*base, "--pidfile", "--log-file", "-vconsole:off"]
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", sys.executable,
                          "-c", HELPER, json.dumps(cmd), json.dumps(places)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        stop_process(p)
    assert p.returncode == 0, err
    return list(json.loads(out))


def test_default_paths_as_the_real_northd(tmp_path: Path) -> None:
    require("ovn-northd")
    if not _unshare_works():
        pytest.skip("no private mount namespace here (unshare -m needs CAP_SYS_ADMIN)")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OVS_", "OVN_"))}
    clean["PYTHONPATH"] = os.pathsep.join(sys.path)
    names = ("OVS_RUNDIR", "OVS_LOGDIR", "OVN_RUNDIR", "OVN_LOGDIR")
    variants = {"neither": (), "ovs": names[:2], "ovn": names[2:]}
    jobs = {}
    for variant, set_here in variants.items():
        for kind in ("real", "ours"):
            dirs = {n: tmp_path / f"{variant}-{kind}" / n.lower() for n in names}
            for d in dirs.values():
                d.mkdir(parents=True)
            env = {**clean, **{n: str(dirs[n]) for n in set_here}}
            places = ["/run/ovn", "/run/openvswitch", "/var/log/ovn",
                      "/var/log/openvswitch", *map(str, dirs.values())]
            jobs[(variant, kind)] = (env, places, f"{tmp_path}/{variant}-{kind}/")
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {key: pool.submit(_files, key[1], env, places)
                   for key, (env, places, _) in jobs.items()}
        found = {key: [f.replace(jobs[key][2], "TMP/") for f in fut.result()]
                 for key, fut in futures.items()}
    for variant in variants:
        assert found[(variant, "ours")] == found[(variant, "real")], variant
    # That is: the pidfile and control socket in OVN's run directory, the log in OVS's.
    pid, ctl = "ovn-northd.pid", "ovn-northd.PID.ctl"
    dbs = [f"unix:/var/run/ovn/{db}_db.sock: connecting..." for db in ("ovnnb", "ovnsb")]
    assert sorted(found[("neither", "ours")]) == [
        f"/run/ovn/{ctl}", f"/run/ovn/{pid}", "/var/log/openvswitch/ovn-northd.log", *dbs]
    assert sorted(found[("ovs", "ours")]) == [
        f"/run/ovn/{ctl}", f"/run/ovn/{pid}", "TMP/ovs_logdir/ovn-northd.log", *dbs]
    assert sorted(found[("ovn", "ours")]) == [
        "/var/log/openvswitch/ovn-northd.log", f"TMP/ovn_rundir/{ctl}",
        f"TMP/ovn_rundir/{pid}",
        *(f"unix:TMP/ovn_rundir/{db}_db.sock: connecting..." for db in ("ovnnb", "ovnsb"))]
