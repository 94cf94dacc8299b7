"""Named locks (RFC 7047 section 4.1.8-4.1.10) shared by all sessions of one server.

Rules kept here (the real server's, ovsdb/lock.c and jsonrpc-server.c):
- Each lock has an ordered queue of waiting sessions; the first one owns the lock.
- `lock` joins the end of the queue; `steal` jumps to its head. The session robbed by a
  steal is told "stolen". If it had asked with `lock`, it stays queued and gets the
  lock back when the thief releases it; if it had itself stolen the lock, it leaves the
  queue (but stays registered until it unlocks, and that unlock tells nobody).
- Whenever a session leaves a queue that still has others, the head is told "locked",
  even if it already owned the lock.
- A session may hold or wait for a given lock only once until it unlocks it.
- Closing a session releases everything it held or waited for.
The manager only decides; callers send the notifications it returns.
"""

from __future__ import annotations

from typing import Any

WAIT, STEAL = "wait", "steal"


class LockManager:
    def __init__(self) -> None:
        self.queues: dict[str, list[Any]] = {}
        self.modes: dict[tuple[int, str], str] = {}  # (id(session), name) -> how it asked

    def owner(self, name: str) -> Any:
        q = self.queues.get(name)
        return q[0] if q else None

    def holds(self, session: Any, name: str) -> bool:
        return self.owner(name) is session

    def waiting(self, session: Any, name: str) -> bool:
        """Registered for `name` (queued, or robbed after a steal and not unlocked)."""
        return (id(session), name) in self.modes

    def lock(self, session: Any, name: str) -> bool:
        self.modes[(id(session), name)] = WAIT
        q = self.queues.setdefault(name, [])
        q.append(session)
        return q[0] is session

    def steal(self, session: Any, name: str) -> Any:
        """Take the lock now; returns the previous owner (to be told "stolen") or None."""
        self.modes[(id(session), name)] = STEAL
        q = self.queues.setdefault(name, [])
        victim = q[0] if q else None
        if victim is not None and self.modes.get((id(victim), name)) == STEAL:
            q.pop(0)
        q.insert(0, session)
        return victim

    def unlock(self, session: Any, name: str) -> Any:
        """Forget `session`'s request; returns the owner to tell "locked", or None."""
        self.modes.pop((id(session), name), None)
        q = self.queues.get(name)
        if not q or session not in q:
            return None
        q.remove(session)
        if not q:
            del self.queues[name]
            return None
        return q[0]

    def release_all(self, session: Any) -> list[tuple[str, Any]]:
        """Drop every lock of `session`; returns (name, new owner) pairs to notify."""
        out = []
        sid = id(session)
        for name in [n for (s, n) in list(self.modes) if s == sid]:
            new_owner = self.unlock(session, name)
            if new_owner is not None:
                out.append((name, new_owner))
        return out
