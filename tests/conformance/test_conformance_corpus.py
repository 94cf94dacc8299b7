"""The corpus (cases/*.json) run against our server and the real ovsdb-server 3.1, step
by step, with replies, notifications and database dumps compared."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conformance_harness import REPO, STATS, Case, ServerPair, compare, load_cases, run_case
from conformance_intended import INTENDED, compat_areas
from real_traffic import replay_mismatches

from procs import require

pytestmark = pytest.mark.interop

CASES = load_cases()
STATS["corpus size"] = len(CASES)


def _param(c: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=c.known_bug)] if c.known_bug else []
    return pytest.param(c, id=c.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case: Case, server_pair: Callable[..., ServerPair]) -> None:
    require("ovsdb-server", "ovsdb-tool")
    for key in case.intended:
        assert key in INTENDED and INTENDED[key].case_only, f"undeclared intended {key}"
    pair = server_pair(case.schema, case.clustered)
    records = run_case(pair, case)
    diffs, intended = compare(case, pair.schema, records["ours"], records["real"])
    STATS["corpus cases"] += 1
    if case.recorded:
        STATS["recorded cases"] += 1
        STATS["replayed client messages"] += sum("request" in st for st in case.steps)
        # The replay is faithful: on the real server it does what the recording says.
        bad = replay_mismatches(case.steps, records["real"].steps, case.recorded_seen,
                                records["real"].names)
        assert not bad, f"{case.name}: the real server's replay differs from the " \
            "recording:\n" + "\n".join(bad[:10])
    if case.known_bug:
        STATS["known bug cases"] += 1
        STATS["known bug differences"] += len(diffs)
    else:
        STATS["differences"] += len(diffs)
    for k, v in intended.items():
        STATS[f"intended:{k}"] += v
    for key in case.intended:
        assert intended[key] or INTENDED[key].real_undefined, \
            f"case declares intended difference {key} but shows none"
    assert not diffs, f"{case.file}: {case.name}\n" + "\n\n".join(
        d.render(case) for d in diffs[:3])


def test_allowlist_mirrors_compat_md() -> None:
    """Every row of the intended-differences table has an entry, and nothing else."""
    areas = compat_areas((REPO / "docs" / "compat.md").read_text())
    assert sorted(areas) == sorted(i.area for i in INTENDED.values())


def test_corpus_size() -> None:
    assert len(CASES) >= 300
