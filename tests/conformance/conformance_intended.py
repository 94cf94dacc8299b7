"""The intended differences from ovsdb-server 3.1, machine-readable: one entry per row of
the table in docs/compat.md (the `area` is that row's first cell, verbatim; a test keeps
the two in step), with how the conformance harness deals with it.

Rules kept here:
- `normalized`: the harness's normalization already makes both servers' output equal
  (object member order, reals, random UUIDs).
- `rule`: a difference is accepted only where the entry's rule recognises exactly the
  documented behaviour on both sides. Rules marked `case_only` apply only to cases that
  declare the key in their "intended" list: they excuse more than a single value (the
  real server crashing, or keeping a dangling reference) and must not hide anything in
  other cases.
- `not observable`: concerns the control socket, storage or startup, not a JSON-RPC
  conversation; checked elsewhere (tests/interop) or not at all.
Whatever no rule explains is a difference, and fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance_harness import Case, NormStep, Record, SchemaInfo

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
WAIT_JITTER_MS = 20


@dataclass(frozen=True)
class Intended:
    area: str  # first cell of the row in docs/compat.md
    handling: str  # "rule", "normalized", "not observable"
    reason: str
    case_only: bool = False
    # The real server's behaviour is undefined there (it reads past the end of an
    # array): usually a crash, not always, so a case may show no difference.
    real_undefined: bool = False


INTENDED: dict[str, Intended] = {
    "monitor_cond_since_history": Intended(
        "`monitor_cond_since` on a standalone database", "rule",
        "the real server answers found=false with the all-zero last id and sends update3 "
        "with the all-zero id; ours gives real transaction ids (it keeps a history)"),
    "cancel_reply": Intended(
        "`cancel` notification for a blocked transaction", "rule",
        'ours replies {"error":"canceled"} to the canceled request; the real one never '
        "replies"),
    "weak_refs_cleanup": Intended(
        "weak references cleanup", "rule",
        "the real server leaves a weak reference dangling when the referencing row was "
        "modified earlier in the transaction than the referenced row was deleted",
        case_only=True),
    "mul_overflow_test": Intended(
        "`*=` on an integer when both operands are ≤ 0", "rule",
        "one server reports the *= range error where the other mutates (and the dumps "
        "differ accordingly)", case_only=True),
    "mul_zero_negative": Intended(
        "`*= 0` on a negative integer", "rule",
        "the real server dies of SIGFPE (its overflow test divides by the factor); ours "
        "stores 0", case_only=True),
    "weak_cleanup_version": Intended(
        "a row whose changes are all undone by the weak reference cleanup (a dangling weak "
        "reference added and removed in one transaction)", "rule",
        "only _version values differ", case_only=True),
    "monitor_short_params": Intended(
        "`monitor` with fewer than 3 params", "rule",
        "the real server crashes (or answers at random); ours replies with an error",
        case_only=True, real_undefined=True),
    "cond_monitors_same_columns": Intended(
        "two conditional monitors with the same columns and `select` (on one session or on "
        "several)", "rule",
        "the real server misses row updates (or crashes); every update it sends, ours sends",
        case_only=True),
    "cond_change_untracked_column": Intended(
        "a `monitor_cond_change` that fails after setting a table's condition on a column "
        "the monitor did not read before", "rule",
        "the real server reads that column past the end of its copies of the rows the next "
        "transaction changes: it crashes, or misses changes; every update it sends, ours "
        "sends", case_only=True, real_undefined=True),
    "cond_change_without_where": Intended(
        "`monitor_cond_change` with a request that has no `where`", "rule",
        "the real server crashes", case_only=True),
    "insert_default_constraints": Intended(
        "an insert whose omitted columns' defaults break several constraints", "rule",
        "both report a constraint violation, for a different column", case_only=True),
    "convert_server_db": Intended(
        "`convert` of the `_Server` database", "rule",
        "the real server converts it and drops the connection; ours refuses",
        case_only=True),
    "member_order": Intended(
        "JSON object member order", "normalized", "objects compare as mappings"),
    "reals": Intended(
        "reals", "normalized", "numbers compare at the real server's 15 digits"),
    "random_ids": Intended(
        "`_version` and transaction ids", "normalized",
        "each server's UUIDs are renamed by first appearance"),
    "list_dbs_order": Intended(
        "`list_dbs` order", "rule", "the list is compared as a set"),
    "appctl_version": Intended(
        "`ovs-appctl version`", "not observable", "control socket"),
    "memory_show": Intended("`memory/show`", "not observable", "control socket"),
    "compaction": Intended("online compaction trigger", "not observable", "storage"),
    "ssl": Intended("TLS listeners (`pssl:PORT[:IP]`)", "not observable",
                    "TLS (tests/interop/test_tls.py)"),
    "ssl_unsupported": Intended("`--bootstrap-ca-cert`, `--peer-ca-cert`", "not observable",
                                "startup"),
    "record_replay": Intended("`--record`, `--replay`", "not observable", "startup"),
    "relays": Intended("relays (`relay:DB:REMOTE[,REMOTE...]`)", "not observable",
                       "relays (tests/interop/test_relay.py)"),
    "replication": Intended("active-backup replication (`--sync-from`)", "not observable",
                            "replication (tests/interop/test_replication.py)"),
    "ssl_clients": Intended("`ssl:` in `pyovsdb client`, the IDL and `pyovsdb northd`",
                            "not observable", "TLS (tests/interop/test_tls.py)"),
    "active_remotes": Intended(
        "active remotes (`tcp:`, `unix:`, `ssl:` as `--remote` or a Connection/Manager "
        "target)", "not observable", "active remotes "
        "(tests/interop/test_active_remotes.py)"),
    "db_remote_runtime_change": Intended(
        "a `db:` remote's `read_only` or `role` changed at run time", "not observable",
        "db: remotes (tests/interop/test_rbac_read_only.py)"),
    "convert_read_only": Intended(
        "`convert` from a read-only session", "not observable",
        "db: remotes (tests/interop/test_rbac_read_only.py)"),
    "unknown_table_record": Intended(
        "a database file with a record naming an unknown table", "not observable",
        "storage (tests/interop/test_storage_fidelity.py)"),
    "cluster_sigterm_handover": Intended(
        "a clustered member stopped by SIGTERM", "not observable", "cluster"),
    "raft_is_connected_log": Intended(
        "`raft_is_connected` debug line", "not observable", "log"),
    "tool_comment": Intended(
        "the `_comment` of a record written by the tool (`compact`, `convert`)",
        "not observable", "storage"),
    "storage_failure": Intended(
        "a storage write failure (disk full)", "not observable", "storage"),
    # Clustered databases: the corpus runs standalone servers; tests/cluster covers these.
    "cluster_group_commit": Intended(
        "clustered: transactions that arrive while earlier ones are being committed",
        "not observable", "cluster"),
    "cluster_leader_fairness": Intended(
        "clustered: a leader whose own clients wait while followers' forwarded "
        "transactions keep arriving", "not observable", "cluster"),
    "cluster_kick_unknown": Intended(
        "`cluster/kick` with a name that matches no server", "not observable", "cluster"),
}


def compat_areas(text: str) -> list[str]:
    """First cells of the rows of the "Intended differences" table in compat.md."""
    out = []
    in_section = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## Intended differences"
            continue
        if not in_section or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("area", "") or set(cells[0]) <= {"-"}:
            continue
        out.append(cells[0])
    return out


# ---------------------------------------------------------------------------------------
# Rules


def check_volatile(ours: list[tuple[str, Any]], real: list[tuple[str, Any]],
                   clustered: bool = False) -> Iterator[tuple[str | None, Any, Any]]:
    """Values the normalizer took out of the messages: yields (key or None, ours, real)
    for each pair that differs; None means an unexplained difference.

    Transaction ids come named by first appearance (each server's own), so where both
    servers keep a history (a clustered database) they compare exactly: the same
    transaction, the same name. Only where the real server has none (standalone: it
    always says all-zero) may ours give a real id, one of its own names."""
    if [w for w, _ in ours] != [w for w, _ in real]:
        yield None, ours, real
        return
    for (what, o), (_, r) in zip(ours, real, strict=True):
        if o == r:
            continue
        if what == "wait-elapsed" and abs(o - r) <= WAIT_JITTER_MS:
            continue  # measured time, not a difference
        if what == "txn-id" and not clustered and r == ZERO_UUID and isinstance(o, str) \
                and re.fullmatch(r"<u\d+>", o):
            yield "monitor_cond_since_history", o, r
        elif what == "list_dbs" and sorted(o, key=str) == sorted(r, key=str):
            yield "list_dbs_order", o, r
        else:
            yield None, o, r


def _multiplies_by_zero(case: Case, step: int) -> bool:
    """Whether the request of record step `step` (step 0 is the setup) mutates a column
    with `*= 0`: the one request that kills the real server in `mul_zero_negative`."""
    if not 0 < step <= len(case.steps):
        return False
    ops = case.steps[step - 1].get("transact")
    return isinstance(ops, list) and any(
        isinstance(op, dict) and op.get("op") == "mutate"
        and any(isinstance(m, list) and m[1:] == ["*=", 0] for m in op.get("mutations", []))
        for op in ops)


def apply_rules(where: str, case: Case, step: int, o: NormStep, r: NormStep,
                rec_ours: Record, rec_real: Record, schema: SchemaInfo) -> str | None:
    """The key of the intended difference that explains why `where` differs in this
    step, or None."""
    declared = set(case.intended)
    if where == "died":
        if r.died and not o.died and "mul_zero_negative" in declared and \
                _multiplies_by_zero(case, step):
            return "mul_zero_negative"
        if r.died and not o.died:
            for key in ("monitor_short_params", "cond_monitors_same_columns",
                        "cond_change_without_where", "cond_change_untracked_column"):
                if key in declared:
                    return key
        return None
    if "mul_overflow_test" in declared and all(
            _mul_masked(o.messages.get(c)) == _mul_masked(r.messages.get(c))
            for c in o.messages):
        return "mul_overflow_test"
    if "weak_cleanup_version" in declared:
        ov = o.dump if where == "dump" else o.messages.get(where)
        rv = r.dump if where == "dump" else r.messages.get(where)
        if _versions_masked(ov) == _versions_masked(rv):
            return "weak_cleanup_version"
    if where == "dump":
        if "weak_refs_cleanup" in declared and o.dump == drop_dangling_weak_refs(r.dump,
                                                                                 schema):
            return "weak_refs_cleanup"
        return None
    if "monitor_short_params" in declared and where != "dump" and \
            _only_invalid_parameters(o.messages.get(where)):
        return "monitor_short_params"
    if "convert_server_db" in declared and where != "dump" and \
            o.messages.get(where) == [_NOT_ALLOWED_SERVER] and \
            r.messages.get(where) in ([{"closed": True}],
                                      [{"error": None, "id": 1, "result": {}}, {"closed": True}]):
        return "convert_server_db"  # (the real server may close before its reply is out)
    if "insert_default_constraints" in declared and \
            _violations_masked(o.messages.get(where)) == _violations_masked(
                r.messages.get(where)):
        return "insert_default_constraints"
    for key in ("cond_monitors_same_columns", "cond_change_untracked_column"):
        if key in declared and \
                _updates_subset(r.messages.get(where, []), o.messages.get(where, [])):
            return key
    canceled = rec_ours.canceled.get(where, set())
    if canceled:
        import orjson

        kept = [m for m in o.messages.get(where, [])
                if not (isinstance(m, dict) and m.get("error") == "canceled"
                        and orjson.dumps(m.get("id"), option=orjson.OPT_SORT_KEYS)
                        in canceled)]
        if kept != o.messages.get(where) and kept == r.messages.get(where):
            return "cancel_reply"
    return None


def _only_invalid_parameters(msgs: Any) -> bool:
    return (isinstance(msgs, list) and len(msgs) == 1 and isinstance(msgs[0], dict)
            and isinstance(msgs[0].get("error"), dict)
            and msgs[0]["error"].get("details") == "invalid parameters")


_NOT_ALLOWED_SERVER = {"error": {"details": "cannot convert _Server", "error": "not allowed"},
                       "id": 1}


_UPDATES = ("update", "update2", "update3")


def _row_updates(msgs: list[Any]) -> list[Any]:
    out = []
    for m in msgs:
        if isinstance(m, dict) and m.get("method") in _UPDATES:
            mon_id, tables = m["params"][0], m["params"][-1]
            for t, rows in tables.items():
                out += [[mon_id, t, row] for row in rows]
    return out


def _updates_subset(real: list[Any], ours: list[Any]) -> bool:
    """Apart from update notifications the messages are equal, and every row update the
    real server sent, ours sent too."""
    def others(msgs: list[Any]) -> list[Any]:
        return [m for m in msgs if not (isinstance(m, dict) and m.get("method") in _UPDATES)]

    ours_rows = _row_updates(ours)
    return others(real) == others(ours) and all(u in ours_rows for u in _row_updates(real))


def _violations_masked(v: Any) -> Any:
    """`v` with the details of constraint violations left out."""
    if isinstance(v, dict):
        if v.get("error") == "constraint violation":
            return {k: x for k, x in v.items() if k != "details"}
        return {k: _violations_masked(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_violations_masked(x) for x in v]
    return v


_MUL_RANGE = {"details": 'Result of "*=" operation is out of range.', "error": "range error"}


def _mul_masked(v: Any) -> Any:
    """`v` with mutate results and the *= range error made alike."""
    if isinstance(v, dict):
        if v == _MUL_RANGE or set(v) == {"count"}:
            return "<mutate outcome>"
        return {k: _mul_masked(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_mul_masked(x) for x in v]
    return v


def _versions_masked(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: "<version>" if k == "_version" else _versions_masked(x)
                for k, x in v.items()}
    if isinstance(v, list):
        return [_versions_masked(x) for x in v]
    return v


def drop_dangling_weak_refs(dump: Any, schema: SchemaInfo) -> Any:
    """The real server's dump as it should be: weak references only to rows that exist
    (uuids are normalized names or the case's own uuids)."""
    if not isinstance(dump, dict):
        return dump
    exists = {t: {row.get("_uuid", [None, None])[1] for row in rows}
              for t, rows in dump.items() if isinstance(rows, list)}
    out = {}
    for t, rows in dump.items():
        weak = schema.weak_columns(t) if t in schema.json["tables"] else {}
        if not weak or not isinstance(rows, list):
            out[t] = rows
            continue
        new_rows = []
        for row in rows:
            row = dict(row)
            for c, (kt, vt) in weak.items():
                if c in row:
                    row[c] = _drop(row[c], kt, vt, exists)
            new_rows.append(row)
        out[t] = new_rows
    return out


def _alive(atom: Any, table: str | None, exists: dict[str, set[Any]]) -> bool:
    return table is None or (isinstance(atom, list) and atom[1] in exists.get(table, ()))


def _drop(v: Any, kt: str | None, vt: str | None, exists: dict[str, set[Any]]) -> Any:
    if isinstance(v, list) and len(v) == 2 and v[0] == "map":
        return ["map", [p for p in v[1] if _alive(p[0], kt, exists)
                        and _alive(p[1], vt, exists)]]
    if isinstance(v, list) and len(v) == 2 and v[0] == "set":
        kept = [a for a in v[1] if _alive(a, kt, exists)]
        return kept[0] if len(kept) == 1 else ["set", kept]
    if isinstance(v, list) and len(v) == 2 and v[0] == "uuid":
        return v if _alive(v, kt, exists) else ["set", []]
    return v


# ---------------------------------------------------------------------------------------
# Generated transactions only: which violation is reported when there are several.

# The kinds of violation a transaction can commit in several rows (or columns) at once.
# `row` and `col` name the violation a message reports. When both servers name the same
# one, the rest of the message (a count, a limit, the missing row) is determined and
# must be equal. Which one is named first may differ among rows, where the real server
# goes by its hash tables, and among the value constraints of an insert's defaults
# (`insert_default_constraints`). Among the columns of one row the real server goes by
# its column hash order, which is deterministic and which ours follows: a different
# column of the same row is a difference.
CHOICE_KINDS = [re.compile(p + r"\Z", re.S) for p in (
    r"Table \S+ column (?P<col>\S+) (?P<row>row \S+) references nonexistent row \S+ in "
    r"table \S+\.",
    r"cannot delete (?P<row>\S+ row \S+) because of \d+ remaining reference\(s\)",
    r'transaction causes (?P<row>"\S+" table) to contain \d+ rows, greater than the '
    r"schema-defined limit of \d+ row\(s\)",
    r"Deletion of \d+ weak reference\(s\) to deleted \(or never-existing\) rows from "
    r'column (?P<col>"\S+") in (?P<row>"\S+" row \S+) .*',
    r'Weak reference column (?P<col>"\S+") in (?P<row>"\S+" row \S+) \(inserted within '
    r"this transaction\) contained all-zeros UUID .*",
    r'Transaction causes multiple rows in "\S+" table to have identical values .*',
    r".* is not in the valid range .* \(inclusive\)",
    r".* is not one of the allowed values \(.*\)",
    r".* is (less|greater) than (minimum|maximum) allowed value .*",
    r'".*" length \d+ is (less|greater) than (minimum|maximum) allowed length \d+',
    r"Attempted to store \d+ elements in .*",
)]


_VALUE_KINDS = range(6, 10)  # a value outside its column's range, enum or length
# A weak reference column left empty has two texts, by whether the refs removed from an
# inserted row include the all-zeros UUID: one kind of violation, so between two rows
# they are a choice among rows (the real server goes by its txn row hash table).
_WEAK_EMPTY = (3, 4)

CHOICE_ROWS = "(choice among several violations)"


def _kind(details: str) -> tuple[int, str | None, str | None] | None:
    """(kind, row, column) of a violation message, or None for any other message."""
    for i, rx in enumerate(CHOICE_KINDS):
        m = rx.match(details)
        if m:
            g = m.groupdict()
            # An insert checks the defaults of all its columns: which column's value
            # constraint is reported first follows the real column hash order.
            kind = _VALUE_KINDS[0] if i in _VALUE_KINDS else \
                _WEAK_EMPTY[0] if i in _WEAK_EMPTY else i
            return kind, g.get("row"), g.get("col")
    return None


def _choice(o: Any, r: Any, why: set[str]) -> bool:
    """Whether `o` and `r` are equal but for choices among violations (added to `why`)."""
    if type(o) is not type(r):
        return False
    if isinstance(o, list):
        return len(o) == len(r) and all(_choice(a, b, why) for a, b in zip(o, r, strict=True))
    if not isinstance(o, dict):
        return bool(o == r)
    if set(o) != set(r):
        return False
    for k in o:
        a, b = o[k], r[k]
        if k == "details" and isinstance(a, str) and isinstance(b, str) and a != b \
                and "error" in o and "syntax" not in o:
            ka, kb = _kind(a), _kind(b)
            if ka is None or kb is None or ka[0] != kb[0]:
                return False
            if ka[0] == _VALUE_KINDS[0]:
                why.add("insert_default_constraints")
            elif ka[1] is not None and ka[1] == kb[1]:
                return False  # the same row: the column and the rest are determined
            else:
                why.add(CHOICE_ROWS)
            continue
        if not _choice(a, b, why):
            return False
    return True


def choice_reason(ours: Any, real: Any) -> str | None:
    """Why `ours` and `real` differ, if only in which of several violations of one kind
    an error names (None if they differ otherwise). When a transaction breaks a rule in
    several rows (or columns), the real server reports the first it meets; the kind is
    deterministic, and so is everything the message says about the violation it names.
    (Used for generated transactions only; the corpus has one candidate per case.)"""
    why: set[str] = set()
    if not _choice(ours, real, why) or not why:
        return None
    for key in ("insert_default_constraints", CHOICE_ROWS):
        if key in why:
            return key
    return None


def same_modulo_choice(ours: Any, real: Any) -> bool:
    return choice_reason(ours, real) is not None
