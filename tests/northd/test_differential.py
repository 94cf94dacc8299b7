"""Our northd against the real ovn-northd 23.03 on every NB script of the corpus.

Each (script, table) pair is its own test: the script runs once with each northd (both
on the real ovsdb-server) and the normalized rows of the table must be equal. Pairs
our northd does not get right yet are listed in `XFAIL` with the reason; they are
strict, so a fix makes the pair XPASS, which fails until it leaves the list.

The same runs give the logical flows: `test_lflows_match_real` compares the switch and
router pipelines of `ovn-sbctl lflow-list` line for line (`lflowdiff`), and
`test_lflow_rows_match_real` their `Logical_Flow` rows themselves (what
lflow-list does not print: stage hints, `tags`, `controller_meter`, datapath groups).
Scripts whose flows still differ are in `XFAIL_LFLOWS` / `XFAIL_LFLOW_ROWS` (strict).

`test_real_is_deterministic` runs each script a second time with the real northd:
whatever differs between two real runs (rows, lflow-list lines, traces of the script's
probes) is noise the normalization must remove.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from diffharness import (
    Script,
    generate_script,
    load_corpus,
    ours_available,
    parse_script,
    run_script,
)
from lflowdiff import OUTCOMES, Outcome, diff_lines, lflows_of, only_stages, trace_diff
from normalize import (
    NB_WRITTEN,
    SB_OWNED,
    RawDump,
    Snapshot,
    diff,
    normalize,
    without_flows,
)
from traces import TRACES

from procs import require

SCRIPTS: dict[str, Script] = {s.name: s for s in load_corpus()}
TABLES: tuple[str, ...] = tuple(f"NB.{t}" for t in NB_WRITTEN) + tuple(f"SB.{t}"
                                                                         for t in SB_OWNED)
PIPELINES = ("ls_", "lr_")  # the stages compared: the switch and router pipelines
SHOWN = 80  # diff lines shown on a failure

# (script, table) -> why our northd differs there. Shrinks as northd grows.
XFAIL: dict[tuple[str, str], str] = {}
# script -> why its flows (lflow-list lines) differ from 23.03's.
XFAIL_LFLOWS: dict[str, str] = {}
# script -> why its Logical_Flow rows differ (beyond the lflow-list lines).
XFAIL_LFLOW_ROWS: dict[str, str] = {}

Runner = Callable[[str, str], Outcome]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """The outcome of (script, northd kind), run once per process (shared with the
    trace tests)."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd", "ovn-trace")

    return OUTCOMES.runner(SCRIPTS, lambda name: tmp_path_factory.mktemp(name,
                                                                          numbered=True))


def _pairs() -> list[object]:
    out: list[object] = []
    for name in SCRIPTS:
        for table in TABLES:
            reason = XFAIL.get((name, table))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, table, marks=marks, id=f"{name}-{table}"))
    return out


def _scripts(xfail: dict[str, str]) -> list[object]:
    return [pytest.param(name, id=name,
                         marks=[pytest.mark.xfail(strict=True, reason=xfail[name])]
                         if name in xfail else [])
            for name in sorted(SCRIPTS)]


def _shown(lines: list[str], what: str) -> str:
    more = f"\n... {len(lines) - SHOWN} more" if len(lines) > SHOWN else ""
    return f"{what}\n" + "\n".join(lines[:SHOWN]) + more


def _differs(expected: Snapshot, actual: Snapshot, table: str) -> bool:
    """`diff` is not empty (equal rows skip the line-by-line rendering: the 100-switch
    scripts have 15,000 flows)."""
    if expected.tables.get(table) == actual.tables.get(table):
        return False
    return bool(diff(expected, actual, table))


def _report(table: str, expected: Snapshot, actual: Snapshot, what: str) -> str:
    return _shown(diff(expected, actual, table), f"{table}: {what}")


def pipeline_lines(outcome: Outcome) -> list[str]:
    return only_stages(outcome.lflows, PIPELINES)


def lflow_diff(real: Outcome, ours: Outcome) -> list[str]:
    """The lflow-list lines only in `real` (-) or only in `ours` (+)."""
    return diff_lines(pipeline_lines(real), pipeline_lines(ours))[2:]


