"""Random transactions on the every-type schema, run on our server and the real
ovsdb-server 3.1 one at a time and compared: results, the notifications of three
monitors (update, update2, update3) on a second connection, and a dump after each one.

Rules kept here:
- Seeded and derandomized: every run generates the same transactions. A second,
  smaller run draws new ones each time from a seed printed in the summary (and in a
  failure); `CONFORMANCE_SEED=N` draws the same again. Each example is
  a batch of `TXNS_PER_EXAMPLE` transactions on one freshly emptied database, so the
  servers are started once for the module and the per-transaction cost is a few round
  trips.
- Each transaction is drawn after looking at the database the previous one left (the
  real server's dump), so most operations hit existing rows, references point at rows
  that exist (or deliberately do not), and errors are a minority.
- Two behaviours of the real server that docs/compat.md lists as intended differences
  are steered around rather than excused: a transaction deletes `B` rows (by uuid)
  before it writes anything else, so the real server's order-dependent weak-reference
  cleanup does not leave dangling references; and weak references written into existing
  rows point at `B` rows that stay (not deleted before or after in the transaction), so
  no row's only change is undone by that cleanup.
  `*=` uses factors 0 to 3 (the real overflow test is wrong for two negatives); a
  factor 0 kills the real server when the value is negative, which `mul_zero_negative`
  recognises.
- When a transaction breaks a rule in several rows at once, which violation is reported
  follows the real server's hash order: only the kind of error is compared then
  (`conformance_intended.same_modulo_choice`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conformance_harness import STATS, Case, LiveRun, ServerPair, compare, random_seed, seed_hint
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from procs import require

pytestmark = pytest.mark.interop

EXAMPLES = 100
RANDOM_EXAMPLES = 15  # about 10 s: fresh draws on every run, on top of the fixed ones
TXNS_PER_EXAMPLE = 30
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def U(prefix: str, n: int) -> str:
    return f"{prefix}-0000-0000-0000-{n:012d}"


POOL = {
    "A": [U("aaaaaaaa", n) for n in range(1, 6)],
    "B": [U("bbbbbbbb", n) for n in range(1, 5)],
    "N": [U("dddddddd", n) for n in range(1, 5)],
    "C": [U("cccccccc", n) for n in range(1, 4)],
    "W": [U("eeeeeeee", n) for n in range(1, 3)],
    "WS": [U("eeeeeeee", n) for n in range(3, 5)],
    "I2": [U("ffffffff", n) for n in range(1, 4)],
    "I3": [U("ffffffff", n) for n in range(4, 7)],
}
PLAIN_UUIDS = [U("99999999", n) for n in range(1, 4)] + ["00000000-0000-0000-0000-000000000000"]
MISSING_B = U("bbbbbbbb", 99)  # never a row

INTS = [-2, -1, 0, 1, 2, 3, 7]
EXTREME_INTS = [INT_MAX, INT_MIN, INT_MAX - 1]
REALS = [0.0, 0.5, -1.5, 2.0, 1e15, 2 / 3, 1e-5]
STRINGS = ["", "a", "b", "ab", "é", "x y"]


class Draw:
    """Value generators bound to hypothesis' `data` and to the current database."""

    def __init__(self, data: st.DataObject, state: dict[str, set[str]]) -> None:
        self.data = data
        self.state = state  # table -> uuids of rows that exist now
        self.live_b: list[str] = sorted(state.get("B", ()))
        self.reserved: set[str] = set()  # uuids inserted by the transaction being drawn
        # B rows that weak references written into existing rows point at: they stay.
        self.weak_kept: set[str] = set()

    def d(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def one(self, options: list[Any]) -> Any:
        return self.d(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        # (hypothesis favours the bounds of a range: 0 means "no" here)
        return bool(self.d(st.integers(0, 99)) >= 100 - round(p * 100))

    # -- atoms -------------------------------------------------------------------------

    def int(self) -> int:
        return int(self.one(EXTREME_INTS)) if self.chance(0.05) else int(self.one(INTS))

    def atom(self, kind: str, weak_ok_missing: bool = True) -> Any:
        if kind == "integer":
            return self.int()
        if kind == "real":
            return self.one(REALS)
        if kind == "boolean":
            return self.one([False, True])
        if kind == "string":
            return self.one(STRINGS)
        if kind == "uuid":
            return ["uuid", self.one(PLAIN_UUIDS)]
        if kind == "strongB":
            return ["uuid", self.one(POOL["B"] + ([MISSING_B] if self.chance(0.1) else []))]
        if kind == "weakB":
            if not weak_ok_missing:
                if not self.live_b:
                    return None
                u = self.one(self.live_b)
                self.weak_kept.add(u)
                return ["uuid", u]
            return ["uuid", self.one(POOL["B"] + [MISSING_B])]
        if kind == "strongN":
            return ["uuid", self.one(POOL["N"])]
        raise AssertionError(kind)

    def datum(self, col: ColumnSpec, new_row: bool) -> Any:
        """A value for `col`; weak references in existing rows only to rows that stay."""
        n = self.d(st.integers(col.min, min(col.max, 3)))
        weak_ok = new_row or not col.weak
        if col.value is None:
            atoms = [self.atom(col.key, weak_ok) for _ in range(n)]
            if any(a is None for a in atoms):
                return None
            if col.scalar:
                return atoms[0]
            unique = {repr(a): a for a in atoms}
            return ["set", list(unique.values())]
        pairs = {}
        for _ in range(n):
            k = self.atom(col.key, weak_ok)
            v = self.atom(col.value, weak_ok)
            if k is None or v is None:
                return None
            pairs[repr(k)] = [k, v]
        return ["map", list(pairs.values())]


class ColumnSpec:
    def __init__(self, key: str, value: str | None = None, lo: int = 1, hi: int = 1,
                 weak: bool = False, mutable: bool = True) -> None:
        self.key = key
        self.value = value
        self.min = lo
        self.max = hi
        self.scalar = value is None and lo == 1 and hi == 1
        self.weak = weak
        self.mutable = mutable


def _c(key: str, value: str | None = None, lo: int = 1, hi: int = 1, **kw: Any) -> ColumnSpec:
    return ColumnSpec(key, value, lo, hi, **kw)


MANY = 4
COLUMNS: dict[str, dict[str, ColumnSpec]] = {
    "A": {
        "i": _c("integer"), "r": _c("real"), "b": _c("boolean"), "s": _c("string"),
        "u": _c("uuid"), "imm": _c("integer", mutable=False), "eph": _c("integer"),
        "oi": _c("integer", lo=0), "or": _c("real", lo=0), "ob": _c("boolean", lo=0),
        "os": _c("string", lo=0), "ou": _c("uuid", lo=0),
        "si": _c("integer", lo=0, hi=MANY), "sr": _c("real", lo=0, hi=MANY),
        "sb": _c("boolean", lo=0, hi=MANY), "ss": _c("string", lo=0, hi=MANY),
        "su": _c("uuid", lo=0, hi=MANY), "s23": _c("integer", lo=1, hi=3),
        "s1u": _c("integer", lo=1, hi=MANY), "m": _c("string", "integer", 0, MANY),
        "m12": _c("string", "string", 1, 2), "mir": _c("integer", "real", 0, MANY),
        "sref": _c("strongB", lo=0, hi=MANY), "oref": _c("strongB", lo=0),
        "wref": _c("weakB", lo=0, hi=MANY, weak=True), "rm": _c("string", "strongB", 0, MANY),
        "wkm": _c("weakB", "integer", 0, MANY, weak=True),
        "wvm": _c("string", "weakB", 0, MANY, weak=True),
        "nref": _c("strongN", lo=0, hi=MANY),
    },
    "B": {"name": _c("string"), "n": _c("integer"), "self": _c("strongB", lo=0)},
    "N": {"name": _c("string"), "child": _c("strongN", lo=0, hi=MANY),
          "wb": _c("weakB", lo=0, weak=True)},
    "W": {"w1": _c("weakB", weak=True), "tag": _c("string")},
    "WS": {"ws1": _c("weakB", lo=1, hi=MANY, weak=True), "tag": _c("string")},
    "I2": {"x": _c("integer"), "y": _c("string"), "z": _c("integer")},
    "I3": {"a": _c("integer"), "b": _c("integer", lo=0, hi=MANY), "c": _c("string")},
}
# C: enums and ranges, mostly valid values.
C_VALUES: dict[str, list[Any]] = {
    "e": ["red", "green", "green", "blue"], "ie": [1, 2, 3, 3, 7], "ci": [1, 5, 10, 0, 11],
    "oe": ["only", ["set", []], "other"], "cmin": [5, 9, 1], "cmax": [5, -3, 9],
    "cr": [0.5, 2.5, 1.0, 3.0], "cs": ["ab", "abcd", "a"], "sci": [["set", [1, 10]], 5, 50],
    "sie": [["set", [1, 2]], 3, 4], "scs": [["set", ["a", "bb"]], "", "abcdef"],
    "me": [["map", [["k1", 0]]], ["map", [["k2", 5], ["k1", 1]]], ["map", [["k3", 1]]]],
}
TABLE_WEIGHTS = ["A"] * 6 + ["B"] * 3 + ["N"] * 2 + ["C"] * 2 + ["W", "WS"] + ["I2"] * 2 + ["I3"]
FUNCS = ["==", "!=", "<", "<=", ">", ">=", "includes", "excludes"]
ARITH = {"integer": ["+=", "-=", "*=", "/=", "%="], "real": ["+=", "-=", "*=", "/="]}


def row(dr: Draw, table: str, new_row: bool) -> dict[str, Any] | None:
    """A row object: a few columns (for C, valid-looking constrained values)."""
    if table == "C":
        cols = dr.d(st.lists(st.sampled_from(sorted(C_VALUES)), max_size=4, unique=True))
        out = {c: dr.one(C_VALUES[c]) for c in cols}
        if new_row and dr.chance(0.8):
            out = {"e": "red", "ie": 1, "ci": 5, **out}
        return out
    specs = COLUMNS[table]
    names = [c for c, spec in specs.items() if new_row or spec.mutable or dr.chance(0.02)]
    cols = dr.d(st.lists(st.sampled_from(names), max_size=4, unique=True))
    out = {}
    for c in cols:
        v = dr.datum(specs[c], new_row)
        if v is not None:
            out[c] = v
    return out


def where(dr: Draw, table: str) -> list[Any]:
    existing = sorted(dr.state.get(table, ()))
    if existing and dr.chance(0.55):
        return [["_uuid", "==", ["uuid", dr.one(existing)]]]
    if dr.chance(0.2):
        return []
    clauses = []
    for _ in range(dr.d(st.integers(1, 2))):
        if table == "C":
            c = dr.one(sorted(C_VALUES))
            clauses.append([c, dr.one(["==", "!=", "includes", "excludes"]),
                            dr.one(C_VALUES[c])])
            continue
        specs = COLUMNS[table]
        c = dr.one(sorted(specs))
        spec = specs[c]
        f = dr.one(FUNCS)
        if f in ("<", "<=", ">", ">=") and not (
                spec.value is None and spec.max == 1 and spec.key in ("integer", "real")):
            f = "=="
        v = dr.datum(ColumnSpec(spec.key, spec.value, 1 if spec.scalar else 0,
                                1 if f in ("<", "<=", ">", ">=") else spec.max), True)
        if v is None or (f in ("==", "!=") and not spec.scalar and spec.min > 0
                         and v in (["set", []], ["map", []])):
            continue
        clauses.append([c, f, v])
    return clauses


def mutation(dr: Draw, table: str) -> list[Any] | None:
    if table == "C":
        c = dr.one(["ci", "cmin", "cmax", "sci", "sie", "me", "scs"])
        if c == "me":
            return [c, dr.one(["insert", "delete"]), dr.one(C_VALUES[c])]
        if c == "scs":
            return [c, dr.one(["insert", "delete"]), ["set", [dr.one(["a", "zz", "abcdef"])]]]
        m = dr.one(["+=", "-=", "*=", "/=", "insert", "delete"])
        if m in ("insert", "delete"):
            return ([c, m, dr.one([1, 2, 5, 11])] if c in ("sci", "sie", "cmin", "cmax")
                    else [c, "+=", 1])
        return [c, m, dr.one([1, 2, 3]) if m in ("*=", "/=") else dr.one([1, 2, 5])]
    specs = COLUMNS[table]
    c = dr.one(sorted(specs))
    spec = specs[c]
    if not spec.mutable and not dr.chance(0.3):
        return None
    if spec.value is None and spec.key in ARITH and dr.chance(0.6):
        m = dr.one(ARITH[spec.key])
        if m == "*=":
            arg: Any = dr.one([0, 1, 2, 3] if spec.key == "integer" else [0.5, 2.0, 3.0])
        elif m in ("/=", "%="):
            arg = dr.one([1, 2, -3, 0] if spec.key == "integer" else [2.0, -0.5, 0.0])
        else:
            arg = dr.atom(spec.key)
        return [c, m, arg]
    if spec.max == 1 and spec.value is None and spec.min == 1:
        if not dr.chance(0.1):
            return None
        return [c, dr.one(["insert", "delete", "+="]), dr.atom(spec.key)]
    m = dr.one(["insert", "delete"])
    v = dr.datum(ColumnSpec(spec.key, spec.value, 0, spec.max, weak=spec.weak), m == "delete")
    if v is None:
        return None
    if m == "delete" and spec.value is not None and dr.chance(0.5):
        keys = [p[0] for p in v[1]]
        v = ["set", keys]
    return [c, m, v]


def operation(dr: Draw, deleted_b: set[str]) -> dict[str, Any] | None:
    table = dr.one(TABLE_WEIGHTS)
    kind = dr.one(["insert"] * 4 + ["update"] * 3 + ["mutate"] * 3 + ["delete"] * 2
                  + ["select"] * 2 + ["wait", "comment"])
    if kind == "insert":
        op: dict[str, Any] = {"op": "insert", "table": table, "row": row(dr, table, True)}
        free = sorted(set(POOL[table]) - dr.state.get(table, set()) - dr.reserved)
        how = dr.one(["free"] * 17 + ["taken", "name", "none"])
        if how == "free" and not free:  # the pool is used up: mostly a uuid of its own
            how = dr.one(["none"] * 4 + ["name"] * 4 + ["taken"])
        if how == "free":
            op["uuid"] = dr.one(free)
            dr.reserved.add(op["uuid"])
        elif how == "taken":
            op["uuid"] = dr.one(POOL[table])
        elif how == "name":
            op["uuid-name"] = "row"
        return op
    if kind == "update":
        return {"op": "update", "table": table, "where": where(dr, table),
                "row": row(dr, table, False)}
    if kind == "mutate":
        muts = [m for m in (mutation(dr, table) for _ in range(dr.d(st.integers(1, 3))))
                if m is not None]
        return {"op": "mutate", "table": table, "where": where(dr, table), "mutations": muts}
    if kind == "delete":
        if table == "B":
            existing = sorted(dr.state.get("B", set()) - dr.weak_kept)
            if not existing:
                return None
            u = dr.one(existing)
            deleted_b.add(u)
            return {"op": "delete", "table": "B", "where": [["_uuid", "==", ["uuid", u]]]}
        return {"op": "delete", "table": table, "where": where(dr, table)}
    if kind == "select":
        op = {"op": "select", "table": table, "where": where(dr, table)}
        cols = ["_uuid", *sorted(C_VALUES if table == "C" else COLUMNS[table])]
        if dr.chance(0.5):
            op["columns"] = dr.d(st.lists(st.sampled_from(cols), min_size=1, max_size=3,
                                          unique=True))
        if dr.chance(0.3):
            op["sort"] = [dr.one(cols[1:])]
        return op
    if kind == "wait":
        # Mostly satisfied: the rows are the pool rows that exist, when nothing else does.
        return {"op": "wait", "table": table,
                "where": [] if not dr.chance(0.3) else where(dr, table),
                "columns": ["_uuid"], "until": "==" if not dr.chance(0.2) else "!=",
                "rows": [{"_uuid": ["uuid", u]} for u in sorted(dr.state.get(table, ()))],
                "timeout": 0}
    return {"op": "comment", "comment": dr.one(["x", "hello world"])}


def transaction(dr: Draw) -> list[Any]:
    deleted_b: set[str] = set()
    ops = []
    for _ in range(dr.d(st.integers(1, 4))):
        # The weak references a write may add point at B rows that stay.
        dr.live_b = sorted(dr.state.get("B", set()) - deleted_b)
        op = operation(dr, deleted_b)
        if op is not None:
            ops.append(op)
    # Deletions of B rows first: see the module docstring.
    ops.sort(key=lambda o: not (o["op"] == "delete" and o["table"] == "B"))
    if dr.chance(0.03):
        ops.append({"op": "abort"})
    return ops


ALL_POOL = {u for us in POOL.values() for u in us}


def state_of(dump: Any, tables: list[str]) -> dict[str, set[str]]:
    """The rows that exist, by uuid, among those the generator named itself: a uuid the
    server chose differs between the two servers, so requests never name one."""
    out: dict[str, set[str]] = {}
    if not isinstance(dump, list):
        return out
    for t, res in zip(tables, dump, strict=False):
        if isinstance(res, dict) and isinstance(res.get("rows"), list):
            out[t] = {r["_uuid"][1] for r in res["rows"]} & ALL_POOL
    return out


MONITORS = [
    {"conn": "m", "request": {"method": "monitor", "params": ["T", "v1", {
        "A": {}, "B": {}, "N": {}, "C": {}, "W": {}, "WS": {}, "I2": {}, "I3": {}}]}},
    {"conn": "m", "request": {"method": "monitor_cond", "params": ["T", "v2", {
        "A": {}, "B": {}, "N": {}, "C": {}, "W": {}, "WS": {}, "I2": {}, "I3": {}}]}},
    {"conn": "m", "request": {"method": "monitor_cond_since", "params": ["T", "v3", {
        "A": [{"where": [["i", ">", 0]]}], "B": [{"where": [["n", "!=", 2]]}],
        "I2": [{"where": [["y", "includes", "a"]]}]},
        "00000000-0000-0000-0000-000000000000"]}},
]


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          phases=(Phase.explicit, Phase.generate),  # no shrinking: each try costs seconds
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_transactions(server_pair: Callable[[str], ServerPair],
                                data: st.DataObject) -> None:
    run_example(server_pair, data, None)


@seed(random_seed())
@settings(max_examples=RANDOM_EXAMPLES, derandomize=False, deadline=None, database=None,
          phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_transactions(server_pair: Callable[[str], ServerPair],
                             data: st.DataObject) -> None:
    """New draws on every run, from a printed seed ($CONFORMANCE_SEED reproduces it)."""
    STATS["random examples"] += 1
    run_example(server_pair, data, seed_hint())


def run_example(server_pair: Callable[[str], ServerPair], data: st.DataObject,
                hint: str | None) -> None:
    require("ovsdb-server", "ovsdb-tool")
    pair = server_pair("T")
    # `*= 0` is drawn, and kills the real server when the value is negative.
    case = Case("generated", "T", [], intended=["mul_zero_negative"])
    run = LiveRun(pair, case, ["a", "m"])
    try:
        for step in MONITORS:
            run.step(step)
        for _ in range(TXNS_PER_EXAMPLE):
            dr = Draw(data, state_of(run.last_dump(), pair.schema.tables()))
            run.step({"transact": transaction(dr)})
    finally:
        run.finish()
    diffs, intended = compare(case, pair.schema, run.records["ours"], run.records["real"],
                              ambiguous=True)
    STATS["generated transactions"] += TXNS_PER_EXAMPLE
    STATS["differences"] += len(diffs)
    for k, v in intended.items():
        STATS[f"intended:{k}"] += v
    if diffs:
        # Keep the batch as a corpus case, to replay it (replay.py) or add it to cases/.
        path = Path(tempfile.mkdtemp(prefix="conformance-")) / "generated.json"
        path.write_text(json.dumps({"topic": "generated", "cases": [
            {"name": "generated-failure", "steps": case.steps}]}, indent=1))
        pytest.fail((f"{hint}\n" if hint else "")
                    + f"replay with: python tests/conformance/replay.py --ambiguous --file {path}\n"
                    + "\n\n".join(d.render(case) for d in diffs[:3]), pytrace=False)
