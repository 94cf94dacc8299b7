"""Differential conformance harness: the same JSON-RPC conversation with our server and
with the real ovsdb-server 3.1, compared message by message.

Rules kept here:
- Both servers serve the same schema from a database created by their own tool, and are
  started once per test module (`ServerPair`). Before each case every table is emptied
  in one transaction, so cases do not see each other's rows; per-session state
  (monitors, locks, blocked waits) ends with the case's connections, which are closed
  only after a round trip that proves the server has released what they held.
- A case is a list of steps, each one request (or raw bytes, or a close) on a named
  connection. After each step the harness makes every connection of the case answer a
  barrier request: the real server writes pending monitor updates before any reply on a
  session, so everything the step caused is in the record when the barrier returns. On
  the step's own connection the barrier is the dump of the database (a select of every
  table), which therefore sees the step's effects. On a clustered database, where a
  write is answered only once committed (a read at once), the step's reply is awaited
  first. A request still unanswered at the
  barrier is blocked (a `wait`); a later `await` step waits for its reply. A server that
  crashes or drops every connection is noticed, and restarted before the next case.
- Messages are read with the standard JSON parser, not ours: what the real server
  writes (say, a real printed as 1.79769313486232e+308) must not trip the harness.
- Comparison is of normalized records (conformance_normalize.py): UUIDs renamed by
  first appearance, reals at 15 digits, order normalized only where the protocol leaves
  it free.
- Cases may hold placeholders for what a server chose (`<u1>` a row UUID by insert
  order, `<t1>` a transaction id, ...; real_traffic.Births): each server's own value is
  substituted before a request is sent. Recorded cases (real clients) open their
  connections at their first step.
- Differences the project intends are named in `conformance_intended.INTENDED`, which
  mirrors the table in docs/compat.md; the rules that recognise them live there too.
  Anything else that differs is a failure.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
import select
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from conformance_normalize import (  # noqa: F401  (re-exported for the tests)
    UUID_FULL,
    UUID_RE,
    ZERO_UUID,
    Namer,
    Normalizer,
    NormStep,
    norm_number,
    normalize,
    request_uuids,
)
from real_traffic import PLACEHOLDER_RE, Births

from conformance_counts import (  # noqa: F401  (re-exported for the tests)
    SEED_VARIABLE,
    STATS,
    random_seed,
    seed_hint,
)
from procs import NB_SCHEMA, SB_SCHEMA, VSWITCH_SCHEMA, ServerProcess, create_db, free_port, run

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CASES_DIR = HERE / "cases"
EVERY_TYPE = REPO / "tests" / "unit" / "schemas" / "every_type.ovsschema"
BARRIER = "__barrier__"
READ_TIMEOUT = 5.0
AWAIT_TIMEOUT = 5.0
CLUSTER_REPLY_WAIT = 2.0  # a request not answered by then is blocked (a `wait`)

# ---------------------------------------------------------------------------------------
# Schemas


def _no_root_schema(path: Path) -> Path:
    """every_type with no table declaring isRoot true: then every table is a root table
    and nothing is garbage collected (the real server's rule)."""
    js = json.loads(EVERY_TYPE.read_text())
    for t in js["tables"].values():
        if t.get("isRoot") is True:
            del t["isRoot"]
    path.write_text(json.dumps(js, indent=1))
    return path


SCHEMA_FILES: dict[str, Callable[[Path], Path]] = {
    "T": lambda d: EVERY_TYPE,
    "T0": lambda d: _no_root_schema(d / "every_type_no_root.ovsschema"),
    "NB": lambda d: Path(NB_SCHEMA),
    "SB": lambda d: Path(SB_SCHEMA),
    "VS": lambda d: Path(VSWITCH_SCHEMA),
}


@dataclass
class SchemaInfo:
    """What the normalizer and the intended-difference rules need from a schema."""

    db: str
    json: dict[str, Any]

    def tables(self) -> list[str]:
        return list(self.json["tables"])

    def weak_columns(self, table: str) -> dict[str, tuple[str | None, str | None]]:
        """column -> (key ref table, value ref table) for weak references only."""
        out = {}
        for cname, col in self.json["tables"][table]["columns"].items():
            t = col["type"]
            if not isinstance(t, dict):
                continue
            parts = []
            for part in ("key", "value"):
                base = t.get(part)
                if isinstance(base, dict) and base.get("refTable") and \
                        base.get("refType", "strong") == "weak":
                    parts.append(base["refTable"])
                else:
                    parts.append(None)
            if any(parts):
                out[cname] = (parts[0], parts[1])
        return out


# ---------------------------------------------------------------------------------------
# Connections


class Closed(Exception):
    pass


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{}]')