def pipeline_rows(snap: Snapshot) -> Snapshot:
    """The switch and router pipelines' `Logical_Flow` rows, and the datapath groups they use."""
    flows = {k: row for k, row in snap.tables.get("SB.Logical_Flow", {}).items()
             if _stage_name(row).startswith(PIPELINES)}
    groups = snap.tables.get("SB.Logical_DP_Group", {})
    used = {str(row.get("logical_dp_group")) for row in flows.values()}
    return Snapshot({"SB.Logical_Flow": flows,
                     "SB.Logical_DP_Group": {k: v for k, v in groups.items()
                                             if f"@Logical_DP_Group({k})" in used}})


def _stage_name(row: dict[str, Any]) -> str:
    ids = row.get("external_ids")
    return str(ids.get("stage-name", "")) if isinstance(ids, dict) else ""


def _ours(runs: Runner, script: str) -> Outcome:
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    return runs(script, "ours")


@pytest.mark.interop
@pytest.mark.parametrize(("script", "table"), _pairs())
def test_matches_real(script: str, table: str, runs: Runner) -> None:
    ours = without_flows(_ours(runs, script).snapshot)
    real = without_flows(runs(script, "real").snapshot)
    if _differs(real, ours, table):
        pytest.fail(_report(table, real, ours, "ours differs (- real, + ours)"), pytrace=False)


@pytest.mark.interop
@pytest.mark.parametrize("script", _scripts(XFAIL_LFLOWS))
def test_lflows_match_real(script: str, runs: Runner) -> None:
    """`lflow-list` of the switch and router pipelines: ours line for line as 23.03's."""
    ours = _ours(runs, script)
    real = runs(script, "real")
    lines = lflow_diff(real, ours)
    if lines:
        n = sum(1 for ln in lines if ln[:1] in "+-")
        pytest.fail(_shown(lines, f"{n} flow lines differ (- real, + ours); "
                           f"{len(pipeline_lines(real))} real, {len(pipeline_lines(ours))} ours"),
                    pytrace=False)


@pytest.mark.interop
@pytest.mark.parametrize("script", _scripts(XFAIL_LFLOW_ROWS))
def test_lflow_rows_match_real(script: str, runs: Runner) -> None:
    """The pipelines' SB rows: what lflow-list shows, and the stage hints,
    `tags:in_out_port`, `controller_meter` and datapath groups it does not."""
    ours = pipeline_rows(_ours(runs, script).snapshot)
    real = pipeline_rows(runs(script, "real").snapshot)
    bad = [t for t in ("SB.Logical_Flow", "SB.Logical_DP_Group") if _differs(real, ours, t)]
    if bad:
        pytest.fail("\n".join(_report(t, real, ours, "ours differs (- real, + ours)")
                              for t in bad), pytrace=False)


@pytest.mark.interop
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_real_is_deterministic(script: str, runs: Runner) -> None:
    first = runs(script, "real")
    second = runs(script, "real#2")
    what = "two real runs differ (- first, + second)"
    bad = [_report(t, first.snapshot, second.snapshot, what)
           for t in first.snapshot.tables if _differs(first.snapshot, second.snapshot, t)]
    lines = [] if first.lflows == second.lflows else diff_lines(first.lflows, second.lflows)[2:]
    if lines:
        bad.append(_shown(lines, f"lflow-list: {what}"))
    traces = trace_diff(first.traces, second.traces)
    if traces:
        bad.append(_shown(traces, f"ovn-trace: {what}"))
    if bad:
        pytest.fail("\n".join(bad), pytrace=False)


@pytest.mark.interop
def test_corpus_covers_the_tables() -> None:
    """Every compared table is non-empty in some script's real run, so no table is
    compared only as empty (checked on the saved runs of this process)."""
    real = [without_flows(o.snapshot) for o in OUTCOMES.finished("real")]
    if len(real) < len(SCRIPTS):
        pytest.skip("needs the real runs of every script (run the whole module)")
    empty = [t for t in TABLES if not any(s.tables.get(t) for s in real)]
    assert not empty, f"tables no script fills: {empty}"


GENERATED_SEEDS = (1, 2, 3, 4, 5)
# seed -> why our northd differs on that generated history.
XFAIL_GENERATED: dict[int, str] = {}
# seed -> why our flows differ on that generated history.
XFAIL_GENERATED_LFLOWS: dict[int, str] = {}

