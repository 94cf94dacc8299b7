"""util.seq on a virtual clock: when delayed waiters wake, one wake per burst, no leaks.

Two clocks, no real sleeping:
- `VirtualLoop`, an asyncio event loop whose `time()` is virtual: when the loop would
  block on its selector with nothing ready, time jumps to the next timer instead. So
  `asyncio.sleep(0.003)` takes no wall time and the loop's timers run in time order.
- `FakeClock`, an injected clock with its own timer list that a test advances by hand,
  to check that `Seq` schedules through the clock it is given and cancels its timers.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyovsdb.util.seq import DelayedWake, Seq

T = TypeVar("T")


class _VirtualSelector(selectors.DefaultSelector):
    def __init__(self, loop: VirtualLoop) -> None:
        super().__init__()
        self._vloop = loop

    def select(self, timeout: float | None = None) -> list[Any]:
        events = super().select(0)
        if events:
            return events
        if timeout is None:
            raise RuntimeError("deadlock: the loop would wait forever (no timer, no I/O)")
        if timeout > 0:
            self._vloop.now += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.now = 1000.0
        super().__init__(_VirtualSelector(self))

    def time(self) -> float:
        return self.now


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def ms_since(loop: asyncio.AbstractEventLoop, start: float) -> float:
    return round((loop.time() - start) * 1000, 6)


# -- the pure rule ------------------------------------------------------------------


def test_delayed_wake_rule() -> None:
    rule = DelayedWake(seqno=7, not_before=10.0)
    assert rule.wake_at(7, 3.0) is None  # unchanged: keep waiting
    assert rule.wake_at(7, 50.0) is None  # unchanged even after the delay
    assert rule.wake_at(8, 3.0) == 10.0  # changed within the delay: at the delay's end
    assert rule.wake_at(8, 10.0) == 10.0
    assert rule.wake_at(8, 12.5) == 12.5  # changed after the delay: at once


# -- on the virtual loop ------------------------------------------------------------


def test_virtual_loop_jumps_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(3600)
        return ms_since(loop, start)

    assert run_virtual(main()) == 3_600_000


def test_no_delay_wakes_at_change() -> None:
    async def main() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        seq = Seq()
        start = loop.time()
        loop.call_later(0.002, seq.change)
        value = await seq.wait(seq.read())
        return value, ms_since(loop, start)

    assert run_virtual(main()) == (1, 2.0)


def test_already_changed_returns_without_suspending() -> None:
    async def main() -> None:
        seq = Seq()
        old = seq.read()
        seq.change()
        seq.change()
        steps: list[str] = []

        async def other() -> None:
            steps.append("other")

        task = asyncio.ensure_future(other())
        assert await seq.wait(old) == 2
        steps.append("waited")
        await task
        assert steps == ["waited", "other"]  # wait() did not yield to the other task

    run_virtual(main())


def test_delayed_waiter_woken_by_its_timer_when_nothing_changes_again() -> None:
    # The review question on the OVS patch: the change at 1 ms is within the 5 ms
    # delay, nothing changes afterwards; the waiter must still wake, at 5 ms.
    async def main() -> float:
        loop = asyncio.get_running_loop()
        seq = Seq()
        start = loop.time()
        loop.call_later(0.001, seq.change)
        await seq.wait(seq.read(), delay_ms=5)
        return ms_since(loop, start)

    assert run_virtual(main()) == 5.0


def test_change_after_the_delay_wakes_at_once() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        seq = Seq()
        start = loop.time()
        loop.call_later(0.008, seq.change)
        await seq.wait(seq.read(), delay_ms=5)
        return ms_since(loop, start)

    assert run_virtual(main()) == 8.0


def test_changed_before_wait_began_still_honours_the_delay() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        seq = Seq()
        old = seq.read()
        seq.change()
        start = loop.time()
        await seq.wait(old, delay_ms=5)
        return ms_since(loop, start)

    assert run_virtual(main()) == 5.0


def test_burst_of_changes_gives_one_wake() -> None:
    async def main() -> tuple[list[float], int]:
        loop = asyncio.get_running_loop()
        seq = Seq()
        start = loop.time()
        # 100 changes, one every 0.1 ms from 0.1 to 10 ms.
        for i in range(1, 101):
            loop.call_at(start + i * 0.0001, seq.change)
        wakes: list[float] = []
        seqno = seq.read()
        while seqno < 100:
            seqno = await seq.wait(seqno, delay_ms=4)
            wakes.append(ms_since(loop, start))
        return wakes, seqno

    wakes, seqno = run_virtual(main())
    # Each round is 4 ms long and covers the whole burst so far: one wake per round,
    # not one per change; the last round wakes at the change that ends the burst.
    assert wakes == [4.0, 8.0, 12.0]
    assert seqno == 100


def test_many_waiters_each_with_its_own_delay() -> None:
    async def main() -> dict[int, float]:
        loop = asyncio.get_running_loop()
        seq = Seq()
        start = loop.time()
        woke: dict[int, float] = {}

        async def waiter(delay: int) -> None:
            await seq.wait(0, delay_ms=delay)
            woke[delay] = ms_since(loop, start)

        tasks = [asyncio.ensure_future(waiter(d)) for d in (10, 0, 3, 6)]
        loop.call_later(0.005, seq.change)
        await asyncio.gather(*tasks)
        assert seq.n_waiters == 0
        return woke

    assert run_virtual(main()) == {0: 5.0, 3: 5.0, 6: 6.0, 10: 10.0}


def test_unchanged_waiter_never_wakes_and_timeout_leaves_nothing_behind() -> None:
    async def main() -> None:
        seq = Seq()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(seq.wait(seq.read(), delay_ms=2), timeout=60)
        assert seq.n_waiters == 0
        # A later change has nobody to wake and schedules nothing.
        seq.change()
        assert seq.read() == 1

    run_virtual(main())


def test_cancel_during_the_delay_cancels_the_timer() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        seq = Seq()
        task = asyncio.ensure_future(seq.wait(0, delay_ms=50))
        await asyncio.sleep(0.001)
        seq.change()  # schedules the end-of-delay timer
        assert seq.n_waiters == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seq.n_waiters == 0
        timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        assert timers == []

    run_virtual(main())


def test_negative_delay_rejected() -> None:
    async def main() -> None:
        with pytest.raises(ValueError):
            await Seq().wait(0, delay_ms=-1)

    run_virtual(main())


# -- an injected clock --------------------------------------------------------------


class _Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A hand-advanced clock: `call_at` records timers, `advance` runs the due ones."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, _Timer, Callable[[], object]]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], object], /) -> _Timer:
        timer = _Timer()
        heapq.heappush(self._timers, (when, next(self._order), timer, callback))
        return timer

    def pending(self) -> list[float]:
        return sorted(when for when, _, t, _ in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        while self._timers and self._timers[0][0] <= self.now:
            _, _, timer, callback = heapq.heappop(self._timers)
            if not timer.cancelled:
                callback()


def test_injected_clock_drives_the_delay() -> None:
    async def main() -> None:
        clock = FakeClock()
        seq = Seq(clock)
        task = asyncio.ensure_future(seq.wait(0, delay_ms=5))
        await asyncio.sleep(0)
        assert clock.pending() == []  # nothing changed: no timer
        clock.advance(0.001)
        seq.change()
        seq.change()
        seq.change()
        assert clock.pending() == [0.005]  # one timer for the whole burst
        clock.advance(0.003)
        await asyncio.sleep(0)
        assert not task.done()  # 4 ms: still within the delay
        clock.advance(0.001)
        assert await task == 3
        assert clock.pending() == []

        # After the delay, a change wakes a delayed waiter at once, with no timer.
        task = asyncio.ensure_future(seq.wait(3, delay_ms=5))
        await asyncio.sleep(0)
        clock.advance(0.010)
        seq.change()
        assert clock.pending() == []
        assert await task == 4

        # Cancelling a waiter that has a timer cancels the timer.
        task = asyncio.ensure_future(seq.wait(4, delay_ms=5))
        await asyncio.sleep(0)
        seq.change()
        assert clock.pending() == [clock.now + 0.005]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert clock.pending() == []
        assert seq.n_waiters == 0

    asyncio.run(main())


def test_default_clock_is_the_running_loop() -> None:
    async def main() -> int:
        seq = Seq()
        asyncio.get_running_loop().call_soon(seq.change)
        return await seq.wait(0)

    assert asyncio.run(main()) == 1


# -- property: wake times on random schedules -----------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    changes=st.lists(st.integers(0, 40), max_size=12, unique=True),
    waiters=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=6),
)
def test_wake_time_is_first_change_but_not_before_the_delay(
    changes: list[int], waiters: list[tuple[int, int]]
) -> None:
    """Changes at c + 0.5 ms; a waiter starting at s ms with delay d wakes at
    max(s + d, first change after s), or never if nothing changes after s."""
    horizon = 100.0

    async def main() -> list[float | None]:
        loop = asyncio.get_running_loop()
        seq = Seq()
        base = loop.time()
        for c in changes:
            loop.call_at(base + (c + 0.5) / 1000, seq.change)

        async def waiter(start: int, delay: int) -> float | None:
            await asyncio.sleep(start / 1000)
            try:
                await asyncio.wait_for(seq.wait(seq.read(), delay), horizon / 1000)
            except TimeoutError:
                return None
            return ms_since(loop, base)

        woke = await asyncio.gather(*(waiter(s, d) for s, d in waiters))
        assert seq.n_waiters == 0
        return list(woke)

    expected: list[float | None] = []
    for start, delay in waiters:
        later = [c + 0.5 for c in changes if c + 0.5 > start]
        expected.append(max(start + delay, min(later)) if later else None)
    assert run_virtual(main()) == expected
