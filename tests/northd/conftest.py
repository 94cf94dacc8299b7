"""Fixtures of northd's tests: in-memory NB and SB databases with their replicas (`nb`
comes with ovn-nbctl-like helpers, `northd.testing.Nb`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin_rewrite import pytest_addoption  # noqa: F401  (the --rewrite option)

from procs import ServerProcess, create_db
from pyovsdb.northd.build.inputs import BuildInput
from pyovsdb.northd.testing import LocalDb, Nb
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA

# The differential and trace tests share one run of every corpus script per northd (and
# a check that needs all of them): under pytest-xdist they go to one worker together.
_SHARED_RUNS = {"test_differential.py", "test_lflows_trace.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in _SHARED_RUNS:
            item.add_marker(pytest.mark.xdist_group("northd-corpus-runs"))


def _schema(path: str) -> dict[str, Any]:
    with open(path) as f:
        return dict(json.load(f))


_NB = _schema(NB_SCHEMA)
_SB = _schema(SB_SCHEMA)


@pytest.fixture
def nb() -> Nb:
    return Nb(LocalDb(_NB))


@pytest.fixture
def sb() -> LocalDb:
    return LocalDb(_SB)


@pytest.fixture
def whole_rebuilds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[frozenset[str]]]:
    """The datapaths each handler of the `lflow` node built again whole
    (`lflows.rebuild`), in order."""
    from pyovsdb.northd.nodes import lflow

    built: list[frozenset[str]] = []
    real = lflow.rebuild

    def recording(table: Any, ctx: Any, datapaths: frozenset[str]) -> Any:
        built.append(datapaths)
        return real(table, ctx, datapaths)

    monkeypatch.setattr(lflow, "rebuild", recording)
    yield built


@pytest.fixture
def inp(nb: Nb, sb: LocalDb) -> BuildInput:
    """The builders' input over `nb` and `sb` (live: it sees later transactions)."""
    return BuildInput(nb=nb.db.tables, sb=sb.tables)


@pytest.fixture
def our_servers(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Our NB and SB servers on unix sockets in `tmp_path` (stopped by pid after)."""
    nb = ServerProcess("ours", tmp_path, [create_db("ours", tmp_path / "nb.db", NB_SCHEMA)],
                       name="nb")
    sb = ServerProcess("ours", tmp_path, [create_db("ours", tmp_path / "sb.db", SB_SCHEMA)],
                       name="sb")
    with nb, sb:
        yield nb.unix, sb.unix
