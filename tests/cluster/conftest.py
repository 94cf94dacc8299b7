"""Fixtures for the cluster tests: `make_cluster(kinds, ...)` builds clusters of real
processes in the test's directory and stops every one of them after the test, passed
or failed. All tests here are marked interop (they drive the real tools)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest.register_assert_rewrite("pyovsdb.testing_cluster")

from procs import NB_SCHEMA, require  # noqa: E402
from pyovsdb.testing_cluster import Cluster  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if Path(str(item.fspath)).resolve().parent == here:
            item.add_marker(pytest.mark.interop)


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """`make_cluster(kinds, schema=NB, db_name="OVN_Northbound", start=True, ...)`:
    created with the tools of each member's kind, started, and formed."""
    require("ovsdb-tool", "ovsdb-server", "ovs-appctl")
    made: list[Cluster] = []

    def make(kinds: list[str], schema: str = NB_SCHEMA, db_name: str = "OVN_Northbound",
             start: bool = True, sub: str | None = None,
             election_timer: int | None = None, **kw: Any) -> Cluster:
        d = tmp_path / (sub or f"c{len(made)}")
        d.mkdir()
        c = Cluster(d, schema, db_name, kinds, **kw)
        made.append(c)
        c.create(election_timer)
        if start:
            c.start()
            c.wait_formed()
        return c

    try:
        yield make
    finally:
        for c in made:
            c.close()
