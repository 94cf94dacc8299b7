"""Datadriven northd scenarios (etcd style), run in-process on in-memory databases.

A scenario file is a sequence of cases; a case is one or more command lines, a `----`
line, and the expected output up to the next blank line. Lines starting with `#`
between cases are kept as they are. Commands:

    nb ls-add NAME [COL=VALUE...]          nb ls-del NAME
    nb lsp-add SWITCH PORT [COL=VALUE...]  nb lsp-del PORT
    nb lsp-set-addresses PORT [ADDR...]    nb lsp-set-type PORT TYPE
    nb lsp-set-options PORT [KEY=VALUE...]
    nb lr-add NAME [COL=VALUE...]          nb lr-del NAME
    nb lrp-add ROUTER PORT MAC NETWORK... [-- COL=VALUE...]
    nb lrp-del PORT
    nb lrp-set-gateway-chassis PORT CHASSIS PRIORITY
    nb lrp-del-gateway-chassis PORT CHASSIS
    nb set TABLE NAME COL=VALUE...         (COL:KEY=VALUE sets one key of a map;
                                            NAME `.` is a table's only row)
    sb chassis-add NAME IP [KEY=VALUE...]  (Chassis + Encap + Chassis_Private;
                                            the pairs go to other_config)
    sb lsp-bind PORT CHASSIS               sb lsp-unbind PORT
                                           (as ovn-sbctl: chassis and up=true, both
                                            cleared)
    sb set TABLE NAME COL=VALUE...
    run                                    engine runs until one commits nothing

VALUE is JSON when it parses as JSON (`["a","b"]`, `{"k":"v"}`, `5`, `true`), else a
string. `run` prints what northd changed, named as `normalize` names rows:
`sb +Table key col=value...` (non-empty columns), `sb ~Table key col=value...` (changed
columns, new values), `sb -Table key`; the same with `nb` for the NB write-backs; rows
of the static tables (RBAC, DHCP option codes) as one count line; then the engine runs
it took and the per-node stats of those runs (nodes with any count).

Rules kept here:
- No servers, no clock: the NB and SB are `northd.testing.LocalDb`s, the engine's clock
  is fixed and `now_ms` advances by one second per engine run, so output is the same
  on every machine.
- The scenario drives northd's graph as the daemon does: changes accumulated since the
  last run go in, SB and NB operations come out and are committed, the committed
  changesets are the next run's input, and the cfg the SB transaction carried becomes
  the committed cfg.
- The same commands translate to `ovn-nbctl`/`ovn-sbctl` lines for the differential
  harness (`to_harness`), so a scenario's states are checked against the real northd.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffharness import MAC_PREFIX, SVC_MONITOR_MAC, Step
from normalize import NB_WRITTEN, SB_OWNED, Snapshot, dumps, normalize

from pyovsdb.northd.testing import LocalDb, LocalNorthd
from pyovsdb.testing import NB_SCHEMA, SB_SCHEMA

STATIC = ("SB.DHCP_Options", "SB.DHCPv6_Options", "SB.RBAC_Role", "SB.RBAC_Permission")
MAX_RUNS = 10
NAMED_BY = {"Port_Binding": "logical_port"}


# -- the file format ------------------------------------------------------------------


@dataclass
class Case:
    commands: list[str]
    expected: list[str]
    lineno: int


@dataclass
class ScenarioFile:
    """Cases and the verbatim text around them (for `--rewrite`)."""

    chunks: list[str | Case] = field(default_factory=list)

    @property
    def cases(self) -> list[Case]:
        return [c for c in self.chunks if isinstance(c, Case)]

    def render(self, outputs: Sequence[list[str]]) -> str:
        it = iter(outputs)
        out: list[str] = []
        for c in self.chunks:
            if isinstance(c, str):
                out.append(c)
            else:
                out.extend(c.commands)
                out.append("----")
                out.extend(next(it))
                out.append("")
        return "\n".join(out).rstrip("\n") + "\n"


def parse_file(text: str) -> ScenarioFile:
    lines = text.splitlines()
    sf = ScenarioFile()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            sf.chunks.append(line)
            i += 1
            continue
        start = i
        commands: list[str] = []
        while i < len(lines) and lines[i] != "----":
            if not lines[i].strip():
                raise ValueError(f"line {i + 1}: a case needs `----` before a blank line")
            commands.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"line {start + 1}: case without `----`")
        i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        if i < len(lines):
            i += 1  # the blank line ending the case belongs to it
        sf.chunks.append(Case(commands, expected, start + 1))
    return sf


# -- values ---------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_assignments(words: Sequence[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """`col=value` and `col:key=value` words: whole columns, and map keys by column."""
    cols: dict[str, Any] = {}
    keys: dict[str, dict[str, Any]] = {}
    for w in words:
        lhs, sep, rhs = w.partition("=")
        if not sep:
            raise ValueError(f"expected COL=VALUE, got {w!r}")
        col, colon, key = lhs.partition(":")
        if colon:
            keys.setdefault(col, {})[key] = str(parse_value(rhs))
        else:
            cols[col] = parse_value(rhs)
    return cols, keys


def _ctl_atom(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v))


def ctl_value(v: Any) -> str:
    """A value in the ovs-vsctl-style syntax of `ovn-nbctl set`."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{_ctl_atom(k)}={_ctl_atom(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_ctl_atom(x) for x in v) + "]"
    return _ctl_atom(v)


