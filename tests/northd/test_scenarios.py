"""Datadriven northd scenarios (`testdata/*.txt`, see `datadriven`): each file's cases
give NB/SB commands, `run`, and the SB/NB changes and engine stats expected.

`test_scenario` runs a file in-process and compares every case's output with the file;
`PYOVSDB_REWRITE=1`, or `--rewrite` (an option `plugin_rewrite` adds once the
directory's conftest imports its `pytest_addoption`), writes the actual outputs back
instead, to be reviewed as a diff. `test_scenario_matches_real` replays the same commands through
the real ovn-northd 23.03 and asks that the databases be the same at every `run`, so an
expectation cannot drift from what the real northd does without a test failing.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from datadriven import Scenario, parse_file, run_file, to_harness
from diffharness import CFG_COLUMNS, run_points, without_counters
from normalize import NB_WRITTEN, SB_OWNED, Snapshot, diff
from plugin_rewrite import rewrite_requested

from procs import require

TESTDATA = Path(__file__).resolve().parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))

# (file stem, table) -> why the in-process graph and the real northd differ there.
XFAIL_REAL: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario(path: Path, request: pytest.FixtureRequest) -> None:
    sf, outputs = run_file(path)
    actual = sf.render(outputs)
    if rewrite_requested(request.config):
        path.write_text(actual)
        return
    expected = path.read_text()
    if actual != expected:
        delta = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                             f"{path.name} (expected)", "actual"))
        pytest.fail(f"scenario output differs (rerun with --rewrite to accept):\n{delta}")


def _points_in_process(path: Path) -> list[Snapshot]:
    sf = parse_file(path.read_text())
    sc = Scenario()
    points = []
    for case in sf.cases:
        for cmd in case.commands:
            out = sc.command(cmd)
            assert not any(line.startswith("error:") for line in out), (cmd, out)
            if cmd.strip() == "run":
                points.append(sc.snapshot())
    return points


TABLES: tuple[str, ...] = tuple(f"NB.{t}" for t in NB_WRITTEN) + tuple(f"SB.{t}"
                                                                         for t in SB_OWNED)
_points: dict[str, tuple[list[Snapshot], list[Snapshot]] | BaseException] = {}


def _both(path: Path, workdir: Path) -> tuple[list[Snapshot], list[Snapshot]]:
    """(real, in-process) snapshots at every `run` of the file, computed once."""
    if path.stem not in _points:
        try:
            ours = [without_counters(s, CFG_COLUMNS) for s in _points_in_process(path)]
            real = [without_counters(s, CFG_COLUMNS)
                    for s in run_points(to_harness(path), "real", workdir)]
            assert len(ours) == len(real)
            _points[path.stem] = (real, ours)
        except Exception as e:  # kept so every table of the file reports it
            _points[path.stem] = e
    got = _points[path.stem]
    if isinstance(got, BaseException):
        raise got
    return got


def _pairs() -> list[object]:
    out: list[object] = []
    for p in FILES:
        for table in TABLES:
            reason = XFAIL_REAL.get((p.stem, table))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(p, table, marks=marks, id=f"{p.stem}-{table}"))
    return out


@pytest.mark.interop
@pytest.mark.parametrize(("path", "table"), _pairs())
def test_scenario_matches_real(path: Path, table: str,
                               tmp_path_factory: pytest.TempPathFactory) -> None:
    require("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-nbctl", "ovn-sbctl",
            "ovn-northd")
    real, ours = _both(path, tmp_path_factory.mktemp(f"{path.stem}-real"))
    problems = []
    for i, (r, o) in enumerate(zip(real, ours, strict=True), 1):
        lines = diff(r, o, table)
        if lines:
            problems.append(f"after run #{i} (- real, + scenario):\n" + "\n".join(lines[:40]))
    if problems:
        pytest.fail(f"{table}:\n" + "\n".join(problems), pytrace=False)


def test_xfail_list_names_real_pairs() -> None:
    stems = {p.stem for p in FILES}
    unknown = [k for k in XFAIL_REAL if k[0] not in stems or k[1] not in TABLES]
    assert not unknown, f"XFAIL_REAL names no such file/table: {unknown}"
