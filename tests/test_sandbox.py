"""`pyovsdb sandbox`: the README's main job starts, serves NB and SB, and stops cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from procs import free_port, require, run

pytestmark = pytest.mark.interop


def test_sandbox_serves_nb_and_sb_and_stops(tmp_path: Path) -> None:
    require("ovn-nbctl", "ovn-sbctl", "ovsdb-client")
    ready = tmp_path / "ready"
    sandbox_dir = tmp_path / "sb"
    nb_port, sb_port = free_port(), free_port()
    p = subprocess.Popen(
        [sys.executable, "-m", "pyovsdb", "sandbox", f"--dir={sandbox_dir}",
         f"--nb-port={nb_port}", f"--sb-port={sb_port}", f"--ready-file={ready}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "sandbox did not become ready"
            time.sleep(0.05)
        nb_unix, nb_tcp, sb_unix, sb_tcp = ready.read_text().split()
        assert nb_tcp == f"tcp:127.0.0.1:{nb_port}" and sb_tcp == f"tcp:127.0.0.1:{sb_port}"
        run(["ovn-nbctl", f"--db={nb_unix}", "init"])
        run(["ovn-nbctl", f"--db={nb_tcp}", "ls-add", "sw0"])
        assert run(["ovn-nbctl", f"--db={nb_unix}", "ls-list"]).stdout.split()[1] == "(sw0)"
        run(["ovn-sbctl", f"--db={sb_tcp}", "init"])
        run(["ovn-sbctl", f"--db={sb_unix}", "chassis-add", "ch0", "geneve", "127.0.0.1"])
        assert "ch0" in run(["ovn-sbctl", f"--db={sb_unix}", "show"]).stdout
        dbs = run(["ovsdb-client", "list-dbs", sb_unix]).stdout.split()
        assert dbs == ["OVN_Southbound", "_Server"]
        pids = [int((sandbox_dir / f"{n}.pid").read_text()) for n in ("nb", "sb")]
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "Northbound" in out and "ovn-nbctl" in out
    for pid in pids:  # both servers are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # the databases persist for the next run
    assert (sandbox_dir / "nb.db").stat().st_size > 0
