"""The pure parts behind what northd logs and reports, on virtual time: rate limits
(lib/vlog.c, lib/token-bucket.c), the address scanner whose keeps and complaints the
differential test compares with ovn-northd, IPAM's configuration errors, stopwatch
statistics (lib/stopwatch.c), memory reports (lib/memory.c) and the trimmer."""

from __future__ import annotations

import logging

import pytest

from pyovsdb.northd.build.ipam import switch_ipam
from pyovsdb.northd.build.ports_addresses import (
    extract_lsp_addresses,
    ip_addresses,
    parse_lsp_address,
)
from pyovsdb.northd.diagnostics import collecting
from pyovsdb.util import ratelimit
from pyovsdb.util.memory import MemoryReport, MemoryTrimmer
from pyovsdb.util.reconnect import ReconnectLog
from pyovsdb.util.stopwatch import Stopwatches


def test_rate_limit_burst_refill_and_dropped_line() -> None:
    rl = ratelimit.RateLimit(5, 1)  # 5 a minute, burst 1: a token every 12 s
    assert rl.admit(0) == (True, None)
    assert rl.admit(1000) == (False, None)
    assert rl.admit(2000) == (False, None)
    assert rl.admit(11999) == (False, None)
    assert rl.admit(14000) == (True, "Dropped 3 log messages in last 13 seconds (most "
                                     "recently, 3 seconds ago) due to excessive rate")
    assert rl.admit(15000) == (False, None)
    burst = ratelimit.RateLimit(1, 5)
    assert [burst.admit(t)[0] for t in range(0, 7000, 1000)] == [True] * 5 + [False] * 2


def test_rate_limited_log_and_disabled_modules(caplog: pytest.LogCaptureFixture) -> None:
    rl = ratelimit.RateLimit(1, 1)
    caplog.set_level(logging.INFO, logger="ovn_util")
    try:
        for t in (0, 10, 20):
            ratelimit.log("ovn_util", logging.INFO, rl, "bad", t)
        ratelimit.honors.set(["OVN_UTIL"], False)  # names match case-insensitively
        ratelimit.log("ovn_util", logging.INFO, rl, "unlimited", 30)
        ratelimit.honors.set(["any"], True)
        ratelimit.log("ovn_util", logging.INFO, rl, "again", 60_020)
    finally:
        ratelimit.honors.set(None, True)
    assert [r.getMessage() for r in caplog.records] == [
        "bad", "unlimited", "Dropped 2 log messages in last 60 seconds (most recently, "
        "60 seconds ago) due to excessive rate", "again"]


def test_lsp_addresses_as_ovs_scan_reads_them() -> None:
    """What 23.03 keeps of each (checked against its flows in the differential test):
    an address followed by garbage is kept, the scan stops at the garbage."""
    cases = {
        "00:00:00:00:00:01 10.0.0.1 fe80::zz": (["10.0.0.1/32"], ["fe80::/128"], 33),
        "00:00:00:00:00:08 10.0.0.8x 10.0.0.9": (["10.0.0.8/32"], [], 26),
        "00:00:00:00:00:05 10.0.0.5 fd00::5zz": (["10.0.0.5/32"], ["fd00::5/128"], 34),
        "00:00:00:00:00:15 10.0.0.15/24x": (["10.0.0.15/24"], [], 30),
        "00:00:00:00:00:07 10.0.0.7 ": (["10.0.0.7/32"], [], 26),
        "0a:00:00:00:00:01 10.0.0.300 fd00::1/ffff::": (["10.0.0.44/32"], ["fd00::1/16"],
                                                       43),
    }
    for text, (v4, v6, end) in cases.items():
        found, ofs = parse_lsp_address(text)
        assert found is not None
        assert ([f"{n.addr}/{n.plen}" for n in found.ipv4],
                [f"{n.addr}/{n.plen}" for n in found.ipv6], ofs) == (v4, v6, end), text
    assert parse_lsp_address("garbage 10.0.0.2") == (None, 0)
    with collecting() as found_diags:
        extract_lsp_addresses("00:00:00:00:00:01 10.0.0.1 fe80::zz")
        extract_lsp_addresses("00:00:00:00:00:02 10.0.0.2")
    assert [d.message for d in found_diags] == [
        "invalid syntax '00:00:00:00:00:01 10.0.0.1 fe80::zz' in address"]
    addrs = ip_addresses("10.0.0.1/24 x")
    assert addrs is not None and [str(n.addr) for n in addrs.ipv4] == ["10.0.0.1"]


def test_ipam_configuration_errors() -> None:
    with collecting() as found:
        assert not switch_ipam({"subnet": "10.0.0.0/32"}, "S").has_ipv4
        assert not switch_ipam({"subnet": "10.0.0.0/24 "}, "S").has_ipv4
        info = switch_ipam({"subnet": "10.0.0.0/24",
                            "exclude_ips": "10.9.0.1 10.0.0.5..10.0.0.6 10.0.0.9.."}, "S")
        assert switch_ipam({"ipv6_prefix": "fd00::/ffff:ffff:ffff:ffff::1"}, "S") \
            .ipv6_prefix is not None  # 23.03 counts 64 leading one bits, mask or not
        switch_ipam({"subnet": "10.0.0.0/24"})  # no id: nothing reported
    # a range outside the subnet is an error, but the walk goes on
    assert {5, 6}.issubset({i + 1 for i in info.taken})
    assert [d.message for d in found] == [
        "S: bad 'subnet' 10.0.0.0/32", "S: bad 'subnet' 10.0.0.0/24 ",
        "S: bad exclude_ips (excluded addresses not in subnet)"]
    with collecting() as found:
        switch_ipam({"subnet": "10.0.0.0/24", "exclude_ips": "10.0.0.9.."}, "S")
        switch_ipam({"subnet": "10.0.0.0/24", "exclude_ips": "10.0.0.0/24"}, "S")
    assert [d.message for d in found] == [
        "S: bad exclude_ips (Syntax error at end of input expecting address range.)",
        "S: bad exclude_ips (Syntax error at `10.0.0.0/24' expecting address.)"]