# -- the scenario ---------------------------------------------------------------------


def _schema(path: str) -> dict[str, Any]:
    with open(path) as f:
        return dict(json.load(f))


_SCHEMAS: dict[str, dict[str, Any]] = {}


def schema(path: str) -> dict[str, Any]:
    if path not in _SCHEMAS:
        _SCHEMAS[path] = _schema(path)
    return _SCHEMAS[path]


def dump(db: LocalDb) -> dict[str, list[dict[str, Any]]]:
    tables = sorted(db.schema.tables)
    db.transact([{"op": "select", "table": t, "where": []} for t in tables])
    return {t: r["rows"] for t, r in zip(tables, db.last_results, strict=True)}


class Scenario:
    """One scenario file's databases and northd graph, fed command by command."""

    def __init__(self) -> None:
        self.nb = LocalDb(schema(NB_SCHEMA))
        self.sb = LocalDb(schema(SB_SCHEMA))
        self.northd = LocalNorthd(self.nb, self.sb, now_ms=0, step_ms=1000)
        self.northd.nb_changed(self.nb.transact([{
            "op": "insert", "table": "NB_Global",
            "row": self.nb.json_row("NB_Global", {"options": {
                "mac_prefix": MAC_PREFIX, "svc_monitor_mac": SVC_MONITOR_MAC}})}]))

    # -- helpers ----------------------------------------------------------------------

    @staticmethod
    def _uuid(db: LocalDb, table: str, name: str) -> str:
        rows = db.tables[table].rows
        if name == "." and len(rows) == 1:
            return str(next(iter(rows.values())).uuid)
        col = NAMED_BY.get(table, "name")
        for row in db.tables[table].rows.values():
            if getattr(row, col) == name:
                return str(row.uuid)
        raise KeyError(f"no {table} named {name!r}")

    def _nb(self, ops: list[dict[str, Any]]) -> None:
        self.northd.nb_changed(self.nb.transact(ops))

    def _sb(self, ops: list[dict[str, Any]]) -> None:
        self.northd.sb_changed(self.sb.transact(ops))

    def _set(self, db: LocalDb, table: str, name: str, words: Sequence[str]) -> None:
        uuid = self._uuid(db, table, name)
        cols, keys = parse_assignments(words)
        row = db.tables[table].rows[uuid]
        for col, pairs in keys.items():
            cols[col] = {**dict(getattr(row, col)), **pairs}
        ops = [{"op": "update", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]],
                "row": db.json_row(table, cols)}]
        if db is self.nb:
            self._nb(ops)
        else:
            self._sb(ops)

    def _child(self, parent_table: str, parent: str, table: str, name: str,
               cols: dict[str, Any]) -> None:
        self._nb([{"op": "insert", "table": table, "uuid-name": "new",
                   "row": self.nb.json_row(table, {"name": name, **cols})},
                  {"op": "mutate", "table": parent_table, "where": [["name", "==", parent]],
                   "mutations": [["ports", "insert", ["set", [["named-uuid", "new"]]]]]}])

    def _unlink(self, parent_table: str, table: str, name: str) -> None:
        uuid = self._uuid(self.nb, table, name)
        self._nb([{"op": "mutate", "table": parent_table,
                   "where": [["ports", "includes", ["uuid", uuid]]],
                   "mutations": [["ports", "delete", ["set", [["uuid", uuid]]]]]}])

    # -- commands ---------------------------------------------------------------------

    def command(self, line: str) -> list[str]:
        words = shlex.split(line)
        try:
            if words[0] == "nb":
                self.nb_command(words[1], words[2:])
                return []
            if words[0] == "sb":
                self.sb_command(words[1], words[2:])
                return []
            if words == ["run"]:
                return self.run()
        except (KeyError, ValueError, IndexError) as e:
            return [f"error: {e}"]
        return [f"error: unknown command {line!r}"]

    def nb_command(self, cmd: str, a: list[str]) -> None:
        if cmd in ("ls-add", "lr-add"):
            table = "Logical_Switch" if cmd == "ls-add" else "Logical_Router"
            cols, _ = parse_assignments(a[1:])
            self._nb([{"op": "insert", "table": table,
                       "row": self.nb.json_row(table, {"name": a[0], **cols})}])
        elif cmd in ("ls-del", "lr-del"):
            table = "Logical_Switch" if cmd == "ls-del" else "Logical_Router"
            self._uuid(self.nb, table, a[0])
            self._nb([{"op": "delete", "table": table, "where": [["name", "==", a[0]]]}])
        elif cmd == "lsp-add":
            cols, _ = parse_assignments(a[2:])
            self._uuid(self.nb, "Logical_Switch", a[0])
            self._child("Logical_Switch", a[0], "Logical_Switch_Port", a[1], cols)
        elif cmd == "lsp-del":
            self._unlink("Logical_Switch", "Logical_Switch_Port", a[0])
        elif cmd == "lrp-add":
            rest = a[3:]
            extra = rest[rest.index("--") + 1:] if "--" in rest else []
            networks = rest[:rest.index("--")] if "--" in rest else rest
            cols, _ = parse_assignments(extra)
            self._uuid(self.nb, "Logical_Router", a[0])
            self._child("Logical_Router", a[0], "Logical_Router_Port", a[1],
                        {"mac": a[2], "networks": networks, **cols})
        elif cmd == "lrp-del":
            self._unlink("Logical_Router", "Logical_Router_Port", a[0])
        elif cmd == "lrp-set-gateway-chassis":
            lrp = self._uuid(self.nb, "Logical_Router_Port", a[0])
            row = self.nb.json_row("Gateway_Chassis", {
                "name": f"{a[0]}-{a[1]}", "chassis_name": a[1], "priority": int(a[2])})
            self._nb([{"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
                       "row": row},
                      {"op": "mutate", "table": "Logical_Router_Port",
                       "where": [["_uuid", "==", ["uuid", lrp]]],
                       "mutations": [["gateway_chassis", "insert",
                                      ["set", [["named-uuid", "gc"]]]]]}])
        elif cmd == "lrp-del-gateway-chassis":
            lrp = self._uuid(self.nb, "Logical_Router_Port", a[0])
            gc = self._uuid(self.nb, "Gateway_Chassis", f"{a[0]}-{a[1]}")
            self._nb([{"op": "mutate", "table": "Logical_Router_Port",
                       "where": [["_uuid", "==", ["uuid", lrp]]],
                       "mutations": [["gateway_chassis", "delete",
                                      ["set", [["uuid", gc]]]]]}])
        elif cmd == "lsp-set-addresses":
            self._set(self.nb, "Logical_Switch_Port", a[0], [f"addresses={json.dumps(a[1:])}"])
        elif cmd == "lsp-set-type":
            self._set(self.nb, "Logical_Switch_Port", a[0], [f"type={json.dumps(a[1])}"])
        elif cmd == "lsp-set-options":
            opts = dict(w.split("=", 1) for w in a[1:])
            self._set(self.nb, "Logical_Switch_Port", a[0], [f"options={json.dumps(opts)}"])
        elif cmd == "set":
            self._set(self.nb, a[0], a[1], a[2:])
        else:
            raise ValueError(f"unknown nb command {cmd!r}")

    def sb_command(self, cmd: str, a: list[str]) -> None:
        if cmd == "chassis-add":
            name, ip = a[0], a[1]
            other = dict(w.split("=", 1) for w in a[2:])
            self._sb([
                {"op": "insert", "table": "Encap", "uuid-name": "e",
                 "row": self.sb.json_row("Encap", {"type": "geneve", "ip": ip,
                                                   "chassis_name": name,
                                                   "options": {"csum": "true"}})},
                {"op": "insert", "table": "Chassis", "uuid-name": "c",
                 "row": {**self.sb.json_row("Chassis", {"name": name, "hostname": "",
                                                        "other_config": other}),
                         "encaps": ["named-uuid", "e"]}},
                {"op": "insert", "table": "Chassis_Private",
                 "row": {**self.sb.json_row("Chassis_Private", {"name": name}),
                         "chassis": ["named-uuid", "c"]}}])
        elif cmd == "lsp-bind":
            pb = self._uuid(self.sb, "Port_Binding", a[0])
            ch = self._uuid(self.sb, "Chassis", a[1])
            self._sb([{"op": "update", "table": "Port_Binding",
                       "where": [["_uuid", "==", ["uuid", pb]]],
                       "row": {"chassis": ["uuid", ch], "up": True}}])
        elif cmd == "lsp-unbind":
            pb = self._uuid(self.sb, "Port_Binding", a[0])
            self._sb([{"op": "update", "table": "Port_Binding",
                       "where": [["_uuid", "==", ["uuid", pb]]],
                       "row": {"chassis": ["set", []], "up": ["set", []]}}])
        elif cmd == "set":
            self._set(self.sb, a[0], a[1], a[2:])
        else:
            raise ValueError(f"unknown sb command {cmd!r}")

    # -- running northd ---------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return normalize(dump(self.nb), dump(self.sb), nb_tables=NB_WRITTEN,
                         sb_tables=SB_OWNED)

    def run(self) -> list[str]:
        before = self.snapshot()
        engine_before = self._counters()
        runs = 0
        for runs in range(1, MAX_RUNS + 1):  # noqa: B007 (the count is printed)
            if not self.northd.run_once().again:
                break
        else:
            return [f"error: still committing after {MAX_RUNS} engine runs"]
        lines = changes(before, self.snapshot())
        lines.append(f"engine runs: {runs}")
        lines.extend(self._stats(engine_before))
        return lines

    def _counters(self) -> dict[str, tuple[int, int, int]]:
        engine = self.northd.driver.engine
        if engine is None:
            return {}
        return {n: (s.recompute, s.compute, s.cancel) for n, s in engine.stats.items()}

    def _stats(self, before: dict[str, tuple[int, int, int]]) -> list[str]:
        engine = self.northd.driver.engine
        assert engine is not None
        leaves = set(engine.leaves)
        parts = []
        for node in engine.nodes:
            name = node.name
            if name in leaves:
                continue
            now = self._counters().get(name, (0, 0, 0))
            was = before.get(name, (0, 0, 0))
            d = [x - y for x, y in zip(now, was, strict=True)]
            if any(d):
                parts.append(f"{name} recompute={d[0]} compute={d[1]} cancel={d[2]}")
        return [f"stats: {'; '.join(parts)}"] if parts else []


