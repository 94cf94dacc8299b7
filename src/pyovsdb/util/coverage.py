"""Event counters as Open vSwitch keeps them (lib/coverage.c), with the text of
`coverage/show` and `coverage/read-counter`.

Rules kept here:
- Counters are defined once, by name, in the order they are listed; `inc` adds to a
  counter's total at once (OVS moves per-thread counts into the totals every second).
- `run(now_ms)` closes 5-second slots as `coverage_run` does: what was counted since
  the last run is spread evenly over the slots that passed, the last slot taking the
  remainder; 12 slots make the last minute, and 60 minutes the last hour.
- `show` is `coverage/show`: the header with the hash of the counters' ranking (groups
  of equal totals, largest first, names in each group sorted, hashed with OVS's
  `hash_int` and `hash_string`), a line per counter ever hit, in definition order, with
  its rate over the last slot, minute and hour and its total, then how many were never
  hit.
- Time is given by the caller; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ovshash import hash_int, hash_string

RUN_INTERVAL_MS = 5000
MIN_AVG_LEN = 60000 // RUN_INTERVAL_MS
HR_AVG_LEN = 60
_M32 = 0xFFFFFFFF


@dataclass(slots=True)
class Counter:
    name: str
    total: int = 0
    last_total: int = 0
    min: list[int] = field(default_factory=lambda: [0] * MIN_AVG_LEN)
    hr: list[int] = field(default_factory=lambda: [0] * HR_AVG_LEN)


class Coverage:
    """The coverage counters of one process."""

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self._counters: dict[str, Counter] = {}
        self._idx = 0
        self._run_at: int | None = None
        for name in names:
            self.define(name)

    def define(self, name: str) -> None:
        self._counters.setdefault(name, Counter(name))

    def inc(self, name: str, n: int = 1) -> None:
        self._counters[name].total += n

    def read(self, name: str) -> int | None:
        """`coverage/read-counter NAME` (None: "No such counter")."""
        c = self._counters.get(name)
        return None if c is None else c.total

    def run(self, now_ms: int) -> None:
        """`coverage_run`: close the slots that ended by `now_ms`."""
        if self._run_at is None:
            self._run_at = now_ms + RUN_INTERVAL_MS
        if now_ms < self._run_at:
            return
        slots = (now_ms - self._run_at) // RUN_INTERVAL_MS + 1
        size = MIN_AVG_LEN * HR_AVG_LEN
        for c in self._counters.values():
            count = (c.total - c.last_total) & _M32
            c.last_total = c.total
            portion = count // slots
            idx = self._idx
            for j in range(slots):
                m_idx, h_idx = idx % MIN_AVG_LEN, idx // MIN_AVG_LEN
                c.min[m_idx] = portion + (count % slots if j == slots - 1 else 0)
                c.hr[h_idx] = c.min[m_idx] if m_idx == 0 else \
                    (c.hr[h_idx] + c.min[m_idx]) & _M32
                idx = (idx + 1) % size
        self._idx = (self._idx + slots) % size
        self._run_at = now_ms + RUN_INTERVAL_MS

    def hash(self) -> int:
        """`coverage_hash`: the ranking of the counters by total."""
        ranked = sorted(self._counters.values(), key=lambda c: (-c.total, c.name))
        h = 0
        groups = 0
        i = 0
        while i < len(ranked) and ranked[i].total:
            groups += 1
            h = hash_int(i, h)
            j = i
            while j < len(ranked) and ranked[j].total == ranked[i].total:
                h = hash_string(ranked[j].name, h)
                j += 1
            i = j
        return hash_int(groups, h)

    def show(self) -> str:
        """`coverage/show`."""
        lines = [f"Event coverage, avg rate over last: {RUN_INTERVAL_MS // 1000} seconds, "
                 f"last minute, last hour,  hash={self.hash():08x}:"]
        never = 0
        last = ((self._idx - 1) & _M32) % MIN_AVG_LEN  # C unsigned arithmetic
        for c in self._counters.values():
            if not c.total:
                never += 1
                continue
            lines.append(f"{c.name:<24} {c.min[last] * 1000.0 / RUN_INTERVAL_MS:5.1f}/sec "
                         f"{sum(c.min) / 60.0:9.3f}/sec {sum(c.hr) / 3600.0:13.4f}/sec   "
                         f"total: {c.total}")
        lines.append(f"{never} events never hit")
        return "\n".join(lines) + "\n"
