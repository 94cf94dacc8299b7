"""Fixtures of the conformance suite: our server and the real one side by side, one pair
per schema, started once per module. (The end-of-run counts are printed by tests/conftest.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conformance_harness import ServerPair

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
