"""Relay databases (`relay:DB:REMOTE`), side by side with the real ovsdb-server 3.1: a
relay of ours in front of the real server and in front of ours, a real relay in front
of ours, and a chain of two relays. Clients use the relay as the real tools do
(`--no-leader-only`: a relay is never a leader); what they write reaches the upstream,
and what others write upstream reaches them."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop_helpers import strip_uuids, wait_until

from procs import NB_SCHEMA, ServerProcess, create_db, require, run

pytestmark = pytest.mark.interop

NB = "OVN_Northbound"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl")


@pytest.fixture
def started() -> Iterator[list[ServerProcess]]:
    made: list[ServerProcess] = []
    yield made
    for srv in made:
        srv.stop()


def _upstream(kind: str, d: Path, made: list[ServerProcess]) -> ServerProcess:
    d.mkdir(parents=True, exist_ok=True)
    srv = ServerProcess(kind, d, [create_db(kind, d / "nb.db", NB_SCHEMA)], name="nb")
    made.append(srv)
    srv.start()
    _nbctl(srv, "init")
    return srv


def _relay(kind: str, d: Path, made: list[ServerProcess], upstream: str) -> ServerProcess:
    d.mkdir(parents=True, exist_ok=True)
    srv = ServerProcess(kind, d, [f"relay:{NB}:{upstream}"], name="relay")
    made.append(srv)
    srv.start()
    assert wait_until(lambda: "true" in _server_row(srv)), _server_row(srv)
    return srv


def _nbctl(srv: ServerProcess, *args: str, check: bool = True) -> str:
    p = run(["ovn-nbctl", "--timeout=20", "--no-leader-only", f"--db={srv.unix}", *args],
            check=check)
    return p.stdout + p.stderr


def _dump(srv: ServerProcess) -> str:
    return run(["ovsdb-client", "--timeout=20", "dump", srv.unix, NB]).stdout


def _server_row(srv: ServerProcess) -> str:
    """(the real relay disconnects clients that are not db-change-aware as it connects
    upstream, "database ... connected to storage": a read may fail then, and is retried)"""
    return run(["ovsdb-client", "--timeout=20", "dump", srv.unix, "_Server", "Database",
                "name", "model", "connected", "leader"], check=False).stdout


@pytest.mark.parametrize(("upstream_kind", "relay_kind"),
                         [("real", "ours"), ("ours", "ours"), ("ours", "real")],
                         ids=["ours-before-real", "ours-before-ours", "real-before-ours"])
def test_a_relay_serves_and_forwards(tmp_path: Path, started: list[ServerProcess],
                                     upstream_kind: str, relay_kind: str) -> None:
    up = _upstream(upstream_kind, tmp_path / "up", started)
    _nbctl(up, "ls-add", "sw0")
    relay = _relay(relay_kind, tmp_path / "relay", started, up.unix)
    assert wait_until(lambda: _dump(relay) == _dump(up)), _dump(relay)
    # written through the relay: reaches the upstream; written upstream: reaches the relay
    _nbctl(relay, "ls-add", "sw1", "--", "lsp-add", "sw1", "p1")
    assert "sw1" in _nbctl(up, "ls-list")
    _nbctl(up, "lsp-add", "sw0", "p0", "--", "set", "Logical_Switch", "sw1",
           "external_ids:x=y")
    assert wait_until(lambda: _dump(relay) == _dump(up)), _dump(relay)
    # a failed transaction's error comes back as the upstream gave it
    assert "already exists" in _nbctl(relay, "ls-add", "sw1", check=False)
    rows = strip_uuids(_server_row(relay))
    assert "true      false  relay      OVN_Northbound" in rows, rows


def test_a_chain_of_relays(tmp_path: Path, started: list[ServerProcess]) -> None:
    """Ours, in front of a real relay, in front of ours."""
    up = _upstream("ours", tmp_path / "up", started)
    first = _relay("real", tmp_path / "r1", started, up.unix)
    second = _relay("ours", tmp_path / "r2", started, first.unix)
    _nbctl(second, "ls-add", "far")
    assert "far" in _nbctl(up, "ls-list")
    _nbctl(up, "ls-add", "near")
    assert wait_until(lambda: _dump(second) == _dump(up)), _dump(second)


@pytest.mark.parametrize("relay_kind", ["ours", "real"])
def test_a_transaction_waits_while_the_upstream_is_away(
        tmp_path: Path, started: list[ServerProcess], relay_kind: str) -> None:
    """The upstream stops: the relay still says it is connected (a grace period against
    flapping), a transaction sent to it waits, and is forwarded when the upstream is
    back."""
    up = _upstream("ours", tmp_path / "up", started)
    relay = _relay(relay_kind, tmp_path / "relay", started, up.unix)
    up.stop()
    assert "true" in _server_row(relay).split("OVN_Northbound")[0].splitlines()[-1]
    txn = subprocess.Popen(
        ["ovsdb-client", "--timeout=30", "transact", relay.unix,
         '["OVN_Northbound",{"op":"insert","table":"Logical_Switch","row":{"name":"late"}}]'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        assert txn.poll() is None  # (waiting)
        up.start()
        out, err = txn.communicate(timeout=30)
    finally:
        if txn.poll() is None:
            txn.kill()
            txn.wait()
    assert txn.returncode == 0 and '"uuid"' in out, (out, err)
    assert "late" in _nbctl(up, "ls-list")


@pytest.mark.parametrize("relay_kind", ["ours", "real"])
def test_a_relay_follows_its_sources_schema_change(
        tmp_path: Path, started: list[ServerProcess], relay_kind: str) -> None:
    """The upstream's database converted to a newer schema (`ovsdb-client convert`): the
    relay serves the new schema, with the converted rows, and forwards writes that
    need it."""
    from old_schemas import old_nb_schema

    d = tmp_path / "up"
    d.mkdir()
    old = d / "old.ovsschema"
    old.write_text(json.dumps(old_nb_schema()))
    up = ServerProcess("ours", d, [create_db("ours", d / "nb.db", str(old))], name="nb")
    started.append(up)
    up.start()
    _nbctl(up, "init")
    _nbctl(up, "ls-add", "sw0")
    relay = _relay(relay_kind, tmp_path / "relay", started, up.unix)
    run(["ovsdb-client", "--timeout=20", "convert", up.unix, NB_SCHEMA])

    def version() -> str:
        return run(["ovsdb-client", "--timeout=20", "get-schema-version", relay.unix, NB],
                   check=False).stdout.strip()
    new = run(["ovsdb-tool", "schema-version", NB_SCHEMA]).stdout.strip()
    assert wait_until(lambda: version() == new, timeout=30), version()
    assert wait_until(lambda: _dump(relay) == _dump(up)), _dump(relay)
    _nbctl(relay, "ls-add", "sw1")  # (ovn-nbctl of the new schema: Copp columns and all)
    assert "sw1" in _nbctl(up, "ls-list")
