"""A change counter whose asyncio waiters may ask to be woken no sooner than a delay.

`Seq` is OVS's `lib/seq.c` for one event loop: `change()` bumps the counter and wakes
waiters, `read()` returns it, and `await wait(seqno, delay_ms)` returns once the counter
differs from `seqno`. The delay is the one OVS proposed for its revalidators (a burst of
changes gives one wake-up, not one per change): the waiter is woken no sooner than
`delay_ms` after it began waiting, and at once if the change comes later than that.

Rules kept here:
- A delayed waiter whose seq changed during its delay is woken when the delay expires,
  even if nothing changes again: the first change it sees schedules one timer at the end
  of the delay, and the timer wakes it. (This is the reviewer's question on the OVS
  patch: without the timer nothing would ever wake it.) Later changes during the delay
  schedule nothing more, so a burst gives exactly one wake-up.
- When to wake is decided by a pure rule (`DelayedWake`), given only the seq's value
  and the time; `Seq` just applies it on `wait()` and on `change()`.
- The clock is a parameter: anything with `time()` (seconds) and `call_at(when, cb)`,
  which an asyncio event loop is. By default it is the running loop, so tests drive
  delays on a virtual clock without real sleeping. No threads; one loop per `Seq`.
- Cancellation-safe: a cancelled waiter leaves no waiter and no timer behind.
- Waiters are woken in the order they began waiting (deterministic).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Clock", "DelayedWake", "Seq", "TimerHandle"]


class TimerHandle(Protocol):
    """What `Clock.call_at` returns: something that can be cancelled."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """A time source with timers; `asyncio.AbstractEventLoop` is one."""

    def time(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], object], /) -> TimerHandle: ...


@dataclass(frozen=True, slots=True)
class DelayedWake:
    """The wake-up rule of one waiter: it waits for a value other than `seqno`, and is
    not to be woken before clock time `not_before`."""

    seqno: int
    not_before: float

    def wake_at(self, value: int, now: float) -> float | None:
        """When to wake, given the seq's current `value` at clock time `now`.

        None: keep waiting for a change. Otherwise the clock time to wake at; a time
        `<= now` means at once.
        """
        if value == self.seqno:
            return None
        return self.not_before if self.not_before > now else now


class _Waiter:
    __slots__ = ("future", "rule", "timer")

    def __init__(self, rule: DelayedWake, future: asyncio.Future[None]) -> None:
        self.rule = rule
        self.future = future
        self.timer: TimerHandle | None = None


class Seq:
    """A change counter with delayed-wake waiters (see the module docstring)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock
        self._value = 0
        self._waiters: dict[_Waiter, None] = {}

    def read(self) -> int:
        """The current value; it changes on every `change()` and never returns to an
        earlier value."""
        return self._value

    @property
    def n_waiters(self) -> int:
        """How many waiters are currently waiting (for tests and memory reports)."""
        return len(self._waiters)

    def change(self) -> None:
        """Bump the counter and wake every waiter whose delay has passed; a waiter still
        within its delay gets one timer for the end of the delay."""
        self._value += 1
        if not self._waiters:
            return
        # Without an injected clock, the waiters' own loop is the clock: change() may
        # then be called from a plain callback of that loop.
        clock = self._clock or next(iter(self._waiters)).future.get_loop()
        now = clock.time()
        for waiter in list(self._waiters):
            if waiter.future.done() or waiter.timer is not None:
                continue
            at = waiter.rule.wake_at(self._value, now)
            if at is None:
                continue
            if at <= now:
                waiter.future.set_result(None)
            else:
                waiter.timer = clock.call_at(at, _wake_callback(waiter))

    async def wait(self, seqno: int, delay_ms: float = 0) -> int:
        """Return once the value differs from `seqno`, but no sooner than `delay_ms`
        after this call; returns the value at wake-up.

        Returns without suspending if the value already differs and there is no delay.
        Waits forever if nothing changes (wrap it in `asyncio.wait_for` for a timeout).
        """
        if delay_ms < 0:
            raise ValueError(f"negative delay {delay_ms} ms")
        clock = self._get_clock()
        now = clock.time()
        rule = DelayedWake(seqno, now + delay_ms / 1000.0)
        at = rule.wake_at(self._value, now)
        if at is not None and at <= now:
            return self._value
        waiter = _Waiter(rule, asyncio.get_running_loop().create_future())
        if at is not None:
            waiter.timer = clock.call_at(at, _wake_callback(waiter))
        self._waiters[waiter] = None
        try:
            await waiter.future
        finally:
            del self._waiters[waiter]
            if waiter.timer is not None:
                waiter.timer.cancel()
        return self._value

    def _get_clock(self) -> Clock:
        if self._clock is not None:
            return self._clock
        return asyncio.get_running_loop()


def _wake_callback(waiter: _Waiter) -> Callable[[], None]:
    def wake() -> None:
        if not waiter.future.done():
            waiter.future.set_result(None)

    return wake