# -- printing changes -----------------------------------------------------------------


def _show(v: Any) -> str:
    if isinstance(v, str) and v.startswith("@") and " " not in v:
        return v
    return dumps(v)


def _empty(v: Any) -> bool:
    return v in ([], {}, "")


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    out: list[str] = []
    for table in sorted(set(before.tables) | set(after.tables)):
        db, name = table.split(".", 1)
        prefix = db.lower()
        old = before.tables.get(table, {})
        new = after.tables.get(table, {})
        if table in STATIC:
            added = len(set(new) - set(old))
            removed = len(set(old) - set(new))
            changed = sum(1 for k in set(old) & set(new) if old[k] != new[k])
            if added or removed or changed:
                out.append(f"{prefix} {name}: +{added} ~{changed} -{removed} rows")
            continue
        for key in sorted(set(old) | set(new)):
            o, n = old.get(key), new.get(key)
            if o is None and n is not None:
                cols = " ".join(f"{c}={_show(v)}" for c, v in sorted(n.items())
                                if not _empty(v))
                out.append(f"{prefix} +{name} {key} {cols}".rstrip())
            elif n is None:
                out.append(f"{prefix} -{name} {key}")
            elif o is not None and o != n:
                cols = " ".join(f"{c}={_show(n.get(c))}" for c in sorted(set(o) | set(n))
                                if o.get(c) != n.get(c))
                out.append(f"{prefix} ~{name} {key} {cols}")
    return out


