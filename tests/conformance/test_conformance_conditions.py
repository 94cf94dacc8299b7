"""Random monitor conditions, run on our server and the real ovsdb-server 3.1 and
compared: `monitor_cond` and `monitor_cond_since` with conditions of several clauses
(`true`/`false` among them, every function, columns of every type), then random
transactions interleaved with random `monitor_cond_change`s.

Rules kept here:
- Seeded and derandomized like test_conformance_generated.py, whose transaction
  generator it reuses: every run draws the same conditions and transactions.
- A condition is a disjunction on the real server: the clauses are drawn so that
  several of them hold for some rows and not others (values from the rows the
  generator writes), and `true`/`false` clauses come in any place and number.
- Two conditional monitors on one session never have the same columns (the real
  server misses updates then: an intended difference, `cond_monitors_same_columns`).
- Some clauses are wrong on purpose (a type mismatch, an ordering function on a set,
  an unknown column): the error replies are compared whole, details included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conformance_harness import STATS, Case, LiveRun, ServerPair, compare
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_conformance_generated import (
    C_VALUES,
    COLUMNS,
    POOL,
    ColumnSpec,
    Draw,
    state_of,
    transaction,
)

from procs import require

pytestmark = pytest.mark.interop

EXAMPLES = 150
STEPS_PER_EXAMPLE = 24
# Tables the monitors watch (with the columns the second monitor shows of each).
WATCHED = {"A": ["i", "s", "si", "m", "oref"], "B": ["name"], "C": ["e", "ci"],
           "I2": ["x", "y"], "I3": ["b"]}
ORDERED = ("<", "<=", ">", ">=")
FUNCS = ["==", "!=", *ORDERED, "includes", "excludes"]


def clause(dr: Draw, table: str) -> Any:
    """One clause on `table`: true/false, on _uuid, or on a column of any type."""
    kind = dr.one(["literal"] + ["uuid"] + ["column"] * 6 + (["bad"] if dr.chance(0.1)
                                                            else []))
    if kind == "literal":
        return dr.one([True, False])
    if kind == "uuid":
        rows = sorted(dr.state.get(table, ())) or POOL.get(table, POOL["A"])[:1]
        return ["_uuid", dr.one(["==", "!=", "includes", "excludes"]),
                ["uuid", dr.one(rows)]]
    if kind == "bad":
        return dr.one([
            ["nosuch", "==", 1],
            ["i" if table == "A" else "_uuid", "==", "not the type"],
            ["si" if table == "A" else "_uuid", "<", 1],
            ["_uuid", "<=", ["uuid", POOL["A"][0]]],
            ["s" if table == "A" else "_uuid", "matches", "x"],
            ["_uuid"],
        ])
    if table == "C":
        c = dr.one(sorted(C_VALUES))
        return [c, dr.one(["==", "!=", "includes", "excludes"]), dr.one(C_VALUES[c])]
    specs = COLUMNS[table]
    c = dr.one(sorted(specs))
    spec = specs[c]
    f = dr.one(FUNCS)
    orderable = spec.value is None and spec.max == 1 and spec.key in ("integer", "real")
    if f in ORDERED and not orderable:
        f = dr.one(["==", "!=", "includes", "excludes"])
    lo = 1 if spec.scalar or f in ORDERED else 0
    v = dr.datum(ColumnSpec(spec.key, spec.value, lo, 1 if f in ORDERED else spec.max),
                 True)
    if v is None:
        return dr.one([True, False])
    return [c, f, v]


def condition(dr: Draw, table: str) -> list[Any]:
    n = dr.one([0, 1, 2, 2, 3, 3, 4, 5])
    return [clause(dr, table) for _ in range(n)]


def requests(dr: Draw, tables: list[str]) -> dict[str, Any]:
    """Per table a monitor request (or several, for monitor_cond) with a condition."""
    out: dict[str, Any] = {}
    for t in tables:
        req: dict[str, Any] = {}
        if dr.chance(0.9):
            req["where"] = condition(dr, t)
        if dr.chance(0.2):
            req["select"] = {"initial": dr.one([True, False]),
                             "modify": dr.one([True, True, False])}
        out[t] = [req]
    return out


def change(dr: Draw, mon: str, tables: list[str]) -> dict[str, Any]:
    """A monitor_cond_change of some of the monitor's tables (rarely: one it lacks)."""
    picked = dr.d(st.lists(st.sampled_from(tables), min_size=1, max_size=len(tables),
                           unique=True))
    if dr.chance(0.05):
        picked = [*picked, "W"]
    upd = {t: [{"where": condition(dr, t)}] for t in picked}
    return {"conn": "m", "request": {"method": "monitor_cond_change",
                                     "params": [mon, mon, upd]}}


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          phases=(Phase.explicit, Phase.generate),  # no shrinking: each try costs seconds
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_monitor_conditions(server_pair: Callable[[str], ServerPair],
                                      data: st.DataObject) -> None:
    require("ovsdb-server", "ovsdb-tool")
    pair = server_pair("T")
    case = Case("generated-conditions", "T", [])
    run = LiveRun(pair, case, ["a", "m"])
    tables = sorted(WATCHED)
    try:
        # Rows first, so that the initial replies have something to select.
        for _ in range(3):
            dr = Draw(data, state_of(run.last_dump(), pair.schema.tables()))
            run.step({"transact": transaction(dr)})
        dr = Draw(data, state_of(run.last_dump(), pair.schema.tables()))
        first = requests(dr, tables)
        run.step({"conn": "m", "request": {"method": "monitor_cond",
                                           "params": ["T", "c2", first]}})
        second = {t: [{**r, "columns": WATCHED[t]} for r in rs]
                  for t, rs in requests(dr, tables).items()}
        run.step({"conn": "m", "request": {"method": "monitor_cond_since",
                                           "params": ["T", "c3", second,
                                                      "00000000-0000-0000-0000-000000000000"]}})
        for _ in range(STEPS_PER_EXAMPLE):
            dr = Draw(data, state_of(run.last_dump(), pair.schema.tables()))
            if dr.chance(0.35):
                run.step(change(dr, dr.one(["c2", "c3"]), tables))
            else:
                run.step({"transact": transaction(dr)})
    finally:
        run.finish()
    diffs, intended = compare(case, pair.schema, run.records["ours"], run.records["real"],
                              ambiguous=True)
    STATS["generated condition steps"] += len(case.steps)
    STATS["differences"] += len(diffs)
    for k, v in intended.items():
        STATS[f"intended:{k}"] += v
    if diffs:
        import json
        import tempfile
        from pathlib import Path

        path = Path(tempfile.mkdtemp(prefix="conformance-")) / "conditions.json"
        path.write_text(json.dumps({"topic": "generated", "cases": [
            {"name": "generated-conditions-failure", "steps": case.steps}]}, indent=1))
        pytest.fail(f"replay with: python tests/conformance/replay.py --ambiguous --file {path}\n"
                    + "\n\n".join(d.render(case) for d in diffs[:3]), pytrace=False)