_generated: dict[tuple[int, str], tuple[Snapshot, tuple[str, ...]] | BaseException] = {}


def _seeds(xfail: dict[int, str]) -> list[object]:
    return [pytest.param(seed, id=f"seed{seed}",
                         marks=[pytest.mark.xfail(strict=True, reason=xfail[seed])]
                         if seed in xfail else [])
            for seed in GENERATED_SEEDS]


def _generated_run(seed: int, kind: str, tmp: pytest.TempPathFactory
                   ) -> tuple[Snapshot, tuple[str, ...]]:
    """A generated history's rows and lflow-list lines, run once per (seed, kind)."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd")
    key = (seed, kind)
    if key not in _generated:
        got: list[str] = []
        try:
            snap = run_script(generate_script(seed), kind.split("#")[0],
                              tmp.mktemp(f"seed{seed}-{kind}", numbered=True),
                              at_end=lambda r: got.extend(lflows_of(r)))
            _generated[key] = (snap, tuple(got))
        except Exception as e:
            _generated[key] = e
    out = _generated[key]
    if isinstance(out, BaseException):
        raise out
    return out


def _history(seed: int) -> str:
    return "\n--- the history\n" + "\n".join(str(st) for st in generate_script(seed).steps)


@pytest.mark.interop
@pytest.mark.parametrize("seed", _seeds(XFAIL_GENERATED))
def test_generated_matches_real(seed: int, tmp_path_factory: pytest.TempPathFactory
                                ) -> None:
    """A random (seeded) NB history of 60 changes: the real northd twice (the history
    must keep 23.03's choices deterministic, its flows too), then ours; every table
    compared."""
    real, real_flows = _generated_run(seed, "real", tmp_path_factory)
    again, again_flows = _generated_run(seed, "real#2", tmp_path_factory)
    noisy = [t for t in TABLES if _differs(real, again, t)]
    assert not noisy, f"the generated history is not deterministic in 23.03: {noisy}"
    noisy_flows = diff_lines(real_flows, again_flows)[2:]
    assert not noisy_flows, _shown(noisy_flows, "two real runs' lflow-list differ")
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    ours, _ = _generated_run(seed, "ours", tmp_path_factory)
    bad = [t for t in TABLES if _differs(real, ours, t)]
    if bad:
        pytest.fail("\n".join(_report(t, real, ours, "ours differs (- real, + ours)")
                              for t in bad) + _history(seed), pytrace=False)


@pytest.mark.interop
@pytest.mark.parametrize("seed", _seeds(XFAIL_GENERATED_LFLOWS))
def test_generated_lflows_match_real(seed: int, tmp_path_factory: pytest.TempPathFactory
                                     ) -> None:
    """The same histories' flows (the runs of `test_generated_matches_real`)."""
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    _, real = _generated_run(seed, "real", tmp_path_factory)
    _, ours = _generated_run(seed, "ours", tmp_path_factory)
    lines = diff_lines(only_stages(real, PIPELINES), only_stages(ours, PIPELINES))[2:]
    if lines:
        pytest.fail(_shown(lines, "flow lines differ (- real, + ours)")
                    + _history(seed), pytrace=False)


def test_xfail_list_names_real_pairs() -> None:
    unknown = [k for k in XFAIL if k[0] not in SCRIPTS or k[1] not in TABLES]
    assert not unknown, f"XFAIL names no such script/table: {unknown}"
    unknown_scripts = [k for k in (*XFAIL_LFLOWS, *XFAIL_LFLOW_ROWS, *TRACES)
                       if k not in SCRIPTS]
    assert not unknown_scripts, f"XFAIL_LFLOWS/_ROWS or TRACES name no such script: " \
        f"{unknown_scripts}"


# -- the harness's own pieces, without servers ------------------------------------------


def _uuids(n: int, seed: str) -> list[str]:
    return [f"{seed * 8}-0000-0000-0000-{i:012d}" for i in range(n)]


def _dump(u: list[str], *, p1_on: int = 0, keys: tuple[int, int] = (1, 2),
          reverse: bool = False) -> tuple[RawDump, RawDump]:
    """NB with two switches; SB with their datapaths and a port on one of them."""
    nb = {"Logical_Switch": [{"_uuid": ["uuid", u[0]], "name": "sw0"},
                             {"_uuid": ["uuid", u[1]], "name": "sw1"}]}
    dps = [{"_uuid": ["uuid", u[2 + i]], "tunnel_key": keys[i],
            "external_ids": ["map", [["logical-switch", u[i]], ["name", f"sw{i}"]]]}
           for i in range(2)]
    pb = {"_uuid": ["uuid", u[4]], "logical_port": "p1", "datapath": ["uuid", u[2 + p1_on]],
          "tunnel_key": 1, "mac": ["set", ["00:00:00:00:00:02 10.0.0.2", "00:00:00:00:00:01"]]}
    sb = {"Datapath_Binding": dps[::-1] if reverse else dps, "Port_Binding": [pb]}
    return nb, sb


def test_normalize_names_rows_instead_of_uuids() -> None:
    a = normalize(*_dump(_uuids(5, "a")), sb_tables=("Datapath_Binding", "Port_Binding"),
                  nb_tables=())
    b = normalize(*_dump(_uuids(5, "b"), reverse=True),
                  sb_tables=("Datapath_Binding", "Port_Binding"), nb_tables=())
    assert a == b
    assert a.tables["SB.Port_Binding"]["p1"]["datapath"] == "@Datapath_Binding(sw0)"
    assert a.tables["SB.Port_Binding"]["p1"]["mac"] == ["00:00:00:00:00:01",
                                                        "00:00:00:00:00:02 10.0.0.2"]
    ext = a.tables["SB.Datapath_Binding"]["sw1"]["external_ids"]
    assert ext == {"logical-switch": "@nb.Logical_Switch(sw1)", "name": "sw1"}


def test_normalize_shows_a_moved_reference() -> None:
    tables = ("Datapath_Binding", "Port_Binding")
    a = normalize(*_dump(_uuids(5, "a")), sb_tables=tables, nb_tables=())
    b = normalize(*_dump(_uuids(5, "b"), p1_on=1), sb_tables=tables, nb_tables=())
    assert diff(a, b, "SB.Port_Binding") == [
        '- Port_Binding[p1].datapath = "@Datapath_Binding(sw0)"',
        '+ Port_Binding[p1].datapath = "@Datapath_Binding(sw1)"']
    assert diff(a, b, "SB.Datapath_Binding") == []


def test_renumber_compares_only_the_set_of_keys() -> None:
    tables = ("Datapath_Binding",)
    a = _dump(_uuids(5, "a"), keys=(1, 2))
    b = _dump(_uuids(5, "b"), keys=(2, 1))
    assert diff(normalize(*a, sb_tables=tables, nb_tables=()),
                normalize(*b, sb_tables=tables, nb_tables=()), "SB.Datapath_Binding")
    ra = normalize(*a, sb_tables=tables, nb_tables=(), renumber=tables)
    rb = normalize(*b, sb_tables=tables, nb_tables=(), renumber=tables)
    assert ra == rb
    assert ra.tables["SB.Datapath_Binding"]["(tunnel keys)"] == {"keys": [1, 2]}
    c = normalize(*_dump(_uuids(5, "c"), keys=(1, 3)), sb_tables=tables, nb_tables=(),
                  renumber=tables)
    assert c != ra


def test_parse_script() -> None:
    s = parse_script("#! renumber Port_Binding\n# a comment\n\nnbctl ls-add sw0\n"
                     "sbctl lsp-bind p1 ch1\nsim chassis ch1 10.0.0.1 a=b\n", "x")
    assert s.renumber == frozenset({"Port_Binding"})
    assert [(st.tool, st.args, st.lineno) for st in s.steps] == [
        ("nbctl", ("ls-add", "sw0"), 4), ("sbctl", ("lsp-bind", "p1", "ch1"), 5),
        ("sim", ("chassis", "ch1", "10.0.0.1", "a=b"), 6)]
    with pytest.raises(ValueError, match="starts with nbctl"):
        parse_script("ls-add sw0\n")
    with pytest.raises(ValueError, match="unknown directive"):
        parse_script("#! shuffle\n")
