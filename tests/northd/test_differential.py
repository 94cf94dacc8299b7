"""Our northd against the real ovn-northd 23.03 on every NB script of the corpus.

Each (script, table) pair is its own test: the script runs once with each northd (both
on the real ovsdb-server) and the normalized rows of the table must be equal. Pairs
our northd does not get right yet are listed in `XFAIL` with the reason; they are
strict, so a fix makes the pair XPASS, which fails until it leaves the list.

`test_real_is_deterministic` runs each script a second time with the real northd:
whatever differs between two real runs is noise the normalization must remove.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from diffharness import Script, load_corpus, ours_available, run_script
from normalize import NB_WRITTEN, SB_OWNED, Snapshot, diff

from procs import require

pytestmark = pytest.mark.interop

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
                _cache[key] = run_script(SCRIPTS[name], kind.split("#")[0], workdir)
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


@pytest.mark.parametrize(("script", "table"), _pairs())
def test_matches_real(script: str, table: str, runs: Runner) -> None:
    if not ours_available():
        pytest.skip("pyovsdb northd is not built yet")
    real = runs(script, "real")
    ours = runs(script, "ours")
    if diff(real, ours, table):
        pytest.fail(_report(table, real, ours, "ours differs (- real, + ours)"), pytrace=False)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_real_is_deterministic(script: str, runs: Runner) -> None:
    first = runs(script, "real")
    second = runs(script, "real#2")
    bad = [t for t in first.tables if diff(first, second, t)]
    if bad:
        what = "two real runs differ (- first, + second)"
        pytest.fail("\n".join(_report(t, first, second, what) for t in bad), pytrace=False)


def test_corpus_covers_the_tables() -> None:
    """Every compared table is non-empty in some script's real run, so no table is
    compared only as empty (checked on the saved runs of this module)."""
    real = [v for (_, kind), v in _cache.items() if kind == "real" and isinstance(v, Snapshot)]
    if len(real) < len(SCRIPTS):
        pytest.skip("needs the real runs of every script (run the whole module)")
    empty = [t for t in TABLES if not any(s.tables.get(t) for s in real)]
    assert not empty, f"tables no script fills: {empty}"


def test_xfail_list_names_real_pairs() -> None:
    unknown = [k for k in XFAIL if k[0] not in SCRIPTS or k[1] not in TABLES]
    assert not unknown, f"XFAIL names no such script/table: {unknown}"
