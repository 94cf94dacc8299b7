"""The daemon's main loop in-process, on our NB and SB servers, with an engine that
takes a fixed time per run (a stand-in graph): `northd-backoff-interval-ms` spaces
the runs of a stream of NB changes as seed 000 says, none without it, and the seq delay
coalesces a burst into fewer runs."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from typing import Any

from pyovsdb.idl import Idl
from pyovsdb.idl.replica import ReplicaTable
from pyovsdb.idl.row import IdlRow
from pyovsdb.northd.daemon import Config, Northd
from pyovsdb.northd.driver import Driver, RunOutput
from pyovsdb.ovsdb.changeset import Changeset

RUN_S = 0.04


class SlowDriver(Driver):
    """Runs that take RUN_S and write nothing; the start of each, and what it saw."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.lsps: list[int] = []

    def prepare(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable]) -> None:
        pass

    def run(self, nb: Mapping[str, ReplicaTable], sb: Mapping[str, ReplicaTable],
            nb_changes: Changeset[IdlRow], sb_changes: Changeset[IdlRow], *,
            recompute: bool, now_ms: int, standby: bool = False) -> RunOutput:
        self.starts.append(time.monotonic())
        self.lsps.append(len(nb["Logical_Switch"].rows))
        time.sleep(RUN_S)  # the engine blocks the loop, as a real run does
        return RunOutput([], [], None, False, True)


async def _stream(nb_remote: str, sb_remote: str, *, backoff_ms: int, seq_delay_ms: float,
                  n: int, every_s: float) -> SlowDriver:
    """Start a northd, set the backoff, then make `n` NB changes `every_s` apart."""
    graph = SlowDriver()
    northd = Northd(Config([nb_remote], [sb_remote], seq_delay_ms=seq_delay_ms),
                    driver=graph)
    task = asyncio.get_running_loop().create_task(northd.serve())
    writer = Idl(nb_remote, "OVN_Northbound", tables={"NB_Global": None,
                                                      "Logical_Switch": ["name"]})
    await writer.start()
    try:
        def options(txn: Any) -> None:
            rows = list(writer["NB_Global"].rows.values())
            values = {"options": {"northd-backoff-interval-ms": str(backoff_ms)}}
            if rows:
                txn.update(rows[0], **values)
            else:
                txn.insert("NB_Global", **values)

        assert (await writer.run(options)).ok
        while not graph.starts or time.monotonic() - graph.starts[-1] < 0.3:
            await asyncio.sleep(0.05)  # settled: the backoff is read after a run
        base = len(writer["Logical_Switch"].rows)
        graph.starts.clear()
        graph.lsps.clear()
        for i in range(n):
            def add(txn: Any, i: int = i) -> None:
                txn.insert("Logical_Switch", name=f"sw{i}")

            assert (await writer.run(add)).ok
            await asyncio.sleep(every_s)
        while graph.lsps[-1:] != [base + n]:
            await asyncio.sleep(0.05)
    finally:
        await writer.close()
        northd.request_exit()
        await asyncio.wait_for(task, 10)
    return graph


def _gaps(starts: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(starts)]


def test_backoff_spaces_runs_of_a_change_stream(our_servers: tuple[str, str]) -> None:
    nb, sb = our_servers
    plain = asyncio.run(asyncio.wait_for(
        _stream(nb, sb, backoff_ms=0, seq_delay_ms=0, n=30, every_s=0.005), 60))
    backed = asyncio.run(asyncio.wait_for(
        _stream(nb, sb, backoff_ms=200, seq_delay_ms=0, n=30, every_s=0.005), 60))
    # With the backoff, a run follows the previous one by its length plus a wait as long
    # as it (below the 200 ms cap); without it, runs follow back to back.
    assert len(backed.starts) >= 2 and len(plain.starts) >= 2
    assert min(_gaps(backed.starts)) >= 2 * RUN_S * 0.95
    assert min(_gaps(plain.starts)) < min(_gaps(backed.starts))
    assert len(backed.starts) <= len(plain.starts)


def test_seq_delay_coalesces_a_burst(our_servers: tuple[str, str]) -> None:
    nb, sb = our_servers
    delayed = asyncio.run(asyncio.wait_for(
        _stream(nb, sb, backoff_ms=0, seq_delay_ms=300, n=10, every_s=0.01), 60))
    # Ten changes within ~0.2 s, each waking the loop no sooner than 300 ms after it
    # began waiting: one run (two at most, if one began just before the burst ended).
    assert len(delayed.starts) <= 2


async def _probe_intervals(nb_remote: str, sb_remote: str, values: list[str | None]
                           ) -> list[tuple[float, float]]:
    """The NB and SB IDLs' probe intervals (s) after a run with each value of
    `NB_Global.options:northd_probe_interval` (None: unset)."""
    graph = SlowDriver()
    northd = Northd(Config([nb_remote], [sb_remote]), driver=graph)
    task = asyncio.get_running_loop().create_task(northd.serve())
    writer = Idl(nb_remote, "OVN_Northbound", tables={"NB_Global": None})
    await writer.start()
    out = []
    try:
        for value in values:
            def options(txn: Any, value: str | None = value) -> None:
                rows = list(writer["NB_Global"].rows.values())
                opts = {} if value is None else {"northd_probe_interval": value}
                if rows:
                    txn.update(rows[0], options=opts)
                else:
                    txn.insert("NB_Global", options=opts)

            runs = len(graph.starts)
            assert (await writer.run(options)).ok
            while len(graph.starts) == runs:
                await asyncio.sleep(0.02)
            await asyncio.sleep(RUN_S + 0.1)
            out.append((northd.nb.probe_interval, northd.sb.probe_interval))
    finally:
        await writer.close()
        northd.request_exit()
        await asyncio.wait_for(task, 10)
    return out


def test_northd_probe_interval(our_servers: tuple[str, str]) -> None:
    nb, sb = our_servers
    got = asyncio.run(asyncio.wait_for(
        _probe_intervals(nb, sb, ["2000", "500", "0", None, " 3000", "3000 "]), 60))
    # ms; below a second is a second; 0 off; unset: off on unix sockets (5 s on TCP);
    # read as smap_get_int reads it (blanks may lead, nothing may follow: the default).
    assert got == [(2.0, 2.0), (1.0, 1.0), (0.0, 0.0), (0.0, 0.0), (3.0, 3.0), (0.0, 0.0)]
