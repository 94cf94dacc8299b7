"""Shared fixtures: servers (ours and the real ovsdb-server) in per-test directories."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from procs import NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, require


@pytest.fixture(params=["ours", "real"])
def kind(request: pytest.FixtureRequest) -> str:
    """Run a test against our server and against the real one."""
    if request.param == "real":
        require("ovsdb-server", "ovsdb-tool")
    return str(request.param)


def _server(kind: str, tmp_path: Path, schema: str, name: str) -> Iterator[ServerProcess]:
    if kind == "real":
        require("ovsdb-server", "ovsdb-tool")
    db = create_db("real" if kind == "real" else "ours", tmp_path / f"{name}.db", schema)
    srv = ServerProcess(kind, tmp_path, [db], name=name, tcp=True)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def nb_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """Our server with an empty OVN Northbound database."""
    yield from _server("ours", tmp_path, NB_SCHEMA, "nb")


@pytest.fixture
def sb_server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _server("ours", tmp_path, SB_SCHEMA, "sb")


@pytest.fixture
def vswitch_server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _server("ours", tmp_path, VSWITCH_SCHEMA, "conf")


@pytest.fixture
def any_nb_server(kind: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """The Northbound database on our server, then on the real one."""
    yield from _server(kind, tmp_path, NB_SCHEMA, "nb")
