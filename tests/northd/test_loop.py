"""northd's loop policy on virtual time: accumulation, backoff, forced recomputes."""

from __future__ import annotations

from pyovsdb.northd.loop import MAX_ACCUMULATE_MS, Decision, LoopPolicy, Recompute


def settled(backoff: int = 0) -> LoopPolicy:
    """A policy past its startup recompute, whose last run took 50 ms ending at 1000."""
    p = LoopPolicy(backoff)
    assert p.decide(0) == Decision(True, True)
    p.ran(950, 1000)
    return p


def test_startup_recomputes_once() -> None:
    p = LoopPolicy()
    assert p.decide(0) == Decision(True, True)
    p.ran(0, 10)
    assert not p.recompute_pending
    assert p.decide(20) == Decision(False)


def test_nothing_to_do_waits_for_a_change_only() -> None:
    p = settled(200)
    assert p.decide(5000) == Decision(False, False, None)


def test_no_backoff_runs_at_once() -> None:
    p = settled(0)
    p.changed()
    assert p.decide(1000) == Decision(True, False)


def test_backoff_delays_by_last_duration() -> None:
    p = settled(200)
    p.changed()
    # The last run took 50 ms (< 200): the next is at 1050.
    assert p.decide(1010) == Decision(False, False, 1050)
    assert p.decide(1050) == Decision(True, False)


def test_backoff_caps_long_runs() -> None:
    p = LoopPolicy(200)
    p.ran(0, 1000)          # a 1000 ms run
    p.changed()
    assert p.decide(1100) == Decision(False, False, 1200)
    assert p.decide(1200).run


def test_pending_recompute_skips_backoff() -> None:
    p = settled(200)
    p.changed()
    p.force_recompute(Recompute.SB_COMMIT_FAILED)
    assert p.decide(1001) == Decision(True, True)
    p.ran(1001, 1002)
    assert not p.recompute_pending


def test_accumulation_limit_skips_backoff() -> None:
    p = settled(200)
    start = 1001.0
    now = start
    # Changes keep coming every 100 ms: drained until 500 ms have passed.
    drains = 0
    while p.accumulate(start, now, moved=True):
        drains += 1
        now += 100
    assert drains == MAX_ACCUMULATE_MS // 100
    assert p.saturated
    assert p.decide(now) == Decision(True, False)


def test_accumulation_stops_when_quiet() -> None:
    p = settled(200)
    assert p.accumulate(1001, 1002, moved=True)
    assert not p.accumulate(1001, 1003, moved=False)
    assert not p.saturated
    assert p.decide(1003) == Decision(False, False, 1050)


def test_canceled_run_forces_recompute_next() -> None:
    p = settled()
    p.changed()
    p.ran(1000, 1001, canceled=True)
    assert p.recompute == [Recompute.CANCELED]
    assert p.decide(1001) == Decision(True, True)


def test_poke_runs_without_changes() -> None:
    p = settled(200)
    p.poke()
    assert p.decide(1050) == Decision(True, False)
    p.ran(1050, 1051)
    assert p.decide(2000) == Decision(False)


def test_reasons_kept_once_with_ovn_log_text() -> None:
    p = settled()
    p.force_recompute(Recompute.NB_RECONNECT)
    p.force_recompute(Recompute.NB_RECONNECT)
    p.force_recompute(Recompute.SB_RECONNECT)
    assert p.recompute == [Recompute.NB_RECONNECT, Recompute.SB_RECONNECT]
    assert Recompute.NB_RECONNECT.log_text == "OVN NB IDL reconnected, force recompute."
    assert Recompute.SB_COMMIT_FAILED.log_text == \
        "OVNSB commit failed, force recompute next time."
    assert Recompute.REQUESTED.log_text is None


def test_churn_faster_than_runs_backoff_batches() -> None:
    """Seed 000's experiment on virtual time: a change every 10 ms for 2 s, each engine
    run taking 30 ms plus 1 ms per pending change. Without backoff northd runs back to
    back; with 200 ms it runs fewer times, each run taking a bigger batch, and the
    last change is still seen within a run's length plus the backoff."""

    def simulate(backoff: int) -> tuple[int, float]:
        p = settled(backoff)
        now = 1000.0
        arrivals = [1000.0 + 10 * i for i in range(200)]
        seen = 0        # changes arrived before the last run began
        last_latency = 0.0
        i = 0
        while now < 5000:
            while i < len(arrivals) and arrivals[i] <= now:
                p.changed()
                i += 1
            d = p.decide(now)
            if d.run:
                batch = i - seen
                start = now
                now += 30 + batch
                p.ran(start, now)
                if batch and i == len(arrivals):
                    last_latency = now - arrivals[-1]
                seen = i
                continue
            nxt = arrivals[i] if i < len(arrivals) else float("inf")
            if d.wake_at_ms is not None:
                nxt = min(nxt, d.wake_at_ms)
            if nxt == float("inf"):
                break
            now = max(now, nxt)
        assert seen == len(arrivals)
        return p.runs, last_latency

    runs0, lat0 = simulate(0)
    runs200, lat200 = simulate(200)
    assert runs200 < runs0
    # Without backoff a run starts as soon as the last ended (31-33 ms runs).
    assert runs0 >= 55
    # With backoff, each run is followed by a wait as long as itself (< 200).
    assert runs200 <= runs0 // 2 + 2
    assert lat0 <= 2 * 35
    assert lat200 <= 2 * 35 + 200
