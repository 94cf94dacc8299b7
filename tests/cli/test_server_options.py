"""`pyovsdb server` options that are refused or only warned about, and the pieces of
vlog that the `-v` options drive (spec parsing, line patterns, the `vlog/list`
layout), checked without a daemon where none is needed."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from procs import NB_SCHEMA, create_db, run
from pyovsdb.util.vlog import LEVELS, Vlog, compile_pattern


def record(module: str, level: int, msg: str) -> logging.LogRecord:
    r = logging.LogRecord(module, level, __file__, 1, msg, None, None)
    r.created = 1_700_000_000.25  # 2023-11-14T22:13:20.250Z
    return r


@pytest.mark.parametrize("spec,error", [
    ("bogus", 'no destination, level, or module "bogus"'),
    ("file:info:dbg", "cannot specify multiple levels"),
    ("file:console", "cannot specify multiple destinations"),
    ("raft:jsonrpc", "cannot specify multiple modules"),
    ("PATTERN", "missing destination"),
    ("PATTERN:nowhere:%m", 'unknown destination "nowhere"'),
    ("FACILITY:nowhere", "invalid facility"),
])
def test_bad_specs(spec: str, error: str) -> None:
    v = Vlog()
    with pytest.raises(ValueError) as e:
        v.set_spec(spec)
    assert str(e.value) == error
    with pytest.raises(ValueError) as e:
        v.set_verbosity(spec)
    assert str(e.value) == f'processing "{spec}": {error}'


def test_levels_per_module_and_destination() -> None:
    v = Vlog()
    assert {v.level("raft", d) for d in ("console", "syslog", "file")} == {LEVELS["info"]}
    v.set_spec("RAFT FILE Dbg")  # any separator, any case, any order
    assert v.level("raft", "file") == LEVELS["dbg"]
    assert v.level("raft", "console") == LEVELS["info"]
    assert v.level("jsonrpc", "file") == LEVELS["info"]
    v.set_spec("any:console:off")
    assert v.level("raft", "console") == LEVELS["off"]
    v.set_spec("jsonrpc")  # no destination and no level: dbg everywhere for it
    assert {v.level("jsonrpc", d) for d in ("console", "syslog", "file")} == {LEVELS["dbg"]}
    v.set_verbosity(None)
    assert v.level("memory", "syslog") == LEVELS["dbg"]


def test_patterns() -> None:
    v = Vlog()
    v.program, v.subprogram = "ovsdb-server", "monitor"
    r = record("daemon_unix", logging.ERROR, "1 crashes")
    assert v.format("file", r, 7) == ("2023-11-14T22:13:20.250Z|00007|daemon_unix(monitor)|"
                                      "ERR|1 crashes")
    assert v.format("console", r, 7) == ("2023-11-14T22:13:20Z|00007|daemon_unix(monitor)|"
                                         "ERR|1 crashes")
    v.set_spec("PATTERN:file:[%-6p]%5N %A %t %c%%")
    assert v.format("file", r, 7) == "[ERR   ]    7 ovsdb-server monitor daemon_unix%"
    pieces = compile_pattern("%B|%D{%H.###}")
    assert "".join(p(r, 1, v) for p in pieces) == "131|22.250"  # local0 + err


def test_list_layout() -> None:
    v = Vlog()
    v.set_spec("ovsdb_server:file:dbg")
    v.console_off()
    lines = v.list().splitlines()
    assert lines[:2] == ["                 console    syslog    file",
                         "                 -------    ------    ------"]
    assert "ovsdb_server       OFF       INFO        DBG" in lines
    assert lines[2:] == sorted(lines[2:])


def server(*args: str) -> list[str]:
    return [sys.executable, "-m", "pyovsdb", "server", *args]


def test_refused_options(tmp_path: Path) -> None:
    db = create_db("ours", tmp_path / "nb.db", NB_SCHEMA)
    p = run(server("--disable-file-column-diff", db), check=False)
    assert (p.returncode, p.stderr) == (
        1, "ovsdb-server: --disable-file-column-diff is not supported (database records "
           "are always written as column diffs)\n")
    for option in ("--record", "--replay=DIR"):
        p = run(server(option, db), check=False)
        name = option.split("=")[0]
        assert (p.returncode, p.stderr) == (
            1, f"ovsdb-server: {name} is not supported (stream replay files record the real "
               "server's internal I/O, which pyovsdb does not have)\n")
    # A remote that cannot listen is retried, not refused: tests/interop/test_listen_retry.py
    p = run(server("--frobnicate", db), check=False)
    assert (p.returncode, p.stderr) == (1, "ovsdb-server: unrecognized option "
                                           "'--frobnicate'\n")


def test_pki_options_are_accepted_as_files_and_db_references(tmp_path: Path) -> None:
    """ovn-ctl passes the PKI options as db: references; files work too (TLS itself:
    tests/interop/test_tls.py). Neither is warned about."""
    db = create_db("ours", tmp_path / "nb.db", NB_SCHEMA)
    p = run(server("--unixctl=none", "--run=true", "-p", "/k.pem", "--bootstrap-ca-cert",
                   "/ca.pem", "--peer-ca-cert=/peer.pem",
                   "--certificate=db:OVN_Northbound,SSL,certificate", db))
    assert p.returncode == 0
    assert [line for line in p.stderr.splitlines() if "|WARN|" in line] == []