class Framer:
    """Splits a byte stream into JSON texts and parses them with the standard library,
    which keeps whatever the server wrote: no validation of our own in the way. Only
    brackets and whole strings are scanned (a string cut by a read waits for the rest)."""

    def __init__(self) -> None:
        self.buf = b""  # the start of an incomplete message, rescanned when more comes

    def feed(self, data: bytes) -> list[Any]:
        buf = self.buf + data
        out = []
        start = 0
        depth = 0
        for m in _TOKEN.finditer(buf):
            tok = m.group()
            c = tok[0]
            if c == 0x22:
                if len(tok) == 1:  # an unterminated string: wait for more
                    break
                continue
            if c in (0x7B, 0x5B):
                if depth == 0:
                    start = m.start()
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    out.append(json.loads(buf[start:m.end()]))
                    start = m.end()
        self.buf = buf[start:] if depth else b""
        return out


class Conn:
    """A raw JSON-RPC connection that records everything the server sends."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.stream = Framer()
        self.inbox: list[Any] = []  # messages received and not yet taken
        self.methods: dict[bytes, str] = {}  # request id -> method, for unanswered ones
        self.closed = False
        self.n_barrier = 0

    def send_bytes(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self.sock.sendall(data)
        except OSError:
            self._lost()

    def _lost(self) -> None:
        """The server closed the connection (seen on a write or a read)."""
        if not self.closed:
            self.closed = True
            self.inbox.append({"__closed__": True})

    def send(self, msg: dict[str, Any]) -> None:
        if msg.get("id") is not None and "method" in msg:
            self.methods[_key(msg["id"])] = msg["method"]
        self.send_bytes(json.dumps(msg, ensure_ascii=False).encode())

    def barrier(self, method: str = "get_server_id", params: list[Any] | None = None) -> str:
        """Send a request whose reply marks "everything before it has been sent": the
        server replies in order on a session, after pending monitor updates. It is left
        out of the record. (get_server_id has no side effect; a select reads the
        database as it is after the step.)"""
        self.n_barrier += 1
        bid = f"{BARRIER}{self.n_barrier}"
        self.send_bytes(json.dumps({"method": method, "params": params or [], "id": bid},
                                   ensure_ascii=False).encode())
        return bid

    def read_until(self, done: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if self.closed:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                raise TimeoutError
            self._read()

    def _read(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            self._lost()
            return
        for msg in self.stream.feed(data):
            if msg.get("method") == "echo" and msg.get("id") is not None:
                self.send_bytes(orjson.dumps({"id": msg["id"], "result": msg["params"],
                                              "error": None}))
                continue
            self.inbox.append(msg)

    def wait_barrier(self, bid: str, timeout: float = READ_TIMEOUT) -> dict[str, Any] | None:
        """The reply to barrier `bid` (None if the connection closed first)."""
        found: list[dict[str, Any]] = []

        def done() -> bool:
            for i, m in enumerate(self.inbox):
                if m.get("id") == bid and "method" not in m:
                    found.append(self.inbox.pop(i))
                    return True
            return False

        self.read_until(done, timeout)
        return found[0] if found else None

    def take(self) -> list[Any]:
        out, self.inbox = self.inbox, []
        for m in out:
            if "method" not in m and m.get("id") is not None:
                self.methods.pop(_key(m["id"]), None)
        return out

    def unanswered(self) -> set[bytes]:
        """Ids of requests sent and not answered (in the record or the inbox)."""
        answered = {_key(m["id"]) for m in self.inbox
                    if "method" not in m and m.get("id") is not None}
        return set(self.methods) - answered

    def close(self) -> None:
        self.closed = True
        self.sock.close()


def _key(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS)


# ---------------------------------------------------------------------------------------
# Servers


class Side:
    """One server (ours or the real one) with the harness's own connection to it."""

    def __init__(self, kind: str, workdir: Path, schema_file: Path, db: str,
                 clustered: bool = False) -> None:
        self.kind = kind
        self.workdir = workdir
        self.schema_file = schema_file
        self.db = db
        workdir.mkdir(parents=True, exist_ok=True)
        if clustered:
            # A one-member cluster: the real server keeps a transaction history (for
            # monitor_cond_since) only for clustered databases.
            self.dbfile = str(workdir / "db.db")
            tool = (["ovsdb-tool"] if kind == "real"
                    else [sys.executable, "-m", "pyovsdb", "tool"])
            run([*tool, "create-cluster", self.dbfile, str(schema_file),
                 f"tcp:127.0.0.1:{free_port()}"])
        else:
            self.dbfile = create_db(kind, workdir / "db.db", str(schema_file))
        self.proc = ServerProcess(kind, workdir, [self.dbfile], name="db")
        self.proc.start()
        self.admin = Conn(self.proc.sock)
        self.n_id = 0

    def alive(self) -> bool:
        p = self.proc.proc
        return p is not None and p.poll() is None

    def wait_exit(self, timeout: float = 3.0) -> bool:
        """Whether the server process exits within `timeout` (after it dropped us)."""
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()
        self.admin = Conn(self.proc.sock)

    def restart(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()
        self.proc.stop()
        self.proc.start()
        self.admin = Conn(self.proc.sock)

    def connect(self) -> Conn:
        return Conn(self.proc.sock)

    def call(self, method: str, params: list[Any]) -> dict[str, Any]:
        """A request on the admin connection; returns the reply message."""
        self.n_id += 1
        mid = f"admin{self.n_id}"
        self.admin.send({"method": method, "params": params, "id": mid})
        return self.wait_admin(mid)

    def send_admin(self, method: str, params: list[Any]) -> str:
        self.n_id += 1
        mid = f"admin{self.n_id}"
        self.admin.send({"method": method, "params": params, "id": mid})
        return mid

    def wait_admin(self, mid: str) -> dict[str, Any]:
        got: list[dict[str, Any]] = []

        def done() -> bool:
            for i, m in enumerate(self.admin.inbox):
                if m.get("id") == mid:
                    got.append(self.admin.inbox.pop(i))
                    return True
            return False

        self.admin.read_until(done, READ_TIMEOUT)
        if not got:
            raise Closed(f"{self.kind} server closed the admin connection")
        return got[0]

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()
        self.proc.stop()


class ServerPair:
    """Our server and the real one on the same schema."""

    def __init__(self, schema: str, workdir: Path, clustered: bool = False) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.clustered = clustered
        schema_file = SCHEMA_FILES[schema](workdir)
        js = json.loads(Path(schema_file).read_text())
        self.schema = SchemaInfo(js["name"], js)
        self.sides: dict[str, Side] = {}
        try:
            for kind in ("ours", "real"):
                self.sides[kind] = Side(kind, workdir / kind, Path(schema_file), js["name"],
                                        clustered)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for side in self.sides.values():
            side.stop()

    def reset(self) -> None:
        """Empty every table (and bring back a server that died in the last case)."""
        ops = [{"op": "delete", "table": t, "where": []} for t in self.schema.tables()]
        for side in self.sides.values():
            if not side.alive():
                side.restart()
        mids = {k: s.send_admin("transact", [self.schema.db, *ops])
                for k, s in self.sides.items()}
        for k, s in self.sides.items():
            r = s.wait_admin(mids[k])
            res = r.get("result")
            if not isinstance(res, list) or any(
                    isinstance(x, dict) and "error" in x for x in res):
                raise AssertionError(f"{k}: resetting the database failed: {r}")
            s.admin.take()

    def dump(self) -> dict[str, str]:
        """Send a dump request to both; returns the request ids."""
        ops = [{"op": "select", "table": t, "where": []} for t in self.schema.tables()]
        return {k: s.send_admin("transact", [self.schema.db, *ops])
                for k, s in self.sides.items()}


# ---------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    schema: str
    steps: list[dict[str, Any]]
    setup: list[list[Any]] = field(default_factory=list)
    intended: list[str] = field(default_factory=list)
    note: str = ""
    file: str = ""
    # A difference that is a bug of ours in code outside the engine and the server
    # methods, not fixed yet: the case is expected to fail (strictly) until it is.
    known_bug: str = ""
    # Made from a recording (real_traffic.py): connections open at their first step,
    # and placeholders in requests are resolved on each server.
    recorded: bool = False
    # Served from a one-member cluster (the real server keeps a transaction history).
    clustered: bool = False
    # Recorded cases: per connection, the rows (placeholder names) it heard of.
    recorded_seen: dict[str, list[str]] = field(default_factory=dict)

    @staticmethod
    def from_json(js: dict[str, Any], file: str) -> Case:
        unknown = set(js) - {"name", "schema", "setup", "steps", "intended", "note",
                             "known_bug", "recorded", "recording", "clustered",
                             "recorded_seen"}
        if unknown:
            raise ValueError(f"{file}: case {js.get('name')}: unknown members {unknown}")
        return Case(js["name"], js.get("schema", "T"), js["steps"], js.get("setup", []),
                    js.get("intended", []), js.get("note", ""), file,
                    js.get("known_bug", ""), bool(js.get("recorded", False)),
                    bool(js.get("clustered", False)), js.get("recorded_seen", {}))


def load_cases(directory: Path = CASES_DIR) -> list[Case]:
    """Every case of every file. A file may name setups shared by its cases
    (`"setups": {name: [transaction, ...]}`); a case then gives the name as its setup."""
    cases = []
    names: set[str] = set()
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        setups = data.get("setups", {})
        for js in data["cases"]:
            if isinstance(js.get("setup"), str):
                js = {**js, "setup": setups[js["setup"]]}
            case = Case.from_json(js, path.name)
            if case.name in names:
                raise ValueError(f"{path.name}: duplicate case name {case.name}")
            names.add(case.name)
            cases.append(case)
    return cases


@dataclass
class StepRecord:
    """What one server sent during one step: messages per connection, and the dump."""

    messages: dict[str, list[Any]]
    dump: Any
    died: bool = False


@dataclass
class Record:
    steps: list[StepRecord] = field(default_factory=list)
    # Per connection: request ids named by `cancel` notifications.
    canceled: dict[str, set[bytes]] = field(default_factory=dict)
    # Cases with placeholders: the server's UUIDs by placeholder name (real_traffic).
    names: dict[str, str] = field(default_factory=dict)


def step_request(step: dict[str, Any], db: str, auto_id: int) -> dict[str, Any] | None:
    """The JSON-RPC message a step sends (None for raw/close/await/sleep steps)."""
    if "transact" in step:
        return {"method": "transact", "params": [db, *step["transact"]], "id": auto_id}
    if "request" in step:
        msg = dict(step["request"])
        if "id" not in msg:
            msg["id"] = auto_id
        return msg
    return None


STEP_KEYS = {"conn", "transact", "request", "raw", "partial", "close", "await", "sleep_ms",
             "recorded_reply"}


def case_connections(case: Case) -> list[str]:
    names: list[str] = []
    for st in case.steps:
        unknown = set(st) - STEP_KEYS
        if unknown:
            raise ValueError(f"case {case.name}: unknown step members {unknown}")
        c = st.get("conn", "a")
        if c not in names:
            names.append(c)
    return names


def case_lock_names(case: Case) -> set[str]:
    out = set()
    for st in case.steps:
        req = st.get("request")
        if isinstance(req, dict) and req.get("method") in ("lock", "steal") and \
                isinstance(req.get("params"), list) and req["params"] and \
                isinstance(req["params"][0], str):
            out.add(req["params"][0])
    return out


class LiveRun:
    """A case run step by step on both servers: the corpus runs a case's steps in a row,
    the generator decides each step after looking at the last one (`last_dump`)."""

    def __init__(self, pair: ServerPair, case: Case, conn_names: list[str] | None = None
                 ) -> None:
        self.pair = pair
        self.case = case
        db = pair.schema.db
        pair.reset()
        self.records = {k: Record() for k in pair.sides}
        # Setup: on the admin connection, compared like any step.
        setup_msgs: dict[str, list[Any]] = {k: [] for k in pair.sides}
        for j, txn in enumerate(case.setup):
            mids = {k: s.send_admin("transact", [db, *txn]) for k, s in pair.sides.items()}
            for k, s in pair.sides.items():
                setup_msgs[k].append({**s.wait_admin(mids[k]), "id": f"setup{j}"})
        dumps = pair.dump()
        for k, s in pair.sides.items():
            self.records[k].steps.append(StepRecord({"setup": setup_msgs[k]},
                                                    s.wait_admin(dumps[k]).get("result")))
        names = conn_names if conn_names is not None else case_connections(case)
        if case.recorded:
            names = []
        self.conns = {k: {n: s.connect() for n in names} for k, s in pair.sides.items()}
        # Recorded cases: each server's names for the UUIDs it chose, and the method of
        # each request sent, by (connection, id).
        self.births = {k: Births(request_uuids(case)) for k in pair.sides}
        for k, b in self.births.items():
            self.records[k].names = b.by_uuid  # filled as the case runs
        self.sent: dict[tuple[str, bytes], str] = {}
        # Placeholders (<u1>, <t1>, ...) stand for UUIDs and transaction ids a server
        # chose: recorded cases, and hand-written ones that resume monitors.
        self.resolve = case.recorded or bool(PLACEHOLDER_RE.search(json.dumps(case.steps)))

    def step(self, st: dict[str, Any]) -> None:
        """Run `st`, the next step of the case (appended to it if it is not there)."""
        n = len(self.records["ours"].steps)
        if len(self.case.steps) < n:
            self.case.steps.append(st)
        if not self.resolve:
            _run_step(self.pair, self.conns, self.records, st, n)
            return
        cname = st.get("conn", "a")
        for k, side in self.pair.sides.items():
            if cname not in self.conns[k]:
                self.conns[k][cname] = side.connect()
        msg = step_request(st, self.pair.schema.db, n)
        if msg is not None and msg.get("id") is not None:
            self.sent[(cname, _key(msg["id"]))] = str(msg.get("method"))
        _run_step(self.pair, self.conns, self.records, st, n, self.births)
        names = case_connections(self.case)
        # A reply the recorded client never got (its connection was cut first) names
        # nothing: the recording could not name what it inserted.
        unheard = ((cname, _key(msg["id"])) if msg is not None and msg.get("id") is not None
                   and st.get("recorded_reply") == "none" else None)
        for k in self.pair.sides:
            got = self.records[k].steps[-1].messages
            pairs = []
            others = []
            for c in sorted(got, key=lambda c: names.index(c) if c in names else len(names)):
                for m in got[c]:
                    if isinstance(m, dict) and "method" not in m and m.get("id") is not None \
                            and self.sent.get((c, _key(m["id"]))) == "transact":
                        if (c, _key(m["id"])) == unheard:
                            continue
                        pairs.append(({"method": "transact"}, m))
                    if isinstance(m, dict) and m.get("method") != "echo":
                        others.append(m)
            self.births[k].step(pairs, others)

    def last_dump(self, kind: str = "real") -> Any:
        return self.records[kind].steps[-1].dump

    def finish(self) -> None:
        _finish(self.pair, self.conns, self.case)


def run_case(pair: ServerPair, case: Case) -> dict[str, Record]:
    """Run `case` on both servers; return each server's record. Step 0 of a record is
    the setup transactions (on the harness connection)."""
    run = LiveRun(pair, case)
    try:
        for st in case.steps:
            run.step(st)
    finally:
        run.finish()
    STATS["corpus steps"] += len(case.steps)
    return run.records


def _run_step(pair: ServerPair, conns: dict[str, dict[str, Conn]],
              records: dict[str, Record], st: dict[str, Any], auto_id: int,
              births: dict[str, Births] | None = None) -> None:
    cname = st.get("conn", "a")
    db = pair.schema.db
    msg0 = step_request(st, db, auto_id)
    for k in pair.sides:
        c = conns[k][cname]
        msg = msg0
        if msg is not None and births is not None:
            missing: list[str] = []
            msg = births[k].resolve(msg, missing)
            if missing:
                c.inbox.append({"__unresolved__": sorted(set(missing))})
        if msg is not None:
            if msg.get("id") is None and msg.get("method") == "cancel" and \
                    isinstance(msg.get("params"), list) and msg["params"]:
                records[k].canceled.setdefault(cname, set()).add(_key(msg["params"][0]))
            c.send(msg)
        elif "raw" in st:
            c.send_bytes(st["raw"].encode())
        elif st.get("close"):
            c.close()
    if "sleep_ms" in st:
        time.sleep(st["sleep_ms"] / 1000)
    if st.get("await"):
        for k in pair.sides:
            c = conns[k][cname]
            with contextlib.suppress(TimeoutError):
                c.read_until(lambda c=c: not c.unanswered() or c.closed, AWAIT_TIMEOUT)
    if pair.clustered and msg0 is not None and msg0.get("id") is not None:
        # A clustered server answers a read-only request at once but a write only once
        # its log entry is committed: the barrier could overtake the step's reply.
        for k in pair.sides:
            c = conns[k][cname]
            want = _key(msg0["id"])
            with contextlib.suppress(TimeoutError):
                c.read_until(lambda c=c, want=want: want not in c.unanswered() or c.closed,
                             CLUSTER_REPLY_WAIT)
    # The step's connection first: a dump request on it (a barrier that also reads the
    # database) comes back after the step's own reply; then barriers on the others.
    order = [cname] + [n for n in conns["ours"] if n != cname]
    dump_ops = [db, *[{"op": "select", "table": t, "where": []} for t in pair.schema.tables()]]
    dumps: dict[str, Any] = {}
    pending: dict[tuple[str, str], str] = {}
    for k in pair.sides:
        c = conns[k][cname]
        if not c.closed and not st.get("partial"):
            pending[(k, cname)] = c.barrier("transact", dump_ops)
    _wait_all(conns, pending, dumps)
    pending = {}
    for k in pair.sides:
        for n in order[1:]:
            c = conns[k][n]
            if not c.closed:
                pending[(k, n)] = c.barrier()
    _wait_all(conns, pending, None)
    for k, side in pair.sides.items():
        dump = dumps.get(k)
        died = False
        if dump is None:
            died = not side.alive()
            if not died:
                try:
                    dump = side.wait_admin(side.send_admin("transact", dump_ops)).get("result")
                except Closed:
                    died = side.wait_exit(1.0)
                    if not died:  # it dropped every client but lives on: look again
                        try:
                            side.reconnect()
                            dump = side.wait_admin(
                                side.send_admin("transact", dump_ops)).get("result")
                        except (OSError, Closed):  # no: it was dying (slowly)
                            died = side.wait_exit(10.0)
                            if not died:
                                raise
        msgs = {n: conns[k][n].take() for n in order}
        records[k].steps.append(StepRecord(msgs, dump, died))


def _wait_all(conns: dict[str, dict[str, Conn]], pending: dict[tuple[str, str], str],
              results: dict[str, Any] | None) -> None:
    """Wait for the replies to barrier requests; keep the (dump) results if asked."""
    for (k, n), bid in pending.items():
        c = conns[k][n]
        try:
            reply = c.wait_barrier(bid)
        except TimeoutError:
            # Recorded (and compared) rather than raised: a server that hangs is a
            # difference like any other.
            c.inbox.append({"__no_barrier_reply__": True})
            continue
        if results is not None and reply is not None:
            results[k] = reply.get("result")


def _finish(pair: ServerPair, conns: dict[str, dict[str, Conn]], case: Case) -> None:
    """Release what the case's sessions hold (blocked waits, locks), prove it with a
    round trip, then close them."""
    locks = sorted(case_lock_names(case))
    for k, side in pair.sides.items():
        if not side.alive():
            for c in conns[k].values():
                with contextlib.suppress(Exception):
                    c.close()
            continue
        bids = {}
        for n, c in conns[k].items():
            if c.closed:
                continue
            for mid in list(c.methods):
                c.send_bytes(b'{"method":"cancel","params":[' + mid + b'],"id":null}')
            for lk in locks:
                c.send({"method": "unlock", "params": [lk], "id": f"__unlock__{lk}"})
            bids[n] = c.barrier()
        for n, bid in bids.items():
            with contextlib.suppress(TimeoutError):
                conns[k][n].wait_barrier(bid)
        for c in conns[k].values():
            with contextlib.suppress(Exception):
                c.close()


# ---------------------------------------------------------------------------------------
# Comparison


@dataclass
class Difference:
    step: int  # 0 = setup
    where: str  # connection name or "dump"
    ours: Any
    real: Any

    def render(self, case: Case | None = None) -> str:
        a = json.dumps(self.real, indent=1, sort_keys=True).splitlines()
        b = json.dumps(self.ours, indent=1, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(a, b, "real", "ours", lineterm="", n=4))
        head = f"step {self.step} ({self.where})"
        if case is not None and self.step > 0:
            head += f": {json.dumps(case.steps[self.step - 1])[:2000]}"
        return f"{head}\n{diff}"


def compare(case: Case, schema: SchemaInfo, rec_ours: Record, rec_real: Record,
            ambiguous: bool = False) -> tuple[list[Difference], Counter[str]]:
    """Differences between the two records that no intended rule explains, and the
    count of intended differences by key."""
    from conformance_intended import apply_rules, check_volatile

    ours = normalize(rec_ours, case, schema)
    real = normalize(rec_real, case, schema)
    diffs: list[Difference] = []
    intended: Counter[str] = Counter()
    for i, (o, r) in enumerate(zip(ours, real, strict=True)):
        if r.died or o.died:
            verdict = apply_rules("died", case, i, o, r, rec_ours, rec_real, schema)
            if verdict is None:
                diffs.append(Difference(i, "process", {"died": o.died}, {"died": r.died}))
            else:
                intended[verdict] += 1
            break
        for what, o_v, r_v in check_volatile(o.volatile, r.volatile, case.clustered):
            if what is None:
                diffs.append(Difference(i, "volatile", o_v, r_v))
            else:
                intended[what] += 1
        for where in [*o.messages, "dump"]:
            ov = o.dump if where == "dump" else o.messages.get(where)
            rv = r.dump if where == "dump" else r.messages.get(where)
            if ov == rv:
                continue
            verdict = apply_rules(where, case, i, o, r, rec_ours, rec_real, schema)
            if verdict is not None:
                intended[verdict] += 1
                continue
            if ambiguous:
                from conformance_intended import choice_reason

                reason = choice_reason(ov, rv)
                if reason is not None:
                    intended[reason] += 1
                    continue
            diffs.append(Difference(i, where, ov, rv))
    return diffs, intended
