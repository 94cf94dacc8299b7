"""What `pyovsdb northd --metrics=ptcp:PORT[:IP]` exposes: what operators read today
from `ovn-appctl` (`inc-engine/show-stats`, `status`, `stopwatch/show`) and the size
of every transaction northd writes, which no command shows.

Rules kept here:
- Runs are counted as they end (`run`): active or standby, and their duration.
- Transactions are counted as their results come (`committed`): per database and
  status, with their operations.
- Per node recomputes, computes and cancels are read from the engine's stats at the
  scrape and kept as counters that never go down: `inc-engine/clear-stats`, or an
  engine built again for a new schema, restarts the engine's counts, and what they
  count from then on is added (a count lower than the last one read is all new).
- Names start with `ovn_northd_`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..util.metrics import LATENCY_BUCKETS, SIZE_BUCKETS, Registry

# Per node counter -> the `NodeStats` field it follows.
NODE_COUNTS = (("recomputes", "recompute"), ("computes", "compute"),
               ("cancels", "cancel"))


class NorthdMetrics:
    """The registry of one northd; `state()` gives (active, nb_cfg, engine stats)."""

    def __init__(self, state: Callable[[], tuple[bool, int, Any]]) -> None:
        self.state = state
        r = self.registry = Registry()
        self.runs = r.counter("ovn_northd_engine_runs", "Engine runs, active or standby.",
                              ("mode",))
        self.duration = r.histogram("ovn_northd_engine_run_duration_seconds",
                                    "Time of one engine run.", LATENCY_BUCKETS, ("mode",))
        self.txns = r.counter("ovn_northd_transactions", "Transactions committed or not.",
                              ("db", "status"))
        self.ops = r.histogram("ovn_northd_transaction_operations",
                               "Operations of one transaction northd sent.", SIZE_BUCKETS,
                               ("db",))
        self.nodes = {name: r.counter(f"ovn_northd_node_{name}",
                                      f"Engine node {name} since the start.", ("node",))
                      for name, _ in NODE_COUNTS}
        self.active = r.gauge("ovn_northd_active",
                              "1 while this northd holds the ovn_northd lock.")
        self.nb_cfg = r.gauge("ovn_northd_nb_cfg",
                              "The nb_cfg of the last SB transaction committed.")
        self._last: dict[tuple[str, str], int] = {}  # (counter, node) -> count last read
        r.collector(self._collect)

    def run(self, standby: bool, seconds: float) -> None:
        mode = "standby" if standby else "active"
        self.runs.inc(1, mode)
        self.duration.observe(seconds, mode)

    def committed(self, db: str, status: str, operations: int) -> None:
        self.txns.inc(1, db, status)
        if operations:
            self.ops.observe(operations, db)

    def _collect(self) -> None:
        active, nb_cfg, stats = self.state()
        self.active.set(1 if active else 0)
        self.nb_cfg.set(nb_cfg)
        if stats is None:
            return
        for node in stats:
            st = stats[node]
            for name, field in NODE_COUNTS:
                now = getattr(st, field)
                last = self._last.get((name, node), 0)
                self.nodes[name].inc(now - last if now >= last else now, node)
                self._last[(name, node)] = now
