"""Helpers shared by the interop tests: wrappers around the real command-line tools,
normalizers that make two servers' outputs comparable (UUIDs, row order), and a
background `ovsdb-client monitor` reader."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from procs import ServerProcess, run

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMEOUT = "--timeout=20"


def strip_uuids(text: str) -> str:
    return UUID_RE.sub("<uuid>", text)


def label_uuids(value: Any) -> Any:
    """Replace every UUID in a JSON value (or text) by a label in order of first
    appearance (u0, u1, ...), so two servers' outputs compare modulo UUIDs while still
    showing which UUIDs were equal."""
    text = value if isinstance(value, str) else json.dumps(value)
    labels: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        return labels.setdefault(m.group(0), f"u{len(labels)}")

    out = UUID_RE.sub(sub, text)
    return out if isinstance(value, str) else json.loads(out)


# ---------------------------------------------------------------------------------------
# The real tools.


def client(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["ovsdb-client", TIMEOUT, *args], check=check)


def transact(
    srv: ServerProcess, *ops: dict[str, Any], db: str = "OVN_Northbound", method: str = "transact"
) -> list[Any]:
    """`ovsdb-client transact`: the parsed list of results."""
    p = client(method, srv.unix, json.dumps([db, *ops]))
    return json.loads(p.stdout)


def select(
    srv: ServerProcess,
    table: str,
    columns: list[str],
    where: list[Any] | None = None,
    db: str = "OVN_Northbound",
) -> list[dict[str, Any]]:
    res = transact(
        srv, {"op": "select", "table": table, "where": where or [], "columns": columns}, db=db
    )
    assert "error" not in res[0], res
    return sorted(res[0]["rows"], key=lambda r: json.dumps(r, sort_keys=True))


def nbctl(srv: ServerProcess, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["ovn-nbctl", f"--db={srv.unix}", TIMEOUT, *args], check=check)


def sbctl(srv: ServerProcess, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["ovn-sbctl", f"--db={srv.unix}", TIMEOUT, *args], check=check)


def vsctl(srv: ServerProcess, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["ovs-vsctl", f"--db={srv.unix}", "--no-wait", TIMEOUT, *args], check=check)


def dump_json(remote: str, *args: str) -> list[dict[str, Any]]:
    """`ovsdb-client -f json dump`: one {caption, headings, data} per table."""
    out = client("-f", "json", "dump", remote, *args).stdout
    # (not splitlines(): that also splits at U+2028 and friends inside strings)
    return [json.loads(line) for line in out.split("\n") if line.strip()]


def dump_modulo_uuids(srv: ServerProcess, db: str) -> list[Any]:
    """Every table of `db` as (caption, headings, rows): rows without `_uuid`, UUID
    values masked, sorted, so two servers that ran the same steps compare equal."""
    tables = []
    for t in dump_json(srv.unix, db):
        heads = t["headings"]
        rows = sorted(
            strip_uuids(json.dumps([v for h, v in zip(heads, r, strict=True) if h != "_uuid"]))
            for r in t["data"]
        )
        tables.append((t["caption"], heads, rows))
    return tables


# ---------------------------------------------------------------------------------------
# Normalizers for the *ctl tools' output.


def parse_records(text: str) -> list[dict[str, str]]:
    """The `list`/`find` output of the *ctl tools (`col : value` lines, records
    separated by blank lines) as a list of dicts, sorted so row order does not matter."""
    records = []
    for block in text.strip().split("\n\n"):
        if not block.strip():
            continue
        rec = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            rec[key.strip()] = value.strip()
        records.append(rec)
    return sorted(records, key=lambda r: json.dumps(r, sort_keys=True))


def show_tree(text: str) -> list[Any]:
    """An indented `show` output as a tree of (line, children) with UUIDs stripped and
    siblings sorted: the order rows come out in depends on their UUIDs."""
    root: list[Any] = []
    stack: list[tuple[int, list[Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack[-1][0] >= indent:
            stack.pop()
        children: list[Any] = []
        stack[-1][1].append((strip_uuids(raw.strip()), children))
        stack.append((indent, children))

    def norm(nodes: list[Any]) -> list[Any]:
        return sorted(([line, norm(kids)] for line, kids in nodes), key=json.dumps)

    return norm(root)


# ---------------------------------------------------------------------------------------
# Waiting and background monitors.


def bug_on_ours(request: Any, srv: ServerProcess | str, reason: str) -> None:
    """Mark the running test as a known bug of our server (strict xfail), only when it
    runs against ours: the same test must pass against the real server."""
    kind = srv if isinstance(srv, str) else srv.kind
    if kind == "ours":
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"server bug: {reason}"))


def wait_until(pred: Callable[[], bool], timeout: float = 10, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


class Monitor:
    """`ovsdb-client ARGS...` (a monitor) running in the background; its stdout is read
    line by line by a thread so a test can wait for an event before the next step."""

    def __init__(self, args: list[str]) -> None:
        # --timeout: the client kills itself if the test somehow fails to stop it.
        self.proc = subprocess.Popen(
            ["ovsdb-client", "--timeout=60", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.stderr = ""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pred: Callable[[list[str]], bool], timeout: float = 10) -> None:
        if not wait_until(lambda: pred(list(self.lines)) or self.proc.poll() is not None, timeout):
            raise AssertionError(f"monitor output never matched; got:\n{self.text}")
        if not pred(list(self.lines)):
            self.stop()
            raise AssertionError(
                f"monitor exited {self.proc.returncode}: {self.stderr}\noutput:\n{self.text}"
            )

    def wait_lines(self, n: int, timeout: float = 10) -> None:
        self.wait_for(lambda lines: len([x for x in lines if x.strip()]) >= n, timeout)

    def stop(self) -> list[str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            self.stderr = self.proc.stderr.read()
            self.proc.stderr.close()
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        return list(self.lines)

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def monitor_events(lines: list[str]) -> list[list[Any]]:
    """The updates printed by `ovsdb-client -f json monitor...`: one list per update of
    [action, {column: value}] (an "old"/"new" pair becomes ["modify", old, new]), with
    UUIDs labelled in order of appearance so two servers' outputs compare."""
    updates: list[list[Any]] = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        heads = obj["headings"]
        events: list[Any] = []
        for row in obj["data"]:
            rec = dict(zip(heads, row, strict=True))
            action = rec.pop("action")
            rec.pop("row")
            if "caption" in obj:
                rec["_table"] = obj["caption"]
            if action == "new":
                events[-1] = ["modify", events[-1][1], rec]
            else:
                events.append([action, rec])
        updates.append(events)
    return label_uuids(updates)
