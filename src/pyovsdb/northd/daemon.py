"""northd's only I/O: the NB and SB IDLs, the SB lock, the main loop, the control socket.

Rules kept here (ovn-northd.c's main loop; what to decide is asked of `loop.LoopPolicy`,
what to write of `driver.Driver`):
- Both databases through our `Idl` (several remotes, leader-only). The SB IDL writes
  only changed values (write-changed-only on every SB table, as ovn-northd), the NB
  IDL only on the columns northd writes back; NB_Global's cfg columns that only
  northd writes, SB_Global.nb_cfg and the Address_Set columns do not alert (OVN's
  omit_alert), so northd's own writes do not wake it.
- Active/standby through the SB lock `ovn_northd`, with ovn-northd's log lines on
  acquiring and losing it: only the holder commits. A standby is hot: it runs the
  engine on every change as the holder does and writes nothing (`Driver.run`'s
  `standby`); taking the lock, it writes what its plans kept unwritten, with no
  recompute (`Driver.take_over`). A paused instance drops its tracked changes and
  recomputes once it runs again, on standby or active, and says so. Pausing releases
  the lock ("This ovn-northd instance is now paused."); `--dry-run` starts paused.
- The loop sleeps on a `util.seq.Seq` that both IDLs' change callbacks, the SB
  lock's changes (and session and timer events) change, waking `seq_delay_ms` after
  it began waiting at the earliest (seed 004; 0 wakes at once), then drains what else
  is ready for at most 500 ms and asks the policy whether to run now or when.
- Changes the loop does not run on yet (backoff, standby) stay tracked in the IDLs,
  which merge them as they come (`ovsdb.changeset.merge`'s rule); a run takes them all
  (`track_take`). One engine run, then one SB transaction (the sync ops) and one NB
  transaction (the write-backs), committed together and awaited before the next run. A failed commit
  of either, a reconnect of either IDL, becoming active or `inc-engine/recompute`
  forces a full recompute, logged as ovn-northd logs it.
- cfg handshake: the `nb_cfg` the SB transaction carries becomes the committed cfg
  (what NB `sb_cfg` reports) only once that transaction committed (or had nothing to
  change), as `ovsdb_idl_loop` does; the run after reports it.
- `NB_Global.options`: `northd-backoff-interval-ms` (the policy's backoff),
  `northd_probe_interval` (ms; 0 off, below 1000 is 1000; default 5000 on TCP and off
  on unix sockets) and `northd_trim_timeout`, read with OVS's `smap_get_*` readers
  when the row changed (`NbOptions`), and applied after every run.
- The engine's timers (MAC binding aging) wake the loop at the time the run asked.
- What the operator sees besides the work, as ovn-northd shows it: what the builders
  report about bad NB data (`diagnostics`) logged with a rate limit per call site;
  the connection lines of lib/reconnect.c; ovn-northd's stopwatches (sampled from the
  engine nodes doing that work, and the loop), coverage counters (transactions,
  connections), the memory report every 10 s that grows, and the memory trimmer
  after `northd_trim_timeout` of inactivity; `debug/chassis-features-list`,
  `coverage/*`, `stopwatch/*` and `vlog/{en,dis}able-rate-limit`.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..idl import MONITOR, Idl, Result, Status
from ..jsonrpc.session import ConnectionLost, RpcError
from ..server.appctl import CommandError, UnixctlServer, register_vlog
from ..util import gctune, memtrim, ratelimit, vlog
from ..util.cnum import atoi, str_to_uint
from ..util.coverage import Coverage
from ..util.memory import DEFAULT_TRIM_TIMEOUT_MS, MemoryReport, MemoryTrimmer
from ..util.metrics_http import MetricsServer, start_endpoint
from ..util.seq import Seq
from ..util.stopwatch import Stopwatches
from . import appctl, diagnostics
from .build.datapaths import smap_int, smap_uint
from .build.inputs import singleton
from .driver import Driver, RunOutput
from .loop import LoopPolicy, Recompute
from .metrics import NorthdMetrics

log = logging.getLogger("ovn_northd")
LOCK_NAME = "ovn_northd"
INTERNAL_VERSION = "23.03.1-20.27.0-70.6"
DEFAULT_PROBE_MS = 5000
# Session and lock state have no callback in the IDL: sampled this often.
STATE_POLL_S = 0.1
FATAL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
ERROR_RETRY_MS = 1000
# Nodes whose recompute builds most of northd's memory (`_freeze_after_recompute`).
RECOMPUTE_FREEZES = frozenset(("northd", "lflow"))

# ovn-northd's stopwatches (lib/stopwatch-names.h), in the order it creates them; ours
# take samples from the engine nodes that do that work (`NODE_STOPWATCHES`) and from
# the main loop, the others stay at zero samples.
LOOP_STOPWATCH = "ovn-northd-loop"
STOPWATCHES = (LOOP_STOPWATCH, "ovnnb_db_run", "ovnsb_db_run", "build_flows_ctx",
               "clear_lflows_ctx", "build_lflows", "lflows_datapaths", "lflows_ports",
               "lflows_lbs", "lflows_igmp", "lflows_dp_groups", "lflows_to_sb")
NODE_STOPWATCHES = (("ovnnb_db_run", "northd"), ("ovnsb_db_run", "sync_from_sb"),
                    ("build_lflows", "lflow"), ("lflows_to_sb", "sync_to_sb"))
# The coverage counters of ovn-northd this process counts (lib/ovsdb-idl.c's
# transaction outcomes, lib/stream.c's connections).
COVERAGE = ("txn_uncommitted", "txn_unchanged", "txn_incomplete", "txn_aborted",
            "txn_success", "txn_try_again", "txn_not_locked", "txn_error", "pstream_open",
            "stream_open")
TXN_COUNTER = {Status.UNCHANGED: "txn_unchanged", Status.SUCCESS: "txn_success",
               Status.TRY_AGAIN: "txn_try_again", Status.NOT_LOCKED: "txn_not_locked",
               Status.ERROR: "txn_error"}
LOG_LEVELS = {diagnostics.ERR: logging.ERROR, diagnostics.WARN: logging.WARNING,
              diagnostics.INFO: logging.INFO}

NB_QUIET = {"NB_Global": {c: MONITOR for c in (
    "nb_cfg_timestamp", "sb_cfg", "sb_cfg_timestamp", "hv_cfg", "hv_cfg_timestamp")}}
SB_QUIET = {"SB_Global": {"nb_cfg": MONITOR},
            "Address_Set": {"name": MONITOR, "addresses": MONITOR}}
# NB columns northd writes back: only changed values are sent.
NB_WRITES = (("NB_Global", "nb_cfg_timestamp"), ("NB_Global", "sb_cfg"),
             ("NB_Global", "sb_cfg_timestamp"), ("NB_Global", "hv_cfg"),
             ("NB_Global", "hv_cfg_timestamp"), ("Logical_Switch_Port", "up"),
             ("Logical_Switch_Port", "dynamic_addresses"), ("Logical_Switch_Port", "tag"),
             ("Logical_Router_Port", "ipv6_prefix"), ("BFD", "status"),
             ("NB_Global", "options"))


@dataclass
class Config:
    nb_remotes: list[str]
    sb_remotes: list[str]
    paused: bool = False
    n_threads: int = 1
    seq_delay_ms: float = 0.0
    unixctl: str | None = None
    version_text: str = "ovn-northd"
    leader_only: bool = True
    boot_ms: int | None = None  # monotonic ms the process started at (now if None)
    self_check: bool = False  # every incremental run checked against a recompute
    metrics: str | None = None  # `--metrics=ptcp:PORT[:IP]`


@dataclass(frozen=True, slots=True)
class NbOptions:
    """What the loop reads of `NB_Global.options`."""

    backoff_ms: int
    nb_probe_ms: int
    sb_probe_ms: int
    trim_timeout_ms: int

    @classmethod
    def read(cls, options: Mapping[str, str], config: Config) -> NbOptions:
        """As 23.03 reads them: `northd_probe_interval` with `smap_get_int` (0 off,
        below 1000 is 1000; by default 5000 on TCP, off on unix sockets) and
        `northd_trim_timeout` with `smap_get_uint`; and `northd-backoff-interval-ms`
        with `smap_get_uint`, as 23.09, which added it, reads it."""
        def probe(remotes: list[str]) -> int:
            tcp = any(r.startswith("tcp:") for r in remotes)
            ms = smap_int(options, "northd_probe_interval", DEFAULT_PROBE_MS if tcp else 0)
            return 1000 if 0 < ms < 1000 else ms

        return cls(smap_uint(options, "northd-backoff-interval-ms", 0),
                   probe(config.nb_remotes), probe(config.sb_remotes),
                   smap_uint(options, "northd_trim_timeout", DEFAULT_TRIM_TIMEOUT_MS))


def wall_ms() -> int:
    return int(time.time() * 1000)


def mono_ms() -> float:
    return time.monotonic() * 1000.0


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class _State:
    paused: bool = False
    had_lock: bool = False   # as the loop last saw it: what `status` reports
    exiting: bool = False


class Northd:
    """One ovn-northd process's life inside the event loop."""

    def __init__(self, config: Config, *, ready: Callable[[], None] = lambda: None,
                 driver: Driver | None = None) -> None:
        self.config = config
        self.ready = ready
        self.signal: int | None = None
        self.state = _State(paused=config.paused)
        self.policy = LoopPolicy()
        engine_log = logging.getLogger("inc_proc_eng")
        self.driver = driver if driver is not None else Driver(
            clock=time.monotonic, log=lambda text: engine_log.info("%s", text),
            debug=lambda text: engine_log.debug("%s", text))
        self.driver.self_check = config.self_check
        self._self_check_limit = ratelimit.RateLimit(1, 5)
        self.seq = Seq()
        self.nb: Idl = None  # type: ignore[assignment]
        self.sb: Idl = None  # type: ignore[assignment]
        self.unixctl: UnixctlServer | None = None
        self.compute_log_timeout_ms = 500
        self.reset_min_index = {"nb": False, "sb": False}
        self._connects = {"nb": 0, "sb": 0}  # sessions seen, per IDL
        self._stop: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        # What the operator sees besides the work: rate-limited diagnostics, the
        # stopwatches, coverage counters and memory reports of ovn-northd.
        self._limits: dict[diagnostics.Site, ratelimit.RateLimit] = {}
        self.stopwatches = Stopwatches(STOPWATCHES)
        self.metrics: NorthdMetrics | None = None  # (`--metrics`)
        self._node_totals: dict[str, tuple[int, float]] = {}
        self.coverage = Coverage(COVERAGE)
        self._attempts = 0
        boot = config.boot_ms if config.boot_ms is not None else _now_ms()
        self.memory = MemoryReport(boot)
        self.trimmer = MemoryTrimmer()
        self._options_row: object = None  # the NB_Global row `_options` was read from
        self._options: NbOptions | None = None

    # -- lifetime ------------------------------------------------------------------------

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        self._stop = loop.create_future()
        await self._start_unixctl()
        endpoint = await self._start_metrics()
        for sig in FATAL_SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, sig)
        self.ready()
        log.info("OVN internal version is : [%s]", INTERNAL_VERSION)
        self.nb = Idl(self.config.nb_remotes, "OVN_Northbound", modes=NB_QUIET,
                      leader_only=self.config.leader_only, write_changed_only=NB_WRITES,
                      probe_interval=DEFAULT_PROBE_MS / 1000, reconnect_log=True)
        self.sb = Idl(self.config.sb_remotes, "OVN_Southbound", modes=SB_QUIET,
                      leader_only=self.config.leader_only, write_changed_only=True,
                      probe_interval=DEFAULT_PROBE_MS / 1000,
                      lock=None if self.state.paused else LOCK_NAME, reconnect_log=True)
        self.sb.on_lock_change(self.seq.change)  # (a takeover at once, not polled)
        for idl in (self.nb, self.sb):
            idl.on_change(lambda _cs: self.seq.change())
            self._tasks.append(loop.create_task(idl.start(timeout=None)))
        self._tasks.append(loop.create_task(self._watch_state()))
        main = loop.create_task(self._main())
        try:
            await asyncio.wait([main, self._stop], return_when=asyncio.FIRST_COMPLETED)
        finally:
            main.cancel()
            for t in self._tasks:
                t.cancel()
            for t in [main, *self._tasks]:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
            if self._timer is not None:
                self._timer.cancel()
            await self.nb.close()
            await self.sb.close()
            if self.unixctl is not None:
                self.unixctl.close()
            if endpoint is not None:
                endpoint.close()
            for sig in FATAL_SIGNALS:
                loop.remove_signal_handler(sig)
        if main.done() and not main.cancelled() and main.exception() is not None:
            raise main.exception()  # type: ignore[misc]
        return 0

    def request_exit(self) -> None:
        self.state.exiting = True
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(None)

    def _on_signal(self, sig: int) -> None:
        if self.signal is None:
            self.signal = sig
            logging.getLogger("fatal_signal").warning(
                "terminating with signal %d (%s)", sig, signal.strsignal(sig))
        self.request_exit()

    async def _watch_state(self) -> None:
        """Wake the loop when a session or the lock changes (the IDL has no callback
        for them)."""
        last: tuple[Any, ...] = ()
        while True:
            now = tuple((i.n_connects, i.connected, i.has_lock, i.is_lock_contended)
                        for i in (self.nb, self.sb))
            if now != last:
                last = now
                self.seq.change()
            await asyncio.sleep(STATE_POLL_S)

    # -- the main loop -------------------------------------------------------------------

    async def _main(self) -> None:
        while not self.state.exiting:
            seqno = self.seq.read()
            self._housekeeping()
            try:
                wake_at = await self._iterate()
            except (ConnectionLost, RpcError, OSError) as e:
                # A session lost in the middle (a lock request, say): the reconnect
                # wakes the loop again.
                log.info("main loop: %s", e)
                wake_at = None
            except Exception:
                log.exception("main loop iteration failed")
                wake_at = mono_ms() + ERROR_RETRY_MS
            timeout = None if wake_at is None else max(0.0, (wake_at - mono_ms()) / 1000)
            waiter = self.seq.wait(seqno, self.config.seq_delay_ms)
            self.stopwatches.stop(LOOP_STOPWATCH, _now_ms())
            try:
                await asyncio.wait_for(waiter, timeout)
            except TimeoutError:
                pass
            self.stopwatches.start(LOOP_STOPWATCH, _now_ms())

    def _housekeeping(self) -> None:
        """What ovn-northd's loop does on every turn besides its work: the memory
        report (memory_run), the coverage slots, the connections counted."""
        now = _now_ms()
        if now >= self.memory.next_check:  # a check is due: only then read the peak
            line = self.memory.run(now, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            memory_log = logging.getLogger("memory")
            if line is not None:
                memory_log.info("%s", line)
            if self.memory.take_report():
                usage = self._memory().rstrip("\n")
                if usage:
                    memory_log.info("%s", usage)
        attempts = sum(idl.n_attempts for idl in (self.nb, self.sb) if idl is not None)
        if attempts > self._attempts:
            self.coverage.inc("stream_open", attempts - self._attempts)
            self._attempts = attempts
        self.coverage.run(now)

    async def _iterate(self) -> float | None:
        """One turn of ovn-northd's loop; returns when (monotonic ms) the policy wants
        to be asked again without a change (None: only a change)."""
        nb, sb = self.nb, self.sb
        self._apply_resets()
        if self.state.paused:
            if sb.lock_name is not None:
                log.info("This ovn-northd instance is now paused.")
                await sb.set_lock(None)
                self.state.had_lock = False
            self._drop_changes(Recompute.NOT_ACTIVE)
            return None
        if sb.lock_name is None:
            await sb.set_lock(LOCK_NAME)
        self._check_sessions()
        if nb.connected and sb.connected:
            self.driver.prepare(nb.tables, sb.tables)
        has_lock = sb.has_lock
        if not self.state.had_lock and has_lock:
            log.info("ovn-northd lock acquired. This ovn-northd instance is now active.")
            self.state.had_lock = True
            self._take_over()
        elif self.state.had_lock and not has_lock:
            log.info("ovn-northd lock lost. This ovn-northd instance is now on standby.")
            self.state.had_lock = False
        if not (nb.connected and sb.connected):
            self._drop_changes(Recompute.NOT_ACTIVE)
            return None
        await self._accumulate()
        options = self._nb_options()  # as they were before this turn's writes
        decision = self.policy.decide(mono_ms())
        if not decision.run:
            return _earliest(decision.wake_at_ms, self._trim(options, False))
        log.debug("engine run%s", f" (recompute: {self.policy.reasons})"
                  if decision.recompute else "")
        updated = await self._run_engine(decision.recompute, standby=not has_lock)
        self._apply_options(self._nb_options())
        # A commit that wants a run (the cfg it carried to report): ask again at once. A
        # failed one only makes the next run a recompute; like ovn-northd, that run
        # waits for the next change (a TRY_AGAIN's conflicting change, a reconnect),
        # so a server refusing every commit is not retried in a loop.
        return _earliest(mono_ms() if self.policy.poked else None,
                         self._trim(options, updated))

    def _nb_options(self) -> NbOptions | None:
        """What the loop reads of NB_Global's options (None without the row), read
        again only when the row changed (a change makes a new row)."""
        table = self.nb.tables.get("NB_Global") if self.nb.replica is not None else None
        row = singleton(table)
        if row is None:
            return None
        if row is not self._options_row:
            self._options_row = row
            self._options = NbOptions.read(row.options, self.config)
        return self._options

    def _trim(self, options: NbOptions | None, activity: bool) -> float | None:
        """ovn-northd's `run_memory_trimmer`, after every turn of an active instance
        (`options` None without the row, which is 23.03's view in the turn that creates
        it): when to come back for it (monotonic ms). The timeout is set on every turn,
        as 23.03 sets it, so a refused one warns on every turn (rate-limited)."""
        trimmer = self.trimmer
        if options is not None:
            warning = trimmer.set_timeout(options.trim_timeout_ms)
            if warning is not None:
                ratelimit.log("memory_trim", logging.WARNING, trimmer.rate_limit, warning)
        now = _now_ms()
        if activity:
            trimmer.record_activity(now)
        line = trimmer.can_run(now)
        if line is not None:
            level = logging.INFO if line.startswith("Detected inactivity") else logging.WARNING
            ratelimit.log("memory_trim", level, trimmer.rate_limit, line, now)
            memtrim.trim()
        wake = trimmer.wake_at()
        return None if wake is None else float(wake)

    def _take_over(self) -> None:
        """The lock taken: a hot standby's next run writes what it kept unwritten; one
        that fell behind (or never ran) recomputes instead."""
        if self.policy.recompute_pending:
            if self.driver.standby_runs:
                log.info("Hot standby fell behind (%s): recomputing as it takes over.",
                         self.policy.reasons)
            return
        taken = self.driver.take_over()
        log.info("Hot standby taking over without a recompute: %d rows to check%s.",
                 taken.rows, "".join(f", {t} whole" for t in taken.whole))
        self.policy.poke()

    def _drop_changes(self, reason: Recompute) -> None:
        self.nb.track_clear()
        self.sb.track_clear()
        self.policy.force_recompute(reason)

    def _check_sessions(self) -> None:
        for name, idl, reason in (("nb", self.nb, Recompute.NB_RECONNECT),
                                  ("sb", self.sb, Recompute.SB_RECONNECT)):
            if idl.n_connects != self._connects[name]:
                self._connects[name] = idl.n_connects
                log.info("%s", reason.log_text)
                self.policy.force_recompute(reason)

    async def _accumulate(self) -> None:
        """Take in what the IDLs have ready, while it keeps coming, up to 500 ms."""
        if self.nb.tracked or self.sb.tracked:
            self.policy.changed()
        started = mono_ms()
        while True:
            before = self.seq.read()
            await asyncio.sleep(0)
            if not self.policy.accumulate(started, mono_ms(), self.seq.read() != before):
                break
        if self.nb.tracked or self.sb.tracked:
            self.policy.changed()

    async def _run_engine(self, recompute: bool, *, standby: bool) -> bool:
        """One engine run and its commit (none on standby); whether any node updated."""
        nb, sb = self.nb, self.sb
        nb_changes = nb.track_take()
        sb_changes = sb.track_take()
        start = mono_ms()
        if standby and recompute and self.policy.runs:
            log.info("Hot standby recomputing (%s).", self.policy.reasons)
        with diagnostics.collecting() as found:
            try:
                out = self.driver.run(nb.tables, sb.tables, nb_changes, sb_changes,
                                      recompute=recompute, now_ms=wall_ms(),
                                      standby=standby)
            except Exception:
                # A builder's bug: logged, and the next change recomputes everything
                # (the driver forces it); retrying at once would only spin on it.
                log.exception("engine run failed")
                self.driver.force_recompute()
                self.policy.ran(start, mono_ms())
                return False
            finally:
                self._log_diagnostics(found)
        if self.driver.last_differences:
            ratelimit.log("inc_proc_eng", logging.WARNING, self._self_check_limit,
                          "self-check: the incremental run differs from a recompute:\n"
                          + "\n".join(self.driver.last_differences))
        end = mono_ms()
        if self.metrics is not None:
            self.metrics.run(standby, (end - start) / 1000)
        self.policy.ran(start, end, canceled=out.canceled)
        self._sample_stopwatches()
        self._set_timer(out.wake_at_ms)
        if not standby:
            await self._commit(out)
        self._freeze_after_recompute()
        return out.updated

    def _freeze_after_recompute(self) -> None:
        """After a run that built the flows or the core from scratch, move what it built
        out of the cyclic collector's sight (`gctune.freeze_new`): millions of acyclic,
        long-lived objects otherwise make the next full collection, seconds at scale,
        land in whatever change comes next (they are still freed by reference
        counting when replaced)."""
        engine = self.driver.engine
        result = engine.last_result if engine is not None else None
        if result is not None and not RECOMPUTE_FREEZES.isdisjoint(result.recomputed):
            gctune.freeze_new()

    def _log_diagnostics(self, found: list[diagnostics.Diagnostic]) -> None:
        """What the builders reported, each site with its own rate limit."""
        for d in found:
            site = d.site
            limit = None
            if site.rate:
                limit = self._limits.get(site)
                if limit is None:
                    limit = self._limits[site] = ratelimit.RateLimit(site.rate, site.burst)
            ratelimit.log(site.module, LOG_LEVELS[site.level], limit, d.message)

    def _sample_stopwatches(self) -> None:
        """A sample for each stopwatch whose node recomputed in the last run: the
        time the engine measured it take."""
        engine = self.driver.engine
        if engine is None:
            return
        for stopwatch, node in NODE_STOPWATCHES:
            if node not in engine.stats:
                continue
            st = engine.stats[node]
            count, spent = self._node_totals.get(node, (0, 0.0))
            if st.recompute > count and st.recompute_time >= spent:
                self.stopwatches.sample(stopwatch, int((st.recompute_time - spent) * 1000))
            self._node_totals[node] = (st.recompute, st.recompute_time)

    async def _commit(self, out: RunOutput) -> None:
        sb_txn = self.sb.transaction()
        nb_txn = self.nb.transaction()
        try:
            self.driver.write(out, sb_txn, nb_txn)
        except Exception:
            log.exception("writing the engine's changes failed")
            self.driver.force_recompute()
            return
        n_sb, n_nb = len(out.sb_ops), len(out.nb_ops)
        log.debug("commit: %d SB and %d NB operations", n_sb, n_nb)
        out.sb_ops.clear()  # (the transactions hold them now, until sent)
        out.nb_ops.clear()
        # (SB first: its commit, not NB's, is on the path of a `--wait=sb`)
        sb_result, nb_result = await asyncio.gather(sb_txn.commit(), nb_txn.commit())
        self._count_txn(nb_result, "OVN_Northbound", n_nb)
        self._count_txn(sb_result, "OVN_Southbound", n_sb)
        nb_ok, sb_ok = _committed(nb_result), _committed(sb_result)
        if not nb_ok:
            log.info("%s", Recompute.NB_COMMIT_FAILED.log_text)
            log.debug("NB commit: %s", nb_result)
            self.policy.force_recompute(Recompute.NB_COMMIT_FAILED)
        if not sb_ok:
            log.info("%s", Recompute.SB_COMMIT_FAILED.log_text)
            log.debug("SB commit: %s", sb_result)
            self.policy.force_recompute(Recompute.SB_COMMIT_FAILED)
        if self.driver.committed(out, sb_ok=sb_ok, nb_ok=nb_ok):
            await self._report_cfg()
            self.policy.poke()  # (the next run takes in the commits' echoes)

    async def _report_cfg(self) -> None:
        """The cfg just committed to SB reported in NB at once (`Driver.report_cfg`);
        a report that fails is left to the next run, which writes it again."""
        txn = self.nb.transaction()
        if not self.driver.report_cfg(self.nb.tables, txn, now_ms=wall_ms()):
            return
        result = await txn.commit()
        self._count_txn(result, "OVN_Northbound", 1)
        if not _committed(result):
            log.debug("NB sb_cfg report: %s", result)

    def _count_txn(self, result: Result, db: str, operations: int) -> None:
        """ovn-northd's coverage counters of one committed transaction (and the
        metrics of one sent)."""
        if result.status is not Status.UNCHANGED:
            self.coverage.inc("txn_incomplete")
        self.coverage.inc(TXN_COUNTER[result.status])
        if self.metrics is not None and result.status is not Status.UNCHANGED:
            self.metrics.committed(db, result.status.name.lower(), operations)

    def _set_timer(self, wake_at_wall_ms: int | None) -> None:
        if wake_at_wall_ms == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = wake_at_wall_ms
        if wake_at_wall_ms is not None:
            delay = max(0.0, (wake_at_wall_ms - wall_ms()) / 1000)
            self._timer = asyncio.get_running_loop().call_later(delay, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer = None
        self._timer_at = None
        self.policy.poke()
        self.seq.change()

    def _apply_options(self, options: NbOptions | None) -> None:
        """The backoff and the probe intervals NB_Global asks for (the defaults
        without the row)."""
        if options is None:
            options = NbOptions.read({}, self.config)
        self.policy.set_backoff(options.backoff_ms)
        _set_probe_interval(self.nb, options.nb_probe_ms / 1000)
        _set_probe_interval(self.sb, options.sb_probe_ms / 1000)

    def _apply_resets(self) -> None:
        for name, idl in (("nb", self.nb), ("sb", self.sb)):
            if self.reset_min_index[name]:
                self.reset_min_index[name] = False
                log.info("Resetting %s database cluster state",
                         "northbound" if name == "nb" else "southbound")
                idl.min_index = 0

    # -- control socket ------------------------------------------------------------------

    async def _start_metrics(self) -> MetricsServer | None:
        if self.config.metrics is None:
            return None
        def state() -> tuple[bool, int, Any]:
            engine = self.driver.engine
            return (self.state.had_lock, self.driver.cur_cfg,
                    engine.stats if engine is not None else None)
        self.metrics = NorthdMetrics(state)
        return await start_endpoint(self.metrics.registry, self.config.metrics)

    async def _start_unixctl(self) -> None:
        path = self.config.unixctl
        if path is None:
            return
        uc = self.unixctl = UnixctlServer(path, self.config.version_text)
        try:
            await uc.start()
        except OSError as e:
            self.unixctl = None
            from ..util.daemon import Fatal

            raise Fatal(f"{path}: could not initialize control socket "
                        f"({e.strerror})") from None
        self.coverage.inc("pstream_open")
        reg = uc.register
        reg("exit", "", 0, 0, self._cmd_exit)
        reg("pause", "", 0, 0, self._cmd_pause)
        reg("resume", "", 0, 0, self._cmd_resume)
        reg("is-paused", "", 0, 0, lambda a: "true" if self.state.paused else "false")
        reg("status", "", 0, 0, lambda a: appctl.status(self.state.paused,
                                                        self.state.had_lock))
        reg("sb-cluster-state-reset", "", 0, 0, lambda a: self._cmd_reset("sb"))
        reg("nb-cluster-state-reset", "", 0, 0, lambda a: self._cmd_reset("nb"))
        reg("nb-connection-status", "", 0, 0, lambda a: _conn_status(self.nb))
        reg("sb-connection-status", "", 0, 0, lambda a: _conn_status(self.sb))
        reg("parallel-build/set-n-threads", "N_THREADS", 1, 1, self._cmd_set_threads)
        reg("parallel-build/get-n-threads", "", 0, 0,
            lambda a: f"{self.config.n_threads}\n")
        reg("inc-engine/show-stats", "", 0, 2, self._cmd_show_stats)
        reg("inc-engine/clear-stats", "", 0, 0, self._cmd_clear_stats)
        reg("inc-engine/recompute", "", 0, 0, self._cmd_recompute)
        reg("inc-engine/compute-log-timeout", "", 1, 1, self._cmd_log_timeout)
        reg("inc-engine/dump-graph", "", 0, 0, lambda a: self.driver.dump_dot())
        reg("inc-engine/self-check", "[on|off]", 0, 1, self._cmd_self_check)
        reg("memory/show", "", 0, 0, lambda a: self._memory())
        reg("debug/chassis-features-list", "", 0, 0, lambda a: self._features())
        reg("coverage/show", "", 0, 0, lambda a: self.coverage.show())
        reg("coverage/read-counter", "COUNTER", 1, 1, self._cmd_read_counter)
        reg("stopwatch/show", "[NAME]", 0, 1, self._cmd_stopwatch_show)
        reg("stopwatch/reset", "[NAME]", 0, 1, self._cmd_stopwatch_reset)
        register_vlog(uc)
        reg("vlog/enable-rate-limit", "[module]...", 0, 2**31,
            lambda a: _set_rate_limits(a, True))
        reg("vlog/disable-rate-limit", "[module]...", 0, 2**31,
            lambda a: _set_rate_limits(a, False))

    def _wake(self) -> None:
        self.seq.change()

    def _cmd_exit(self, args: list[str]) -> str:
        asyncio.get_running_loop().call_soon(self.request_exit)
        return ""

    def _cmd_pause(self, args: list[str]) -> str:
        self.state.paused = True
        self._wake()
        return ""

    def _cmd_resume(self, args: list[str]) -> str:
        self.state.paused = False
        self._wake()
        return ""

    def _cmd_reset(self, which: str) -> str:
        self.reset_min_index[which] = True
        self._wake()
        return ""

    def _cmd_set_threads(self, args: list[str]) -> str:
        n = atoi(args[0])
        if n < 1 or n > 256:
            raise CommandError(f"invalid n_threads: {n}\n")
        self.config.n_threads = n
        return ""

    def _cmd_show_stats(self, args: list[str]) -> str:
        return self.driver.show_stats(*args)

    def _cmd_clear_stats(self, args: list[str]) -> str:
        self.driver.clear_stats()
        return ""

    def _cmd_recompute(self, args: list[str]) -> str:
        self.policy.force_recompute(Recompute.REQUESTED)
        self._wake()
        return ""

    def _cmd_self_check(self, args: list[str]) -> str:
        """Turn the self-check on or off; without an argument, what it found."""
        d = self.driver
        if args:
            if args[0] not in ("on", "off"):
                raise CommandError("argument must be on or off")
            d.self_check = args[0] == "on"
            return ""
        return (f"self-check {'on' if d.self_check else 'off'}: {d.self_check_runs} runs "
                f"checked, {d.self_check_differences} differed\n")

    def _cmd_log_timeout(self, args: list[str]) -> str:
        value = str_to_uint(args[0])
        if value is None:
            raise CommandError("unsigned integer required")
        self.compute_log_timeout_ms = value
        self.driver.set_log_timeout(value)
        return ""

    def _features(self) -> str:
        """`debug/chassis-features-list`: what the last build found every chassis
        supports (all of it before the first)."""
        engine = self.driver.engine
        node = engine.node("northd") if engine is not None else None
        features = node.data.extra.config.features if node is not None and \
            node.has_data else None
        return appctl.chassis_features(features)

    def _cmd_read_counter(self, args: list[str]) -> str:
        count = self.coverage.read(args[0])
        if count is None:
            raise CommandError("No such counter")
        return f"{count}\n"

    def _cmd_stopwatch_show(self, args: list[str]) -> str:
        found, text = self.stopwatches.show(args[0] if args else None)
        if not found:
            raise CommandError(text)
        return text

    def _cmd_stopwatch_reset(self, args: list[str]) -> str:
        self.stopwatches.reset(args[0] if args else None)
        return ""

    def _memory(self) -> str:
        usage: dict[str, int] = {}
        for idl in (self.nb, self.sb):
            if idl is not None and idl.replica is not None:
                usage[f"idl-cells-{idl.database}"] = sum(
                    len(t.rows) * len(t.columns) for t in idl.tables.values())
        return appctl.memory(usage)


def _set_rate_limits(modules: list[str], enable: bool) -> str:
    """`vlog/enable-rate-limit`, `vlog/disable-rate-limit` (lib/vlog.c): every module,
    or those named ("any": all); an unknown name ends the command with an error, the
    names before it applied."""
    if not modules:
        ratelimit.honors.set(None, enable)
    for name in modules:
        if name.lower() != "any" and name.lower() not in vlog.MODULES:
            raise CommandError("unknown module")
        ratelimit.honors.set([name], enable)
    return ""


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _committed(result: Result) -> bool:
    return result.status in (Status.SUCCESS, Status.UNCHANGED)


def _set_probe_interval(idl: Idl, seconds: float) -> None:
    """The IDL's probe interval for its next session, and for the live one (the
    connection reschedules its probe with the new interval)."""
    if idl.probe_interval == seconds:
        return
    idl.probe_interval = seconds
    conn = getattr(idl, "_conn", None)
    if conn is not None and getattr(conn, "probe_interval", 0) > 0 and seconds > 0:
        conn.probe_interval = seconds


def _conn_status(idl: Idl) -> str:
    return "connected" if idl is not None and idl.connected else "not connected"