def run_file(path: Path) -> tuple[ScenarioFile, list[list[str]]]:
    """Every case's actual output, in order."""
    sf = parse_file(path.read_text())
    sc = Scenario()
    outputs = []
    for case in sf.cases:
        lines: list[str] = []
        for cmd in case.commands:
            lines.extend(sc.command(cmd))
        outputs.append(lines)
    return sf, outputs


# -- the same scenario for the real northd ----------------------------------------------


def to_harness(path: Path) -> list[Step | None]:
    """The scenario as harness steps; None where a `run` is (a point to compare)."""
    sf = parse_file(path.read_text())
    out: list[Step | None] = []
    for case in sf.cases:
        for line in case.commands:
            out.extend(_harness_steps(shlex.split(line), case.lineno))
    return out


def _kv(words: Sequence[str]) -> list[str]:
    cols, keys = parse_assignments(words)
    out = [f"{c}={ctl_value(v)}" for c, v in cols.items()]
    out += [f"{c}:{_ctl_atom(k)}={_ctl_atom(v)}" for c, m in keys.items() for k, v in m.items()]
    return out


def _harness_steps(w: list[str], lineno: int) -> list[Step | None]:
    def nb(*args: str) -> Step:
        return Step("nbctl", tuple(args), lineno)

    tables = {"ls-add": "Logical_Switch", "lr-add": "Logical_Router",
              "lsp-add": "Logical_Switch_Port"}
    if w == ["run"]:
        return [None]
    tool, cmd, a = w[0], w[1], w[2:]
    if tool == "nb" and cmd in ("ls-add", "lr-add"):
        extra = _kv(a[1:])
        return [nb(cmd, a[0], *(["--", "set", tables[cmd], a[0], *extra] if extra else []))]
    if tool == "nb" and cmd == "lsp-add":
        extra = _kv(a[2:])
        return [nb(cmd, a[0], a[1], *(["--", "set", tables[cmd], a[1], *extra]
                                      if extra else []))]
    if tool == "nb" and cmd == "lrp-add":
        rest = a[3:]
        extra = _kv(rest[rest.index("--") + 1:]) if "--" in rest else []
        networks = rest[:rest.index("--")] if "--" in rest else rest
        return [nb(cmd, *a[:3], *networks,
                   *(["--", "set", "Logical_Router_Port", a[1], *extra] if extra else []))]
    if tool == "nb" and cmd == "set":
        return [nb("set", a[0], a[1], *_kv(a[2:]))]
    if tool == "nb":
        return [nb(cmd, *a)]
    if cmd == "chassis-add":
        return [Step("sim", ("chassis", *a), lineno)]
    if cmd == "set":
        return [Step("sbctl", ("set", a[0], a[1], *_kv(a[2:])), lineno)]
    return [Step("sbctl", (cmd, *a), lineno)]

