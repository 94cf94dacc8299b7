"""What a client logs as it connects and reconnects, and how long it backs off, as Open
vSwitch's reconnect state machine decides (lib/reconnect.c, module "reconnect").

Rules kept here:
- "connecting..." before an attempt and "connected" after it, at info; a failed
  attempt "connection attempt failed (ERROR)" (or "timed out"); a session that ends
  "connection closed by peer" (info) or "connection dropped (ERROR)" (warn).
- Back off: after a session that was in use, the minimum (1 s); after a failed
  attempt, double up to half the maximum, logging "waiting N seconds before
  reconnect", then the maximum (8 s), logging once "continuing to reconnect in the
  background but suppressing further logging". While backed off at the maximum,
  attempts and their failures are not logged; "connected" always is.
- `backoff_ms` is the delay before the next attempt. A session dropped on purpose
  while it was in use (the server stopped being the leader, say) first resets the
  backoff: one free try per remote, as ovsdb-cs.c does. The remote's name is given per
  attempt (a client with several remotes names the one it tries); a client of N
  remotes gets N-1 attempts without backoff first (`backoff_free_tries`, set once
  when the session opens, as jsonrpc.c does).
"""

from __future__ import annotations

import logging

log = logging.getLogger("reconnect")

MIN_BACKOFF_MS = 1000
MAX_BACKOFF_MS = 8000


class ReconnectLog:
    def __init__(self, min_backoff_ms: int = MIN_BACKOFF_MS,
                 max_backoff_ms: int = MAX_BACKOFF_MS, free_tries: int = 0) -> None:
        self.free_tries = free_tries
        self.min_backoff = min_backoff_ms
        self.max_backoff = max(max_backoff_ms, min_backoff_ms)
        self.backoff_ms = 0
        self.name = ""
        self.state = "void"  # void, connecting, active, backoff

    def connecting(self, name: str) -> None:
        self.name = name
        if self.state != "connecting":
            if self.backoff_ms < self.max_backoff:
                log.info("%s: connecting...", name)
            self.state = "connecting"

    def connected(self) -> None:
        if self.state != "active":
            log.info("%s: connected", self.name)
            self.state = "active"

    def force_reconnect(self, *, monitoring: bool = False, n_remotes: int = 1) -> None:
        """The client itself drops the session (a server it will not use): the end is
        then reported as reconnect.c reports a forced reconnection. `monitoring`: the
        session was in use, and the client retries without backing off first
        (`jsonrpc_session_reset_backoff`: a free try per remote, and one for this)."""
        if monitoring:
            self.free_tries = n_remotes + (1 if self.state == "active" else 0)
        if self.state in ("connecting", "active"):
            self.state = "reconnect"

    def probe_failed(self, interval_s: float) -> None:
        """The peer did not answer a probe within `interval_s` (reconnect.c's
        `reconnect_run` in IDLE): logged, and the session ends as dropped."""
        log.error("%s: no response to inactivity probe after %.3g seconds, disconnecting",
                  self.name, interval_s)
        if self.state == "active":
            log.info("%s: connection dropped", self.name)
        self._back_off(used=True)

    def failed(self, error: str | None) -> None:
        """The attempt failed (None: it timed out)."""
        self.disconnected(error, used=False)

    def disconnected(self, error: str | None, used: bool = True) -> None:
        """The session or the attempt ended: an active session closed by the peer
        (None) or dropped with `error`; `used`: it carried traffic after connecting (a
        short-lived one keeps backing off)."""
        if self.state == "active":
            if error is not None:
                log.warning("%s: connection dropped (%s)", self.name, error)
            else:
                log.info("%s: connection closed by peer", self.name)
        elif self.state not in ("backoff", "void") and self.backoff_ms < self.max_backoff:
            if error is not None:
                log.info("%s: connection attempt failed (%s)", self.name, error)
            else:
                log.info("%s: connection attempt timed out", self.name)
        self._back_off(used=self.state == "active" and used)

    def _back_off(self, *, used: bool) -> None:
        if self.state in ("backoff", "void"):
            return
        if self.free_tries > 1:
            self.free_tries -= 1
            self.backoff_ms = 0
        elif used or self.backoff_ms < self.min_backoff:
            self.backoff_ms = self.min_backoff
        elif self.backoff_ms < self.max_backoff // 2:
            self.backoff_ms *= 2
            log.info("%s: waiting %s seconds before reconnect", self.name,
                     f"{self.backoff_ms / 1000.0:.3g}")
        else:
            if self.backoff_ms < self.max_backoff:
                log.info("%s: continuing to reconnect in the background but suppressing "
                         "further logging", self.name)
            self.backoff_ms = self.max_backoff
        self.state = "backoff"
