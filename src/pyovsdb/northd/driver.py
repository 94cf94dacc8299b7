"""The sans-IO northd driver: one engine run over the replicas' changes, the operations
it wants written, and what the commit's outcome means for the next run.

Rules kept here:
- One driver serves the daemon and every test harness (`northd.testing.LocalNorthd`):
  the caller takes the replicas' tracked changes, calls `run`, writes the output into
  its transactions with `write`, commits them however it does I/O, and reports the
  outcome with `committed`. Nothing here performs I/O or reads a clock: the wall-clock
  time of a run is a parameter.
- The graph is built on the first run from the tables the replicas have, and again if
  that set changes (a schema change); rebuilding keeps the stats counted so far.
- A failed SB commit loses its cfg and makes the next run a recompute (nothing of it
  happened); a failed NB commit makes the next run a recompute. A committed SB
  transaction that carried a new nb_cfg wants another run, which reports it (NB
  `sb_cfg`): `committed` says so.
- The cfg a committed SB transaction carried is reported (NB `sb_cfg`) at once by
  `report_cfg`, without a run: the caller commits it before the next run, which then
  finds it written (`sync_cfg` decides the same handshake), so the echo of the SB
  commit is not on the path of a `--wait=sb`. A report that fails is written by that
  run instead.
- The MAC binding aging waker fires in the first run at or after the expiry the last
  aging pass found; `RunOutput.wake_at_ms` tells the caller when to run for it.
- Hot standby: a run with `standby` (the caller holds no lock) runs the engine as any
  other and hands out no operations: what its plan wanted written is kept
  (`standby.Unwritten`) and planned again by the next standby run (a row it would
  insert may be referenced), and the nodes that ran count as standby work. A standby
  has committed nothing, so its cfg is 0 (it reports NB's own `sb_cfg`), and its
  handshake is read again in every run (the active's cfg writes wake no one, and
  their timestamps are the run's). `take_over` makes the next run plan what was kept,
  and the globals with the handshake read again, against the replicas as they are then:
  only what the active did not write is written, and the cfg the takeover's
  transaction carries is reported, with no recompute.
- Self-check (`self_check`, ovn-northd's `--self-check` idea taken further): after
  every run that was not a forced recompute, a driver built from scratch recomputes
  on the same replicas, cfg and time, and its operations must be the run's own: any
  difference is counted (`self_check_differences`) and its operations kept as text
  (`last_differences`) for the caller to log; of runs planning what a standby did not
  write, without what a flow's first request fixes (`comparable`). The state northd
  keeps between runs beside the desired databases (the IPAM MAC index) is checked
  against its own rebuild. It costs a full recompute per run, so it is for tests and
  for debugging.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..engine import Engine, State
from ..idl.replica import ReplicaTable
from ..idl.row import IdlRow
from ..idl.txn import Transaction
from ..ovsdb.changeset import Changeset
from .build.inputs import singleton
from .diagnostics import muted
from .graph import Wired, describe, wire
from .nodes.sync_to_sb import SyncOps
from .standby import Unwritten
from .sync import Insert, Op, Update
from .sync_apply import apply


@dataclass(frozen=True)
class RunOutput:
    """What the caller commits after one run."""

    sb_ops: list[Op]
    nb_ops: list[Op]
    nb_cfg: int | None
    canceled: bool
    updated: bool
    wake_at_ms: int | None = None


class Driver:
    def __init__(self, *, clock: Callable[[], float] | None = None,
                 log: Callable[[str], None] | None = None,
                 debug: Callable[[str], None] | None = None,
                 incremental_ports: bool = True) -> None:
        self.incremental_ports = incremental_ports
        self._clock = clock
        self._log = log
        self._debug = debug
        self._log_timeout = 500
        self._wired: Wired | None = None
        self._shape: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._aging_wake_at: int | None = None
        self._pending_recompute = False
        self.cur_cfg = 0  # the nb_cfg of the last committed SB transaction
        self.unwritten = Unwritten()  # what standby runs wanted written
        self._takeover: Unwritten | None = None
        self.standby_runs = 0
        self.self_check = False
        self.self_check_runs = 0
        self.self_check_differences = 0
        self.last_differences: list[str] = []

    @property
    def engine(self) -> Engine | None:
        return self._wired.engine if self._wired is not None else None

    # -- building ----------------------------------------------------------------------

    def prepare(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> None:
        """Build the graph for these tables unless it is built for them: its nodes and
        their (zero) stats exist before the first run, as in ovn-northd."""
        shape = (tuple(sorted(nb)), tuple(sorted(sb)))
        if self._wired is not None and self._shape == shape:
            return
        old = self._wired.engine.stats if self._wired is not None else None
        self._wired = wire(nb, sb, incremental_ports=self.incremental_ports,
                           clock=self._clock, log=self._log, debug=self._debug,
                           log_timeout_ms=self._log_timeout)
        self._shape = shape
        if old is not None:
            stats = self._wired.engine.stats
            for name, st in old.items():
                if name in stats:
                    stats[name].recompute = st.recompute
                    stats[name].compute = st.compute
                    stats[name].cancel = st.cancel
                    stats[name].standby = st.standby

    # -- running -----------------------------------------------------------------------

    def run(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
            nb_changes: Changeset[IdlRow], sb_changes: Changeset[IdlRow], *,
            recompute: bool, now_ms: int, standby: bool = False) -> RunOutput:
        """One engine run over the changes since the last; the operations to write
        (none on `standby`)."""
        self.prepare(nb, sb)
        # What standby runs kept is planned again: in the next standby run (a row it
        # would insert may be referenced; the run records what it planned only after)
        # and in the run that takes over.
        replan = self._takeover if not standby else self.unwritten or None
        if standby:
            self.cur_cfg = 0
        self._takeover = None
        w = self._wired
        assert w is not None
        w.now.set_data(now_ms)
        changes: dict[str, object] = {}
        for tables, leaves, cs in ((nb, w.nb, nb_changes), (sb, w.sb, sb_changes)):
            for t, leaf in leaves.items():
                leaf.set_data(tables[t])
                ch = cs.tables.get(t)
                if ch:
                    changes[leaf.name] = ch
        if replan is not None:
            w.unwritten.set_data(replan)
            changes[w.unwritten.name] = replan
            if not standby:
                self.unwritten = Unwritten()  # (planned now, written once committed)
        if self.cur_cfg != w.cfg.data or standby or replan is not None:
            # (on standby and taking over, the handshake is read again in every run:
            # the active's cfg writes wake no one, and what is not written yet is
            # stamped with the time of the run that would write it)
            w.cfg.set_data(self.cur_cfg)
            changes[w.cfg.name] = self.cur_cfg
        if self._aging_wake_at is not None and now_ms >= self._aging_wake_at:
            self._aging_wake_at = None
            w.waker.set_data(now_ms)
            changes[w.waker.name] = now_ms
        engine = w.engine
        forced = recompute or self._pending_recompute
        if forced:
            engine.force_recompute()
            self._pending_recompute = False
        result = engine.run(changes)
        if replan is not None:
            w.unwritten.set_data(Unwritten())
        if w.aging.state is State.UPDATED:
            wake = w.aging.data.wake_in_ms
            self._aging_wake_at = None if wake is None else now_ms + wake
        if result.canceled or engine.state("sync_to_sb") is not State.UPDATED:
            out = RunOutput([], [], None, result.canceled, result.updated,
                            self._aging_wake_at)
        else:
            ops: SyncOps = engine.node_data("sync_to_sb")
            out = RunOutput(*ops.take(), ops.nb_cfg, False, result.updated,
                            self._aging_wake_at)
        if self.self_check and not forced and not out.canceled:
            self._check(out, nb, sb, now_ms, unwritten=standby or replan is not None)
        if forced:
            self.unwritten.clear()
        if not standby:
            return out
        self.standby_runs += 1
        engine.stats.count_standby((*result.recomputed, *result.computed))
        if engine.state("sync_to_sb") is State.UPDATED and not out.canceled:
            plan: SyncOps = engine.node_data("sync_to_sb")
            self.unwritten.record(plan.planned_sb, out.sb_ops, plan.planned_nb, out.nb_ops)
        return RunOutput([], [], None, out.canceled, out.updated, out.wake_at_ms)

    def take_over(self) -> Unwritten:
        """The next run, unless on standby, plans what standby runs kept unwritten and
        the globals (whose cfg it then reports); what it will plan."""
        taken = self.unwritten.copy()
        taken.sb["SB_Global"] = None
        taken.nb["NB_Global"] = None
        self._takeover = taken
        return taken

    def fresh(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
              now_ms: int) -> tuple[Driver, RunOutput]:
        """A driver built from scratch on these replicas, with this one's committed cfg,
        and what its first run (a recompute) would write now."""
        fresh = Driver(clock=self._clock, incremental_ports=self.incremental_ports)
        fresh.cur_cfg = self.cur_cfg
        return fresh, fresh.run(nb, sb, Changeset(), Changeset(), recompute=True,
                                now_ms=now_ms)

    def _check(self, out: RunOutput, nb: Mapping[str, ReplicaTable],
               sb: Mapping[str, ReplicaTable], now_ms: int, *, unwritten: bool) -> None:
        """Compare the run's operations with those of a recompute from scratch
        (`unwritten`: a run that plans what a standby did not write; see
        `comparable`)."""
        with muted():  # the run itself reported what the builders found
            _, want = self.fresh(nb, sb, now_ms)
        self.self_check_runs += 1
        diff: list[str] = []
        for db, got, wanted in (("SB", out.sb_ops, want.sb_ops),
                                ("NB", out.nb_ops, want.nb_ops)):
            mine, theirs = (sorted(comparable(op, unwritten) for op in ops)
                            for ops in (got, wanted))
            if mine != theirs:
                diff += [f"{db} incremental only: {op}" for op in mine if op not in theirs]
                diff += [f"{db} recompute only: {op}" for op in theirs if op not in mine]
        # The cfg to report once committed (None: the one committed already).
        mine_cfg, their_cfg = (self.cur_cfg if c is None else c for c in (out.nb_cfg,
                                                                          want.nb_cfg))
        if mine_cfg != their_cfg:
            diff.append(f"nb_cfg: incremental {mine_cfg}, recompute {their_cfg}")
        assert self.engine is not None
        core = self.engine.node_data("northd").core
        if not core.macs.same_as_built(core.ports, core.dynamic_addresses, core.mac_prefix):
            diff.append("northd: the IPAM MAC index differs from one built from the ports")
        if diff:
            self.self_check_differences += 1
        self.last_differences = diff

    def write(self, out: RunOutput, sb_txn: Transaction | None,
              nb_txn: Transaction | None) -> None:
        """Record the run's operations in the caller's transactions."""
        if sb_txn is not None:
            apply(out.sb_ops, sb_txn)
        if nb_txn is not None:
            apply(out.nb_ops, nb_txn)

    def committed(self, out: RunOutput, *, sb_ok: bool, nb_ok: bool) -> bool:
        """The outcome of committing `out`; whether another run is wanted at once (the
        SB commit carried a new nb_cfg, which the next run reports)."""
        if not sb_ok or not nb_ok:
            self._pending_recompute = True
        if sb_ok and out.nb_cfg is not None and out.nb_cfg != self.cur_cfg:
            self.cur_cfg = out.nb_cfg
            return True
        return False

    def report_cfg(self, nb: Mapping[str, ReplicaTable], txn: Transaction, *,
                   now_ms: int) -> bool:
        """The committed cfg written to NB_Global's `sb_cfg` (with its timestamp) in
        `txn`, ahead of the run that would write it; whether there was anything to
        write."""
        row = singleton(nb.get("NB_Global"))
        if row is None or not self.cur_cfg or int(row["sb_cfg"]) == self.cur_cfg:
            return False
        apply([Update("NB_Global", row.uuid, row,
                      {"sb_cfg": self.cur_cfg, "sb_cfg_timestamp": now_ms})], txn)
        return True

    def force_recompute(self) -> None:
        """Make the next run a recompute (a failed commit, a builder's error)."""
        self._pending_recompute = True

    # -- control commands --------------------------------------------------------------

    def show_stats(self, node: str | None = None, stat: str | None = None) -> str:
        engine = self.engine
        return engine.show_stats(node, stat) if engine is not None else ""

    def clear_stats(self) -> None:
        if self.engine is not None:
            self.engine.clear_stats()

    def set_log_timeout(self, ms: int) -> None:
        self._log_timeout = ms
        if self.engine is not None:
            self.engine.compute_log_timeout_ms = ms

    def dump_dot(self) -> str:
        return self.engine.dump_dot() if self.engine is not None else ""

    def describe(self) -> str:
        return describe(self.engine) if self.engine is not None else ""


# What a flow's first request fixes, written only when its row is inserted
# (`lflows.table`): of a flow that a standby planned and did not write, the first
# request in its history need not be a fresh build's first (two ACLs asking for one
# flow, added one run apart), and either is 23.03's output for some history.
FIRST_REQUEST_IDS = ("stage-hint", "source")


def comparable(op: Op, unwritten: bool = False) -> str:
    """An operation as the self-check compares it: with `unwritten`, a flow's insert
    without what its first request fixes."""
    if not (unwritten and isinstance(op, Insert) and op.table == "Logical_Flow"):
        return repr(op)
    values = {k: v for k, v in op.values.items() if k != "tags"}
    ids = values.get("external_ids")
    if isinstance(ids, dict):
        values["external_ids"] = {k: v for k, v in ids.items() if k not in FIRST_REQUEST_IDS}
    return repr(Insert(op.table, op.key, values))
