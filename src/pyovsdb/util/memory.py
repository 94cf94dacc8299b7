"""When a daemon reports its memory use in its log, and when it gives freed memory
back to the system, as Open vSwitch's lib/memory.c and OVN's lib/memory-trim.c decide.

Rules kept here:
- `MemoryReport`: checked at most every 10 s from the daemon's start; the first check
  reports "N kB peak resident set size after S seconds", later ones only when the peak
  grew by half since the last report ("peak resident set size grew P% in last S
  seconds, from A kB to B kB"). Each report asks the daemon to log its `memory/show`
  line once (`take_report`). Checks happen when the main loop runs; nothing schedules
  a wake-up for them.
- `MemoryTrimmer`: a daemon that was active and then idle for the trim timeout
  (NB_Global `options:northd_trim_timeout`, ms; default 30000, below 1000 is 1000 with
  a warning) trims once ("Detected inactivity (last active N ms ago): trimming
  memory"), then waits for new activity. The three messages share one rate limit
  (5 a minute, burst 1), as they share one in memory-trim.c.
- Time and the peak size are given by the caller; nothing here reads a clock.
"""

from __future__ import annotations

from .ratelimit import RateLimit

CHECK_INTERVAL_MS = 10 * 1000
DEFAULT_TRIM_TIMEOUT_MS = 30000


class MemoryReport:
    def __init__(self, boot_ms: int) -> None:
        self.boot_ms = boot_ms
        self.next_check = boot_ms + CHECK_INTERVAL_MS
        self.last_report = 0
        self.last_maxrss = 0
        self.want_report = False

    def run(self, now_ms: int, maxrss_kb: int) -> str | None:
        """`memory_run`: the line to log now, if this is a check that reports."""
        if now_ms < self.next_check:
            return None
        self.next_check = now_ms + CHECK_INTERVAL_MS
        if not self.last_maxrss:
            line = (f"{maxrss_kb} kB peak resident set size after "
                    f"{(now_ms - self.boot_ms) / 1000.0:.1f} seconds")
        elif maxrss_kb >= self.last_maxrss * 1.5:
            line = (f"peak resident set size grew "
                    f"{(maxrss_kb / self.last_maxrss - 1) * 100:.0f}% in last "
                    f"{(now_ms - self.last_report) / 1000.0:.1f} seconds, from "
                    f"{self.last_maxrss} kB to {maxrss_kb} kB")
        else:
            return None
        self.want_report = True
        self.last_report = now_ms
        self.last_maxrss = maxrss_kb
        return line

    def take_report(self) -> bool:
        """Whether to log the usage line now (once per report)."""
        want, self.want_report = self.want_report, False
        return want


class MemoryTrimmer:
    """`struct memory_trimmer`, with the rate limit its messages share."""

    def __init__(self) -> None:
        self.rate_limit = RateLimit(5, 1)
        self.timeout_ms = 0
        self.last_active_ms = 0
        self.recently_active = False

    def set_timeout(self, ms: int) -> str | None:
        """The timeout in effect; the warning to log (rate-limited) if refused."""
        warning = None
        if ms < 1000:
            warning = (f"Invalid requested trim timeout: requested {ms} ms, using 1000 ms "
                       "instead")
            ms = 1000
        self.timeout_ms = ms
        return warning

    def record_activity(self, now_ms: int) -> None:
        self.last_active_ms = now_ms
        self.recently_active = True

    def can_run(self, now_ms: int) -> str | None:
        """The line to log (rate-limited) when it is time to trim, else None."""
        if not self.recently_active:
            return None
        if now_ms < self.last_active_ms or now_ms < self.timeout_ms:
            self.recently_active = False
            return "Detected last active timestamp overflow"
        if now_ms - self.timeout_ms >= self.last_active_ms:
            self.recently_active = False
            return (f"Detected inactivity (last active {now_ms - self.last_active_ms} ms "
                    "ago): trimming memory")
        return None

    def wake_at(self) -> int | None:
        """When the main loop must run again for the trim (None: no need)."""
        return self.last_active_ms + self.timeout_ms if self.recently_active else None
