"""Fixtures for the interop tests: servers of either kind for every schema, and pairs
(ours + the real one) for tests that run the same steps on both and compare."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.register_assert_rewrite("interop_helpers")

from procs import SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, require  # noqa: E402


def start_server(kind: str, tmp_path: Path, schema: str, name: str) -> Iterator[ServerProcess]:
    """A server of `kind` on a database freshly created by the matching tool."""
    if kind == "real":
        require("ovsdb-server", "ovsdb-tool")
    db = create_db(kind, tmp_path / f"{name}.db", schema)
    srv = ServerProcess(kind, tmp_path, [db], name=name, tcp=True)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def any_sb_server(kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """The Southbound database on our server, then on the real one."""
    yield from start_server(kind, tmp_path, SB_SCHEMA, "sb")


@pytest.fixture
def any_vswitch_server(kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """The Open_vSwitch database on our server, then on the real one."""
    yield from start_server(kind, tmp_path, VSWITCH_SCHEMA, "conf")


@pytest.fixture
def server_pair(tmp_path: Path) -> Iterator[Callable[[str], dict[str, ServerProcess]]]:
    """`server_pair(schema)` -> {"ours": ..., "real": ...}, each on an empty database
    of that schema in its own directory; both are stopped after the test."""
    require("ovsdb-server", "ovsdb-tool")
    started: list[ServerProcess] = []

    def make(schema: str) -> dict[str, ServerProcess]:
        pair = {}
        for kind in ("ours", "real"):
            d = tmp_path / f"{kind}{len(started)}"
            d.mkdir()
            db = create_db(kind, d / "db.db", schema)
            srv = ServerProcess(kind, d, [db], name="db", tcp=True)
            started.append(srv)
            pair[kind] = srv.start()
        return pair

    try:
        yield make
    finally:
        for srv in started:
            srv.stop()
