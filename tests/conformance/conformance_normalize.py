"""Normalization of what a server sent in a conformance case, so that the two servers'
records compare equal exactly where the protocol leaves them free to differ.

Rules kept here:
- Each server's UUIDs (row UUIDs, `_version`s, server ids) are renamed by first
  appearance, except UUIDs the case itself wrote, which must come back verbatim;
  transaction ids are renamed the same way, apart from row UUIDs (a server without a
  history sends the all-zero id, which must not shift the names of rows).
- Reals compare at the 15 significant digits the real server prints.
- Order is normalized only where the protocol leaves it free: rows of a select without
  "sort" (and ties within a sort), rows within a table of an update or a monitor reply,
  members of sets/maps of UUIDs (ordered by value, which is random), the order of update
  notifications of different monitors flushed together, and the "First row"/"Second
  row" of an index violation.
- The elapsed time in a wait timeout message is measured: it is taken out (`volatile`)
  and compared within a few milliseconds by conformance_intended.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from conformance_harness import Case, Record, SchemaInfo

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{12}")
UUID_FULL = re.compile(UUID_RE.pattern + r"\Z")


def _key(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS)


def norm_number(x: Any) -> Any:
    """Reals as the real server prints them (%.15g); integral values as integers."""
    if type(x) is float:
        y = float(f"{x:.15g}")
        if y.is_integer() and abs(y) < 2**53:
            return int(y)
        return y
    return x


class Namer:
    """Each server's UUIDs renamed by first appearance; the case's own UUIDs (and the
    all-zero UUID) are kept as they are."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.names: dict[str, str] = {}

    def name(self, u: str) -> str:
        lu = u.lower()
        if lu in self.known:
            return u
        n = self.names.get(lu)
        if n is None:
            n = self.names[lu] = f"<u{len(self.names) + 1}>"
        return n

    def mask(self, u: str) -> str:
        lu = u.lower()
        if lu in self.known:
            return u
        return self.names.get(lu, "<?>")

    def mask_text(self, s: str) -> str:
        return UUID_RE.sub(lambda m: self.mask(m.group(0)), s)

    def rename(self, v: Any) -> Any:
        """Replace UUIDs, traversing in canonical order (dict keys sorted)."""
        if type(v) is str:
            if UUID_FULL.match(v):
                return self.name(v)
            if UUID_RE.search(v):
                return UUID_RE.sub(lambda m: self.name(m.group(0)), v)
            return v
        if type(v) is list:
            return [self.rename(x) for x in v]
        if type(v) is dict:
            return {k: self.rename(v[k]) for k in sorted(v)}
        return v

    def key(self, v: Any) -> str:
        """Sort key of a value with unknown UUIDs masked."""
        return self.mask_text(json.dumps(v, sort_keys=True))


def _has_uuid(elems: list[Any]) -> bool:
    """Whether the members of a set (atoms) or map (pairs) hold UUIDs: a UUID atom is
    the only atom that is a JSON array."""
    for e in elems:
        if type(e) is list and (e[:1] == ["uuid"] or any(type(x) is list for x in e)):
            return True
    return False


_INDEX_RE = re.compile(
    r"(?P<head>Transaction causes multiple rows in .* for index on .*?\.)  "
    r"First row, (?P<a>with UUID \S+, .*?)  Second row, (?P<b>with UUID \S+, .*)\Z", re.S)


_WAIT_RE = re.compile(r'"wait" timed out after (\d+) ms\Z')


