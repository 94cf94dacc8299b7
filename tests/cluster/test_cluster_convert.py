"""Online schema conversion of a clustered database (`ovsdb-client convert` against the
leader): every member serves the new schema with the converted rows, in a cluster of
ours and in one that mixes the real server with ours."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cluster_basics import nbctl, switches

from procs import NB_SCHEMA, require, run
from pyovsdb.testing_cluster import OURS, REAL, Cluster

NB = "OVN_Northbound"


@pytest.mark.parametrize("kinds", [[OURS] * 3, [REAL, OURS, OURS], [OURS, REAL, REAL]],
                         ids=["ours", "real-first", "ours-first"])
def test_every_member_serves_the_converted_schema(make_cluster: Callable[..., Cluster],
                                                  tmp_path: Path, kinds: list[str]) -> None:
    require("ovn-nbctl", "ovsdb-client")
    import sys
    sys.path.insert(0, str(Path(__file__).parent.parent / "interop"))
    from old_schemas import old_nb_schema

    old = tmp_path / "old.ovsschema"
    old.write_text(json.dumps(old_nb_schema()))
    c = make_cluster(kinds, schema=str(old))
    leader = c.leader()
    nbctl(c.members[leader - 1].unix, "ls-add", "sw0")
    run(["ovsdb-client", "--timeout=30", "convert", c.members[leader - 1].unix, NB_SCHEMA])
    new = run(["ovsdb-tool", "schema-version", NB_SCHEMA]).stdout.strip()

    def versions() -> list[str]:
        return [run(["ovsdb-client", "--timeout=10", "get-schema-version", m.unix, NB],
                    check=False).stdout.strip() for m in c.members]
    deadline = time.monotonic() + 30
    while versions() != [new] * 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert versions() == [new] * 3
    c.wait_applied()
    for i in range(1, 4):
        assert switches(c, i) == ["sw0"], c.members[i - 1].kind
    nbctl(c.members[1].unix, "ls-add", "sw1")  # (a client of the new schema, any member)
    c.wait_applied()
    assert switches(c, 1) == ["sw0", "sw1"]
