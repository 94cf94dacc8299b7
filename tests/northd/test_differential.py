"""Our northd against the real ovn-northd 23.03 on every NB script of the corpus.

Each (script, table) pair is its own test: the script runs once with each northd (both
on the real ovsdb-server) and the normalized rows of the table must be equal. Pairs
our northd does not get right yet are listed in `XFAIL` with the reason; they are
strict, so a fix makes the pair XPASS, which fails until it leaves the list.

`test_real_is_deterministic` runs each script a second time with the real northd:
whatever differs between two real runs is noise the normalization must remove. It
covers `Logical_Flow` too (every run dumps it), ready for the comparison of flows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from diffharness import (
    Script,
    generate_script,
    load_corpus,
    ours_available,
    parse_script,
    run_script,
)
from normalize import (
    NB_WRITTEN,
    SB_OWNED,
    SB_WITH_FLOWS,
    RawDump,
    Snapshot,
    diff,
    normalize,
    without_flows,
)

from procs import require

SCRIPTS: dict[str, Script] = {s.name: s for s in load_corpus()}
TABLES: tuple[str, ...] = tuple(f"NB.{t}" for t in NB_WRITTEN) + tuple(f"SB.{t}"
                                                                         for t in SB_OWNED)

# (script, table) -> why our northd differs there. Shrinks as northd grows.
XFAIL: dict[tuple[str, str], str] = {}

Runner = Callable[[str, str], Snapshot]
_cache: dict[tuple[str, str], Snapshot | BaseException] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """The normalized result of (script, northd kind), run once per module."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd")

    def get(name: str, kind: str) -> Snapshot:
        key = (name, kind)
        if key not in _cache:
            workdir = tmp_path_factory.mktemp(f"{name}-{kind}", numbered=True)
            try:
                _cache[key] = run_script(SCRIPTS[name], kind.split("#")[0], workdir,
                                         sb_tables=SB_WITH_FLOWS)
            except Exception as e:  # kept so every table of the script reports it
                _cache[key] = e
        got = _cache[key]
        if isinstance(got, BaseException):
            raise got
        return got

    return get


def _pairs() -> list[object]:
    out: list[object] = []
    for name in SCRIPTS:
        for table in TABLES:
            reason = XFAIL.get((name, table))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, table, marks=marks, id=f"{name}-{table}"))
    return out


def _report(table: str, expected: Snapshot, actual: Snapshot, what: str) -> str:
    lines = diff(expected, actual, table)
    shown = "\n".join(lines[:60])
    more = f"\n... {len(lines) - 60} more" if len(lines) > 60 else ""
    return f"{table}: {what}\n{shown}{more}"


@pytest.mark.interop
@pytest.mark.parametrize(("script", "table"), _pairs())
def test_matches_real(script: str, table: str, runs: Runner) -> None:
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    real = without_flows(runs(script, "real"))
    ours = without_flows(runs(script, "ours"))
    if diff(real, ours, table):
        pytest.fail(_report(table, real, ours, "ours differs (- real, + ours)"), pytrace=False)


@pytest.mark.interop
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_real_is_deterministic(script: str, runs: Runner) -> None:
    first = runs(script, "real")
    second = runs(script, "real#2")
    bad = [t for t in first.tables if diff(first, second, t)]
    if bad:
        what = "two real runs differ (- first, + second)"
        pytest.fail("\n".join(_report(t, first, second, what) for t in bad), pytrace=False)


@pytest.mark.interop
def test_corpus_covers_the_tables() -> None:
    """Every compared table is non-empty in some script's real run, so no table is
    compared only as empty (checked on the saved runs of this module)."""
    real = [without_flows(v) for (_, kind), v in _cache.items()
            if kind == "real" and isinstance(v, Snapshot)]
    if len(real) < len(SCRIPTS):
        pytest.skip("needs the real runs of every script (run the whole module)")
    empty = [t for t in TABLES if not any(s.tables.get(t) for s in real)]
    assert not empty, f"tables no script fills: {empty}"


GENERATED_SEEDS = (1, 2, 3, 4, 5)
# seed -> why our northd differs on that generated history.
XFAIL_GENERATED: dict[int, str] = {}


def _seeds() -> list[object]:
    return [pytest.param(seed, id=f"seed{seed}",
                         marks=[pytest.mark.xfail(strict=True, reason=XFAIL_GENERATED[seed])]
                         if seed in XFAIL_GENERATED else [])
            for seed in GENERATED_SEEDS]


@pytest.mark.interop
@pytest.mark.parametrize("seed", _seeds())
def test_generated_matches_real(seed: int, tmp_path: Path) -> None:
    """A random (seeded) NB history of 60 changes: the real northd twice (the history
    must keep 23.03's choices deterministic), then ours; every table compared."""
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd")
    script = generate_script(seed)
    real = run_script(script, "real", tmp_path / "real")
    again = run_script(script, "real", tmp_path / "real2")
    noisy = [t for t in TABLES if diff(real, again, t)]
    assert not noisy, f"the generated history is not deterministic in 23.03: {noisy}"
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    ours = run_script(script, "ours", tmp_path / "ours")
    bad = [t for t in TABLES if diff(real, ours, t)]
    if bad:
        steps = "\n".join(str(st) for st in script.steps)
        pytest.fail("\n".join(_report(t, real, ours, "ours differs (- real, + ours)")
                              for t in bad) + f"\n--- the history\n{steps}", pytrace=False)


def test_xfail_list_names_real_pairs() -> None:
    unknown = [k for k in XFAIL if k[0] not in SCRIPTS or k[1] not in TABLES]
    assert not unknown, f"XFAIL names no such script/table: {unknown}"


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
