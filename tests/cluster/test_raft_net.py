"""The network between members (`server/raft_net.py`) over real unix sockets: a paused
member (`cluster/failure-test stop-raft-rpc`) reads nothing, on the connections it
has and on new ones, and handles what waited once it reads again, in order, as the
real server does with the sessions it leaves unrun."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pyovsdb.raft import rpc
from pyovsdb.server.raft_net import RaftNet

CID = "3b1663e8-c7de-402e-a352-14435c3f5cf9"
SIDS = ["9c1d481b-a1cd-417d-9623-d8b12329c9f0", "4a3269d8-410f-4ecc-a09a-7d107f02a99c",
        "67b9eaea-5507-473a-a5f6-2e1dd12f39b5"]


def test_a_paused_member_reads_what_waited_once_resumed(tmp_path: Path) -> None:
    async def main() -> None:
        got: list[tuple[str, str]] = []
        nets = []
        for i, sid in enumerate(SIDS):
            net = RaftNet(sid, f"unix:{tmp_path / f's{i}.raft'}", CID,
                          lambda m, i=i: got.append((SIDS.index(m.src), m.address)))
            await net.listen()
            nets.append(net)
        a, b, c = nets

        def hello(src: RaftNet, text: str) -> bool:
            return src.send(rpc.HelloRequest(src=src.sid, dst=a.sid, cluster=CID,
                                             address=text))

        async def settle() -> None:
            await asyncio.sleep(0.2)

        try:
            b.set_peers({a.sid: a.local_address})
            for _ in range(200):
                if hello(b, "b0"):
                    break
                await asyncio.sleep(0.01)
            await settle()
            assert got == [(1, "b0")]
            a.set_paused(True)
            assert hello(b, "b1") and hello(b, "b2")
            c.set_peers({a.sid: a.local_address})     # a new connection meanwhile
            for _ in range(200):
                if hello(c, "c1"):
                    break
                await asyncio.sleep(0.01)
            await settle()
            assert got == [(1, "b0")]
            a.set_paused(False)
            await settle()
            assert sorted(got) == [(1, "b0"), (1, "b1"), (1, "b2"), (2, "c1")]
            assert [x for x in got if x[0] == 1] == [(1, "b0"), (1, "b1"), (1, "b2")]
        finally:
            for net in nets:
                net.close()

    asyncio.run(main())
