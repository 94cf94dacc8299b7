"""`pyovsdb northd --metrics=ptcp:PORT[:IP]` on the real ovsdb-server, driven by the real
`ovn-nbctl`: engine runs, recomputes per node, transactions and their sizes, the lock
and nb_cfg, read back with Prometheus's own parsers; counters that do not go down when
`inc-engine/clear-stats` restarts the engine's counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_daemon_procs import Plane

from procs import run
from pyovsdb.testing import metrics_port, sample, scrape_metrics

pytestmark = pytest.mark.interop


def test_engine_and_transactions_counted(tmp_path: Path) -> None:
    plane = Plane("real", tmp_path).start()
    try:
        northd = plane.northd(extra=["--metrics=ptcp:0:127.0.0.1"])
        port = metrics_port(northd.logfile)
        nbctl = ["ovn-nbctl", f"--db={plane.nb.unix}", "--timeout=30"]
        # The cold start done first: else the switch may come while it still runs, and
        # go into the same engine run and Southbound transaction.
        run([*nbctl, "--wait=sb", "sync"])
        run([*nbctl, "--wait=sb", "ls-add", "sw0"])
        run([*nbctl, "--wait=sb", "lsp-add", "sw0", "p1", "--", "lsp-set-addresses", "p1",
             "00:00:00:00:00:01 10.0.0.1"])
        cfg = int(run([*nbctl, "get", "NB_Global", ".", "nb_cfg"]).stdout)
        before = scrape_metrics(port, openmetrics=True)
        for samples in (before, scrape_metrics(port, openmetrics=False)):
            assert sample(samples, "ovn_northd_active") == 1
            assert sample(samples, "ovn_northd_nb_cfg") == cfg
            assert sample(samples, "ovn_northd_engine_runs_total", mode="active") >= 3
            hist = "ovn_northd_engine_run_duration_seconds"
            assert sample(samples, hist + "_count", mode="active") == \
                sample(samples, "ovn_northd_engine_runs_total", mode="active")
            assert sample(samples, "ovn_northd_node_recomputes_total", node="northd") == \
                northd.stat("northd", "recompute")
            assert sample(samples, "ovn_northd_node_computes_total", node="lflow") == \
                northd.stat("lflow", "compute") > 0
            sb = sample(samples, "ovn_northd_transactions_total", db="OVN_Southbound",
                        status="success")
            assert sb >= 3  # (the cold start, the switch, the port)
            ops = "ovn_northd_transaction_operations"
            assert sample(samples, ops + "_count", db="OVN_Southbound") == sb
            # the cold start wrote SB_Global and more, the switch its datapath and flows
            assert sample(samples, ops + "_sum", db="OVN_Southbound") > 2 * sb
        # The engine's counts start again; the metrics' counters go on from theirs.
        northd.appctl("inc-engine/clear-stats")
        assert northd.stat("lflow", "compute") == 0
        run([*nbctl, "--wait=sb", "lsp-add", "sw0", "p2"])
        after = scrape_metrics(port, openmetrics=True)
        computes = ("ovn_northd_node_computes_total", (("node", "lflow"),))
        assert after[computes] == before[computes] + northd.stat("lflow", "compute")
        assert after[computes] > before[computes]
    finally:
        plane.stop()
