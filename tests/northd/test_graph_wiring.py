"""northd's engine graph as a golden file (mypy's `deps.test` manner): every computing
node, each of its inputs and the handler that takes the input's changes (`recompute`:
none), on the NB and SB schemas this project ships. A change to the wiring, a handler
added or taken away, shows up as a diff of `golden/graph.txt` to review;
`--rewrite` (or `PYOVSDB_REWRITE=1`) writes the file anew."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_rewrite import rewrite_requested

from pyovsdb.engine import noop
from pyovsdb.northd.driver import Driver
from pyovsdb.northd.nodes import northd as northd_node
from pyovsdb.northd.testing import LocalDb, Nb

GOLDEN = Path(__file__).parent / "golden" / "graph.txt"


def _wired(nb: Nb, sb: LocalDb) -> Driver:
    driver = Driver()
    driver.prepare(nb.db.tables, sb.tables)
    return driver


def test_graph_matches_the_golden_file(nb: Nb, sb: LocalDb,
                                       request: pytest.FixtureRequest) -> None:
    text = _wired(nb, sb).describe()
    if rewrite_requested(request.config):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "the wiring changed: review and --rewrite"


def test_the_golden_file_sees_a_handler_taken_away(nb: Nb, sb: LocalDb,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: `northd` with one SB table less, and with a handler of its
    own replaced by `noop`, each describe a graph other than the golden one."""
    golden = GOLDEN.read_text()
    with monkeypatch.context() as m:
        m.setattr(northd_node, "NORTHD_SB_INPUTS",
                  tuple(t for t in northd_node.NORTHD_SB_INPUTS if t != "FDB"))
        assert _wired(nb, sb).describe() != golden
    with monkeypatch.context() as m:
        m.setattr(northd_node.NorthdNode, "on_fdb", staticmethod(noop))
        text = _wired(nb, sb).describe()
        assert text != golden and "<- SB_fdb [sb]: noop" in text


def test_every_input_without_a_handler_is_named(nb: Nb, sb: LocalDb) -> None:
    """The file lists every input: the count of its lines is the engine's."""
    driver = _wired(nb, sb)
    assert driver.engine is not None
    inputs = sum(len(n.inputs) for n in driver.engine.nodes)
    assert driver.describe().count("  <- ") == inputs
