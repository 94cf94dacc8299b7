"""The real upgrade paths of ovs-ctl and ovn-ctl (ovs-lib's `upgrade_db` for a
standalone file, `upgrade_cluster` for a clustered database behind its server) run
with our `ovsdb-tool` and `ovsdb-client` in place of the real ones, from a database of
an older schema: what they print and the database they leave must be those of the
same run with the real tools."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import dump_modulo_uuids

from old_schemas import DB, OLD_NB_TXNS, old_nb_schema
from procs import NB_SCHEMA, ServerProcess, require

pytestmark = pytest.mark.interop

OVS_LIB = "/usr/share/openvswitch/scripts/ovs-lib"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-tool", "ovsdb-client", "ovsdb-server", "bash")
    if not os.path.exists(OVS_LIB):
        require("ovs-lib")


def env_for(kind: str, d: Path) -> dict[str, str]:
    """The environment of a run: for ours, `ovsdb-tool` and `ovsdb-client` on PATH
    are our commands."""
    env = {**os.environ, "OVS_RUNDIR": str(d), "OVS_LOGDIR": str(d), "OVS_DBDIR": str(d)}
    if kind == "ours":
        bindir = d / "bin"
        bindir.mkdir()
        for name, command in (("ovsdb-tool", "tool"), ("ovsdb-client", "client")):
            (bindir / name).write_text(
                f'#!/bin/sh\nexec {sys.executable} -m pyovsdb {command} "$@"\n')
            (bindir / name).chmod(0o755)
        env["PATH"] = f"{bindir}:{env['PATH']}"
    return env


def ovs_lib(call: str, env: dict[str, str], d: Path) -> tuple[int, str, str]:
    """Run `call` in bash with ovs-lib's functions; what it printed, with the run's
    directory and the log lines' times masked."""
    p = subprocess.run(["bash", "-c", f". {OVS_LIB}; {call}"], capture_output=True,
                       text=True, env=env, cwd=d, timeout=120)

    def mask(text: str) -> str:
        text = re.sub(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|", "", text, flags=re.M)
        return text.replace(str(d), "D")

    return p.returncode, mask(p.stdout), mask(p.stderr)


def records(path: Path) -> list[Any]:
    """A standalone file's records, date and comment left out."""
    out = []
    for body in path.read_bytes().split(b"\n")[1::2]:
        rec = json.loads(body)
        rec.pop("_date", None)
        rec.pop("_comment", None)
        out.append(rec)
    return out


def fill(run: list[str], path: Path, env: dict[str, str]) -> None:
    for txn in OLD_NB_TXNS:
        p = subprocess.run([*run, "transact", str(path), json.dumps(txn)],
                           capture_output=True, text=True, env=env, check=True)
        assert '"error"' not in p.stdout, p.stdout


def both(run: Callable[[str], Any]) -> dict[str, Any]:
    """`run(kind)` for the real tools and ours, side by side (each in its own
    directory)."""
    with ThreadPoolExecutor(2) as pool:
        futures = {kind: pool.submit(run, kind) for kind in ("real", "ours")}
        return {kind: f.result() for kind, f in futures.items()}


def test_upgrade_db(tmp_path: Path) -> None:
    """`upgrade_db DB SCHEMA` on an old standalone file: needs-conversion says yes, the
    file is backed up (named by db-version and db-cksum), compacted and converted: the
    same records, rows keeping their UUIDs, and the same mode."""
    old = tmp_path / "old.ovsschema"
    old.write_text(json.dumps(old_nb_schema()))
    subprocess.run(["ovsdb-tool", "create", str(tmp_path / "old.db"), str(old)], check=True)
    fill(["ovsdb-tool"], tmp_path / "old.db", dict(os.environ))
    original = (tmp_path / "old.db").read_bytes()

    def upgrade(kind: str) -> Any:
        d = tmp_path / kind
        d.mkdir()
        (d / "nb.db").write_bytes(original)
        result = ovs_lib(f'upgrade_db "{d}/nb.db" "{NB_SCHEMA}"', env_for(kind, d), d)
        backups = sorted(p.name for p in d.glob("nb.db.backup*"))
        assert [(d / b).read_bytes() for b in backups] == [original]
        return (result, backups, records(d / "nb.db"),
                oct((d / "nb.db").stat().st_mode & 0o777))

    seen = both(upgrade)
    assert seen["ours"] == seen["real"]
    (rc, out, err), backups, recs, _ = seen["real"]
    assert (rc, err, backups) == (0, "", ["nb.db.backup6.3.0-94023179"])
    assert out == ("Backing up database to D/nb.db.backup6.3.0-94023179.\n"
                   "Compacting database.\nConverting database schema.\n")
    assert recs[0]["version"] == "7.0.0" and len(recs) == 2


def test_upgrade_cluster(tmp_path: Path) -> None:
    """`upgrade_cluster SCHEMA unix:SOCKET` against a clustered database of the old
    schema (our server with our tools, the real server with the real tools), which the
    tool created (warning that it made the ephemeral columns persistent): wait for it
    to be connected, compare the versions, convert online (the client warns alike)."""
    old = tmp_path / "old.ovsschema"
    old.write_text(json.dumps(old_nb_schema()))

    def upgrade(kind: str) -> Any:
        d = tmp_path / kind
        d.mkdir()
        env = env_for(kind, d)
        created = ovs_lib(f'ovsdb-tool create-cluster "{d}/nb.db" "{old}" "unix:{d}/nb.raft"',
                          env, d)
        with ServerProcess(kind, d, [str(d / "nb.db")], name="nb") as srv:
            for txn in OLD_NB_TXNS:
                p = subprocess.run(["ovsdb-client", "transact", srv.unix, json.dumps(txn)],
                                   capture_output=True, text=True, check=True)
                assert '"error"' not in p.stdout, p.stdout
            result = ovs_lib(f'upgrade_cluster "{NB_SCHEMA}" "{srv.unix}"', env, d)
            version = subprocess.run(["ovsdb-client", "get-schema-version", srv.unix, DB],
                                     capture_output=True, text=True).stdout
            return created, result, version, dump_modulo_uuids(srv, DB)

    seen = both(upgrade)
    assert seen["ours"] == seen["real"]
    created, (rc, out, err), version, _ = seen["real"]
    assert created == (0, "", f"00001|ovsdb|WARN|{old}: changed 2 columns in '{DB}' database "
                       "from ephemeral to persistent, including 'status' column in "
                       "'Connection' table, because clusters do not support ephemeral "
                       "columns\n")
    assert (rc, version) == (0, "7.0.0\n")
    assert out == ("Waiting for OVN_Northbound to come up.\n"
                   "Upgrading database OVN_Northbound from schema version 6.3.0 to 7.0.0.\n")
    assert "reconnect|INFO|unix:D/nb.sock: connected" in err
