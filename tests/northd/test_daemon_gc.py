"""The daemon in-process, with the real graph, on our NB and SB servers: what a run
that recomputes builds is frozen out of the cyclic collector's sight (a full
collection over it at scale lands seconds in the next change), and what a run of
handlers alone builds is not."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from pyovsdb.idl import Idl
from pyovsdb.northd.daemon import Config, Northd


async def _freezes(nb_remote: str, sb_remote: str) -> tuple[int, int]:
    """The objects frozen by the first (recomputing) run, and by a VIF's run after."""
    northd = Northd(Config([nb_remote], [sb_remote]))
    writer = Idl(nb_remote, "OVN_Northbound",
                 tables={"NB_Global": None, "Logical_Switch": None,
                         "Logical_Switch_Port": None})
    gc.unfreeze()
    task = asyncio.get_running_loop().create_task(northd.serve())
    try:
        await writer.start()

        def switch(txn: Any) -> None:
            txn.insert("NB_Global")
            port = txn.insert("Logical_Switch_Port", name="vm1",
                              addresses=["00:00:00:00:00:01 10.0.0.1"])
            txn.insert("Logical_Switch", name="sw0", ports=[port])

        assert (await writer.run(switch)).ok
        await _until(lambda: northd.driver.engine is not None
                     and northd.driver.engine.has_run())
        await asyncio.sleep(0.5)  # (the echo of its commit taken in)
        first = gc.get_freeze_count()
        gc.unfreeze()
        runs = _runs(northd)

        def vif(txn: Any) -> None:
            sw = next(iter(writer["Logical_Switch"].rows.values()))
            port = txn.insert("Logical_Switch_Port", name="vm2",
                              addresses=["00:00:00:00:00:02 10.0.0.2"])
            txn.update(sw, ports=[*sw.ports, port])

        assert (await writer.run(vif)).ok
        await _until(lambda: _runs(northd) > runs)
        await asyncio.sleep(0.5)
        return first, gc.get_freeze_count()
    finally:
        gc.unfreeze()
        await writer.close()
        northd.request_exit()
        await asyncio.wait_for(task, 10)


def _runs(northd: Northd) -> int:
    stats = northd.driver.show_stats("northd")
    return sum(int(line.split(":")[1]) for line in stats.splitlines()
               if line.strip().startswith(("- recompute", "- compute")))


async def _until(cond: Any, timeout: float = 30) -> None:
    async def wait() -> None:
        while not cond():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(wait(), timeout)


def test_a_recompute_freezes_what_it_built_and_a_handler_run_does_not(
        our_servers: tuple[str, str]) -> None:
    first, then = asyncio.run(asyncio.wait_for(_freezes(*our_servers), 60))
    assert first > 10_000  # the graph's data, and everything before it
    assert then == 0
