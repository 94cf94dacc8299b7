"""Rate-limited log messages, as Open vSwitch's `VLOG_*_RL` macros keep them
(lib/vlog.c `vlog_should_drop`, lib/token-bucket.c).

Rules kept here:
- A `RateLimit(rate, burst)` is one call site's `VLOG_RATE_LIMIT_INIT(RATE, BURST)`: a
  token bucket that refills `rate` messages a minute up to `burst` messages (it starts
  full). A message the bucket cannot pay for is dropped and counted; the next one that
  passes is preceded, at its own level, by "Dropped N log messages in last N seconds
  (most recently, N seconds ago) due to excessive rate", the seconds counted on the
  monotonic clock in whole seconds (`time_now`).
- A message is tested against the bucket only when its module logs that level
  somewhere; a module whose rate limits are disabled (`vlog/disable-rate-limit`) logs
  every message and counts nothing. Modules honor their rate limits unless disabled,
  by name (case-insensitive, as `vlog_module_from_name` matches) or all at once.
- Time is given by the caller in milliseconds; `log` takes the clock once per message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

VLOG_MSG_TOKENS = 60 * 1000  # a message's price: RATE is then messages per minute
_UINT_MAX = 0xFFFFFFFF


class TokenBucket:
    """lib/token-bucket.c: `rate` tokens a millisecond, at most `burst` held."""

    __slots__ = ("burst", "last_fill", "rate", "tokens")

    def __init__(self, rate: int, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = 0
        self.last_fill: int | None = None  # LLONG_MIN: the first withdrawal fills it

    def withdraw(self, n: int, now_ms: int) -> bool:
        if self.tokens < n:
            if self.last_fill is None or now_ms > self.last_fill:
                elapsed = _UINT_MAX if self.last_fill is None else \
                    min(_UINT_MAX, now_ms - self.last_fill)
                add = min(_UINT_MAX, self.rate * elapsed)
                self.tokens = min(min(_UINT_MAX, self.tokens + add), self.burst)
                self.last_fill = now_ms
            if self.tokens < n:
                return False
        self.tokens -= n
        return True


class RateLimit:
    """One call site's `struct vlog_rate_limit`."""

    __slots__ = ("bucket", "first_dropped", "last_dropped", "n_dropped")

    def __init__(self, rate: int, burst: int) -> None:
        self.bucket = TokenBucket(rate, min(_UINT_MAX, burst * VLOG_MSG_TOKENS))
        self.first_dropped = 0
        self.last_dropped = 0
        self.n_dropped = 0

    def admit(self, now_ms: int) -> tuple[bool, str | None]:
        """Whether a message may be logged now, and the "Dropped" line to log before
        it (None when nothing was dropped since the last one)."""
        now_s = now_ms // 1000
        if not self.bucket.withdraw(VLOG_MSG_TOKENS, now_ms):
            if not self.n_dropped:
                self.first_dropped = now_s
            self.last_dropped = now_s
            self.n_dropped += 1
            return False, None
        if not self.n_dropped:
            return True, None
        line = (f"Dropped {self.n_dropped} log messages in last "
                f"{now_s - self.first_dropped} seconds (most recently, "
                f"{now_s - self.last_dropped} seconds ago) due to excessive rate")
        self.n_dropped = 0
        return True, line


class Honors:
    """Which modules honor their rate limits (all, unless disabled)."""

    def __init__(self) -> None:
        self.default = True
        self.modules: dict[str, bool] = {}

    def __call__(self, module: str) -> bool:
        return self.modules.get(module.lower(), self.default)

    def set(self, modules: Iterable[str] | None, enable: bool) -> None:
        """`vlog/enable-rate-limit` and `vlog/disable-rate-limit`: every module (None),
        or the ones named ("any" meaning all)."""
        for name in [None] if modules is None else list(modules):
            if name is None or name.lower() == "any":
                self.default = enable
                self.modules.clear()
            else:
                self.modules[name.lower()] = enable


honors = Honors()


def log(module: str, level: int, limit: RateLimit | None, message: str,
        now_ms: int | None = None) -> bool:
    """`VLOG_RL(limit, level, message)` in `module` (no limit: plain `VLOG`); whether
    the message was logged."""
    logger = logging.getLogger(module)
    if not logger.isEnabledFor(level):
        return False
    if limit is not None and honors(module):
        ok, dropped = limit.admit(now_ms if now_ms is not None
                                  else int(time.monotonic() * 1000))
        if not ok:
            return False
        if dropped is not None:
            logger.log(level, "%s", dropped)
    logger.log(level, "%s", message)
    return True