def test_stopwatch_statistics_and_reset() -> None:
    sw = Stopwatches(("b", "a"))
    for t, ms in enumerate(range(1, 11)):
        sw.start("a", t * 100)
        sw.start("a", t * 100 + 1)  # a second start is ignored
        sw.stop("a", t * 100 + ms)
    sw.stop("b", 5)  # a stop without a start is ignored
    a = sw["a"]
    # The first sample never reaches the percentile's array, whose slot 0 stays 0.
    assert (a.n_samples, a.max, a.min, a.pctl.percentile) == (10, 10, 1, 10.0)
    assert a.short_term == pytest.approx(9.001953125)
    ok, text = sw.show("a")
    assert ok and text.splitlines()[1:5] == [
        "  Total samples: 10", "  Maximum: 10 msec", "  Minimum: 1 msec",
        "  95th percentile: 10.000000 msec"]
    assert sw.show("nosuch") == (False, "No such stopwatch")
    sw.reset("a")
    assert (a.n_samples, a.max, a.pctl.percentile, a.short_term) == (0, 0, 0.0, 0.0)
    sw.start("a", 0)
    sw.stop("a", 4)
    sw.start("a", 10)
    sw.stop("a", 16)
    # After a reset the percentile's markers go on from where they were (q[0] was 0).
    assert (a.n_samples, a.min, a.max, a.pctl.percentile) == (2, 4, 6, 0.0)


def test_memory_report_and_trimmer() -> None:
    m = MemoryReport(boot_ms=1000)
    assert m.run(10999, 5000) is None  # checks start 10 s after boot
    assert m.run(31000, 5000) == "5000 kB peak resident set size after 30.0 seconds"
    assert m.take_report() and not m.take_report()
    assert m.run(35000, 9000) is None  # the next check is 10 s later
    assert m.run(41000, 7400) is None  # grew less than half
    assert m.run(51000, 7500) == ("peak resident set size grew 50% in last 20.0 "
                                  "seconds, from 5000 kB to 7500 kB")
    t = MemoryTrimmer()
    t.record_activity(500)  # before NB_Global exists the timeout is 0
    assert t.can_run(500) == "Detected inactivity (last active 0 ms ago): trimming memory"
    assert t.can_run(600) is None and t.wake_at() is None
    assert t.set_timeout(10) == ("Invalid requested trim timeout: requested 10 ms, using "
                                 "1000 ms instead")
    assert t.set_timeout(30000) is None
    t.record_activity(1000)
    assert t.wake_at() == 31000 and t.can_run(30999) is None
    assert t.can_run(31000) == ("Detected inactivity (last active 30000 ms ago): trimming "
                                "memory")


def test_reconnect_lines_and_backoff(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reconnect")
    rc = ReconnectLog()
    waits = []
    rc.connecting("unix:sb")
    rc.connected()
    rc.disconnected(None)
    waits.append(rc.backoff_ms)
    for _ in range(5):
        rc.connecting("unix:sb")
        rc.failed("No such file or directory")
        waits.append(rc.backoff_ms)
    rc.connecting("unix:sb")
    rc.connected()
    rc.disconnected("Connection reset by peer")
    waits.append(rc.backoff_ms)
    assert waits == [1000, 2000, 4000, 8000, 8000, 8000, 1000]
    failed = "unix:sb: connection attempt failed (No such file or directory)"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "unix:sb: connecting..."), ("INFO", "unix:sb: connected"),
        ("INFO", "unix:sb: connection closed by peer"),
        ("INFO", "unix:sb: connecting..."), ("INFO", failed),
        ("INFO", "unix:sb: waiting 2 seconds before reconnect"),
        ("INFO", "unix:sb: connecting..."), ("INFO", failed),
        ("INFO", "unix:sb: waiting 4 seconds before reconnect"),
        ("INFO", "unix:sb: connecting..."), ("INFO", failed),
        ("INFO", "unix:sb: continuing to reconnect in the background but suppressing "
                 "further logging"),
        ("INFO", "unix:sb: connected"),  # attempts at the maximum backoff go unlogged
        ("WARNING", "unix:sb: connection dropped (Connection reset by peer)")]


def test_reconnect_several_remotes_and_forced(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="reconnect")
    rc = ReconnectLog(free_tries=3)  # one try each before backing off
    waits = []
    for name in ("a", "b", "c", "a"):
        rc.connecting(name)
        rc.failed("Connection refused")
        waits.append(rc.backoff_ms)
    rc.connecting("b")
    rc.connected()
    rc.force_reconnect()  # a follower in leader-only mode, say
    rc.disconnected(None, used=False)
    assert [*waits, rc.backoff_ms] == [0, 0, 1000, 2000, 4000]
    assert [r.getMessage() for r in caplog.records][-2:] == [
        "b: connection attempt timed out", "b: waiting 4 seconds before reconnect"]
    rc.connecting("c")
    rc.connected()
    rc.force_reconnect(monitoring=True, n_remotes=3)  # the leader stepped down
    rc.disconnected(None)
    assert rc.backoff_ms == 0  # retried at once, with a free try per remote
