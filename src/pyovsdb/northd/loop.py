"""When northd's engine runs: the main loop's policy, without I/O (the daemon asks it).

Rules kept here (ovn-northd's main loop, with the backoff of OVN 23.09, seed 000):
- IDL updates are accumulated while they keep coming, for at most `max_accumulate_ms`
  (500 ms, OVN's IDL_LOOP_MAX_DURATION_MS): the daemon drains what is ready and asks
  `accumulate` whether to drain again.
- After a run that ended at END and took D ms, the next run is not before
  END + min(D, backoff) (`NB_Global.options:northd-backoff-interval-ms`; 0, the
  default, never delays), unless a recompute is pending or the last accumulation
  reached its 500 ms limit: then the run is at once.
- A run happens only when there is something to do: pending IDL changes, a pending
  recompute, or a `poke` (a timer or a committed transaction whose effect the next run
  writes, such as `sb_cfg`).
- A full recompute is forced by: a reconnect of either IDL, a failed NB or SB commit,
  becoming active (standby and paused instances recompute when they take over),
  `inc-engine/recompute`, and a canceled engine run. Each reason carries the log line
  ovn-northd writes for it (`None`: nothing is logged).
- Time is given by the caller, in milliseconds; nothing here reads a clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

MAX_ACCUMULATE_MS = 500


class Recompute(enum.Enum):
    """Why the next engine run recomputes everything, with ovn-northd's log text."""

    STARTUP = "startup"
    NB_RECONNECT = "nb-reconnect"
    SB_RECONNECT = "sb-reconnect"
    NB_COMMIT_FAILED = "nb-commit-failed"
    SB_COMMIT_FAILED = "sb-commit-failed"
    NOT_ACTIVE = "not-active"
    REQUESTED = "requested"
    CANCELED = "canceled"

    @property
    def log_text(self) -> str | None:
        return _LOG_TEXT.get(self)


_LOG_TEXT = {
    Recompute.NB_RECONNECT: "OVN NB IDL reconnected, force recompute.",
    Recompute.SB_RECONNECT: "OVN SB IDL reconnected, force recompute.",
    Recompute.NB_COMMIT_FAILED: "OVNNB commit failed, force recompute next time.",
    Recompute.SB_COMMIT_FAILED: "OVNSB commit failed, force recompute next time.",
}


@dataclass(frozen=True, slots=True)
class Decision:
    """Run the engine now (`run`, with `recompute`), or wait for a change or until
    `wake_at_ms` (None: only a change wakes)."""

    run: bool
    recompute: bool = False
    wake_at_ms: float | None = None


class LoopPolicy:
    """The state between engine runs that decides the next one."""

    def __init__(self, backoff_ms: int = 0, max_accumulate_ms: int = MAX_ACCUMULATE_MS
                 ) -> None:
        self.backoff_ms = max(0, backoff_ms)
        self.max_accumulate_ms = max_accumulate_ms
        self.next_run_ms = float("-inf")
        self.pending_changes = False
        self.poked = False
        self.saturated = False
        self.recompute: list[Recompute] = [Recompute.STARTUP]
        self.last_duration_ms = 0.0
        self.runs = 0

    def set_backoff(self, ms: int) -> None:
        """The backoff option as the NB replica now has it (negative: 0)."""
        self.backoff_ms = max(0, ms)

    def changed(self) -> None:
        """An IDL applied changes the engine has not seen."""
        self.pending_changes = True

    def poke(self) -> None:
        """Something besides IDL changes wants a run (a timer, a committed txn)."""
        self.poked = True

    def accumulate(self, started_ms: float, now_ms: float, moved: bool) -> bool:
        """After draining the IDLs once (started at `started_ms`): whether to drain
        again. `moved`: the drain brought changes."""
        if moved:
            self.pending_changes = True
        if now_ms - started_ms >= self.max_accumulate_ms:
            self.saturated = True
            return False
        return moved

    def force_recompute(self, reason: Recompute) -> None:
        if reason not in self.recompute:
            self.recompute.append(reason)

    @property
    def recompute_pending(self) -> bool:
        return bool(self.recompute)

    @property
    def reasons(self) -> str:
        """The pending recompute's reasons, for the log ("" without one)."""
        return ", ".join(r.value for r in self.recompute)

    def decide(self, now_ms: float) -> Decision:
        recompute = bool(self.recompute)
        if not (self.pending_changes or self.poked or recompute):
            return Decision(False)
        if recompute or self.saturated or now_ms >= self.next_run_ms:
            return Decision(True, recompute)
        return Decision(False, False, self.next_run_ms)

    def ran(self, start_ms: float, end_ms: float, *, canceled: bool = False) -> None:
        """The engine ran from `start_ms` to `end_ms` and its changes were handed
        over (commit failures are reported separately, with `force_recompute`)."""
        self.runs += 1
        self.last_duration_ms = max(0.0, end_ms - start_ms)
        self.next_run_ms = end_ms + min(self.last_duration_ms, self.backoff_ms)
        self.pending_changes = False
        self.poked = False
        self.saturated = False
        self.recompute = [Recompute.CANCELED] if canceled else []
