"""The control commands ovn-northd 23.03 has besides its own (`debug/...`,
`coverage/...`, `stopwatch/...`, the vlog rate limits), asked with the real
`ovn-appctl` of `pyovsdb northd` and of the real ovn-northd side by side, each on its
own real NB and SB servers; the memory trimmer's line at startup; and the reconnect
lines once the SB server is gone.

Where values differ by nature (counters, timings) the structure is compared: the
commands and their usage, the names and order of the stopwatches, every line in the
real one's format, and `coverage/show`'s hash recomputed from the real one's own
counters by our implementation.
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path

import pytest
from test_daemon_procs import NorthdProc, plane, poll

from procs import require
from pyovsdb.util.coverage import Coverage

pytestmark = pytest.mark.interop

HEADER = re.compile(r"Event coverage, avg rate over last: 5 seconds, last minute, last hour,"
                    r"  hash=([0-9a-f]{8}):")
COUNTER = re.compile(r"(\S+) +(\d+\.\d)/sec +(\d+\.\d{3})/sec +(\d+\.\d{4})/sec   total: (\d+)")
NEVER = re.compile(r"(\d+) events never hit")
STOPWATCH = re.compile(
    r"Statistics for '([^']+)'\n  Total samples: (\d+)\n  Maximum: (\d+) msec\n"
    r"  Minimum: (\d+) msec\n  95th percentile: \d+\.\d{6} msec\n"
    r"  Short term average: \d+\.\d{6} msec\n  Long term average: \d+\.\d{6} msec\n")
TRIM = "memory_trim|INFO|Detected inactivity (last active 0 ms ago): trimming memory"


def _coverage(text: str) -> tuple[str, dict[str, int], int]:
    """(hash, totals by name in order, never hit) of `coverage/show`, every line
    checked against the format, which is then applied again to the values read."""
    lines = text.splitlines()
    head, never = HEADER.fullmatch(lines[0]), NEVER.fullmatch(lines[-1])
    assert head is not None and never is not None, text
    totals = {}
    for line in lines[1:-1]:
        m = COUNTER.fullmatch(line)
        assert m is not None, line
        name, rate, minute, hour, total = m.groups()
        assert line == (f"{name:<24} {float(rate):5.1f}/sec {float(minute):9.3f}/sec "
                        f"{float(hour):13.4f}/sec   total: {total}")
        totals[name] = int(total)
    return head.group(1), totals, int(never.group(1))


def _commands(text: str) -> dict[str, str]:
    """`list-commands`: usage by command."""
    out = {}
    for line in text.splitlines()[1:]:
        name, _, usage = line.strip().partition(" ")
        out[name] = usage.strip()
    return out


def test_control_commands_as_the_real_northd(tmp_path: Path) -> None:
    require("ovn-northd", "ovsdb-server")
    with ExitStack() as stack:
        northds = {}
        for kind in ("real", "ours"):
            p = stack.enter_context(plane("real", tmp_path / kind))
            if kind == "real":
                n = NorthdProc(tmp_path / kind, p.nb.unix, p.sb.unix, command=["ovn-northd"])
                p.northds.append(n)
                n.start()
            else:
                n = p.northd()
            northds[kind] = (p, n)
        for p, n in northds.values():
            poll("active", lambda n=n: n.status() == "Status: active",  # type: ignore[misc]
                 logs=n.logs)
            p.nbctl("--wait=sb", "ls-add", "sw0")
        real, ours = northds["real"][1], northds["ours"][1]

        # Every command of the real one, with its usage (ours has a few more).
        real_cmds = _commands(real.appctl("list-commands").stdout)
        ours_cmds = _commands(ours.appctl("list-commands").stdout)
        assert {k: ours_cmds.get(k) for k in real_cmds} == real_cmds

        for args in (["debug/chassis-features-list"], ["coverage/read-counter", "nosuch"],
                     ["stopwatch/show", "nosuch"], ["stopwatch/reset", "nosuch"],
                     ["vlog/disable-rate-limit", "nosuch"]):
            r, o = (n.appctl(*args, check=False) for n in (real, ours))
            assert (o.returncode, o.stdout, o.stderr.replace(ours.ctl, "CTL")) == \
                (r.returncode, r.stdout, r.stderr.replace(real.ctl, "CTL")), args

        # coverage/show: our hash function over the real one's counters gives its hash.
        real_hash, real_totals, real_never = _coverage(real.appctl("coverage/show").stdout)
        cov = Coverage((*real_totals, *(f"never{i}" for i in range(real_never))))
        for name, total in real_totals.items():
            cov.inc(name, total)
        assert f"{cov.hash():08x}" == real_hash
        _, ours_totals, _ = _coverage(ours.appctl("coverage/show").stdout)
        assert ours_totals["txn_success"] >= 1 and ours_totals["pstream_open"] == 1
        for name in (*ours_totals, "txn_error", "txn_try_again"):  # names the real one has
            assert real.appctl("coverage/read-counter", name).stdout.strip().isdigit()
        assert ours.appctl("coverage/read-counter", "txn_success").stdout == \
            f"{ours_totals['txn_success']}\n"

        # stopwatch/show: the same stopwatches in the same order, each in its format.
        shows = {k: n.appctl("stopwatch/show").stdout for k, n in (("real", real),
                                                                   ("ours", ours))}
        for text in shows.values():
            assert "".join(m.group() for m in STOPWATCH.finditer(text)) == text
        names = {k: [m.group(1) for m in STOPWATCH.finditer(t)] for k, t in shows.items()}
        assert names["ours"] == names["real"] and len(names["ours"]) == 12
        assert int(STOPWATCH.search(ours.appctl("stopwatch/show", "ovnnb_db_run").stdout)
                   .group(2)) >= 1  # type: ignore[union-attr]
        for n in (real, ours):
            n.appctl("stopwatch/reset", "ovnnb_db_run")
            poll("the reset", lambda n=n: "Total samples: 0\n" in  # type: ignore[misc]
                 n.appctl("stopwatch/show", "ovnnb_db_run").stdout)

        # Rate limits: disabled modules are marked in vlog/list, then enabled again.
        lists = {}
        for kind, n in (("real", real), ("ours", ours)):
            n.appctl("vlog/disable-rate-limit", "northd", "LB")
            lists[kind] = [line for line in n.appctl("vlog/list").stdout.splitlines()
                           if "rate limiting disabled" in line]
            n.appctl("vlog/enable-rate-limit")
            assert "rate limiting disabled" not in n.appctl("vlog/list").stdout
        assert lists["ours"] == lists["real"] and len(lists["ours"]) == 2

        for n in (real, ours):
            assert f"|{TRIM}\n" in n.log(), n.logs()

        # The SB server goes away: the reconnect lines, as lib/reconnect.c words them.
        for p, _ in northds.values():
            p.sb.stop()
        for _, n in northds.values():
            poll("the backoff", lambda n=n: "waiting 2 seconds" in n.log(),  # type: ignore[misc]
                 logs=n.logs)
        reconnects = {}
        for kind, (p, n) in northds.items():
            lines = [line.split("|", 2)[2].replace(p.sb.unix, "SB")
                     for line in n.log().splitlines()
                     if "|reconnect|" in line and p.sb.unix in line]
            assert lines[:2] == ["reconnect|INFO|SB: connecting...",
                                 "reconnect|INFO|SB: connected"]
            drop = next(i for i, line in enumerate(lines) if "dropped" in line
                        or "closed by peer" in line)
            reconnects[kind] = lines[drop + 1:drop + 4]
        assert reconnects["ours"] == reconnects["real"] == [
            "reconnect|INFO|SB: connecting...",
            "reconnect|INFO|SB: connection attempt failed (No such file or directory)",
            "reconnect|INFO|SB: waiting 2 seconds before reconnect"]
