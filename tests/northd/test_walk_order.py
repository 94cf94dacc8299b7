"""A switch's router ports in the order a build walks its port hash table
(`build.walk.PortWalk.sort_ports`), against the order `build_ports` gives, whichever
ports have bindings yet: many routers on one switch, so that ports share buckets."""

from __future__ import annotations

import random

import pytest

from pyovsdb.northd.build.core import build_core
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.build.walk import PortWalk
from pyovsdb.northd.desired import DesiredDb
from pyovsdb.northd.testing import LocalDb, Nb, run_core


def _core(nb: Nb, sb: LocalDb):  # type: ignore[no-untyped-def]
    return build_core(BuildInput(nb=nb.db.tables, sb=sb.tables), DesiredDb(), DesiredDb())


@pytest.mark.parametrize("seed", range(12))
def test_walk_sorted_matches_a_build(nb: Nb, sb: LocalDb, seed: int) -> None:
    rng = random.Random(seed)
    nb.ls_add("public")
    nb.ls_add("other")
    for i in range(rng.randrange(20, 60)):
        nb.lsp_add("other", f"vm{i}")
    bound_first = rng.randrange(5, 40)
    for i in range(bound_first):
        nb.lr_add(f"r{i}")
        nb.connect("public", f"r{i}", f"r{i}-pub", f"00:00:00:00:{i // 256:02x}:{i % 256:02x}",
                   f"100.64.{i // 256}.{i % 256 + 1}/16")
    run_core(nb.db, sb)  # (these have bindings, the rest not yet)
    for i in range(bound_first, bound_first + rng.randrange(1, 30)):
        nb.lr_add(f"r{i}")
        nb.connect("public", f"r{i}", f"r{i}-pub", f"00:00:00:00:{i // 256:02x}:{i % 256:02x}",
                   f"100.64.{i // 256}.{i % 256 + 1}/16")
    core = _core(nb, sb)
    public = nb.uuid("Logical_Switch", "public")
    built = core.ports.router_ports[public]
    mine = list(built)
    rng.shuffle(mine)
    PortWalk(sb.tables, core.ports, core.datapaths).sort_ports(mine)
    assert [p.name for p in mine] == [p.name for p in built]