class Normalizer:
    def __init__(self, known: set[str], schema: SchemaInfo) -> None:
        self.namer = Namer(known)
        self.schema = schema
        # (what, value) pairs taken out of the messages, checked by intended rules.
        self.volatile: list[tuple[str, Any]] = []
        # Transaction ids are named apart from row UUIDs: a server without a history
        # sends the all-zero id, which must not shift the names of rows.
        self.txn_names = Namer(known)

    def txn_id(self, v: Any) -> Any:
        """A transaction id named by first appearance (the all-zero id kept)."""
        return self.txn_names.name(v) if type(v) is str and UUID_FULL.match(v) else v

    # -- values ----------------------------------------------------------------------

    def value(self, v: Any) -> Any:
        """Numbers normalized; sets and maps of UUIDs in a canonical order."""
        t = type(v)
        if t is float:
            return norm_number(v)
        if t is list:
            out = [self.value(x) for x in v]
            if len(out) == 2 and out[0] in ("set", "map") and type(out[1]) is list and \
                    _has_uuid(out[1]):
                out[1] = sorted(out[1], key=self.namer.key)
            return out
        if t is dict:
            return {k: self.value(x) for k, x in v.items()}
        if t is str and v.startswith("Transaction causes multiple rows"):
            return self.index_message(v)
        if t is str and v.startswith('"wait" timed out after '):
            m = _WAIT_RE.match(v)
            if m:
                self.volatile.append(("wait-elapsed", int(m.group(1))))
                return '"wait" timed out after <elapsed> ms'
        return v

    def index_message(self, s: str) -> str:
        m = _INDEX_RE.match(s)
        if m is None:
            return s
        a, b = sorted((m.group("a"), m.group("b")), key=self.namer.mask_text)
        return f"{m.group('head')}  First row, {a}  Second row, {b}"

    def rows(self, rows: list[Any], sort: list[str] | None = None) -> list[Any]:
        rows = [self.value(r) for r in rows]
        if not sort:
            return sorted(rows, key=self.namer.key)
        out: list[Any] = []
        group: list[Any] = []
        prev: Any = object()
        for r in rows:
            k = [r.get(c) for c in sort] if type(r) is dict else r
            if k != prev and group:
                out.extend(sorted(group, key=self.namer.key))
                group = []
            group.append(r)
            prev = k
        out.extend(sorted(group, key=self.namer.key))
        return out

    def table_updates(self, tu: Any) -> Any:
        """{table: {uuid: row-update}} -> {table: [[uuid, row-update], ...]} sorted."""
        if type(tu) is not dict:
            return self.value(tu)
        out = {}
        for t, rows in tu.items():
            if type(rows) is not dict:
                out[t] = self.value(rows)
                continue
            pairs = [[u, self.value(r)] for u, r in rows.items()]
            out[t] = sorted(pairs, key=self.namer.key)
        return out

    # -- messages --------------------------------------------------------------------

    def message(self, msg: Any, method: str | None, request: Any) -> Any:
        if "__closed__" in msg:
            return {"closed": True}
        if "__no_barrier_reply__" in msg:
            return {"no reply to the barrier request": True}
        if "__unresolved__" in msg:
            return {"placeholders no reply of this server named": msg["__unresolved__"]}
        if "method" in msg:
            return self.notification(msg)
        if "result" in msg and msg.get("result") is not None:
            out = dict(msg)
            out["result"] = self.result(msg["result"], method, request)
            return self.namer.rename(out)
        return self.namer.rename(self.value(msg))

    def notification(self, msg: dict[str, Any]) -> Any:
        method = msg.get("method")
        params = msg.get("params")
        out = dict(msg)
        if method in ("update", "update2") and type(params) is list and len(params) == 2:
            out["params"] = [self.value(params[0]), self.table_updates(params[1])]
        elif method == "update3" and type(params) is list and len(params) == 3:
            self.volatile.append(("txn-id", self.txn_id(params[1])))
            out["params"] = [self.value(params[0]), "<txn-id>", self.table_updates(params[2])]
        else:
            out = self.value(msg)
        return self.namer.rename(out)

    def result(self, res: Any, method: str | None, request: Any) -> Any:
        if method == "transact" and type(res) is list:
            ops = request.get("params", [])[1:] if type(request) is dict else []
            out = []
            for i, r in enumerate(res):
                op = ops[i] if i < len(ops) and type(ops[i]) is dict else {}
                if type(r) is dict and type(r.get("rows")) is list:
                    sort = op.get("sort") if type(op.get("sort")) is list else None
                    out.append({**r, "rows": self.rows(r["rows"], sort)})
                else:
                    out.append(self.value(r))
            return out
        if method in ("monitor", "monitor_cond"):
            return self.table_updates(res)
        if method == "monitor_cond_since" and type(res) is list and len(res) == 3:
            self.volatile.append(("txn-id", self.txn_id(res[1])))
            return [res[0], "<txn-id>", self.table_updates(res[2])]
        if method == "list_dbs" and type(res) is list:
            self.volatile.append(("list_dbs", res))
            return sorted(res, key=str)
        return self.value(res)

    def prename(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        """Name the UUIDs of insert results first: they come in a defined order, while
        the same rows may appear earlier in unordered places (a monitor update)."""
        for m, req in pairs:
            if "method" in m or type(m.get("result")) is not list:
                continue
            if not (type(req) is dict and req.get("method") == "transact"):
                continue
            for r in m["result"]:
                if type(r) is dict and type(r.get("uuid")) is list and len(r["uuid"]) == 2:
                    self.namer.name(str(r["uuid"][1]))

    def dump(self, result: Any) -> Any:
        if type(result) is not list:
            return self.namer.rename(self.value(result))
        out = {}
        for t, r in zip(self.schema.tables(), result, strict=False):
            rows = r.get("rows") if type(r) is dict else None
            out[t] = self.rows(rows) if type(rows) is list else self.value(r)
        return self.namer.rename(out)


def _sort_update_runs(msgs: list[Any]) -> list[Any]:
    """Update notifications of different monitors flushed together come in hash order
    from the real server: order each run of consecutive ones by monitor id (stably)."""
    out: list[Any] = []
    run: list[Any] = []
    for m in [*msgs, None]:
        if m is not None and type(m) is dict and m.get("method") in ("update", "update2",
                                                                   "update3"):
            run.append(m)
            continue
        if run:
            out.extend(sorted(run, key=lambda x: json.dumps(x["params"][0], sort_keys=True)))
            run = []
        if m is not None:
            out.append(m)
    return out


def request_uuids(case: Case) -> set[str]:
    """UUIDs that appear in the case's own requests, lowercased."""
    text = json.dumps([case.setup, case.steps])
    return {m.group(0).lower() for m in UUID_RE.finditer(text)} | {ZERO_UUID}


@dataclass
class NormStep:
    messages: dict[str, list[Any]]
    dump: Any
    died: bool
    volatile: list[tuple[str, Any]]


def normalize(record: Record, case: Case, schema: SchemaInfo,
              known: set[str] | None = None) -> list[NormStep]:
    norm = Normalizer(request_uuids(case) if known is None else known, schema)
    db = schema.db
    from conformance_harness import step_request

    by_id: dict[tuple[str, bytes], Any] = {}  # (connection, id) -> request
    for j, st in enumerate(case.steps):
        msg = step_request(st, db, j + 1)
        if msg is not None and msg.get("id") is not None:
            by_id.setdefault((st.get("conn", "a"), _key(msg["id"])), msg)
    out = []
    prev_raw: Any = None
    prev_dump: Any = None
    for i, st in enumerate(record.steps):
        tagged: dict[str, list[tuple[Any, Any]]] = {}
        for conn, msgs in st.messages.items():
            pairs = []
            # Before naming anything: names are given in this order.
            msgs = msgs if i == 0 else _sort_update_runs(msgs)
            for j, m in enumerate(msgs):
                if i == 0:
                    req: Any = ({"method": "transact", "params": [db, *case.setup[j]]}
                                if j < len(case.setup) else None)
                elif "method" in m or "__closed__" in m or "__unresolved__" in m:
                    req = None
                else:
                    req = by_id.get((conn, _key(m.get("id"))))
                pairs.append((m, req))
            tagged[conn] = pairs
        norm.volatile = []
        norm.prename(p for pairs in tagged.values() for p in pairs)
        msgs_out = {}
        for conn, pairs in tagged.items():
            msgs_out[conn] = [
                norm.message(m, req.get("method") if type(req) is dict else None, req)
                for m, req in pairs]
        if st.dump is None:
            dump = None
        elif st.dump == prev_raw:  # nothing changed: nothing new to name either
            dump = prev_dump
        else:
            dump = norm.dump(st.dump)
        prev_raw, prev_dump = st.dump, dump
        out.append(NormStep(msgs_out, dump, st.died, norm.volatile))
    return out
