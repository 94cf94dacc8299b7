"""`pyovsdb tool` against the real `ovsdb-tool` for the commands of an upgrade:
`convert`, `needs-conversion`, `compare-versions`, and the texts and statuses of their
errors; the files `convert` writes (byte for byte but the date and comment), and the
modes of every file the tools write, under two umasks."""

from __future__ import annotations

import io
import json
import os
import re
import resource
import signal
import stat
import subprocess
from collections.abc import Iterator
from contextlib import chdir, contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from old_schemas import OLD_NB_TXNS, old_nb_schema
from procs import NB_SCHEMA, require
from pyovsdb.cli import tool
from pyovsdb.ovsdb.hashorder import shash_order
from pyovsdb.storage import log as ovslog

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("own_vlog")]

DB = "OVN_Northbound"


@pytest.fixture(autouse=True)
def _tools() -> None:
    require("ovsdb-tool")




def real(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    p = subprocess.run(["ovsdb-tool", *args], capture_output=True, encoding="utf-8",
                       timeout=30, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def ours(*args: str, cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with chdir(cwd), redirect_stdout(out), redirect_stderr(err):
        rc = tool.main(list(args))
    return rc, out.getvalue(), err.getvalue().replace("pyovsdb tool: ", "ovsdb-tool: ")


@pytest.fixture
def dbdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory with an old-schema database that several transactions filled, a
    clustered database, the current schema and an old one; the default database
    directory (OVS_DBDIR) points here, for both tools."""
    monkeypatch.setenv("OVS_DBDIR", str(tmp_path))
    old = old_nb_schema()
    (tmp_path / "old.ovsschema").write_text(json.dumps(old))
    (tmp_path / "new.ovsschema").write_text(Path(NB_SCHEMA).read_text())
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    for args in (["create", "old.db", "old.ovsschema"],
                 ["create-cluster", "c.db", "new.ovsschema", "unix:c.raft"]):
        rc, _, err = real(*args, cwd=tmp_path)
        assert rc == 0, err
    for txn in OLD_NB_TXNS:
        rc, out, err = real("transact", "old.db", json.dumps(txn), cwd=tmp_path)
        assert rc == 0 and '"error"' not in out, out + err
    (tmp_path / "copy.db").write_bytes((tmp_path / "old.db").read_bytes())
    # Two switches in one record, written in the opposite of the order the real tool
    # reads them in (its hash order): converted to a schema that refuses both names,
    # the one it reads first is named.
    uuids = [f"{n:08x}-1111-2222-3333-444444444444" for n in range(1, 40)]
    first, second = next((a, b) for a in uuids for b in uuids
                         if a != b and list(shash_order([a, b])) == [b, a])
    record = {"Logical_Switch": {first: {"name": "a"}, second: {"name": "b"}}}
    (tmp_path / "two.db").write_bytes(ovslog.frame(json.loads(Path(NB_SCHEMA).read_text()))
                                      + ovslog.frame(record))
    schema = json.loads(Path(NB_SCHEMA).read_text())
    schema["tables"]["Logical_Switch"]["columns"]["name"] = {"type": "integer"}
    (tmp_path / "int.ovsschema").write_text(json.dumps(schema))
    yield tmp_path


BAD_FILES = {
    "empty.json": "",
    "truncated.json": '{"name":"X",',
    "trailing.json": '{"name":"X","tables":{}} x',
    "scalar.json": '"str"',
    "keyword.json": "root:x:0:0:root",
    "number.json": '{"a":1e999}',
    "noname.ovsschema": '{"tables":{}}',
    "badversion.ovsschema": '{"name":"X","version":"1.2","tables":{}}',
    "nocolumns.ovsschema": '{"name":"X","tables":{"T":{"columns":{}}}}',
    "notadb.db": "garbage\n",
}

ERROR_CASES = [
    ["convert", "c.db", "new.ovsschema"],
    ["convert", "c.db", "new.ovsschema", "out.db"],
    ["convert", "missing.db", "new.ovsschema"],
    ["convert", "old.db", "missing.ovsschema"],
    ["convert", "old.db", "keyword.json"],
    ["convert", "old.db", "new.ovsschema", "notadb.db"],
    ["convert", "two.db", "int.ovsschema", "out.db"],
    ["convert"],
    ["convert", "a", "b", "c", "d"],
    ["needs-conversion", "old.db", "new.ovsschema"],
    ["needs-conversion", "old.db", "old.ovsschema"],
    ["needs-conversion", "c.db", "new.ovsschema"],
    ["needs-conversion", "missing.db", "new.ovsschema"],
    ["needs-conversion", "old.db", "missing.ovsschema"],
    ["needs-conversion", "notadb.db", "new.ovsschema"],
    ["needs-conversion"],
    ["db-version", "c.db"],
    ["db-cksum", "c.db"],
    ["db-version", "old.db"],
    ["compact", "old.db", "notadb.db"],
    ["compact", "old.db", "copy.db"],  # an existing database file is overwritten
    ["--election-timer=5", "db-name", "old.db"],
    ["--election-timer=abc", "db-name", "old.db"],
    ["--election-timer=150x", "db-name", "old.db"],
    ["--cid=xyz", "db-name", "old.db"],
    ["--cid=00000000-0000-0000-0000-000000000000", "db-name", "old.db"],
    *(["schema-name", name] for name in BAD_FILES),
    ["schema-version", "."],
    ["create", "x.db", "truncated.json"],
]

VERSIONS = [
    ("1.2.3", "<", "1.2.4"), ("1.2.3", ">", "1.2.4"), ("1.2.3", "<=", "1.2.3"),
    ("1.2.3", ">=", "1.3.0"), ("2.0.0", "!=", "2.0.0"), ("10.0.0", ">", "9.99.99"),
    ("01.2.3", "==", "1.2.3"), (" 1. 2.+3", "==", "1.2.3"), ("1.2.-3", "==", "1.2.3"),
    ("4294967296.0.0", "==", "0.0.0"), ("2147483648.0.0", ">", "1.0.0"),
    ("1.2", "<", "1.2.4"), ("1.2.3x", "==", "1.2.3"), ("1.2.3 ", "==", "1.2.3"),
    ("1.2.3", "=~", "1.2.4"), ("x", "==", "y"), ("1.2.3", "==", "a.b.c"),
]


def test_errors_and_outputs_as_the_real_tool(dbdir: Path) -> None:
    """Every case: the same stdout, stderr and exit status (0, 1, or 2 for a relation
    that does not hold), our program name aside."""
    cases = [*ERROR_CASES, *(["compare-versions", *v] for v in VERSIONS),
             ["compare-versions", "1.2.3", "<"]]
    for args in cases:
        assert ours(*args, cwd=dbdir) == real(*args, cwd=dbdir), args


def test_help_lists_what_ovn_ctl_greps_for(tmp_path: Path) -> None:
    """`--help` is the real text but for the program's name and default files; ovn-ctl
    greps it for `--election-timer`."""
    _, want, _ = real("--help", cwd=tmp_path)
    rc, got, _ = ours("--help", cwd=tmp_path)
    assert rc == 0 and "  [--election-timer=ms] create-cluster DB CONTENTS LOCAL\n" in got

    def lines(text: str) -> list[str]:
        return [line.replace("ovsdb-tool", "P").replace("pyovsdb tool", "P")
                for line in text.splitlines() if not line.startswith("The default")
                and "default: " not in line]

    assert lines(got) == lines(want)


def records(path: Path) -> list[Any]:
    """A log file's records, date and comment left out. (Their bytes are the real
    tool's but where rows of one table collide in its hash table: their order then
    depends on rows the table held earlier, see `storage.jsonorder`.)"""
    lines = path.read_bytes().split(b"\n")
    out = []
    for body in lines[1::2]:
        rec = json.loads(body)
        rec.pop("_date", None)
        rec.pop("_comment", None)
        out.append(rec)
    return out


def query(path: Path, cwd: Path) -> Any:
    txn = [DB] + [{"op": "select", "table": t, "where": [], "columns": ["name"]}
                  for t in ("Logical_Switch", "Logical_Switch_Port")]
    rc, out, err = real("query", str(path), json.dumps(txn), cwd=cwd)
    assert rc == 0, err
    return [sorted(r["name"] for r in op["rows"]) for op in json.loads(out)]


def test_convert_writes_the_real_files(dbdir: Path) -> None:
    """`create` through a dangling symlink makes its target. An old-schema file with
    several records converted in place (through a symlink, which stays one) and to a
    new file: the same records as the real tool's, read back by the real tool, the same
    lock files left; a new schema the rows break (maxRows: the second record adds a
    switch) ends the replay where the real one ends it, keeping the first; a value the
    new type refuses is the real error."""
    schema = json.loads(Path(NB_SCHEMA).read_text())
    schema["tables"]["Logical_Switch"]["maxRows"] = 1
    (dbdir / "max.ovsschema").write_text(json.dumps(schema))
    schema["tables"]["Logical_Switch"]["columns"]["name"] = {"type": "integer"}
    (dbdir / "int.ovsschema").write_text(json.dumps(schema))
    refused = {}
    for kind, run in (("real", real), ("ours", ours)):
        d = dbdir / kind
        d.mkdir()
        (d / "old.db").write_bytes((dbdir / "old.db").read_bytes())
        (d / "link.db").symlink_to("old.db")
        (d / "dangling.db").symlink_to("target.db")
        assert run("create", "dangling.db", "../new.ovsschema", cwd=d) == (0, "", "")
        assert (d / "target.db").read_bytes().startswith(b"OVSDB JSON ")
        refused[kind] = run("convert", "old.db", "../int.ovsschema", "int.db", cwd=d)
        for args in (["convert", "old.db", "../new.ovsschema", "new.db"],
                     ["convert", "old.db", "../max.ovsschema", "max.db"],
                     ["convert", "link.db", "../new.ovsschema"]):
            rc, out, err = run(*args, cwd=d)
            assert (rc, out, err) == (0, "", ""), (kind, args)
    assert refused["ours"] == refused["real"] == (
        1, "", 'ovsdb-tool: syntax ""sw0"": syntax error: expected integer\n')
    for name in ("new.db", "old.db", "max.db"):
        assert records(dbdir / "ours" / name) == records(dbdir / "real" / name), name
    assert (dbdir / "ours" / "link.db").is_symlink()
    assert query(dbdir / "ours" / "link.db", dbdir) == [["sw0", "sw2"], ["p0"]]
    assert query(dbdir / "ours" / "max.db", dbdir) == [["sw0"], ["p0"]]
    assert sorted(os.listdir(dbdir / "ours")) == sorted(os.listdir(dbdir / "real"))


def modes(run: Any, d: Path) -> dict[str, str]:
    """The mode of every file a run of the tool's writing commands leaves in `d`."""
    steps = [["create", "a.db", NB_SCHEMA], ["create-cluster", "c.db", NB_SCHEMA, "unix:r"],
             ["join-cluster", "j.db", DB, "unix:j", "unix:r"], ["compact", "a.db", "b.db"],
             ["convert", "a.db", NB_SCHEMA, "v.db"], ["cluster-to-standalone", "s.db", "c.db"],
             ["compact", "x.db"], ["convert", "y.db", NB_SCHEMA]]
    for args in steps:
        if args[1] in ("x.db", "y.db"):
            # Rewritten in place: a new file, whatever the mode of the old one.
            (d / args[1]).write_bytes((d / "a.db").read_bytes())
            (d / args[1]).chmod(0o604)
        rc, _, err = run(*args, cwd=d)
        assert rc == 0, (args, err)
    return {p.name: oct(stat.S_IMODE(p.lstat().st_mode)) for p in sorted(d.iterdir())}


def test_file_modes_as_the_real_tool(tmp_path: Path) -> None:
    """0660 less the umask (0640 under the usual 022) for every database file, new or
    rewritten; 0600 for the lock files."""
    seen: dict[str, dict[str, dict[str, str]]] = {}
    for umask in (0o022, 0o077):
        old = os.umask(umask)
        try:
            for kind, run in (("real", real), ("ours", ours)):
                d = tmp_path / f"{kind}{umask:o}"
                d.mkdir()
                seen.setdefault(kind, {})[f"{umask:o}"] = modes(run, d)
        finally:
            os.umask(old)
    assert seen["ours"] == seen["real"]
    assert seen["real"]["22"]["a.db"] == "0o640" and seen["real"]["22"]["x.db"] == "0o640"
    assert seen["real"]["77"]["y.db"] == "0o600"


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """RLIMIT_FSIZE for this process: a write that crosses the limit writes up to it,
    the next one fails with EFBIG (SIGXFSZ is ignored, as Python starts)."""
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def real_limited(limit: int, *args: str, cwd: Path) -> tuple[int, str, str]:
    def child() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    p = subprocess.run(["ovsdb-tool", *args], capture_output=True, encoding="utf-8",
                       timeout=30, cwd=cwd, preexec_fn=child, restore_signals=False)
    return p.returncode, p.stdout, p.stderr


def test_writes_that_fail_as_the_real_tool(tmp_path: Path) -> None:
    """Files that grow past the file size limit: every write loops until all is
    written or fails (a single short write left a cut file, and success); the real
    log line, error and status; what is left: a new file cut back to its whole records,
    a compacted copy removed, the database compacted in place untouched."""
    header = tmp_path / "header.db"  # a cluster's header record alone
    assert real("create-cluster", str(header), NB_SCHEMA, "unix:c.raft", cwd=tmp_path)[0] == 0
    cases = [(4000, ["create", "n.db", NB_SCHEMA]),
             (header.stat().st_size + 10, ["--election-timer=1000", "create-cluster", "c.db",
                                           NB_SCHEMA, "unix:c.raft"]),
             (4000, ["compact", "a.db", "dst.db"]),
             (4000, ["compact", "b.db"])]
    seen = {}
    for kind in ("real", "ours"):
        d = tmp_path / kind
        d.mkdir()
        for name in ("a.db", "b.db"):
            assert real("create", name, NB_SCHEMA, cwd=d)[0] == 0
        original = (d / "b.db").read_bytes()
        results = []
        for limit, args in cases:
            if kind == "real":
                rc, out, err = real_limited(limit, *args, cwd=d)
            else:
                with file_size_limit(limit):
                    rc, out, err = ours(*args, cwd=d)
            err = re.sub(r"^\S+Z\|\d{5}\|", "", err.replace(str(d), "D"), flags=re.M)
            results.append((rc, out, err))
        files = {n: (d / n).stat().st_size for n in ("n.db", "c.db", "dst.db", "b.db.tmp")
                 if (d / n).exists()}
        seen[kind] = (results, files, (d / "b.db").read_bytes() == original)
    assert seen["ours"] == seen["real"]
    results, files, _ = seen["real"]
    assert results[0] == (1, "", "ovsdb_log|WARN|D/n.db: write failed (File too large)\n"
                                 "ovsdb-tool: I/O error: n.db: write failed (File too large)\n")
    assert files == {"n.db": 0, "c.db": header.stat().st_size}
