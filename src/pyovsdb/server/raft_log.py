"""The log lines the real server's Raft module writes about roles and leaders, for one
cluster member: operators and tools grep them (`elected leader by`, `is leader for
term`, `raft_is_connected: true`).

Rules kept here:
- Lines, levels and the module name ("raft") are the real server's (`ovsdb/raft.c`):
  `local server ID is XXXX` when the member starts; `term N: M ms timeout expired,
  starting election` (or `term N: starting election` after a leadership transfer,
  preceded by `received leadership transfer from NICK in term N-1`); `term N: elected
  leader by K+ of M servers`; `server NICK is leader for term N` when a follower learns
  of its leader; `Transferring leadership to write a snapshot.`; and at debug level
  `raft_is_connected: true|false` whenever that changes.
- The Raft core stays pure: these lines are derived from its state after each input
  (term, role, leader, votes, election timer base), never from inside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..raft import core as rc

log = logging.getLogger("raft")


class RoleLog:
    """Watches one core; `update()` after every input logs what changed."""

    def __init__(self, core: rc.RaftCore, nickname: Callable[[str | None], str]) -> None:
        self.core = core
        self.nickname = nickname
        self.term = core.term
        self.role = core.role
        self.leader: str | None = core.leader_sid
        self.election_base = core.election_base
        self.connected: bool | None = None
        if core.role == rc.LEADER:
            # The only server of its cluster elected itself as it was restored: log
            # that election too, as the real server does when it opens the file.
            self.term, self.role, self.leader = core.term - 1, rc.FOLLOWER, None
            self.election_base = 0

    def started(self) -> None:
        # The real server logs a lone server's election before its id (both happen
        # as it opens the file), the id first otherwise.
        if self.role != self.core.role:
            self.update()
        log.info("local server ID is %s", self.core.sid[:4])
        self.update()

    def transferring_for_snapshot(self) -> None:
        log.info("Transferring leadership to write a snapshot.")

    def update(self) -> None:
        core = self.core
        term, role, leader = core.term, core.role, core.leader_sid
        if term > self.term and core.vote == core.sid and role in (rc.CANDIDATE,
                                                                    rc.LEADER):
            # We stood for election in the new term.
            if core.leadership_transfer:
                if self.role == rc.FOLLOWER and self.leader is not None:
                    log.info("received leadership transfer from %s in term %d",
                             self.nickname(self.leader), term - 1)
                log.info("term %d: starting election", term)
            elif core.election_start is not None:
                log.info("term %d: %d ms timeout expired, starting election", term,
                         core.election_start - self.election_base)
        if role == rc.LEADER and (self.role != rc.LEADER or term != self.term):
            log.info("term %d: elected leader by %d+ of %d servers", term, core.n_votes,
                     len(core.servers))
        elif (role != rc.LEADER and leader is not None and leader != core.sid
              and (leader != self.leader or term != self.term)):
            log.info("server %s is leader for term %d", self.nickname(leader), term)
        connected = core.is_connected
        if connected != self.connected:
            log.debug("raft_is_connected: %s", "true" if connected else "false")
        self.term, self.role, self.leader = term, role, leader
        self.election_base = core.election_base
        self.connected = connected

    def __repr__(self) -> str:
        return f"RoleLog(term={self.term}, role={self.role!r})"
