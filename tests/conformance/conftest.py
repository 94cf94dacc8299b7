"""Fixtures of the conformance suite: our server and the real one side by side, one pair
per schema, started once per module; and the end-of-run counts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conformance_harness import STATS, ServerPair, seed_hint

from procs import require


@pytest.fixture(scope="module")
def server_pair(tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[Callable[..., ServerPair]]:
    """`server_pair(schema, clustered=False)`: the started pair for that schema ("T",
    "T0", "NB", "SB", "VS"), standalone or each a one-member cluster."""
    require("ovsdb-server", "ovsdb-tool")
    pairs: dict[tuple[str, bool], ServerPair] = {}
    base: Path = tmp_path_factory.mktemp("conformance")

    def get(schema: str, clustered: bool = False) -> ServerPair:
        key = (schema, clustered)
        if key not in pairs:
            pairs[key] = ServerPair(schema, base / (schema + ("-cluster" if clustered
                                                              else "")), clustered)
        return pairs[key]

    try:
        yield get
    finally:
        for p in pairs.values():
            p.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not (STATS["corpus cases"] or STATS["generated transactions"]
            or STATS["generated condition steps"]):
        return
    tr = terminalreporter
    tr.section("conformance against ovsdb-server 3.1")
    tr.write_line(f"corpus cases compared:           {STATS['corpus cases']} of "
                  f"{STATS['corpus size']} ({STATS['corpus steps']} steps)")
    if STATS["recorded cases"]:
        tr.write_line(f"recorded real-client cases:      {STATS['recorded cases']} "
                      f"({STATS['replayed client messages']} client messages replayed)")
    tr.write_line(f"generated transactions compared: {STATS['generated transactions']}")
    tr.write_line(f"generated condition steps:       {STATS['generated condition steps']}")
    tr.write_line(f"differences:                     {STATS['differences']}")
    if STATS["known bug cases"]:
        tr.write_line(f"known bugs (xfail cases):        {STATS['known bug cases']} "
                      f"({STATS['known bug differences']} differences)")
    if STATS["random examples"]:
        tr.write_line(f"random generated examples:       {STATS['random examples']} "
                      f"({seed_hint()})")
    intended = sorted((k[len("intended:"):], v) for k, v in STATS.items()
                      if k.startswith("intended:"))
    tr.write_line(f"intended differences seen:       {sum(v for _, v in intended)}"
                  + "".join(f"\n  {k}: {v}" for k, v in intended))
