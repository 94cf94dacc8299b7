"""Shared fixtures: servers (ours and the real ovsdb-server) in per-test directories;
and the end-of-run counts of the conformance and robustness suites, also under
pytest-xdist (`-n 2`), where each worker hands its counts to the controller that
prints them, and all workers draw the random conformance runs from one seed."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conformance_counts
import robust_counts
from procs import NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, require
from pyovsdb.util import vlog


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the workers inherit it
        os.environ.setdefault(conformance_counts.SEED_VARIABLE,
                              str(conformance_counts.random_seed()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # an xdist worker: its counts go to the controller
        out["counts"] = {"conformance": dict(conformance_counts.STATS),
                         "robust": dataclasses.asdict(robust_counts.COUNTS)}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    counts = getattr(node, "workeroutput", {}).get("counts")
    if not counts:
        return
    stats = dict(counts["conformance"])
    size = stats.pop("corpus size", 0)  # every worker loads the whole corpus
    conformance_counts.STATS.update(stats)
    conformance_counts.STATS["corpus size"] = max(conformance_counts.STATS["corpus size"],
                                                  size)
    mine = robust_counts.COUNTS
    for name, value in counts["robust"].items():
        if isinstance(value, dict):
            for target, n in value.items():
                mine.fuzzed(target, n)
        else:
            setattr(mine, name, getattr(mine, name) + value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    conformance_counts.summary(terminalreporter)
    robust_counts.summary(terminalreporter)


@pytest.fixture
def own_vlog() -> Iterator[None]:
    """For tests that run our commands in this process: they set up the log as in a
    process of their own (a handler on the root logger, the console at info); it is put
    back as it was for the tests that follow."""
    root = logging.getLogger()
    level, saved = root.level, vlog._current
    if saved is not None:
        root.removeHandler(saved._handler)
    vlog._current = None
    try:
        yield
    finally:
        if vlog._current is not None:
            root.removeHandler(vlog._current._handler)
        root.setLevel(level)
        vlog._current = saved
        if saved is not None:
            root.addHandler(saved._handler)


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
